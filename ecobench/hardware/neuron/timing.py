"""Engine-level timing of a kernel list on a NeuronCore.

Mapping: matmuls run on the TensorEngine in passes of (array_rows of the contraction) x
(array_cols of the output) with up to ``max_moving`` rows streamed per pass, plus the array's fill;
FP32 results accumulate in PSUM and are evacuated to SBUF by the VectorEngine. Activations (GELU,
exp) run on the ScalarEngine; reductions, layernorm and residual adds on the VectorEngine;
embedding gathers as DMA. Weights stream from device memory once per batch (NeuronCore-v1 keeps
them on chip, in its large caches); activations stay in SBUF while a batch's working set fits and
spill to device memory otherwise. Engines overlap within a kernel (double-buffered DMA), so a kernel
takes as long as its busiest engine; kernels run one after another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ecobench.hardware.neuron.arch import NeuronDeviceSpec
from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.kernels import Kernel

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
SOFTMAX_SCALAR_SHARE = 1 / 5  # exp on ScalarE; max, subtract, sum, divide on VectorE


@dataclass(frozen=True)
class KernelTiming:
    name: str
    layer: int | None
    phase: str
    engine: str  # the busiest engine
    time_s: float
    busy_s: dict[str, float]
    utilization: float  # of the busiest engine's peak for this kernel's work
    bound: str  # compute or memory

    def as_dict(self) -> dict[str, object]:
        return {"kernel": self.name, "layer": self.layer, "phase": self.phase, "engine": self.engine,
                "time_us": self.time_s * 1e6, "utilization": self.utilization, "bound": self.bound}


def _tensor_rate(dev: NeuronDeviceSpec, dtype: str) -> float:
    core = dev.core
    rate = {"fp32": core.tensor_fp32_rate, "int8": 2.0}.get(dtype, 1.0)
    if rate <= 0:
        raise ValueError(f"{core.name} has no {dtype} TensorEngine mode")
    return rate


def _matmul(k: Kernel, dev: NeuronDeviceSpec, batch: int, sbuf_fits: bool) -> KernelTiming:
    core = dev.core
    count, m, kk, n = k.dims or (1, 1, 1, 1)
    b = BYTES_PER_DTYPE[k.dtype]
    rows = m * batch if k.weights else m  # weights stay stationary while the batch streams
    groups = 1 if k.weights else batch
    passes = math.ceil(kk / core.array_rows) * math.ceil(n / core.array_cols)
    chunks = math.ceil(rows / core.max_moving)
    cycles = groups * count * passes * (rows + chunks * core.fill_cycles)
    t_tensor = cycles / core.clock_hz / _tensor_rate(dev, k.dtype) / batch
    t_evac = count * m * n / (core.vector_gflops * 1e9)
    per_core_bw = dev.hbm_gb_per_s * 1e9 / dev.cores
    w_bytes = (kk * n * b / batch) if (k.weights and dev.core.sbuf_mib is not None) else 0.0
    act_bytes = 0.0 if sbuf_fits else count * (m * kk + m * n) * b
    t_dma = (w_bytes + act_bytes) / per_core_bw
    busy = {"tensor": t_tensor, "vector": t_evac, "dma": t_dma}
    eng = max(busy, key=busy.__getitem__)
    peak = core.tensor_bf16_tflops * 1e12 * _tensor_rate(dev, k.dtype)
    util = k.flops / (busy["tensor"] * peak) if busy["tensor"] else 0.0
    return KernelTiming(k.name, k.layer, k.phase, eng, busy[eng], busy, min(util, 1.0),
                        "memory" if eng == "dma" else "compute")


def _other(k: Kernel, dev: NeuronDeviceSpec, samples_per_step: float, sbuf_fits: bool) -> KernelTiming:
    core = dev.core
    scale = 1.0 / samples_per_step if k.per_step else 1.0
    per_core_bw = dev.hbm_gb_per_s * 1e9 / dev.cores
    flops, nbytes = k.flops * scale, k.bytes * scale
    busy = {e: 0.0 for e in ("scalar", "vector", "gpsimd", "dma")}
    base = k.name.removesuffix(".grad")
    if k.kind == "gather":
        busy["dma"] = nbytes / (dev.dma_gb_per_s * 1e9 / dev.cores)
    elif k.kind == "optimizer":
        busy["vector"] = flops / (core.vector_gflops * 1e9)
        busy["dma"] = nbytes / per_core_bw
    elif "softmax" in base:
        busy["scalar"] = flops * SOFTMAX_SCALAR_SHARE / (core.scalar_gflops * 1e9)
        busy["vector"] = flops * (1 - SOFTMAX_SCALAR_SHARE) / (core.vector_gflops * 1e9)
    elif "gelu" in base:
        busy["scalar"] = flops / (core.scalar_gflops * 1e9)
    else:  # layernorm, residual adds
        busy["vector"] = flops / (core.vector_gflops * 1e9)
    if not sbuf_fits and k.kind == "elementwise":
        busy["dma"] = max(busy["dma"], nbytes / per_core_bw)
    eng = max(busy, key=busy.__getitem__)
    return KernelTiming(k.name, k.layer, k.phase, eng, busy[eng], busy, 1.0 if busy[eng] else 0.0,
                        "memory" if eng == "dma" else "compute")


def working_set_fits(dev: NeuronDeviceSpec, seq_len: int, width: int, batch: int, dtype: str) -> bool:
    """Whether a batch's activations (input, output and one intermediate of the widest layer)
    fit in SBUF; NeuronCore-v1's caches are treated as large enough (no published size)."""
    if dev.core.sbuf_mib is None:
        return True
    need = 3 * batch * seq_len * width * BYTES_PER_DTYPE[dtype]
    return need <= dev.core.sbuf_mib * 2**20


def time_kernels(kernels: list[Kernel], dev: NeuronDeviceSpec, batch: int, samples_per_step: float,
                 sbuf_fits: bool) -> list[KernelTiming]:
    """Timing of each kernel per sample on one NeuronCore."""
    out = []
    for k in kernels:
        if k.kind == "matmul":
            out.append(_matmul(k, dev, batch, sbuf_fits))
        else:
            out.append(_other(k, dev, samples_per_step, sbuf_fits))
    return out


def engine_utilization(timings: list[KernelTiming]) -> dict[str, float]:
    """Busy fraction of each engine over the whole kernel sequence."""
    total = sum(t.time_s for t in timings)
    return {e: sum(t.busy_s.get(e, 0.0) for t in timings) / total for e in ENGINES}
