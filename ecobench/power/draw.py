"""Draw at the work done: accelerator, host CPU, memory and network power of one instance.

An accelerator draws ``idle + (max - idle) x busy x share``: ``busy`` is the share of time it works
(a service's load; 1 in training) and ``share`` the dynamic share of the work it does, weighted by
time over what the backend reports (:class:`Activity`: compute-bound kernels, memory-bound kernels,
stalls, sync). The host CPU's load follows the ranks it feeds; memory draws per GB; network per byte
leaving the instance. A supplied measurement replaces the accelerator's or the whole instance's
draw. Every function takes numpy arrays as well as floats: the planner evaluates the central case,
the Monte Carlo (``uncertainty.py``) thousands of draws, with the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ecobench.hardware.backends.base import COMPUTE_ONLY, Activity  # noqa: F401 (re-exported)
from ecobench.units import BYTES_PER_GB, CCF_NETWORK_KWH_PER_GB, SECONDS_PER_HOUR, W_PER_KW

# W per GB/s of network traffic leaving the instance (CCF gives kWh per GB).
NETWORK_W_PER_GB_PER_S = CCF_NETWORK_KWH_PER_GB * W_PER_KW * SECONDS_PER_HOUR
SCOPES = ("accelerator", "instance")  # what a supplied measured power covers


@dataclass(frozen=True)
class DrawSpec:
    """The fixed figures of one instance's draw (one phase of a job)."""

    accelerator_count: int
    chip_idle_ratio: float  # idle / max
    chip_max_w: float  # central (the catalog's, or the scenario's override)
    activity: Activity
    vcpus: int
    cpu_min_w_per_vcpu: float
    cpu_max_w_per_vcpu: float
    ranks: int  # accelerator ranks the host feeds (0: the CPUs do the work)
    cpu_utilization: float | None  # at full throughput, fixed by the scenario; None: modelled
    memory_gb: float
    network_bytes_per_s: float
    measured_power_w: float | None = None
    measured_power_scope: str | None = None
    basis: str = "modelled"  # power_basis (power/basis.py); tdp: every device at chip_max_w, no host

    def with_network(self, network_bytes_per_s: float) -> DrawSpec:
        return replace(self, network_bytes_per_s=network_bytes_per_s)


@dataclass(frozen=True)
class DrawParams:
    """The uncertain inputs (floats for the central case, arrays for the Monte Carlo)."""

    d_compute: Any
    d_memory: Any
    d_stall: Any
    d_sync: Any
    vcpus_per_rank: Any
    memory_w_per_gb: Any
    pue: Any
    chip_max_w: Any = None  # None: the spec's
    host_scale: Any = 1.0  # the host model's CPUs and memory times this (fitted on node-level meters)


def decode_draw_shares(compute: Any, weight_reads: Any, kv_reads: Any, rest: Any = 0.0) -> tuple[Any, Any]:
    """(compute-bound, memory-bound) draw shares of an LLM decode step, the one rule the power corpus's
    serving points (``power/fit.py``) and the serving planner (``planning/serving.py``) both use:
    compute-bound kernels and decode attention's KV-cache reads draw at the compute-bound draw; weight
    reads and ``rest`` (per-kernel overhead, all-reduces, kernels slower than the roofline) at the
    memory-bound draw. Why KV reads draw like compute: decode attention runs its KV stream through the
    SMs' softmax and dot products on every head (the cores, not only the memory system, are busy), and
    in the measured corpus the long-context and multi-head decode runs, where KV reads dominate a
    step, draw near the chip's maximum: ML.ENERGY v3 and Argonne (docs/power.md). Held out by source,
    this rule took power_serve from 9.8% to 8.7% median and 39.6% to 37.8% worst (docs/power.md)."""
    return compute + kv_reads, weight_reads + rest


def host_cpu_utilization(spec: DrawSpec, vcpus_per_rank: Any) -> Any:
    """Host CPU load at full throughput: the scenario's, else busy vCPUs per rank over vCPUs (1 for
    an instance without accelerators, whose CPUs do the work)."""
    if spec.cpu_utilization is not None:
        return np.asarray(spec.cpu_utilization, dtype=float)
    if spec.ranks == 0:
        return np.asarray(1.0)
    return np.minimum(1.0, spec.ranks * np.asarray(vcpus_per_rank, dtype=float) / spec.vcpus)


