"""CSV and JSON writers for a results table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

RESULTS_SCHEMA_VERSION = 1
RESULTS_KIND = "ecobench-results"  # results.json's "kind"; a committed baseline's is "ecobench-baseline"

# Columns every results.csv leads with, in this order.
CORE_COLUMNS = [
    "config_id", "instance_type", "backend", "provenance", "region", "instances",
    "throughput_per_instance_per_s", "duration_h", "power_w", "energy_kwh", "cost_usd",
    "co2_operational_kg", "co2_embodied_kg", "co2_kg", "energy_change_pct", "cost_change_pct",
    "co2_change_pct",
]
JSON_ONLY = ["samples", "kernels", "engine_utilization", "profile"]  # nested: in results.json, not the CSV
INFERENCE_COLUMNS = ["energy_kwh_per_million", "cost_usd_per_million", "co2_kg_per_million"]


def _core_first(names: list[str]) -> list[str]:
    first = [c for c in CORE_COLUMNS + INFERENCE_COLUMNS if c in names]
    return first + [c for c in names if c not in first]


def csv_columns(names: list[str]) -> list[str]:
    """The CSV's columns: the core ones first, nested ones (results.json only) left out."""
    return [c for c in _core_first(names) if c not in JSON_ONLY]


def ordered(df: pd.DataFrame) -> pd.DataFrame:
    """The table with the core columns first."""
    return df[_core_first([str(c) for c in df.columns])]


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN -> null)."""
    from ecobench.table import clean

    return [{str(k): clean(v) for k, v in row.items()} for row in ordered(df).to_dict("records")]


def write_json(doc: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def read_results(path: Path) -> dict[str, Any]:
    """A run directory's results.json, or a baseline file; a clear error if it is neither."""
    from ecobench.errors import InputError
    from ecobench.io.yamlio import load_json

    f = path / "results.json" if path.is_dir() else path
    if not f.exists():
        runs = sorted(d.name for d in path.iterdir()
                      if (d / "results.json").is_file()) if path.is_dir() else []
        if runs:  # results/<scenario>/ holds one folder per run
            raise InputError(f"{path}: a folder of {len(runs)} runs, not a run: give one of them "
                             f"(newest: {path / runs[-1]})")
        raise InputError(f"{path}: no such run directory or baseline file")
    doc = load_json(f, "results")
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise InputError(f"{f}: has no 'rows'; not a results or baseline file")
    return doc
