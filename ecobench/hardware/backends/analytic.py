"""Analytic backend: a roofline per kernel at the efficiencies fitted on published points.

Inference (encoders): every rank (GPU or NeuronCore) runs its own copy of the model at the batch
size; a batch takes the sum over kernels of ``max(FLOPs / (compute x peak), bytes / (memory x
bandwidth)) + overhead``. Training: the step model of ``parallel/step.py`` for the configuration's
layout (compute, tensor/pipeline/data-parallel communication, bubble, recomputation, optimizer).
The efficiencies are those of the accelerator's vendor in that mode (``efficiency.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from ecobench.errors import BackendError
from ecobench.hardware.backends.activity import inference_activity, training_activity
from ecobench.hardware.backends.base import (
    COMPUTE_ONLY,
    Activity,
    Capabilities,
    Job,
    Performance,
    Utilization,
    register,
)
from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.step import KernelArrays, Layouts, evaluate
from ecobench.units import DEFAULT_HOST_CPU_UTILIZATION, DEFAULT_REQUEST_BYTES_PER_TOKEN
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.transformer import forward_kernels

TRAINING_DATA_BYTES_PER_TOKEN = 8 * 3  # ids, segment ids, mask (int64) read from storage


@functools.lru_cache(maxsize=1024)
def _inference_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str) -> KernelArrays:
    return KernelArrays.of(forward_kernels(arch, seq_len, batch_size, dtype))


def inference_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str) -> KernelArrays:
    """The kernel arrays of one inference forward pass, built once per (model, sequence, batch, dtype):
    a sweep asks for the same ones on every instance type and region (read only)."""
    try:
        return _inference_kernels(arch, seq_len, batch_size, dtype)
    except TypeError:  # an architecture with an unhashable field: built each time
        return KernelArrays.of(forward_kernels(arch, seq_len, batch_size, dtype))


class AnalyticBackend:
    """Roofline throughput per instance at fitted efficiencies."""

    name = "analytic"
    capabilities = Capabilities(modes=frozenset({"inference", "training", "serving"}), sizes_clusters=True,
                                cheap=True)

    def evaluate(self, job: Job, instance: Instance, catalog: Catalog) -> Performance:
        acc = catalog.accelerator_of(instance)
        if acc is None:
            raise BackendError(
                f"{instance.name} has no accelerator and the catalog holds no CPU peaks: give "
                "measured_throughput_per_s, or use backend: reference on the host")
        cl = instance_cluster(catalog, instance, job.dtype)
        eff = current_fit().efficiency(acc.vendor, job.mode, instance.spec.accelerator, job.stack)
        cpu = job.host_cpu_utilization if job.host_cpu_utilization is not None \
            else DEFAULT_HOST_CPU_UTILIZATION
        fitted = (f"compute {eff.compute:.2f}, memory {eff.memory:.2f}, "
                  f"{eff.overhead_s * 1e6:.1f} us/kernel, "
                  f"network {eff.network:.2f}; {eff.source}")
        if job.mode == "inference":
            ks = inference_kernels(job.arch, job.seq_len, job.batch_size, job.dtype)
            batch_s = float(ks.time_s(np.array([job.batch_size]), cl, eff)[0])
            per_instance = cl.ranks_per_node * job.batch_size / batch_s
            net_bytes = job.seq_len * DEFAULT_REQUEST_BYTES_PER_TOKEN
            link_bytes_per_s = instance.spec.network_gbps * 1e9 / 8
            return self._checked(instance, Performance(
                throughput_per_instance_per_s=per_instance,
                utilization=Utilization(1.0, cpu, cpu, min(1.0, per_instance * net_bytes / link_bytes_per_s)),
                provenance="estimated",
                method=f"roofline per kernel, {cl.ranks_per_node} rank(s) at batch {job.batch_size} "
                       f"({batch_s * 1e3:.2f} ms per batch); {fitted}",
                network_bytes_per_sample=net_bytes,
                activity=inference_activity(ks, job.batch_size, cl, eff), batch_s=batch_s,
                servers=cl.ranks_per_node))
        if job.layout is None or job.global_batch_size is None:
            raise BackendError("a training job needs a layout and a global batch")
        w = job.training_workload()
        r = evaluate(w, cl, Layouts.of([job.layout], job.instances), eff).row(0)
        per_instance = r["sequences_per_s"] / job.instances
        act = training_activity(r, w, job.layout.tensor, job.layout.microbatch, cl, eff)
        total_ranks = job.instances * cl.ranks_per_node
        if job.layout.ranks < total_ranks:  # idle ranks draw idle power
            act = dataclasses.replace(act, active=job.layout.ranks / total_ranks,
                                      source=f"{act.source}; {total_ranks - job.layout.ranks} of "
                                             f"{total_ranks} ranks idle")
        return self._checked(instance, Performance(
            throughput_per_instance_per_s=per_instance,
            utilization=Utilization(1.0, cpu, cpu, min(1.0, r["dp_comm_exposed_s"] / r["step_s"])),
            provenance="estimated",
            method=(f"step model, {job.layout.describe()} on {job.instances}x {instance.name}: step "
                    f"{r['step_s']:.3g} s, MFU {r['mfu']:.1%}, exposed communication "
                    f"{r['comm_exposed_s'] / r['step_s']:.0%}, bubble {r['bubble_s'] / r['step_s']:.0%}; "
                    f"{fitted}"),
            network_bytes_per_sample=job.seq_len * TRAINING_DATA_BYTES_PER_TOKEN,
            activity=act, step=r))

    @staticmethod
    def _checked(instance: Instance, perf: Performance) -> Performance:
        t = perf.throughput_per_instance_per_s
        if t <= 0 or not math.isfinite(t):
            raise BackendError(f"analytic backend gave no throughput for {instance.name}")
        return perf


register(AnalyticBackend())


def activity_of(perf: Performance, job: Job, inst: Instance, catalog: Catalog) -> Activity:
    """The activity behind ``perf``: the analytic backend's own, or the analytic model's for the same
    job scaled by the share of its throughput ``perf`` achieves."""
    if perf.activity is not None:
        return perf.activity
    if catalog.accelerator_of(inst) is None:
        return COMPUTE_ONLY
    try:
        model = AnalyticBackend().evaluate(job, inst, catalog)
    except BackendError:
        return COMPUTE_ONLY
    base = model.activity
    if base is None:
        return COMPUTE_ONLY
    achieved = perf.throughput_per_instance_per_s / model.throughput_per_instance_per_s
    c, m, s, y = base.scaled(achieved)
    return Activity(float(c), float(m), float(s),
                    f"{base.source}; {perf.provenance} throughput is {achieved:.0%} of the model's", float(y),
                    active=base.active)
