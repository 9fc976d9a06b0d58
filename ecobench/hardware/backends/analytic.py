"""Analytic backend: roofline on catalog peaks x calibrated achieved efficiency."""

from __future__ import annotations

import math

from ecobench.errors import BackendError
from ecobench.hardware.backends.base import Job, Performance, Utilization, register
from ecobench.hardware.backends.calibration import (
    allreduce_s,
    efficiency,
    roofline_time_s,
    samples_per_device_step,
    scale_out_factor_per_doubling,
)
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.units import DEFAULT_HOST_CPU_UTILIZATION, DEFAULT_REQUEST_BYTES_PER_TOKEN
from ecobench.workloads.transformer import build_kernels

TRAINING_DATA_BYTES_PER_TOKEN = 8 * 3  # ids, segment ids, mask (int64) read from storage


class AnalyticBackend:
    """Roofline throughput per instance, scaled by an efficiency calibrated on published points."""

    name = "analytic"

    def evaluate(self, job: Job, instance: Instance, catalog: Catalog) -> Performance:
        acc = catalog.accelerator_of(instance)
        if acc is None:
            raise BackendError(
                f"{instance.name} has no accelerator and the catalog holds no CPU peaks: give "
                "measured_throughput_per_s, or use backend: reference on the host")
        devices = instance.spec.accelerator_count * job.instances
        per_step = samples_per_device_step(job.global_batch_size, devices, job.batch_size)
        kernels = build_kernels(job.arch, job.seq_len, job.batch_size, job.dtype, job.mode)
        roof_s = roofline_time_s(kernels, acc, per_step)
        eff = efficiency(instance.spec.accelerator or "", job.dtype, job.mode)
        per_acc = eff.value / roof_s
        per_instance = per_acc * instance.spec.accelerator_count
        method = (f"roofline x efficiency {eff.value:.3f} (geomean of {eff.points} point(s): "
                  f"{eff.match})")
        net_bytes = job.seq_len * DEFAULT_REQUEST_BYTES_PER_TOKEN
        net_util = 0.0
        if job.mode == "training":
            net_bytes = job.seq_len * TRAINING_DATA_BYTES_PER_TOKEN
            if job.instances > 1:
                gb = job.global_batch_size or job.batch_size * devices
                step_s = gb / (per_instance * job.instances)
                comm_s = allreduce_s(job.arch.params, job.dtype, job.instances,
                                     instance.spec.network_gbps)
                keep, src = scale_out_factor_per_doubling()
                factor = step_s / (step_s + comm_s) * keep ** math.log2(job.instances)
                per_instance *= factor
                net_util = min(1.0, comm_s / (step_s + comm_s))
                method += (f"; scale-out x{factor:.3f} over {job.instances} instances "
                           f"(all-reduce {comm_s * 1e3:.1f} ms/step, {keep:.4f} per doubling from {src})")
        cpu = job.host_cpu_utilization if job.host_cpu_utilization is not None \
            else DEFAULT_HOST_CPU_UTILIZATION
        if job.mode == "inference":
            link_bytes_per_s = instance.spec.network_gbps * 1e9 / 8
            net_util = min(1.0, per_instance * net_bytes / link_bytes_per_s)
        if per_instance <= 0 or not math.isfinite(per_instance):
            raise BackendError(f"analytic backend gave no throughput for {instance.name}")
        return Performance(
            throughput_per_instance_per_s=per_instance,
            utilization=Utilization(accelerator=1.0, cpu=cpu, memory=cpu, network=net_util),
            provenance="estimated",
            method=method,
            network_bytes_per_sample=net_bytes,
            details={"efficiency": eff.value, "efficiency_match": eff.match,
                     "efficiency_spread": eff.spread, "roofline_s_per_sample": roof_s},
        )


register(AnalyticBackend())
