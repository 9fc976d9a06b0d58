"""A training layout: how a model is split over ranks (tensor x pipeline x data), how its optimizer
state is sharded (ZeRO stage), what is recomputed, and the micro-batch each rank runs.

A rank is one GPU, or one NeuronCore as the Neuron documentation counts them (a trn1.32xlarge has
32). Tensor-parallel groups stay inside one instance (their collectives run on every layer and
need the instance's link); ``tensor x pipeline x data`` equals ranks per instance x instances.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ecobench.workloads.architecture import Architecture

Recompute = Literal["none", "selective", "full"]
RECOMPUTE: tuple[Recompute, ...] = ("none", "selective", "full")
Schedule = Literal["1f1b", "interleaved", "zero-bubble"]
# Pipeline schedules: 1F1B (Narayanan et al., PipeDream-Flush, 2021), Megatron's interleaved 1F1B with
# virtual stages (Narayanan et al., SC'21, arXiv 2104.04473, Sec. 2.2.2) and ZB-H1 (Qi et al., "Zero
# Bubble Pipeline Parallelism", ICLR 2024, arXiv 2311.04934, Sec. 3).
SCHEDULES: tuple[Schedule, ...] = ("1f1b", "interleaved", "zero-bubble")
ZERO_STAGES = (0, 1, 2, 3)


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

    @property
    def ranks(self) -> int:
        """Ranks the layout occupies."""
        return self.tensor * self.pipeline * self.data

    def describe(self) -> str:
        """Short human-readable form, e.g. ``TP8 PP4 DP16 ZeRO-1 mb1 recompute selective``."""
        vp = f" VP{self.virtual}" if self.virtual > 1 else ""
        vp += " zero-bubble" if self.schedule == "zero-bubble" else ""
        return (f"TP{self.tensor} PP{self.pipeline}{vp} DP{self.data} ZeRO-{self.zero} "
                f"mb{self.microbatch} recompute {self.recompute}")


def microbatches(global_batch: int, layout: Layout) -> int:
    """Micro-batches each pipeline runs per optimizer step."""
    return global_batch // (layout.data * layout.microbatch)


def problems(layout: Layout, arch: Architecture, ranks: int, ranks_per_node: int,
             global_batch: int, max_zero_stage: int = 3) -> list[str]:
    """Why ``layout`` cannot run ``arch`` on ``ranks`` ranks with this global batch (empty: it can)."""
    out = []
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
    if p > arch.layers:
        out.append(f"pipeline {p} is more stages than the {arch.layers} layers")
    elif layout.virtual > 1 and arch.layers % (p * layout.virtual):
        ok = [v for v in divisors(arch.layers // p) if v > 1] if arch.layers % p == 0 else []
        out.append(f"pipeline {p} x virtual_stages {layout.virtual} must divide the {arch.layers} layers "
                   "(each virtual stage holds the same layers)"
                   + (f"; virtual_stages that do: {', '.join(map(str, ok))}" if ok else
                      "; no virtual_stages > 1 does at this pipeline degree"))
    if layout.ranks > ranks:
        out.append(f"tensor x pipeline x data = {t} x {p} x {layout.data} = {layout.ranks}, "
                   f"but the cluster has {ranks} ranks")
    if global_batch % (layout.data * layout.microbatch):
        out.append(f"global batch {global_batch} sequences is not a multiple of data x microbatch "
                   f"= {layout.data} x {layout.microbatch}")
    if layout.zero not in ZERO_STAGES:
        out.append(f"zero {layout.zero} is not a ZeRO stage (0-3)")
    elif layout.zero > max_zero_stage:
        out.append(f"zero {layout.zero}: this platform's training libraries offer ZeRO stages up to "
                   f"{max_zero_stage}")
    return out


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
