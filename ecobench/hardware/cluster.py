"""A cluster of identical instances (or a published system) as the numbers the step model needs."""

from __future__ import annotations

import dataclasses

from ecobench.errors import BackendError
from ecobench.hardware.catalog import Accelerator, Catalog, Instance, supported_dtypes
from ecobench.parallel.offload import host_rates
from ecobench.parallel.step import Cluster
from ecobench.units import BITS_PER_BYTE, NETWORK_STEP_LATENCY_US


def rank_peak_tflops(acc: Accelerator, dtype: str) -> float:
    """Dense peak of one rank in ``dtype``; an error naming the supported types if unpublished."""
    peak = acc.peak_tflops.get(dtype)
    if not peak:
        supported = supported_dtypes(acc)
        fix = (f"choose a precision it supports: {supported}" if supported != "none published" else
               "the catalog has no sourced peak for it in any precision: give measured_throughput_per_s "
               "(and measured_power_w) for this configuration")
        raise BackendError(f"{acc.name} has no published {dtype} peak; {fix}")
    return peak / acc.ranks_per_chip


def make_cluster(acc: Accelerator, ranks_per_node: int, intra_gb_per_s: float, intra_latency_us: float,
                 network_gbps: float, dtype: str) -> Cluster:
    """Per-rank figures from the chip's, and the fabrics."""
    r = acc.ranks_per_chip
    return Cluster(
        ranks_per_node=ranks_per_node, peak_tflops=rank_peak_tflops(acc, dtype),
        memory_gb_per_s=acc.memory_bandwidth_gb_per_s / r, memory_gib=acc.memory_gib / r,
        intra_gb_per_s=intra_gb_per_s / r, inter_gb_per_s=network_gbps / BITS_PER_BYTE,
        intra_latency_s=intra_latency_us * 1e-6, inter_latency_s=NETWORK_STEP_LATENCY_US * 1e-6,
        activations_on_chip=acc.activations_on_chip,
        peak_16bit_tflops=rank_peak_tflops(acc, "bf16" if acc.peak_tflops.get("bf16") else "fp16")
        if dtype == "fp8" else None, max_zero_stage=acc.max_zero_stage, ranks_per_chip=r)


def instance_cluster(cat: Catalog, inst: Instance, dtype: str) -> Cluster:
    """The cluster numbers of one instance type."""
    acc = cat.accelerator_of(inst)
    if acc is None:
        raise BackendError(f"{inst.name} has no accelerator and the catalog holds no CPU peaks: give "
                           "measured_throughput_per_s, or use backend: reference on the host")
    link = inst.spec.intra_link
    ranks = inst.spec.accelerator_count * acc.ranks_per_chip
    # Without a published device link, collectives between its ranks cannot be modelled: NaN makes
    # any layout that needs them unusable (the training search reports it), inference needs none.
    cl = make_cluster(acc, ranks, link.gb_per_s if link else float("nan"),
                      link.latency_us if link else float("nan"), inst.spec.network_gbps, dtype)
    if inst.spec.accelerator_memory is not None:  # the instance's memory variant of the chip
        cl = dataclasses.replace(cl, memory_gib=inst.spec.accelerator_memory.gib / acc.ranks_per_chip)
    link_gb, host_gb, nvme_gb = host_rates(inst.name, ranks, acc.ranks_per_chip)
    return dataclasses.replace(cl, host_link_gb_per_s=link_gb, host_optimizer_gb_per_s=host_gb,
                               nvme_gb_per_s=nvme_gb)


def ranks_per_instance(cat: Catalog, inst: Instance) -> int:
    """Training ranks one instance holds (GPUs, or NeuronCores)."""
    acc = cat.accelerator_of(inst)
    return inst.spec.accelerator_count * (acc.ranks_per_chip if acc else 1)
