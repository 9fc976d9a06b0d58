"""The pinned grid-intensity table (``power/data/grid_intensity.csv``), one row per AWS region.

Built by ``python tools/grid_build.py`` from codecarbon's package data and Ember's, and
committed: a run's carbon figures change only with a reviewed change of this file, never with the
codecarbon release that happens to be installed (analytic runs do not need codecarbon at all).
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

GRID_FILE = "data/grid_intensity.csv"


@dataclass(frozen=True)
class GridRow:
    """A region's location-based intensity (gCO2e/kWh), its 90% range, and where it comes from."""

    region: str
    g_per_kwh: float
    g_per_kwh_low: float
    g_per_kwh_high: float
    basis: str  # us_state, province, zone or country
    location: str
    year: int
    source: str
    range_from: str


@dataclass(frozen=True)
class GridTable:
    version: str  # the header line: build date and data versions
    rows: dict[str, GridRow]


@functools.cache
def grid_table() -> GridTable:
    """The packaged table (cached)."""
    text = resources.files("ecobench.power").joinpath(GRID_FILE).read_text(encoding="utf-8")
    lines = text.splitlines()
    header = [ln for ln in lines if ln.startswith("#")]
    version = header[0].removeprefix("# grid_data_version:").strip() if header else "unknown"
    out = {}
    for r in csv.DictReader(ln for ln in lines if not ln.startswith("#")):
        out[r["region"]] = GridRow(r["region"], float(r["g_per_kwh"]), float(r["g_per_kwh_low"]),
                                   float(r["g_per_kwh_high"]), r["basis"], r["location"], int(r["year"]),
                                   r["source"], r["range_from"])
    return GridTable(version, out)


def grid_data_version() -> str:
    """Date and data versions of the packaged table, recorded in every results.json."""
    return grid_table().version


def grid_warnings(current: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
    """Differences in grid data between a run and its baseline (``ecobench check`` prints them):
    the table version, and each configuration's grid source and year."""
    out = []
    cv, bv = current.get("grid_data_version"), baseline.get("grid_data_version")
    if cv != bv:
        out.append(f"grid data differs: baseline {bv or 'not recorded (made before the pinned table)'}, "
                   f"run {cv or 'not recorded'}")
    base_rows = {r.get("config_id"): r for r in baseline.get("rows", [])}
    for r in current.get("rows", []):
        b = base_rows.get(r.get("config_id"))
        if b is None:
            continue
        for key in ("grid_source", "grid_year"):
            if r.get(key) != b.get(key):
                out.append(f"{r.get('config_id')}: {key} differs: baseline {b.get(key)!r}, "
                           f"run {r.get(key)!r}")
    return out
