"""A training layout: how a model is split over ranks (tensor x pipeline x data), how its optimizer
state is sharded (ZeRO stage), what is recomputed, and the micro-batch each rank runs.

A rank is one GPU, or one NeuronCore as the Neuron documentation counts them (a trn1.32xlarge has
32). Tensor-parallel groups stay inside one instance (their collectives run on every layer and
need the instance's link); ``tensor x context x pipeline x data`` equals ranks per instance x
instances. ``context`` ranks split each sequence (``parallel/context.py``); ``offload`` keeps the
optimizer state in host memory or on NVMe (``parallel/offload.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ecobench.parallel.context import CONTEXT_COMMS, ContextComm
from ecobench.parallel.offload import OFFLOADS, Offload
from ecobench.workloads.architecture import Architecture

Recompute = Literal["none", "selective", "full", "selective_op"]
# Activation recomputation: ``selective`` is Megatron's (Korthikanti et al., "Reducing Activation
# Recomputation in Large Transformer Models", MLSys 2023, arXiv 2205.05198, Sec. 5: the attention core
# recomputed), ``full`` each layer from its input, ``selective_op`` PyTorch's per-op selective
# checkpointing as torchtitan's ``selective_ac_option = "op"`` runs it (``step.op_checkpoint``: the
# layer's input, attention outputs and every other matmul output kept). Appended last so that indices
# stored before it was added keep their meaning; :data:`RECOMPUTE_BY_MEMORY` orders them by memory.
RECOMPUTE: tuple[Recompute, ...] = ("none", "selective", "full", "selective_op")
RECOMPUTE_BY_MEMORY: tuple[Recompute, ...] = ("none", "selective", "selective_op", "full")
# The modes the layout search tries: Megatron's, which every stack the catalog lists offers (per-op
# checkpointing is PyTorch's, taken only where a scenario or a published point states it).
SEARCHED_RECOMPUTE: tuple[Recompute, ...] = ("none", "selective", "full")
Schedule = Literal["1f1b", "interleaved", "zero-bubble"]
# Pipeline schedules: 1F1B (Narayanan et al., PipeDream-Flush, 2021), Megatron's interleaved 1F1B with
# virtual stages (Narayanan et al., SC'21, arXiv 2104.04473, Sec. 2.2.2) and ZB-H1 (Qi et al., "Zero
# Bubble Pipeline Parallelism", ICLR 2024, arXiv 2311.04934, Sec. 3).
SCHEDULES: tuple[Schedule, ...] = ("1f1b", "interleaved", "zero-bubble")
ZERO_STAGES = (0, 1, 2, 3)
ExpertDispatch = Literal["all_to_all", "deduplicated"]
# How routed tokens cross instances: ``all_to_all`` sends every token copy to its expert's rank
# (NCCL all-to-all, Megatron-Core's ``alltoall`` dispatcher); ``deduplicated`` sends a token once to
# each instance holding any of its experts and forwards it there over the instance link (DeepSeek-V3,
# arXiv 2412.19437, Sec. 3.2.2; DeepEP and Megatron-Core's HybridEP ``flex`` dispatchers).
EXPERT_DISPATCHES: tuple[ExpertDispatch, ...] = ("all_to_all", "deduplicated")


@dataclass(frozen=True)
class Layout:
    """One way to split a training job over ``tensor * pipeline * data`` ranks."""

    tensor: int = 1
    pipeline: int = 1
    data: int = 1
    zero: int = 0
    recompute: Recompute = "none"
    microbatch: int = 1
    virtual: int = 1  # interleaved stages per rank (Megatron's virtual pipeline), 1 = plain 1F1B
    schedule: Schedule = "1f1b"  # virtual > 1 runs interleaved whatever this says (published points)
    expert: int = 1  # expert-parallel ranks (a mixture-of-experts' experts split among data-parallel ranks)
    context: int = 1  # ranks that split each sequence (context parallelism)
    context_comm: ContextComm = "ring"
    offload: Offload = "none"
    expert_tensor: int | None = None  # ranks each expert is split over (None: tensor; 1: parallel folding)
    expert_dispatch: ExpertDispatch = "all_to_all"
    expert_overlap: bool = False  # all-to-alls overlap another micro-batch's compute (Megatron EP overlap)

    @property
    def ranks(self) -> int:
        """Ranks the layout occupies."""
        return self.tensor * self.context * self.pipeline * self.data

    def describe(self) -> str:
        """Short human-readable form, e.g. ``TP8 PP4 DP16 ZeRO-1 mb1 recompute selective``."""
        vp = f" VP{self.virtual}" if self.virtual > 1 else ""
        vp += " zero-bubble" if self.schedule == "zero-bubble" else ""
        ep = f" EP{self.expert}" if self.expert > 1 else ""
        if self.expert > 1 and self.expert_tensor is not None and self.expert_tensor != self.tensor:
            ep += f" ETP{self.expert_tensor}"
        ep += " dedup" if self.expert > 1 and self.expert_dispatch == "deduplicated" else ""
        ep += " overlap" if self.expert > 1 and self.expert_overlap else ""
        cp = (f" CP{self.context}" + (" all-to-all" if self.context_comm == "all_to_all" else "")
              if self.context > 1 else "")
        off = f" offload {self.offload}" if self.offload != "none" else ""
        return (f"TP{self.tensor}{cp} PP{self.pipeline}{vp} DP{self.data}{ep} ZeRO-{self.zero}{off} "
                f"mb{self.microbatch} recompute {self.recompute}")


def microbatches(global_batch: int, layout: Layout) -> int:
    """Micro-batches each pipeline runs per optimizer step."""
    return global_batch // (layout.data * layout.microbatch)


def problems(layout: Layout, arch: Architecture, ranks: int, ranks_per_node: int,
             global_batch: int, max_zero_stage: int = 3, seq_len: int | None = None) -> list[str]:
    """Why ``layout`` cannot run ``arch`` on ``ranks`` ranks with this global batch (empty: it can)."""
    out = context_problems(layout, arch, seq_len)
    t, p = layout.tensor, layout.pipeline
    if arch.heads % t:
        out.append(f"tensor {t} must divide the {arch.heads} attention heads")
    elif arch.kv % t and t % arch.kv:
        out.append(f"tensor {t} and the {arch.kv} key/value heads must divide one another")
    if arch.intermediate_size % t:
        out.append(f"tensor {t} must divide the feed-forward size {arch.intermediate_size}")
    if ranks_per_node % t:
        out.append(f"tensor {t} must divide the {ranks_per_node} ranks of one instance "
                   "(tensor-parallel groups stay inside an instance)")
    out += expert_problems(arch, layout.expert, layout.data, t if layout.expert_tensor is None
                           else layout.expert_tensor)
    if layout.expert_tensor is not None and (layout.expert_tensor < 1 or t % layout.expert_tensor):
        out.append(f"expert_tensor {layout.expert_tensor} must divide tensor {t} (allowed: "
                   f"{', '.join(map(str, divisors(t)))})")
    if layout.expert_dispatch not in EXPERT_DISPATCHES:
        out.append(f"expert_dispatch {layout.expert_dispatch!r} is not one of {', '.join(EXPERT_DISPATCHES)}")
    if p > arch.layers:
        out.append(f"pipeline {p} is more stages than the {arch.layers} layers")
    elif layout.virtual > 1 and arch.layers % (p * layout.virtual):
        ok = [v for v in divisors(arch.layers // p) if v > 1] if arch.layers % p == 0 else []
        out.append(f"pipeline {p} x virtual_stages {layout.virtual} must divide the {arch.layers} layers "
                   "(each virtual stage holds the same layers)"
                   + (f"; virtual_stages that do: {', '.join(map(str, ok))}" if ok else
                      "; no virtual_stages > 1 does at this pipeline degree"))
    if layout.ranks > ranks:
        cp, cv = (" x context", f" x {layout.context}") if layout.context > 1 else ("", "")
        out.append(f"tensor{cp} x pipeline x data = {t}{cv} x {p} x {layout.data} = {layout.ranks}, "
                   f"but the cluster has {ranks} ranks")
    if global_batch % (layout.data * layout.microbatch):
        out.append(f"global batch {global_batch} sequences is not a multiple of data x microbatch "
                   f"= {layout.data} x {layout.microbatch}" + _microbatch_hint(global_batch, layout, ranks))
    if layout.zero not in ZERO_STAGES:
        out.append(f"zero {layout.zero} is not a ZeRO stage (0-3)")
    elif layout.zero > max_zero_stage:
        out.append(f"zero {layout.zero}: this platform's training libraries offer ZeRO stages up to "
                   f"{max_zero_stage}")
    return out


def _microbatch_hint(global_batch: int, layout: Layout, ranks: int) -> str:
    """What would divide the global batch: the micro-batches at the layout's data degree (the divisors
    of ``global_batch / data``), or, where the data degree does not divide it, the data degrees at its
    micro-batch that the cluster's ranks hold."""
    def listed(ok: list[int]) -> str:
        return ", ".join(map(str, ok)) if len(ok) <= 12 else ", ".join(map(str, ok[:11])) + f", ... {ok[-1]}"

    if global_batch % layout.data == 0:
        return f" (allowed at data {layout.data}: microbatch {listed(divisors(global_batch // layout.data))})"
    most = ranks // max(1, layout.ranks // layout.data)
    ok = [d for d in divisors(global_batch) if d <= most and global_batch % (d * layout.microbatch) == 0]
    return f" (allowed at microbatch {layout.microbatch}: data {listed(ok)})" if ok else ""


