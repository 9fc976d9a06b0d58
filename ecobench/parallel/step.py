"""Time and memory of one training step for many layouts at once (numpy, vectorised).

The model, per rank of the slowest pipeline stage:

* **Compute**: every kernel of a layer, its embedding and its head at the micro-batch, each taking
  ``max(executed FLOPs / (compute x peak), bytes / (memory x bandwidth)) + overhead`` (attention
  kernels at ``compute x attention``); the efficiencies come from :class:`Efficiency` (fitted on
  published points, see ``hardware/backends/efficiency.py``). Backward runs the ``.grad`` kernels;
  recomputation adds the attention core (``selective``), the matmuls and elementwise work per-op
  checkpointing does not keep (``selective_op``, :func:`op_checkpoint`) or the whole layer's forward
  (``full``).
* **Tensor parallelism** (sequence parallel): per layer, two all-gathers and two reduce-scatters of
  the layer's activations in the forward pass and as many in the backward (and in a recomputed
  forward), on the instance's device link, not overlapped with compute.
* **Pipeline**: ``m`` micro-batches take ``m + bubble`` slots of the slowest stage's micro-batch
  time plus a send of the boundary activations each way. The bubble is ``p - 1`` slots for 1F1B
  (``(p - 1) / (m + p - 1)`` of the pipeline time), ``(p - 1) / v`` for the interleaved schedule with
  ``v`` virtual stages, and ``(p - 1) (F + B - W) / (F + B + W)`` for zero-bubble ZB-H1 (Qi et al.
  2023, arXiv 2311.04934, Sec. 3: one third of 1F1B's when the forward, the input-gradient and the
  weight-gradient passes take as long; the backward is split evenly between B and W). Stages that
  do not divide the layers hold ``layers // p`` or one more (``layout.stage_layers``); the slowest
  stage, with the embeddings on the first and the head on the last, sets the slot.
* **Data parallelism**: gradients reduced once per step (ZeRO 0-2: a reduce-scatter and an
  all-gather, the volume of an all-reduce) over the instance link inside an instance and the instance
  network across instances, overlapping the last micro-batch's backward pass. ZeRO-3 gathers each
  layer's parameters before its forward and before its backward (its recomputed forward runs on the
  latter), and reduce-scatters its gradients after it, every micro-batch, overlapping that
  micro-batch's compute (the backward's collectives overlap the recomputation too). These per-layer
  collectives run over the whole data-parallel group as NCCL runs all-gathers and reduce-scatters,
  on a ring: ``d - 1`` steps each paying the network's step
  latency, so a large group's small per-layer messages get a fraction of the link bandwidth (at
  1,536 ranks a ring step of a 175B model's 3.6 GB layer moves 2.4 MB). A stack that gathers each
  parameter tensor on its own (DeepSpeed's ZeRO-3 of 2021: ``Efficiency.zero3_per_tensor``) pays
  that latency once per tensor (:func:`layer_tensors`); one whose gathers synchronise the device
  (the same DeepSpeed: ``Efficiency.zero3_sync_gathers``) overlaps none of them with compute, only
  its reduce-scatters. Overlap is imperfect: see :func:`exposed`.
* **Optimizer**: the rank's (ZeRO-sharded) parameters' optimizer state streamed once per step; with
  offload, the host runs it instead (``offload.py``).
* **Expert parallelism** (mixture-of-experts, ``workloads/moe.py``): per MoE layer and micro-batch,
  an all-to-all dispatch and an all-to-all combine of the rank's routed token copies in the forward
  pass and as many in the backward (and in a recomputed forward), over the expert-parallel group's
  fabrics (the group spans ``expert_tensor x context x expert`` consecutive ranks: with Megatron-Core's
  parallel folding, ``expert_tensor`` 1, an expert-parallel group of 8 stays in one instance whatever
  the tensor degree). A ``deduplicated`` dispatch (DeepEP, HybridEP, DeepSeek-V3's) sends a token once
  to each other instance holding any of its ``k`` experts, ``N (1 - (1 - 1/N)^k)`` of the group's
  ``N`` instances on average with uniform routing, not ``k`` copies (:func:`dispatch_inter_share`).
  The all-to-alls are not overlapped with compute, except with ``expert_overlap`` (Megatron-Core's
  ``overlap_moe_expert_parallel_comm``, which runs one micro-batch's all-to-alls under another's
  forward or backward; DeepSeek's DualPipe): then what :func:`exposed` leaves of them against the
  layer's compute.
* **Context parallelism** (``context.py``): ``c`` ranks split each sequence, dividing a rank's
  compute, activations and tensor/pipeline/expert traffic by ``c``; the attention exchanges keys and
  values (ring) or heads (all-to-all); gradients and ZeRO shards span data x context ranks.

Memory per rank: weights, gradients and optimizer state by precision, optimizer, master weights,
ZeRO stage and offload (``memory.py``), the saved activations of the micro-batches in flight (1F1B
and ZB-H1 keep ``min(p, m)`` on the first stage, the interleaved schedule ``p + (p - 1) / v`` stages'
worth: Megatron-LM's warm-up of ``2 (p - 1) + (v - 1) p`` virtual-stage micro-batches plus one;
recompute keeps less), the fp32 logits on the last stage (an eager cross-entropy's backward two
more copies: :data:`EAGER_LOSS_EXTRA_COPIES`), and a fixed workspace.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecobench.parallel.collectives import all_gather_s, all_to_all_s, hierarchical_all_reduce_s, send_s
from ecobench.parallel.context import CONTEXT_COMMS, context_layer_comm_s
from ecobench.parallel.layout import EXPERT_DISPATCHES, RECOMPUTE, SCHEDULES, Layout
from ecobench.parallel.memory import optimizer_step_bytes, state_bytes
from ecobench.parallel.offload import OFFLOADS, offload_step_s
from ecobench.units import BYTES_PER_DTYPE, GIB
from ecobench.workloads.architecture import Architecture, Task
from ecobench.workloads.kernels import Kernel
from ecobench.workloads.ops import matmul
from ecobench.workloads.transformer import (
    backward_of,
    embedding_kernels,
    head_kernels,
    mean_layer_kernels,
    optimizer_kernel,
)

# Device memory a rank cannot give to the model: runtime context, collective buffers, allocator
# fragmentation (an assumption: PyTorch's CUDA context alone takes 0.3-0.5 GiB).
WORKSPACE_GIB = 1.0
# Training state per parameter, bytes (weights, gradients, optimizer): ``memory.state_bytes``.
TP_COLLECTIVES_PER_PASS = 4  # sequence parallel: 2 all-gathers + 2 reduce-scatters per layer and pass
# An eager PyTorch cross-entropy (``F.cross_entropy(pred.float(), labels)``: log_softmax then nll_loss)
# keeps its fp32 log-probabilities for the backward pass, which then makes the fp32 gradient of the
# log-probabilities (nll_loss_backward) and of the logits (_log_softmax_backward_data) while the
# log-probabilities are still held and before any layer's activations are freed: two fp32 copies of
# the logits beyond the one ``transformer.LOSS_BYTES_PER_LOGIT`` counts (torchtitan's train.py and
# loss at 9dec370, 2024-12-26, where compiling the loss was turned off: "compiling loss function
# causes CUDA errors").
EAGER_LOSS_EXTRA_COPIES = 2


@dataclass(frozen=True)
class Cluster:
    """Per-rank compute and memory and the two fabrics of a cluster of identical instances."""

    ranks_per_node: int
    peak_tflops: float  # per rank, dense, in the job's data type
    memory_gb_per_s: float  # per rank
    memory_gib: float  # per rank
    intra_gb_per_s: float  # per rank, one direction
    inter_gb_per_s: float  # per instance, one direction (its ranks share it)
    intra_latency_s: float
    inter_latency_s: float
    activations_on_chip: bool = False
    peak_16bit_tflops: float | None = None  # FP8 jobs: the BF16 peak their attention runs at
    max_zero_stage: int = 3  # the highest ZeRO stage the platform's training libraries offer
    host_link_gb_per_s: float = float("nan")  # per rank, to host memory (offload; NaN: no figure)
    host_optimizer_gb_per_s: float = float("nan")  # per rank: its share of the host's DRAM for the step
    nvme_gb_per_s: float = float("nan")  # per rank: its share of the instance's NVMe drives
    memory_headroom_pct: float = 0.0  # share of the device's memory ``memory_gib`` already leaves free
    ranks_per_chip: int = 1  # ranks sharing one chip and its links (NeuronCores; 1 for a GPU)


def is_8bit(cl: Cluster) -> bool:
    """Whether the job's weight matmuls run at a peak above the chip's 16-bit one (FP8, INT8)."""
    return cl.peak_16bit_tflops is not None and cl.peak_tflops > cl.peak_16bit_tflops


def matmul_peak_tflops(cl: Cluster, eff: Efficiency) -> float:
    """The peak a weight matmul's compute share applies to: the job's data type's, times
    ``eff.low_precision`` for an 8-bit job (:func:`is_8bit`): 8-bit matmuls reach a smaller share of
    their doubled peak than 16-bit ones of theirs, and quantizing their inputs costs time of its own."""
    return cl.peak_tflops * (eff.low_precision if is_8bit(cl) else 1.0)


# FP8 training runs the weight matmuls in FP8 and keeps attention, elementwise work and the
# activations in BF16 (NVIDIA Transformer Engine's FP8 recipe; the Neuron cFP8 path likewise).
FP8_ACTIVATION_DTYPE = "bf16"


@dataclass(frozen=True)
class Efficiency:
    """What share of its peaks a stack achieves: compute-bound kernels, memory-bound kernels, a
    fixed cost per kernel, and collectives against the link bandwidth."""

    compute: float
    memory: float
    overhead_s: float
    network: float
    source: str = ""
    attention: float = 1.0  # attention-core kernels reach this share of ``compute``
    sharded_network: float = 1.0  # ZeRO-3 parameter gathers reach this share of ``network``
    zero3_per_tensor: bool = False  # ZeRO-3 gathers each parameter tensor of a layer on its own
    zero3_sync_gathers: bool = False  # ZeRO-3's parameter gathers wait for the device: none overlaps compute
    collective_latency_s: float | None = None  # serving: seconds per all-reduce step (None: the link's)
    step_overhead_s: float = 0.0  # serving: fixed seconds per decode step (the engine's host work)
    seq_step_overhead_s: float = 0.0  # serving: host seconds per sequence of a step (host-bound stacks)
    kv_reread: float = 0.0  # serving: share of an ungrouped decode attention's repeated reads from memory
    launch_s: float = 0.0  # serving: host seconds per kernel an eager engine launches (0: CUDA graphs)
    gemm_half_rows: float = 0.0  # token rows at which a weight matmul reaches half its compute share
    low_precision: float = 1.0  # an 8-bit job's weight matmuls reach this share of ``compute`` of their peak

    @property
    def steps_wait_on_host(self) -> bool:
        """Whether the engine's step loop runs on the host between device steps (a cost per sequence
        of a step: vLLM V0), so the device waits with nothing launched for that time."""
        return self.seq_step_overhead_s > 0


@dataclass(frozen=True)
class Workload:
    """The model-side inputs of a training step."""

    arch: Architecture
    seq_len: int
    global_batch: int  # sequences per optimizer step
    dtype: str
    task: Task = "pretrain"
    num_labels: int = 2
    fused_attention: bool | None = None  # None: flash attention for decoders, unfused for encoders
    optimizer: str = "adam"  # adam, adam_8bit or sgd (memory.py)
    master_weights: bool = True  # fp32 copy of the weights beside 16-bit ones
    # The cross-entropy runs fused (Megatron's vocab-parallel kernel, a compiled loss: its fp32
    # logits are all it holds) or eager (PyTorch's ``cross_entropy(logits.float(), labels)``: its
    # backward makes two more fp32 tensors of the logits' size, :data:`EAGER_LOSS_EXTRA_COPIES`).
    fused_loss: bool = True


ROUTED_EXPERT_KERNELS = ("moe.experts.up", "moe.experts.down")  # workloads/moe.py


@dataclass(frozen=True)
class KernelArrays:
    """A kernel list as arrays: executed FLOPs, activation bytes and weight bytes, per sample, and
    which kernels run at the low-precision peak (weight matmuls; the rest at 16 bits in FP8 jobs)."""

    flops: np.ndarray
    act_bytes: np.ndarray
    weight_bytes: np.ndarray
    saved_bytes: float
    weight_matmul: np.ndarray
    attention: np.ndarray
    routed: np.ndarray | None = None  # the routed experts' matmuls of MoE layers (None: no MoE layer)
    rows: np.ndarray | None = None  # token rows per sample of each weight matmul (0 elsewhere; None: none)

    @classmethod
    def of(cls, kernels: list[Kernel]) -> KernelArrays:
        """Arrays of kernels built with batch 1 (their bytes are activations plus weights)."""
        w = np.array([_weight_bytes(k) for k in kernels], dtype=float)
        b = np.array([k.bytes for k in kernels], dtype=float)
        routed = np.array([k.name.startswith(ROUTED_EXPERT_KERNELS) for k in kernels], dtype=bool)
        return cls(np.array([k.executed_flops for k in kernels], dtype=float), b - w, w,
                   float(sum(k.saved_bytes for k in kernels)),
                   np.array([k.kind == "matmul" and k.weights for k in kernels], dtype=bool),
                   np.array([k.kind == "attention" or (k.kind == "matmul" and not k.weights)
                             for k in kernels], dtype=bool),
                   routed if routed.any() else None,
                   np.array([float(k.dims[1]) if k.kind == "matmul" and k.weights and k.dims else 0.0
                             for k in kernels], dtype=float))

    def time_s(self, micro: np.ndarray, cl: Cluster, eff: Efficiency) -> np.ndarray:
        """Seconds for ``micro`` samples (array) through these kernels on one rank."""
        m = np.asarray(micro, dtype=float)[..., None]
        return kernel_time_s(self.flops, self.act_bytes, self.weight_bytes, self.weight_matmul,
                             self.attention, m,
                             matmul_peak_tflops(cl, eff), cl.peak_16bit_tflops or cl.peak_tflops,
                             cl.memory_gb_per_s, cl.activations_on_chip, eff.compute, eff.attention,
                             eff.memory, eff.overhead_s, self.rows if self.rows is not None else 0.0,
                             eff.gemm_half_rows).sum(axis=-1)


def _weight_bytes(k: Kernel) -> float:
    """Bytes of the weight a matmul reads (twice in the backward pass: input and weight gradients)."""
    if not (k.weights and k.dims):
        return 0.0
    stored = BYTES_PER_DTYPE[k.weight_dtype or k.dtype]
    return k.dims[2] * k.dims[3] * stored * (2 if k.phase == "backward" else 1)


@dataclass(frozen=True)
class StageKernels:
    """Kernels of one layer, the embeddings and the head for one tensor-parallel degree."""

    layer_fwd: KernelArrays
    layer_bwd: KernelArrays
    attn_fwd: KernelArrays  # recomputed by selective recomputation
    embed_fwd: KernelArrays
    embed_bwd: KernelArrays
    head_fwd: KernelArrays
    head_bwd: KernelArrays
    layer_saved_selective: float  # per sample
    layer_input_bytes: float  # per sample, on one rank (sequence parallel)
    op_fwd: KernelArrays | None = None  # recomputed by per-op selective checkpointing (``selective_op``)
    layer_saved_op: float = 0.0  # per sample: what ``selective_op`` keeps of a layer
    loss_saved: float = 0.0  # per sample: the fp32 logits the cross-entropy keeps on one rank
    a2a_bytes: float = 0.0  # per sample and mean layer: routed token copies one rank dispatches
    kv_bytes: float = 0.0  # per sample: one layer's keys and values on one tensor-parallel rank
    qkvo_bytes: float = 0.0  # per sample: its queries, keys, values and attention output


@functools.lru_cache(maxsize=512)
def stage_kernels(w: Workload, tensor: int, expert: int = 1,
                  expert_tensor: int | None = None) -> StageKernels:
    """The kernel arrays of one tensor-parallel (and expert-parallel) rank (built with batch 1);
    ``expert_tensor``: the ranks each expert is split over (None: ``tensor``)."""
    a, s = w.arch, w.seq_len
    dt = FP8_ACTIVATION_DTYPE if w.dtype == "fp8" else w.dtype
    layer = mean_layer_kernels(a, s, dt, tensor, w.fused_attention, expert,
                               None if expert_tensor == tensor else expert_tensor)
    attn = [k for k in layer if k.kind == "attention" or k.name in ("attention.scores", "attention.softmax",
                                                                        "attention.context")]
    emb = embedding_kernels(a, s, dt, tensor)
    head = head_kernels(a, s, 1, dt, "training", w.task, w.num_labels, tensor)
    qkv_out = s * a.qkv_width / tensor * BYTES_PER_DTYPE[dt]
    kv_rank = max(1, a.kv // tensor) * s * a.head_dim * BYTES_PER_DTYPE[dt]
    saved = KernelArrays.of(layer).saved_bytes
    op_recompute, op_saved = op_checkpoint(layer, s, a.hidden_size, tensor, dt)
    return StageKernels(
        KernelArrays.of(layer), KernelArrays.of([backward_of(k) for k in layer]), KernelArrays.of(attn),
        KernelArrays.of(emb), KernelArrays.of([backward_of(k) for k in emb]),
        KernelArrays.of(head), KernelArrays.of([backward_of(k) for k in head]),
        saved - KernelArrays.of(attn).saved_bytes + qkv_out,
        s * a.hidden_size / tensor * BYTES_PER_DTYPE[dt], KernelArrays.of(op_recompute), op_saved,
        sum(k.saved_bytes for k in head if k.name.startswith("loss.")), a2a_bytes(w, tensor),
        kv_bytes=2 * kv_rank,
        qkvo_bytes=2 * kv_rank + 2 * s * a.heads // tensor * a.head_dim * BYTES_PER_DTYPE[dt])


# The weight matmuls a fused kernel stands for, in the order a PyTorch layer calls them (torchtitan's
# Llama: ``self.wq(x), self.wk(x), self.wv(x)`` and ``self.w2(F.silu(self.w1(x)) * self.w3(x))``), as
# shares of the fused kernel's output width: ``attention.qkv`` is three products (queries, then keys,
# then values), ``ffn.gate_up`` two (gate, then up).
def _mm_outputs(k: Kernel, queries: int) -> list[int]:
    assert k.dims is not None
    n = k.dims[3]
    if k.name == "attention.qkv" and 0 < queries < n:
        kv = (n - queries) // 2
        return [queries, kv, kv]
    if k.name == "ffn.gate_up":
        return [n // 2, n // 2]
    return [n]


def op_checkpoint(layer: list[Kernel], seq_len: int, hidden: int, tensor: int,
                  dtype: str) -> tuple[list[Kernel], float]:
    """Per-op selective activation checkpointing, as torchtitan's ``selective_ac_option = "op"``
    (``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370, 2024-12-26, and at 1ea476e,
    2024-04-24: ``_save_list`` / ``no_recompute_list``): a layer keeps its input, the output of its
    attention kernel (flash SDPA: the output and the fp32 log-sum-exp), of every reduce-scatter
    (tensor parallel) and of every *other* matmul (the 1st, 3rd, 5th, ... ``aten.mm`` it calls: "Saves
    output of all compute ops, except every second mm"), and recomputes everything else in the
    backward pass: the other matmuls, the norms, rotary embeddings and activations, and the
    tensor-parallel all-gathers. Returns (the kernels recomputed, the bytes per sample kept).

    A mixture-of-experts or latent-attention layer is counted the same way over its weight matmuls
    (an approximation: torchtitan's grouped expert matmuls are not ``aten.mm``)."""
    b = BYTES_PER_DTYPE[dtype]
    kept = seq_len * hidden / tensor * b  # the layer's input (sequence-parallel shard)
    recompute: list[Kernel] = []
    count = 0
    # the queries' width on this rank: the attention output projection's input
    queries = next((x.dims[2] for x in layer if x.name == "attention.output" and x.dims), 0)
    for k in layer:
        if k.kind == "matmul" and k.weights and k.dims:
            c, m, kk, _ = k.dims
            for n in _mm_outputs(k, queries):
                count += 1
                if count % 2:
                    kept += c * m * n * b
                else:
                    recompute.append(matmul(k.name, "forward", m, kk, n, 1, dtype, k.layer, saved_share=0.0,
                                            weight_dtype=k.weight_dtype))
        elif k.kind == "attention":  # flash SDPA: its output (bf16) and log-sum-exp (fp32) are kept
            assert k.dims is not None
            heads, s, d, _ = k.dims
            kept += heads * s * d * b + heads * s * 4
        else:  # norms, activations, unfused attention's score products: recomputed
            recompute.append(dataclasses.replace(k, saved_bytes=0.0))
    if tensor > 1:  # the row-parallel outputs' reduce-scatters (attention and feed-forward) are kept
        kept += 2 * seq_len * hidden / tensor * b
    return recompute, kept


def a2a_bytes(w: Workload, tensor: int) -> float:
    """Bytes of routed token copies one rank sends in one all-to-all, per sample, averaged over the
    layers (its sequence-parallel share of the tokens, each to ``experts_per_token`` experts; the
    busiest expert's capacity factor more)."""
    m, a = w.arch.moe, w.arch
    if m is None:
        return 0.0
    dt = FP8_ACTIVATION_DTYPE if w.dtype == "fp8" else w.dtype
    return (w.seq_len / tensor * m.experts_per_token * m.capacity_factor * a.hidden_size
            * BYTES_PER_DTYPE[dt] * a.moe_layers / a.layers)


@dataclass
class Layouts:
    """Many layouts as parallel arrays (one entry per candidate)."""

    tensor: np.ndarray
    pipeline: np.ndarray
    data: np.ndarray
    zero: np.ndarray
    recompute: np.ndarray  # index into RECOMPUTE
    microbatch: np.ndarray
    virtual: np.ndarray
    nodes: np.ndarray
    expert: np.ndarray | None = None  # None: 1 everywhere (no expert parallelism)
    context: np.ndarray | None = None  # None: 1 for every layout
    context_comm: np.ndarray | None = None  # index into CONTEXT_COMMS; None: ring
    offload: np.ndarray | None = None  # index into OFFLOADS; None: none
    schedule: np.ndarray | None = None  # index into SCHEDULES (None: 1F1B, interleaved where virtual > 1)
    expert_tensor: np.ndarray | None = None  # ranks each expert is split over (None: tensor)
    expert_dispatch: np.ndarray | None = None  # index into EXPERT_DISPATCHES (None: all-to-all)
    expert_overlap: np.ndarray | None = None  # 1: all-to-alls overlapped with compute (None: 0)

    def __post_init__(self) -> None:
        n = len(self.tensor)
        if self.expert_tensor is None:
            self.expert_tensor = np.asarray(self.tensor, dtype=np.int64)
        if self.expert_dispatch is None:
            self.expert_dispatch = np.zeros(n, dtype=np.int64)
        if self.expert_overlap is None:
            self.expert_overlap = np.zeros(n, dtype=np.int64)
        if self.expert is None:
            self.expert = np.ones(n, dtype=np.int64)
        if self.context is None:
            self.context = np.ones(n, dtype=np.int64)
        if self.context_comm is None:
            self.context_comm = np.zeros(n, dtype=np.int64)
        if self.offload is None:
            self.offload = np.zeros(n, dtype=np.int64)
        if self.schedule is None:
            self.schedule = np.zeros(n, dtype=np.int64)

    FIELDS = ("tensor", "pipeline", "data", "zero", "recompute", "microbatch", "virtual", "nodes",
              "expert", "context", "context_comm", "offload", "schedule", "expert_tensor", "expert_dispatch",
              "expert_overlap")

    @classmethod
    def of(cls, layouts: list[Layout], nodes: int | list[int]) -> Layouts:
        n = nodes if isinstance(nodes, list) else [nodes] * len(layouts)
        col = lambda f: np.array([f(x) for x in layouts], dtype=np.int64)  # noqa: E731
        return cls(col(lambda x: x.tensor), col(lambda x: x.pipeline), col(lambda x: x.data),
                   col(lambda x: x.zero), col(lambda x: RECOMPUTE.index(x.recompute)),
                   col(lambda x: x.microbatch), col(lambda x: x.virtual), np.array(n, dtype=np.int64),
                   col(lambda x: x.expert), col(lambda x: x.context),
                   col(lambda x: CONTEXT_COMMS.index(x.context_comm)),
                   col(lambda x: OFFLOADS.index(x.offload)), col(lambda x: SCHEDULES.index(x.schedule)),
                   col(lambda x: x.tensor if x.expert_tensor is None else x.expert_tensor),
                   col(lambda x: EXPERT_DISPATCHES.index(x.expert_dispatch)),
                   col(lambda x: int(x.expert_overlap)))

    def select(self, mask: np.ndarray) -> Layouts:
        """The layouts where ``mask`` holds."""
        return Layouts(*(getattr(self, f)[mask] for f in self.FIELDS))

    where = select

    @property
    def schedules(self) -> np.ndarray:
        """Schedule index of every layout (0, 1F1B, where none was given)."""
        assert self.schedule is not None
        return self.schedule

    def __len__(self) -> int:
        return len(self.tensor)

    def layout(self, i: int) -> Layout:
        """The ``i``-th layout as a :class:`Layout`."""
        assert (self.expert is not None and self.context is not None and self.context_comm is not None
                and self.offload is not None and self.expert_tensor is not None
                and self.expert_dispatch is not None and self.expert_overlap is not None)
        et = int(self.expert_tensor[i])
        return Layout(int(self.tensor[i]), int(self.pipeline[i]), int(self.data[i]), int(self.zero[i]),
                      RECOMPUTE[int(self.recompute[i])], int(self.microbatch[i]), int(self.virtual[i]),
                      SCHEDULES[int(self.schedules[i])], expert=int(self.expert[i]),
                      context=int(self.context[i]), context_comm=CONTEXT_COMMS[int(self.context_comm[i])],
                      offload=OFFLOADS[int(self.offload[i])],
                      expert_tensor=None if et == int(self.tensor[i]) else et,
                      expert_dispatch=EXPERT_DISPATCHES[int(self.expert_dispatch[i])],
                      expert_overlap=bool(self.expert_overlap[i]))


@dataclass
class StepResult:
    """Arrays, one entry per layout: step time and its parts, memory per rank, and the shares."""

    step_s: np.ndarray
    compute_s: np.ndarray  # pipeline time without communication
    comm_exposed_s: np.ndarray
    bubble_s: np.ndarray
    memory_gib: np.ndarray
    fits: np.ndarray
    mfu: np.ndarray
    sequences_per_s: np.ndarray
    parts: dict[str, np.ndarray]

    def row(self, i: int) -> dict[str, Any]:
        """The figures of layout ``i`` as plain floats."""
        return {"step_s": float(self.step_s[i]), "compute_s": float(self.compute_s[i]),
                "comm_exposed_s": float(self.comm_exposed_s[i]), "bubble_s": float(self.bubble_s[i]),
                "memory_per_device_gib": float(self.memory_gib[i]), "fits": bool(self.fits[i]),
                "mfu": float(self.mfu[i]), "sequences_per_s": float(self.sequences_per_s[i]),
                **{k: float(v[i]) for k, v in self.parts.items()}}


def exposed(comm_s: np.ndarray, window_s: np.ndarray) -> np.ndarray:
    """Communication left exposed when it overlaps a compute window: ``c^2 / (c + w)``. It tends to
    ``c - w`` when communication dominates and to 0 when compute does, and is ``c / 2`` when they are
    equal: overlap is never perfect (the last bucket, contention for memory and links)."""
    c = np.asarray(comm_s, dtype=float)
    return np.where(c > 0, c * c / np.maximum(c + window_s, 1e-30), 0.0)


@functools.lru_cache(maxsize=256)
def model_flops_per_sequence(w: Workload) -> float:
    """Training FLOPs of one sequence as MFU counts them: 3x the forward matmul and attention FLOPs
    (no recomputation; causal attention counted whole)."""
    ks = embedding_kernels(w.arch, w.seq_len, w.dtype) + head_kernels(
        w.arch, w.seq_len, 1, w.dtype, "training", w.task, w.num_labels)
    layer = mean_layer_kernels(w.arch, w.seq_len, w.dtype, 1, w.fused_attention)
    mm = lambda kk: sum(k.flops for k in kk if k.kind in ("matmul", "attention"))  # noqa: E731
    return 3.0 * (mm(ks) + w.arch.layers * mm(layer))


def dispatch_inter_share(nodes: Any, topk: Any) -> Any:
    """Of the token copies a rank sends to other instances, the share a deduplicated dispatch sends:
    a token goes once to each other instance holding any of its ``topk`` experts. With experts spread
    evenly over ``nodes`` instances and uniform routing, a token's experts lie on
    ``nodes (1 - (1 - 1/nodes)^topk)`` instances on average, of which ``(nodes - 1) / nodes`` are
    other ones, against ``topk (nodes - 1) / nodes`` copies sent one by one."""
    n = np.maximum(np.asarray(nodes, dtype=float), 1.0)
    k = np.maximum(np.asarray(topk, dtype=float), 1.0)
    return n * (1.0 - (1.0 - 1.0 / n) ** k) / k


def layer_tensors(a: Architecture) -> int:
    """Parameter tensors of one layer as a framework holds them: the fused query/key/value, output
    and feed-forward weights (gate and up fused), their biases, and the two norms' scales (and
    shifts, for LayerNorm)."""
    linears = 4
    biases = linears if a.bias else (1 if a.qkv_bias else 0)
    norms = 2 * (2 if a.norm == "layernorm" else 1) + (2 if a.qk_norm else 0)
    return linears + biases + norms


def stage_layer_counts(layers: Any, pipeline: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layers of the first, the heaviest middle and the last stage (arrays; see
    :func:`ecobench.parallel.layout.stage_layers`, of which this is the vectorised form)."""
    p = np.asarray(pipeline)
    q, r = np.divmod(layers, p)
    to_mid = np.minimum(r, np.maximum(p - 2, 0))
    rest = r - to_mid
    first = q + (rest >= 1)
    mid = np.where(p > 2, q + (to_mid > 0), first)
    return first, mid, q + (rest >= 2)


def stage_params(w: Workload, pipeline: np.ndarray, expert: Any = 1,
                 expert_tensor_ratio: Any = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parameters one rank of the first, the heaviest middle and the last pipeline stage holds before
    tensor parallelism; expert parallelism splits the routed experts ``expert`` ways (a MoE layer
    counted at the mean over the layers), and each expert over ``tensor / expert_tensor_ratio`` ranks
    (the ratio is ``tensor / expert_tensor``: an expert split over fewer ranks than the tensor
    degree holds that much more of it on each)."""
    a = w.arch
    n_first, n_mid, n_last = stage_layer_counts(a.layers, pipeline)
    if a.moe is None:
        per_layer: Any = a.layer_params
    else:
        kept = np.asarray(expert_tensor_ratio, dtype=float) / np.asarray(expert, dtype=float)
        per_layer = (a.layers_params - a.routed_expert_params * (1 - kept)) / a.layers
    head = a.norm_params + a.head_params(w.task, w.num_labels) + (
        a.lm_head_params if a.kind == "decoder" else 0)
    tied_copy = np.where((pipeline > 1) & a.tied_embeddings & (a.kind == "decoder"),
                         a.vocab_size * a.hidden_size, 0)
    first = n_first * per_layer + a.embedding_params + np.where(pipeline == 1, head, 0)
    last = n_last * per_layer + head + tied_copy + np.where(pipeline == 1, a.embedding_params, 0)
    return first, n_mid * per_layer, last


STAGE_SETS = ("layer_fwd", "layer_bwd", "attn_fwd", "embed_fwd", "embed_bwd", "head_fwd", "head_bwd")
# The analytic model's sets: the stage sets and what per-op selective checkpointing recomputes (the
# emulated NeuronCore has no such mode: :class:`Cases` then takes the whole layer's forward).
ANALYTIC_SETS = (*STAGE_SETS, "op_fwd")


@dataclass
class Cases:
    """Everything the closed-form step needs, as arrays (one entry per case) or scalars.

    A case is a layout of a workload on a cluster: the search evaluates many layouts of one workload;
    the efficiency fit evaluates one layout of many workloads. Times are per micro-batch on one rank.
    """

    t: Any
    p: Any
    d: Any
    z: Any
    rc: Any
    b: Any
    v: Any
    f: Any  # layer forward
    g: Any  # layer backward
    att: Any  # attention core forward (selective recomputation)
    emb: Any  # embeddings forward + backward
    head: Any  # head forward + backward
    saved_none: Any  # activation bytes per sample and layer kept for the backward
    saved_sel: Any
    layer_in: Any
    head_saved: Any
    layers: Any
    global_batch: Any
    p_first: Any
    p_last: Any
    flops_per_seq: Any
    wb: Any
    gb: Any
    ob: Any
    ranks_per_node: Any
    peak_tflops: Any
    memory_gb_per_s: Any
    memory_gib: Any
    intra_gb_per_s: Any
    inter_gb_per_s: Any
    intra_latency_s: Any
    inter_latency_s: Any
    network: Any
    sharded_network: Any
    memory_eff: Any
    e: Any = 1  # expert-parallel degree
    a2a: Any = 0.0  # bytes per sample one rank sends in one all-to-all (mean layer)
    cp: Any = 1  # context-parallel degree
    cp_comm: Any = 0  # index into CONTEXT_COMMS
    kv_bytes: Any = 0.0
    qkvo_bytes: Any = 0.0
    off: Any = 0  # index into OFFLOADS
    ob_default: Any = 12  # the optimizer-state bytes of Adam (with master weights) in this precision
    host_link_gb_per_s: Any = float("nan")
    host_optimizer_gb_per_s: Any = float("nan")
    nvme_gb_per_s: Any = float("nan")
    sched: Any = 0  # index into SCHEDULES
    layer_tensors: Any = 1  # parameter tensors of one layer
    per_tensor: Any = False  # ZeRO-3 gathers each tensor on its own (else one collective per layer)
    sync_gathers: Any = False  # ZeRO-3's parameter gathers do not overlap compute
    p_mid: Any = 0.0  # parameters of the heaviest middle stage
    et: Any = None  # ranks each expert is split over (None: t)
    topk: Any = 1  # experts each token is routed to
    ep_dedup: Any = 0  # 1: deduplicated dispatch (a token crosses to each instance once)
    ep_overlap: Any = 0  # 1: all-to-alls overlapped with another micro-batch's compute
    op: Any = None  # forward work ``selective_op`` recomputes (None: the layer's forward, ``f``)
    saved_op: Any = 0.0  # activation bytes per sample and layer ``selective_op`` keeps
    loss_extra: Any = 0.0  # bytes per sample an eager cross-entropy's backward adds on the last stage


def kernel_time_s(flops: Any, act: Any, weight: Any, weight_matmul: Any, attention: Any, micro: Any,
                  peak: Any, peak16: Any, mem_gb_per_s: Any, on_chip: Any, compute: Any,
                  attention_share: Any, memory: Any, overhead_s: Any, rows: Any = 0.0,
                  half_rows: Any = 0.0) -> Any:
    """Seconds of each kernel for ``micro`` samples: ``max(FLOPs / (share x peak), bytes / (memory x
    bandwidth)) + overhead`` (every argument broadcasts). A weight matmul of ``M = micro x rows`` token
    rows reaches ``M / (M + half_rows)`` of its share (:func:`gemm_rows_share`)."""
    peak_k = np.where(weight_matmul, peak, peak16)
    share = np.where(attention, compute * attention_share, compute)
    t_c = micro * flops / (share * peak_k * 1e12) / gemm_rows_share(micro * np.asarray(rows, dtype=float),
                                                                     half_rows)
    t_m = np.where(on_chip, 0.0, (micro * act + weight) / (memory * mem_gb_per_s * 1e9))
    return np.maximum(t_c, t_m) + overhead_s * (flops > 0)


def gemm_rows_share(m: Any, half_rows: Any) -> Any:
    """The share of its large-matrix compute rate a weight matmul of ``m`` token rows reaches:
    ``m / (m + half_rows)`` (too few output tiles to fill the SMs: tile and wave quantization); 1 where
    ``m`` is 0 (not a weight matmul) or ``half_rows`` is 0."""
    m = np.asarray(m, dtype=float)
    return np.where(m > 0, m / np.maximum(m + half_rows, 1e-30), 1.0)


def case_constants(w: Workload, cl: Cluster, L: Layouts) -> dict[str, Any]:
    """The fields of :class:`Cases` that depend on neither the efficiencies nor the kernel times:
    the layouts, what each saves per layer, the workload's and the cluster's figures."""
    assert L.expert is not None and L.expert_tensor is not None
    width = int(L.expert.max(initial=0)) + 1
    we = int(L.expert_tensor.max(initial=0)) + 1
    uniq, inv = np.unique((L.tensor * width + L.expert) * we + L.expert_tensor, return_inverse=True)
    per_k = [stage_kernels(w, int(k // (width * we)), int(k // we % width), int(k % we)) for k in uniq]

    def col(f: Any) -> np.ndarray:  # a figure of each layout's (tensor, expert) degrees, from a table
        return np.array([f(sk) for sk in per_k], dtype=float).reshape(-1)[inv.reshape(-1)]

    p_first, p_mid, p_last = stage_params(w, L.pipeline, L.expert, L.tensor / L.expert_tensor)
    wb, gb, ob = state_bytes(w.dtype, w.optimizer, w.master_weights)
    extra: dict[str, Any] = {"ob_default": state_bytes(w.dtype)[2]}
    if L.context is not None and (L.context > 1).any():
        extra.update(cp=L.context, cp_comm=L.context_comm, kv_bytes=col(lambda k: k.kv_bytes),
                     qkvo_bytes=col(lambda k: k.qkvo_bytes))
    # every case carries the expert fields (the fit's batch concatenates the cases of dense and MoE points)
    extra.update(et=L.expert_tensor, topk=w.arch.moe.experts_per_token if w.arch.moe else 1,
                 ep_dedup=L.expert_dispatch, ep_overlap=L.expert_overlap)
    if L.offload is not None and (L.offload > 0).any():
        extra.update(off=L.offload, host_link_gb_per_s=cl.host_link_gb_per_s,
                     host_optimizer_gb_per_s=cl.host_optimizer_gb_per_s, nvme_gb_per_s=cl.nvme_gb_per_s)
    return extra | dict(
        t=L.tensor, p=L.pipeline, d=L.data, z=L.zero, rc=L.recompute, b=L.microbatch, v=L.virtual,
        sched=L.schedules, layer_tensors=layer_tensors(w.arch),
        saved_none=col(lambda k: k.layer_fwd.saved_bytes), saved_sel=col(lambda k: k.layer_saved_selective),
        saved_op=col(lambda k: k.layer_saved_op),
        loss_extra=0.0 if w.fused_loss else EAGER_LOSS_EXTRA_COPIES * col(lambda k: k.loss_saved),
        layer_in=col(lambda k: k.layer_input_bytes), head_saved=col(lambda k: k.head_fwd.saved_bytes),
        layers=w.arch.layers, global_batch=w.global_batch, p_first=p_first, p_last=p_last,
        p_mid=p_mid, flops_per_seq=model_flops_per_sequence(w), wb=wb, gb=gb, ob=ob,
        ranks_per_node=cl.ranks_per_node,
        peak_tflops=cl.peak_tflops, memory_gb_per_s=cl.memory_gb_per_s, memory_gib=cl.memory_gib,
        intra_gb_per_s=cl.intra_gb_per_s, inter_gb_per_s=cl.inter_gb_per_s,
        intra_latency_s=cl.intra_latency_s, inter_latency_s=cl.inter_latency_s, e=L.expert,
        a2a=col(lambda k: k.a2a_bytes))


def evaluate(w: Workload, cl: Cluster, L: Layouts, eff: Efficiency) -> StepResult:
    """Step time, memory per rank and MFU of every layout in ``L`` (numpy arrays)."""
    assert L.expert is not None and L.expert_tensor is not None
    wm = int(L.microbatch.max(initial=0)) + 1
    we = int(L.expert.max(initial=0)) + 1
    wt = int(L.expert_tensor.max(initial=0)) + 1
    uniq, inv = np.unique(((L.tensor * wm + L.microbatch) * we + L.expert) * wt + L.expert_tensor,
                          return_inverse=True)

    def stage_times(key: int) -> list[float]:
        k = key // wt
        sk = stage_kernels(w, int(k // (wm * we)), int(k % we), int(key % wt))
        b = (k // we) % wm
        return [float(getattr(sk, name).time_s(np.array([b]), cl, eff)[0]) for name in ANALYTIC_SETS]

    times = np.array([stage_times(k) for k in uniq]).reshape(-1, len(ANALYTIC_SETS))[inv.reshape(-1)]
    s = dict(zip(ANALYTIC_SETS, times.T, strict=True))
    return combine(Cases(**case_constants(w, cl, L), f=s["layer_fwd"], g=s["layer_bwd"], att=s["attn_fwd"],
                         op=s["op_fwd"],
                         emb=s["embed_fwd"] + s["embed_bwd"], head=s["head_fwd"] + s["head_bwd"],
                         network=eff.network, sharded_network=eff.sharded_network, memory_eff=eff.memory,
                         per_tensor=eff.zero3_per_tensor, sync_gathers=eff.zero3_sync_gathers))


def combine(c: Cases) -> StepResult:
    """The closed-form step (see the module docstring) for every case."""
    t, p, d, z, b, v, rc, cp = c.t, c.p, c.d, c.z, c.b, c.v, c.rc, c.cp
    # Context parallelism: each of ``cp`` ranks computes and stores 1/cp of every sequence.
    f, g, att, emb, head = c.f / cp, c.g / cp, c.att / cp, c.emb / cp, c.head / cp
    op = f if c.op is None else c.op / cp
    layer_in = c.layer_in / cp
    dc = d * cp  # ranks holding the same parameters: gradients and ZeRO shards span them
    n_first, n_mid, n_last = stage_layer_counts(c.layers, p)
    n_max = np.maximum(np.maximum(n_first, n_mid), n_last)
    full_rc = rc == RECOMPUTE.index("full")
    op_rc = rc == RECOMPUTE.index("selective_op")
    recompute_s = np.select([rc == 0, rc == 1, op_rc], [0.0, att, op], default=f)

    # Tensor-parallel collectives per layer and micro-batch (activations of the whole layer).
    net = c.network
    one = all_gather_s(b * layer_in * t, t, c.intra_gb_per_s * net, c.intra_latency_s)
    # (full recomputation repeats the forward's four; per-op checkpointing its two all-gathers, whose
    # outputs it does not keep, and not the reduce-scatters, whose outputs it keeps)
    tp_layer = (TP_COLLECTIVES_PER_PASS * (2 + full_rc) + TP_COLLECTIVES_PER_PASS // 2 * op_rc) * one
    tp_head = 2 * one  # gather before the head, scatter of its gradient
    cp_layer: Any = 0.0
    if np.any(np.asarray(cp) > 1):  # keys and values (ring) or heads (all-to-all) on the context group
        inside = t * cp <= c.ranks_per_node
        cp_link = np.where(inside, c.intra_gb_per_s, c.inter_gb_per_s / c.ranks_per_node) * net
        cp_lat = np.where(inside, c.intra_latency_s, c.inter_latency_s)
        cp_layer = context_layer_comm_s(c.cp_comm, cp, b, c.kv_bytes, c.qkvo_bytes, att, cp_link, cp_lat,
                                        exposed, 1 + full_rc)

    # Expert-parallel all-to-alls per layer and micro-batch: dispatch and combine in each pass (each
    # of the context ranks routes its 1/cp of the tokens).
    et = t if c.et is None else c.et
    ep_group_per_node = np.maximum(1, np.minimum(c.e, c.ranks_per_node // (et * cp)))
    inter_share = np.where(c.ep_dedup == 1, dispatch_inter_share(-(-c.e // ep_group_per_node), c.topk), 1.0)
    a2a_one = all_to_all_s(b * c.a2a / cp, c.e, ep_group_per_node, c.intra_gb_per_s * net, c.intra_latency_s,
                           c.inter_gb_per_s / c.ranks_per_node * net, c.inter_latency_s, inter_share)
    ep_layer = np.where(c.e > 1, 2 * (2 + (full_rc | op_rc)) * a2a_one, 0.0)  # per-op: all-to-alls not kept
    ep_layer = np.where(c.ep_overlap == 1, exposed(ep_layer, f + g + recompute_s), ep_layer)
    per_layer = f + g + recompute_s + tp_layer + ep_layer + cp_layer
    first = n_first * per_layer + np.where(p == 1, emb + head + tp_head, emb)
    last = n_last * per_layer + np.where(p == 1, emb + head + tp_head, head + tp_head)
    slot = np.maximum(np.maximum(first, last), n_mid * per_layer)
    # Stage boundary: the sequence-parallel activation shard, once each way per micro-batch.
    cross = t * dc >= c.ranks_per_node
    link = np.where(cross, c.inter_gb_per_s / c.ranks_per_node, c.intra_gb_per_s) * net
    lat = np.where(cross, c.inter_latency_s, c.intra_latency_s)
    p2p = np.where(p > 1, 2 * send_s(b * layer_in, link, lat), 0.0)
    m = c.global_batch / (d * b)
    zb_share = (f + recompute_s) / np.maximum(f + g + recompute_s, 1e-30)  # (F + B - W) / (F + B + W)
    bubble_slots = np.where(c.sched == SCHEDULES.index("zero-bubble"), (p - 1) * zb_share, (p - 1) / v)
    slots = m + bubble_slots
    pipe_s = slots * (slot + p2p)
    bubble_s = bubble_slots * (slot + p2p)

    # Data parallelism (and ZeRO), on the heaviest stage's parameters.
    params = np.maximum(np.maximum(c.p_first, c.p_last), c.p_mid) / t
    per_node = np.maximum(1, np.minimum(dc, c.ranks_per_node // t))
    inter_per_rank = c.inter_gb_per_s / c.ranks_per_node * net
    grads_s = hierarchical_all_reduce_s(params * c.gb, dc, per_node, c.intra_gb_per_s * net,
                                        c.intra_latency_s, inter_per_rank, c.inter_latency_s)
    last_bwd = n_max * g
    dp_exposed = np.where(z < 3, exposed(grads_s, last_bwd), 0.0)
    zn = c.sharded_network
    gather_s = hierarchical_all_reduce_s(params * c.wb, dc, per_node, c.intra_gb_per_s * net * zn,
                                         c.intra_latency_s, inter_per_rank * zn, c.inter_latency_s) / 2
    # Per-layer ring collectives: dc - 1 steps (data x context ranks), each at the latency of the
    # fabric the group spans.
    spans = dc > per_node
    ring_lat = np.maximum(dc - 1, 0) * np.where(spans, c.inter_latency_s, c.intra_latency_s) \
        * np.where(c.per_tensor, c.layer_tensors, 1)
    # Forward: one gather per layer. Backward: a gather and a reduce-scatter per layer, overlapping the
    # layer's backward and its recomputed forward (which runs on the parameters gathered for the
    # backward: FSDP and DeepSpeed unshard a checkpointed layer once for both).
    # A stack whose gathers synchronise the device (DeepSpeed's ZeRO-3 of 2021) overlaps only the
    # reduce-scatters, which run on their own stream.
    one_z3 = gather_s + n_max * ring_lat
    z3 = np.where(c.sync_gathers, 2 * one_z3 + exposed(one_z3, n_max * (g + recompute_s)),
                  exposed(one_z3, n_max * f) + exposed(2 * one_z3, n_max * (g + recompute_s)))
    dp_exposed = dp_exposed + np.where(z == 3, m * z3, 0.0)

    # Optimizer step: the rank's shard of the optimizer state, streamed once (on the host, offloaded).
    shard = np.where(z >= 1, params / dc, params)
    step_bytes = optimizer_kernel(1.0).bytes + optimizer_step_bytes(c.ob) - optimizer_step_bytes(c.ob_default)
    opt_s = shard * step_bytes / (c.memory_eff * c.memory_gb_per_s * 1e9)
    off = c.off
    if np.any(np.asarray(off) > 0):
        host_s = offload_step_s(off, shard, c.gb, c.wb, c.ob, step_bytes, c.host_link_gb_per_s,
                                c.host_optimizer_gb_per_s, c.nvme_gb_per_s, last_bwd, exposed)
        opt_s = np.where(off > 0, host_s, opt_s)

    step_s = pipe_s + dp_exposed + opt_s
    tp_s = slots * (n_max * tp_layer + tp_head)
    ep_s = slots * n_max * ep_layer
    cp_s = slots * n_max * cp_layer
    comm_s = tp_s + cp_s + slots * p2p + dp_exposed + ep_s

    # Memory per rank: the first stage holds the most micro-batches in flight.
    in_flight = np.minimum(np.where(v > 1, p + (p - 1) / v, p), m)
    saved = np.select([rc == 0, rc == 1, op_rc], [c.saved_none, c.saved_sel, c.saved_op], default=c.layer_in)
    # the layer being recomputed holds what it did not keep again, for its backward
    redone = np.maximum(c.saved_none - c.saved_op, 0.0)
    full = np.select([full_rc, op_rc], [c.saved_none, redone], default=0.0)
    act_first = b * (saved * n_first * in_flight + full) / cp
    act_mid = b * (saved * n_mid * in_flight + full) / cp
    act_last = b * (saved * n_last + c.head_saved + np.maximum(full, c.loss_extra)) / cp
    ob_device = np.where(off > 0, 0.0, c.ob)  # offloaded optimizer state lives on the host
    state = lambda prm: prm / t * (c.wb / np.where(z == 3, dc, 1) + c.gb / np.where(z >= 2, dc, 1)  # noqa: E731
                                   + ob_device / np.where(z >= 1, dc, 1))
    need = np.maximum(np.maximum(state(c.p_first) + act_first, state(c.p_last) + act_last),
                      state(c.p_mid) + act_mid) / GIB + WORKSPACE_GIB

    seq_per_s = c.global_batch / step_s
    mfu = c.flops_per_seq * seq_per_s / (t * cp * p * d * c.peak_tflops * 1e12)
    return StepResult(step_s=step_s, compute_s=step_s - comm_s, comm_exposed_s=comm_s, bubble_s=bubble_s,
                      memory_gib=need, fits=need <= c.memory_gib, mfu=mfu, sequences_per_s=seq_per_s,
                      parts={"tp_comm_s": tp_s, "cp_comm_s": cp_s + 0 * step_s, "pp_comm_s": slots * p2p,
                             "dp_comm_exposed_s": dp_exposed,
                             "optimizer_s": opt_s, "microbatches": m + 0 * step_s}
                      | ({"ep_comm_s": ep_s} if np.any(np.asarray(c.e) > 1) else {}))
