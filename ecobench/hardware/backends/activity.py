"""What the accelerator does while a job runs, from the analytic model's kernels: the shares of its
time in compute-bound kernels, memory-bound kernels, stalls (per-kernel overhead of a service) and
sync (a training step's exposed communication, pipeline bubble and per-kernel overhead). The draw
model (``power/draw.py``) turns them into watts.

For a throughput the analytic model did not produce (supplied, emulated), the shares are the
analytic model's for the same job, scaled by how much of its throughput is achieved: a chip that
delivers less than the model says it can is taken to wait the rest of the time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ecobench.hardware.backends.base import COMPUTE_ONLY, Activity
from ecobench.parallel.step import (
    Cluster,
    Efficiency,
    KernelArrays,
    Workload,
    matmul_peak_tflops,
    stage_kernels,
)


def kernel_regime_arrays(ks: KernelArrays, micro: float, cl: Cluster,
                         eff: Efficiency) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per kernel, seconds of ``micro`` samples through ``ks``: compute-bound, memory-bound (each kernel
    counts in one of the two) and per-kernel overhead (the roofline of ``parallel/step.py``)."""
    peak = np.where(ks.weight_matmul, matmul_peak_tflops(cl, eff), cl.peak_16bit_tflops or cl.peak_tflops)
    share = np.where(ks.attention, eff.compute * eff.attention, eff.compute)
    t_c = micro * ks.flops / (share * peak * 1e12)
    t_m = np.where(cl.activations_on_chip, 0.0, (micro * ks.act_bytes + ks.weight_bytes)
                   / (eff.memory * cl.memory_gb_per_s * 1e9))
    bound_c = t_c >= t_m
    return np.where(bound_c, t_c, 0.0), np.where(bound_c, 0.0, t_m), eff.overhead_s * (ks.flops > 0)


def kernel_regimes_s(ks: KernelArrays, micro: float, cl: Cluster,
                     eff: Efficiency) -> tuple[float, float, float]:
    """Seconds of ``micro`` samples through ``ks`` in compute-bound kernels, memory-bound kernels and
    per-kernel overhead; they add up to ``ks.time_s`` (:func:`kernel_regime_arrays`, summed)."""
    c, m, o = kernel_regime_arrays(ks, micro, cl, eff)
    return float(c.sum()), float(m.sum()), float(o.sum())


def _shares(compute_s: float, memory_s: float, stall_s: float, source: str, sync_s: float = 0.0) -> Activity:
    total = compute_s + memory_s + stall_s + sync_s
    if total <= 0:
        return COMPUTE_ONLY
    return Activity(compute_s / total, memory_s / total, stall_s / total, source, sync_s / total)


def inference_activity(ks: KernelArrays, batch: int, cl: Cluster, eff: Efficiency) -> Activity:
    """Shares of one batch's time (every rank runs its own copy of the model)."""
    c, m, o = kernel_regimes_s(ks, batch, cl, eff)
    return _shares(c, m, o, "analytic kernels: compute-bound, memory-bound, per-kernel overhead")


def training_activity(step: dict[str, Any], w: Workload, tensor: int, micro: int, cl: Cluster,
                      eff: Efficiency) -> Activity:
    """Shares of a training step: exposed communication, the pipeline bubble and the kernels' per-launch
    overhead are sync (the chip inside a step, waiting with its clocks up: the state the corpus's
    training points fit), the optimizer step is memory-bound, and the rest splits as the layer's
    forward and backward kernels."""
    sync = step["comm_exposed_s"] + step["bubble_s"]
    opt = step.get("optimizer_s", 0.0)
    work = max(0.0, step["step_s"] - sync - opt)
    sk = stage_kernels(w, tensor)
    c1, m1, o1 = kernel_regimes_s(sk.layer_fwd, micro, cl, eff)
    c2, m2, o2 = kernel_regimes_s(sk.layer_bwd, micro, cl, eff)
    kern = c1 + m1 + o1 + c2 + m2 + o2
    if kern <= 0:
        return COMPUTE_ONLY
    return _shares(work * (c1 + c2) / kern, work * (m1 + m2) / kern + opt, 0.0,
                   "analytic step: layer kernels, optimizer (memory-bound), exposed communication, bubble "
                   "and per-kernel overhead (sync)", sync + work * (o1 + o2) / kern)