def draw_w(spec: DrawSpec, p: DrawParams, busy: Any = 1.0, achieved: Any = 1.0,
           network_bytes_per_s: Any = None) -> dict[str, Any]:
    """Average draw of one instance by component (W): ``accelerator``, ``cpu``, ``memory``,
    ``network``, ``overhead`` (facility, (PUE - 1) x IT), ``it`` and ``total``. ``busy`` is the
    share of time the accelerator works, ``achieved`` the share of the modelled throughput reached."""
    busy = np.asarray(busy, dtype=float)
    chip_max = np.asarray(spec.chip_max_w if p.chip_max_w is None else p.chip_max_w, dtype=float)
    if spec.basis == "tdp":  # the footprint convention: device-hours x TDP x PUE, no host share
        zero = 0.0 * busy
        acc = spec.accelerator_count * chip_max + zero
        overhead = (np.asarray(p.pue, dtype=float) - 1.0) * acc
        return {"accelerator": acc, "cpu": zero, "memory": zero, "network": zero, "overhead": overhead,
                "it": acc, "total": acc + overhead}
    idle = spec.chip_idle_ratio * chip_max
    share = spec.activity.share(p.d_compute, p.d_memory, p.d_stall, p.d_sync, achieved)
    acc = spec.accelerator_count * (idle + (chip_max - idle) * busy * share)
    cpu_u = host_cpu_utilization(spec, p.vcpus_per_rank) * busy
    host = np.asarray(p.host_scale, dtype=float)
    cpu = host * spec.vcpus * (spec.cpu_min_w_per_vcpu
                               + (spec.cpu_max_w_per_vcpu - spec.cpu_min_w_per_vcpu) * cpu_u)
    mem = host * spec.memory_gb * np.asarray(p.memory_w_per_gb, dtype=float)
    net_b = spec.network_bytes_per_s if network_bytes_per_s is None else network_bytes_per_s
    net = np.asarray(net_b, dtype=float) / BYTES_PER_GB * NETWORK_W_PER_GB_PER_S + 0.0 * busy
    if spec.measured_power_w is not None and spec.measured_power_scope == "accelerator":
        acc = np.asarray(spec.measured_power_w) + 0.0 * acc
    it = acc + cpu + mem + net
    if spec.measured_power_w is not None and spec.measured_power_scope == "instance":
        scale = spec.measured_power_w / it  # the model's split of the measured whole
        acc, cpu, mem, net, it = acc * scale, cpu * scale, mem * scale, net * scale, it * scale
    overhead = (np.asarray(p.pue, dtype=float) - 1.0) * it
    return {"accelerator": acc, "cpu": cpu, "memory": mem, "network": net, "overhead": overhead,
            "it": it, "total": it + overhead}


@dataclass(frozen=True)
class PowerSetup:
    """A configuration's fixed power inputs; :meth:`spec` adds a phase's activity and traffic."""

    accelerator_count: int
    chip: str | None  # catalog accelerator key
    chip_idle_ratio: float
    chip_max_w: float
    chip_uncertain: bool  # the maximum is an evidence range (and not overridden by the scenario)
    vcpus: int
    cpu_min_w_per_vcpu: float
    cpu_max_w_per_vcpu: float
    ranks: int
    cpu_utilization: float | None
    memory_gb: float
    measured_power_w: float | None = None
    measured_power_scope: str | None = None
    basis: str = "modelled"  # power_basis (power/basis.py)

    def spec(self, activity: Activity, network_bytes_per_s: float) -> DrawSpec:
        return DrawSpec(self.accelerator_count, self.chip_idle_ratio, self.chip_max_w, activity, self.vcpus,
                        self.cpu_min_w_per_vcpu, self.cpu_max_w_per_vcpu, self.ranks, self.cpu_utilization,
                        self.memory_gb, network_bytes_per_s, self.measured_power_w, self.measured_power_scope,
                        self.basis)


def central_params(pue: float) -> DrawParams:
    """The central case of every ranged input (and the scenario's PUE)."""
    from ecobench.power.params import power_model

    pm = power_model()
    return DrawParams(pm.draw.compute_bound.central, pm.draw.memory_bound.central, pm.draw.stall.central,
                      pm.draw.sync.central, pm.host_cpu.vcpus_per_rank.central, pm.memory_w_per_gb.central,
                      pue, host_scale=pm.host_scale.central)
