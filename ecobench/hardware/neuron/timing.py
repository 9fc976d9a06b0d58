"""Kernel times on a NeuronCore: the engines' work (``work.py``) combined with the fitted parameters.

The four compute engines and the DMA queues run independent instruction streams and synchronise
only through semaphores where data depend on each other (NKI architecture guide), so over a kernel
sequence (a layer's forward pass, a whole inference) they pipeline across kernel boundaries, and
weights are prefetched ahead of the kernels that use them. The sequence lasts as long as its
busiest engine's total (TensorE slowed by its utilisation limit: throttling and the compiler's
scheduling, as the profiler reports them), plus the share ``exposed`` of the other engines' time
that pipelining does not hide, plus a fixed ``sync_s`` per kernel for the semaphore waits and
pipeline fill at each dependency. On NeuronCore-v3 TensorE restarts at half rate after each idle
gap and ramps up over ~3 us. A graph execution (an inference batch, a training micro-batch) adds
``launch_s`` of runtime and host work. Per-kernel times are each kernel's share of its sequence
(its own busiest-engine time, scaled to the sequence's total).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ecobench.hardware.neuron.arch import NeuronDeviceSpec
from ecobench.hardware.neuron.work import ENGINE_OF, ENGINES, MECHANISMS, WorkModel
from ecobench.workloads.kernels import Kernel


@dataclass(frozen=True)
class EngineParams:
    """The fitted parameters of one NeuronCore generation (``fit.py``). Fields may be arrays (one
    value per kernel) when many configurations are timed at once."""

    exposed: Any  # share (0-1) of the non-critical engines' busy time left exposed
    sync_s: Any  # per kernel: semaphore waits and pipeline fill between dependent kernels
    launch_s: Any  # per graph execution (one inference batch or training micro-batch)
    tensor_limit: Any  # TensorE's average utilisation limit (0-1)
    collective: Any  # share of link bandwidth the collectives reach (training)


@dataclass(frozen=True)
class KernelTiming:
    name: str
    layer: int | None
    phase: str
    engine: str  # the busiest engine
    time_s: float  # for the batch
    busy_s: dict[str, float]
    utilization: float  # executed FLOPs over the TensorE peak for the kernel's time
    bound: str  # compute or memory
    count: int = 1  # runs this entry stands for (training: layers of a pipeline stage)

    def as_dict(self) -> dict[str, object]:
        return {"kernel": self.name, "layer": self.layer, "phase": self.phase, "engine": self.engine,
                "time_us": self.time_s * 1e6, "utilization": self.utilization, "bound": self.bound,
                "count": self.count}


def _busy(work: np.ndarray, p: EngineParams) -> np.ndarray:
    busy = np.atleast_2d(work) @ ENGINE_OF
    busy[:, 0] = busy[:, 0] / p.tensor_limit
    return busy


def overlap(busy: np.ndarray, exposed: Any) -> Any:
    """The busiest engine's time plus the exposed share of the others' (rows: engines last)."""
    mx = busy.max(axis=-1)
    return mx + exposed * (busy.sum(axis=-1) - mx)


def sequence_times(work: np.ndarray, p: EngineParams, ramp_s: float = 0.0,
                   mult: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of each kernel of a sequence (``mult``: how many times each runs; times are for one
    run) and busy seconds per engine; the kernels' times add up to the sequence's."""
    busy = _busy(work, p)
    m = np.ones(len(busy)) if mult is None else mult
    fixed = np.where(busy.max(axis=1) > 0, p.sync_s, 0.0) + np.where(busy[:, 0] > 0, ramp_s / 2, 0.0)
    total = float(overlap((busy * m[:, None]).sum(axis=0), p.exposed) + (fixed * m).sum())
    own = overlap(busy, p.exposed) + fixed
    denom = float((own * m).sum())
    return (own * total / denom if denom > 0 else own), busy


def tensor_peak_flops(dev: NeuronDeviceSpec, dtype: str) -> float:
    """TensorE's dense peak (FLOP/s) of a logical core in ``dtype``: BF16's, FP8's on a core that
    runs FP8 faster (v3), INT8's where the core has an INT8 mode (v1, v2)."""
    c = dev.core
    speedup = c.fp8_speedup if dtype == "fp8" else (c.int8_speedup or 1.0) if dtype == "int8" else 1.0
    return c.tensor_tflops * 1e12 * speedup


def time_kernels(kernels: list[Kernel], dev: NeuronDeviceSpec, batch: int, p: EngineParams,
                 norm: str = "layernorm", training: bool = False,
                 saved: dict[str, float] | None = None,
                 weight_matmul_dtype: str | None = None) -> list[KernelTiming]:
    """Timing of each kernel for ``batch`` samples on one logical core (training: the forward
    kernels write the activations they save, the backward kernels read back what ``saved`` (by
    forward kernel name, per sample; default: the forward kernels in the list) says;
    ``weight_matmul_dtype``: :class:`WorkModel`'s)."""
    wm = WorkModel(dev, norm, training, weight_matmul_dtype)
    if saved is None:
        saved = {k.name: k.saved_bytes for k in kernels if k.phase == "forward"}

    def saved_of(k: Kernel) -> float:
        if not training:
            return 0.0
        return k.saved_bytes if k.phase == "forward" else saved.get(k.name.removesuffix(".grad"), 0.0)

    work = np.array([wm.work(k, batch, saved_of(k)) for k in kernels]).reshape(len(kernels), len(MECHANISMS))
    times, busy = sequence_times(work, p, dev.core.throttle_ramp_s)
    out = []
    for k, t, b in zip(kernels, times, busy, strict=True):
        i = int(np.argmax(b))
        peak = tensor_peak_flops(dev, (weight_matmul_dtype if k.weights else None) or k.dtype)
        out.append(KernelTiming(k.name, k.layer, k.phase, ENGINES[i], float(t),
                                {e: float(v) for e, v in zip(ENGINES, b, strict=True)},
                                min(1.0, k.executed_flops * batch / (t * peak)) if t > 0 else 0.0,
                                "memory" if ENGINES[i] == "dma" else "compute"))
    return out


def engine_utilization(timings: list[KernelTiming]) -> dict[str, float]:
    """Busy fraction of each engine over the whole kernel sequence."""
    total = sum(t.time_s for t in timings)
    return {e: min(1.0, sum(t.busy_s.get(e, 0.0) for t in timings) / total) for e in ENGINES}
