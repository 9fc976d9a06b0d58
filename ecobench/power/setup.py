"""A configuration's power inputs: what the draw model and the Monte Carlo need from the catalog and
the scenario (chip draw, host CPU, memory, a supplied measurement, what is uncertain)."""

from __future__ import annotations

from typing import Literal

from ecobench.hardware.catalog import Catalog, Instance
from ecobench.hardware.cluster import ranks_per_instance
from ecobench.power.basis import tdp_w
from ecobench.power.carbon import GridIntensity
from ecobench.power.draw import PowerSetup
from ecobench.power.embodied import embodied_kg
from ecobench.power.uncertainty import UncertainSetup
from ecobench.units import gib_to_gb


def power_setup(catalog: Catalog, inst: Instance, override: tuple[float, float] | None,
                host_cpu_utilization: float | None, measured_power_w: float | None,
                measured_power_scope: str | None, basis: str | None = None) -> PowerSetup:
    """The fixed inputs of an instance's draw (``override``: the scenario's chip idle and max W;
    ``basis``: the configuration's resolved ``power_basis``, ``power/basis.py``; None: measured where a
    measured power is given, else modelled)."""
    if basis is None:
        basis = "measured" if measured_power_w is not None else "modelled"
    acc = catalog.accelerator_of(inst)
    cpu = catalog.cpu_power_of(inst)
    if basis == "tdp":
        max_w = tdp_w(inst.spec.accelerator, acc, override[1] if override else None)
        idle_ratio, uncertain, chip = 1.0, False, inst.spec.accelerator
        measured_power_w = measured_power_scope = None
    elif acc is None:
        idle_ratio, max_w, uncertain, chip = 0.0, 0.0, False, None
    else:
        idle, max_w = override or (acc.power.idle_w, acc.power.max_w)
        idle_ratio, chip = idle / max_w, inst.spec.accelerator
        uncertain = acc.power.uncertain and override is None
    if basis == "modelled":
        measured_power_w = measured_power_scope = None  # the model's draw, even beside a supplied one
    return PowerSetup(inst.spec.accelerator_count, chip, idle_ratio, max_w, uncertain, inst.spec.vcpus,
                      cpu.min_w_per_vcpu, cpu.max_w_per_vcpu, ranks_per_instance(catalog, inst),
                      host_cpu_utilization, gib_to_gb(inst.spec.memory_gib), measured_power_w,
                      measured_power_scope, basis)


def uncertain_setup(catalog: Catalog, inst: Instance, power: PowerSetup, grid: GridIntensity, region: str,
                    price_usd_per_h: float,
                    throughput_mode: Literal["inference", "training", "serving", "emulated",
                                             "moe_training"] | None,
                    throughput_key: str, pue_uncertain: bool) -> UncertainSetup:
    """What the Monte Carlo varies for this configuration."""
    acc = catalog.accelerator_of(inst)
    chip = power.chip if power.chip_uncertain and power.measured_power_scope is None else None
    lo = acc.power.low_w if acc is not None and acc.power.low_w is not None else power.chip_max_w
    hi = acc.power.high_w if acc is not None and acc.power.high_w is not None else power.chip_max_w
    return UncertainSetup(
        throughput_mode=throughput_mode, throughput_key=throughput_key, chip=chip, chip_low_w=lo,
        chip_central_w=power.chip_max_w, chip_high_w=hi, pue_uncertain=pue_uncertain,
        grid_key=region if grid.uncertain else None, grid_g_per_kwh=grid.g_per_kwh,
        grid_low=grid.low if grid.low is not None else grid.g_per_kwh,
        grid_high=grid.high if grid.high is not None else grid.g_per_kwh,
        price_usd_per_h=price_usd_per_h, embodied_kg_per_instance_h=embodied_kg(inst, 1.0))
