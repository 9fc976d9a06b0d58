"""An emulated training step: compute per rank from the engine model, the rest from the step model.

The per-rank times of one layer's forward and backward pass, of the attention core (recomputed by
selective recomputation), of the embeddings and of the head, at the layout's tensor-parallel degree
and micro-batch, come from the NeuronCore engine model (``work.py``, ``timing.py``). Tensor-,
pipeline- and data-parallel communication, the pipeline bubble, ZeRO, the optimizer step and
memory per rank come from :func:`ecobench.parallel.step.combine`, the closed form the analytic
backend uses, with the collectives at the fitted share ``collective`` of the NeuronLink and EFA
bandwidth (the CC-cores drive them beside the compute engines, which is why data-parallel
reductions overlap the backward pass) and the optimizer streaming at the core's DMA rate.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ecobench.hardware.neuron.arch import NeuronDeviceSpec
from ecobench.hardware.neuron.timing import EngineParams, sequence_times
from ecobench.hardware.neuron.work import MECHANISMS, WorkModel
from ecobench.parallel.layout import Layout, stage_layers
from ecobench.parallel.step import (
    FP8_ACTIVATION_DTYPE,
    STAGE_SETS,
    Cases,
    Cluster,
    Layouts,
    StepResult,
    Workload,
    case_constants,
    combine,
)
from ecobench.workloads.kernels import Kernel
from ecobench.workloads.transformer import backward_of, embedding_kernels, head_kernels, layer_kernels


def saved_bytes(k: Kernel, saved: dict[str, float]) -> float:
    """Activation bytes per sample a training kernel writes (forward) or reads back (backward)."""
    return k.saved_bytes if k.phase == "forward" else saved.get(k.name.removesuffix(".grad"), 0.0)


@dataclass(frozen=True)
class StageWork:
    """Engine work (rows: kernels, columns: mechanisms) of each kernel set of :data:`STAGE_SETS`
    for one micro-batch on one rank."""

    sets: dict[str, np.ndarray]


def _work(kernels: list[Kernel], wm: WorkModel, micro: int, saved: dict[str, float]) -> np.ndarray:
    rows = [wm.work(k, micro, saved_bytes(k, saved)) for k in kernels]
    return np.array(rows).reshape(len(kernels), len(MECHANISMS))


def weight_matmul_dtype(w: Workload) -> str | None:
    """FP8 training's weight matmuls run in FP8 (its kernels are built in BF16:
    ``FP8_ACTIVATION_DTYPE``); None: in the kernels' type."""
    return "fp8" if w.dtype == "fp8" else None


def kernel_sets(w: Workload, tensor: int, micro: int) -> tuple[dict[str, list[Kernel]], dict[str, float]]:
    """The kernels of each set of :data:`STAGE_SETS` for one tensor-parallel rank at micro-batch
    ``micro``, and the activation bytes per sample each forward kernel saves for the backward."""
    a, s = w.arch, w.seq_len
    dt = FP8_ACTIVATION_DTYPE if w.dtype == "fp8" else w.dtype
    layer = layer_kernels(a, s, micro, dt, 0, tensor, w.fused_attention)
    attn = [k for k in layer if k.kind == "attention" or k.name in ("attention.scores", "attention.softmax",
                                                                        "attention.context")]
    emb = embedding_kernels(a, s, dt, tensor)
    head = head_kernels(a, s, micro, dt, "training", w.task, w.num_labels, tensor)
    saved = {k.name: k.saved_bytes for k in layer + emb + head}
    recompute = [Kernel(k.name, k.kind, k.phase, k.shape, k.flops, k.bytes, k.dtype, k.layer, dims=k.dims,
                        weights=k.weights, exec_flops=k.exec_flops) for k in attn]  # saves nothing again
    return ({"layer_fwd": layer, "layer_bwd": [backward_of(k) for k in layer], "attn_fwd": recompute,
             "embed_fwd": emb, "embed_bwd": [backward_of(k) for k in emb],
             "head_fwd": head, "head_bwd": [backward_of(k) for k in head]}, saved)


@functools.lru_cache(maxsize=1024)
def stage_work(w: Workload, tensor: int, micro: int, dev: NeuronDeviceSpec) -> StageWork:
    """The engine work of one tensor-parallel rank's kernel sets at micro-batch ``micro``."""
    wm = WorkModel(dev, w.arch.norm, training=True, weight_matmul_dtype=weight_matmul_dtype(w))
    lists, saved = kernel_sets(w, tensor, micro)
    return StageWork({name: _work(ks, wm, micro, saved) for name, ks in lists.items()})


def set_kernels(w: Workload, lay: Layout) -> dict[str, tuple[list[Kernel], int, dict[str, float]]]:
    """What one micro-batch runs on the busiest pipeline stage: each set's kernels, how many times
    (layers per stage; recomputation re-runs the attention core or the whole layer), and the saved
    activation bytes by kernel name."""
    lists, saved = kernel_sets(w, lay.tensor, lay.microbatch)
    per_stage = max(stage_layers(w.arch.layers, lay.pipeline))  # uneven stages: the busiest holds one more
    reps = {"layer_fwd": per_stage, "layer_bwd": per_stage, "embed_fwd": 1, "embed_bwd": 1, "head_fwd": 1,
            "head_bwd": 1, "attn_fwd": per_stage if lay.recompute == "selective" else 0}
    if lay.recompute == "full":
        reps["layer_fwd"] = 2 * per_stage
    return {name: (ks, reps[name], saved) for name, ks in lists.items() if reps[name]}


def set_times(sw: StageWork, p: EngineParams, ramp_s: float) -> dict[str, float]:
    """Seconds of each kernel set for one micro-batch."""
    return {name: float(sequence_times(work, p, ramp_s)[0].sum()) if len(work) else 0.0
            for name, work in sw.sets.items()}


def evaluate(w: Workload, cl: Cluster, L: Layouts, dev: NeuronDeviceSpec, p: EngineParams) -> StepResult:
    """Step time, memory per rank and MFU of every layout in ``L`` with emulated compute."""
    keys = np.stack([L.tensor, L.microbatch], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    ramp = dev.core.throttle_ramp_s
    per = [set_times(stage_work(w, int(t), int(b), dev), p, ramp) for t, b in uniq]
    times = np.array([[d[name] for name in STAGE_SETS] for d in per])[inv.reshape(-1)]
    s = dict(zip(STAGE_SETS, times.T, strict=True))
    return combine(Cases(**case_constants(w, cl, L), f=s["layer_fwd"], g=s["layer_bwd"], att=s["attn_fwd"],
                         emb=s["embed_fwd"] + s["embed_bwd"] + p.launch_s,
                         head=s["head_fwd"] + s["head_bwd"], network=p.collective, sharded_network=1.0,
                         memory_eff=optimizer_share(dev, cl)))


def optimizer_share(dev: NeuronDeviceSpec, cl: Cluster) -> float:
    """The share of the rank's device-memory bandwidth its DMA engines reach (optimizer state)."""
    return min(1.0, dev.core_dma_gb_per_s / cl.memory_gb_per_s)
