"""Achieved-efficiency calibration of the roofline on published throughput points.

Method: for each published point, efficiency = published throughput per accelerator / roofline
throughput per accelerator (the kernels' max(compute, memory) time at the catalog peaks). A
configuration takes the geometric mean over the points that match it most closely:
(accelerator, data type, mode), then (accelerator, mode), then (vendor, mode), then (mode).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ecobench.errors import BackendError
from ecobench.hardware.catalog import Accelerator, load_catalog
from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.kernels import Kernel
from ecobench.workloads.presets import PRESETS
from ecobench.workloads.transformer import Mode, build_kernels


def roofline_time_s(kernels: list[Kernel], acc: Accelerator, samples_per_step: float) -> float:
    """Seconds per sample at the accelerator's peaks: matmuls are bound by compute or memory,
    everything else by memory (vector/scalar engines stream)."""
    bw = acc.memory_bandwidth_gb_per_s * 1e9
    total = 0.0
    for k in kernels:
        scale = 1.0 / samples_per_step if k.per_step else 1.0
        t_mem = 0.0 if acc.activations_on_chip else k.bytes / bw
        if k.kind == "matmul":
            peak = acc.peak_tflops.get(k.dtype)
            if not peak:
                raise BackendError(f"{acc.name} has no published {k.dtype} peak; "
                                   f"choose a precision it supports: {supported(acc)}")
            total += scale * max(k.flops / (peak * 1e12), t_mem)
        else:
            total += scale * t_mem
    return total


def supported(acc: Accelerator) -> str:
    """The data types an accelerator has a published peak for."""
    return ", ".join(d for d, v in acc.peak_tflops.items() if v) or "none published"


@dataclass(frozen=True)
class Efficiency:
    value: float
    points: int
    match: str
    spread: float  # max/min of the matched points' efficiencies


def samples_per_device_step(global_batch: int | None, devices: int, batch: int) -> float:
    """Samples each device processes per optimizer step."""
    return max(float(batch), (global_batch or batch) / max(devices, 1))


@functools.cache
def point_efficiencies() -> tuple[tuple[str, str, str, str, float], ...]:
    """(accelerator, vendor, dtype, mode, efficiency) for every calibration point."""
    cat = load_catalog()
    out = []
    for p in cat.calibration:
        acc = cat.accelerators[p.accelerator]
        ks = build_kernels(PRESETS[p.model], p.seq_len, p.batch_size, p.dtype, p.mode)  # type: ignore[arg-type]
        per_acc = p.throughput_per_s / (p.accelerators * p.instances)
        roof = 1.0 / roofline_time_s(ks, acc, samples_per_device_step(
            p.global_batch_size, p.accelerators * p.instances, p.batch_size))
        out.append((p.accelerator, acc.vendor, p.dtype, p.mode, per_acc / roof))
    return tuple(out)


def efficiency(acc_key: str, dtype: str, mode: Mode) -> Efficiency:
    """Calibrated efficiency for (accelerator, dtype, mode), by the closest match available."""
    vendor = load_catalog().accelerators[acc_key].vendor
    pts = point_efficiencies()
    tiers = [
        (f"{acc_key} {dtype} {mode}", lambda p: p[0] == acc_key and p[2] == dtype and p[3] == mode),
        (f"{acc_key} {mode} (any data type)", lambda p: p[0] == acc_key and p[3] == mode),
        (f"{vendor} {mode} (any accelerator)", lambda p: p[1] == vendor and p[3] == mode),
        (f"all {mode} points", lambda p: p[3] == mode),
    ]
    for label, pred in tiers:
        effs = [p[4] for p in pts if pred(p)]
        if effs:
            gm = math.exp(sum(math.log(e) for e in effs) / len(effs))
            return Efficiency(gm, len(effs), label, max(effs) / min(effs))
    raise BackendError(f"no calibration point for {mode}")


def ring_allreduce_s(nbytes: float, peers: int, link_gb_per_s: float) -> float:
    """Time of a ring all-reduce of ``nbytes`` over ``peers`` at ``link_gb_per_s`` each."""
    if peers <= 1:
        return 0.0
    return 2 * (peers - 1) / peers * nbytes / (link_gb_per_s * 1e9)


def gradient_bytes(params: int, dtype: str) -> float:
    """Bytes of one gradient all-reduce (16-bit at least, as frameworks reduce)."""
    return float(params * max(BYTES_PER_DTYPE[dtype], 2))


def allreduce_s(params: int, dtype: str, instances: int, network_gbps: float) -> float:
    """Ring all-reduce of the gradients across instances over the instance network."""
    return ring_allreduce_s(gradient_bytes(params, dtype), instances, network_gbps / 8)


@functools.cache
def scale_out_factor_per_doubling() -> tuple[float, str]:
    """Throughput kept per doubling of instances beyond the all-reduce time, calibrated on the
    published scale-out point(s): geometric mean of (measured / modelled)^(1/log2 N)."""
    cat = load_catalog()
    factors = []
    for s in cat.scale_out:
        inst = cat.instance(s.instance_type)
        arch = PRESETS[s.model]
        step_1 = s.global_batch_size / s.instances_1_throughput_per_s
        params = arch.params
        comm = allreduce_s(params, s.dtype, s.instances, inst.spec.network_gbps)
        modelled = s.instances * s.instances_1_throughput_per_s * step_1 / (step_1 + comm)
        factors.append((s.throughput_per_s / modelled) ** (1 / math.log2(s.instances)))
    gm = math.exp(sum(math.log(f) for f in factors) / len(factors))
    return gm, f"{len(factors)} published scale-out point(s)"
