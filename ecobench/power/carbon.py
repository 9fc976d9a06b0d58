"""Grid carbon intensity per AWS region, read from codecarbon's package data.

The files are located with ``importlib.util.find_spec`` so codecarbon itself (slow to import) is
not imported: ``data/private_infra/global_energy_mix.json`` (country, gCO2e/kWh) and
``data/private_infra/<year>/usa_emissions.json`` (US state, eGRID lb/MWh; the unit is read from
the file's ``_unit``).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecobench.errors import InputError
from ecobench.hardware.catalog import Catalog
from ecobench.units import lb_per_mwh_to_g_per_kwh


@dataclass(frozen=True)
class GridIntensity:
    g_per_kwh: float
    source: str


def _codecarbon_data() -> Path:
    spec = importlib.util.find_spec("codecarbon")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("codecarbon is not installed; it provides the grid carbon-intensity data "
                         "(pip install codecarbon), or set overrides.grid_g_per_kwh in the scenario")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "private_infra"


@functools.cache
def _json(relpath: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((_codecarbon_data() / relpath).read_text(encoding="utf-8"))
    return data


def _usa_file() -> str:
    years = sorted(p.name for p in _codecarbon_data().iterdir()
                   if p.is_dir() and p.name.isdigit() and (p / "usa_emissions.json").exists())
    if not years:
        raise InputError("codecarbon's package data has no usa_emissions.json")
    return f"{years[-1]}/usa_emissions.json"


def _codecarbon_version() -> str:
    from importlib.metadata import version

    return version("codecarbon")


def grid_intensity(catalog: Catalog, region: str, overrides: dict[str, float]) -> GridIntensity:
    """gCO2e/kWh for an AWS region: the scenario's override, else codecarbon's data."""
    if region in overrides:
        return GridIntensity(overrides[region], "scenario override")
    reg = catalog.region(region)
    cc = f"codecarbon {_codecarbon_version()} package data"
    if reg.us_state:
        rel = _usa_file()
        usa = _json(rel)
        unit = usa["_unit"]["emissions"]
        if unit != "lbs/MWh":
            raise InputError(f"codecarbon {rel}: unexpected unit {unit!r} (expected lbs/MWh)")
        src = usa.get("_source", {})
        return GridIntensity(lb_per_mwh_to_g_per_kwh(usa[reg.us_state]["emissions"]),
                             f"{cc}, {rel} [{reg.us_state}] ({src.get('name', 'eGRID')})")
    if reg.country is None:
        raise InputError(f"region {region}: the catalog maps it to neither a US state nor a country")
    mix = _json("global_energy_mix.json")[reg.country]
    return GridIntensity(float(mix["carbon_intensity"]),
                         f"{cc}, global_energy_mix.json [{reg.country}] ({mix.get('year')})")
