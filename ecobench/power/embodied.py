"""Embodied (manufacturing) carbon amortised over the server's life and the instance's share."""

from __future__ import annotations

from ecobench.hardware.catalog import Instance
from ecobench.units import CCF_SERVER_LIFESPAN_YEARS, HOURS_PER_YEAR


def embodied_kg(inst: Instance, instance_hours: float,
                lifespan_years: float = CCF_SERVER_LIFESPAN_YEARS) -> float:
    """kgCO2e of manufacturing attributed to ``instance_hours`` of this instance type."""
    per_h = inst.embodied.server_kgco2e * inst.host_share / (lifespan_years * HOURS_PER_YEAR)
    return per_h * instance_hours