def expert_problems(arch: Architecture, expert: int, data: int, tensor: int = 1) -> list[str]:
    """Why ``expert`` expert-parallel ranks cannot split ``arch`` (empty: they can)."""
    m = arch.moe
    if m is None:
        return [f"expert {expert}: {arch.name} has no experts (expert parallelism needs architecture.moe)"] \
            if expert > 1 else []
    out = []
    if m.experts % expert:
        ok = divisors(m.experts)
        near = min(ok, key=lambda d: (abs(d - expert), d))
        out.append(f"expert {expert} must divide the {m.experts} experts (allowed: "
                   f"{', '.join(map(str, ok))}; nearest: {near})")
    if data % expert:
        out.append(f"expert {expert} must divide the data-parallel degree {data} (expert-parallel groups "
                   "are carved out of the data-parallel ranks)")
    if m.expert_intermediate_size % tensor:
        out.append(f"tensor {tensor} (the ranks each expert is split over) must divide the expert "
                   f"feed-forward size {m.expert_intermediate_size}")
    return out


def context_problems(layout: Layout, arch: Architecture, seq_len: int | None) -> list[str]:
    """Why the layout's context parallelism and offload cannot run (empty: they can)."""
    out = []
    c = layout.context
    if seq_len is not None and c > 1 and seq_len % c:
        near = nearest_divisor(seq_len, c)
        out.append(f"context {c} must divide the sequence length {seq_len} (nearest valid: context {near})")
    if c > 1 and layout.context_comm == "all_to_all":
        heads = arch.heads // max(1, layout.tensor)
        if heads % c:
            out.append(f"context_comm all_to_all splits the {heads} attention heads of a tensor-parallel "
                       f"rank over context {c}, which must divide them (nearest valid: context "
                       f"{nearest_divisor(heads, c)}, or context_comm: ring)")
    if layout.context_comm not in CONTEXT_COMMS:
        out.append(f"context_comm {layout.context_comm!r} is not one of {', '.join(CONTEXT_COMMS)}")
    if layout.offload not in OFFLOADS:
        out.append(f"offload {layout.offload!r} is not one of {', '.join(OFFLOADS)}")
    elif layout.offload == "cpu" and layout.zero < 1:
        out.append("offload cpu moves the ZeRO-partitioned optimizer state: it needs zero 1, 2 or 3")
    elif layout.offload == "nvme" and layout.zero != 3:
        out.append("offload nvme (ZeRO-Infinity) needs zero 3")
    return out


def nearest_divisor(n: int, k: int) -> int:
    """The divisor of ``n`` nearest to ``k`` (the smaller on a tie)."""
    return min(divisors(n), key=lambda d: (abs(d - k), d))


def stage_layers(layers: int, pipeline: int) -> tuple[int, int, int]:
    """Layers of the first, a middle and the last stage when ``pipeline`` stages share ``layers``.

    Stages hold ``layers // pipeline`` layers, and the remainder goes one layer each to the middle
    stages first (the first and last stages also carry the embeddings and the head), then to the
    first, then to the last. With one stage, or a degree that divides the layers, every stage holds
    the same. The middle figure is the heaviest middle stage (equal to the first with two stages).
    """
    q, r = divmod(layers, pipeline)
    to_mid = min(r, max(pipeline - 2, 0))
    rest = r - to_mid
    mid = q + (1 if to_mid else 0) if pipeline > 2 else q + (rest >= 1)
    return q + (rest >= 1), mid, q + (rest >= 2)


def divisors(n: int) -> list[int]:
    """Positive divisors of ``n``, ascending."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))
