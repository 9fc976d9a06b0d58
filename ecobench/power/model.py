"""Instance power per component at a utilisation, and the facility overhead (PUE)."""

from __future__ import annotations

from dataclasses import dataclass

from ecobench.hardware.catalog import Catalog, Instance
from ecobench.units import (
    BYTES_PER_GB,
    CCF_MEMORY_KWH_PER_GB_H,
    CCF_NETWORK_KWH_PER_GB,
    SECONDS_PER_HOUR,
    W_PER_KW,
    gib_to_gb,
)

# W per GB of memory (CCF gives kWh per GB-hour).
MEMORY_W_PER_GB = CCF_MEMORY_KWH_PER_GB_H * W_PER_KW
# W per GB/s of network traffic leaving the instance (CCF gives kWh per GB).
NETWORK_W_PER_GB_PER_S = CCF_NETWORK_KWH_PER_GB * W_PER_KW * SECONDS_PER_HOUR


@dataclass(frozen=True)
class PowerBreakdown:
    """Average draw of one instance, by component, in watts."""

    accelerator_w: float
    cpu_w: float
    memory_w: float
    network_w: float
    overhead_w: float  # facility overhead: (PUE - 1) x IT power

    @property
    def it_w(self) -> float:
        """Power drawn by the instance itself."""
        return self.accelerator_w + self.cpu_w + self.memory_w + self.network_w

    @property
    def total_w(self) -> float:
        """Power at the facility meter."""
        return self.it_w + self.overhead_w


def interpolate_w(idle_w: float, max_w: float, utilization: float) -> float:
    """Linear draw between idle and full load."""
    return idle_w + (max_w - idle_w) * utilization


def instance_power(
    catalog: Catalog,
    inst: Instance,
    accelerator_util: float,
    cpu_util: float,
    network_bytes_per_s: float,
    pue: float,
    accelerator_power_override: tuple[float, float] | None = None,
) -> PowerBreakdown:
    """Draw of one instance at the given utilisations.

    Accelerator and CPU interpolate between idle and full load (chip figures, CCF per-vCPU
    coefficients); memory draws CCF's flat W per GB; network counts the traffic that leaves the
    instance at CCF's kWh per GB (cluster-fabric traffic is in the platform's draw).
    """
    acc = catalog.accelerator_of(inst)
    acc_w = 0.0
    if acc is not None:
        idle, peak = accelerator_power_override or (acc.power.idle_w, acc.power.max_w)
        acc_w = inst.spec.accelerator_count * interpolate_w(idle, peak, accelerator_util)
    cpu = catalog.cpu_power_of(inst)
    cpu_w = inst.spec.vcpus * interpolate_w(cpu.min_w_per_vcpu, cpu.max_w_per_vcpu, cpu_util)
    mem_w = gib_to_gb(inst.spec.memory_gib) * MEMORY_W_PER_GB
    net_w = network_bytes_per_s / BYTES_PER_GB * NETWORK_W_PER_GB_PER_S
    it = acc_w + cpu_w + mem_w + net_w
    return PowerBreakdown(acc_w, cpu_w, mem_w, net_w, (pue - 1.0) * it)
