"""emissions.csv: a measured run's energy windows in codecarbon's own file layout, so tools that read
codecarbon output (its dashboard, pandas scripts written for it) read ecobench's measurements too.

One row per measured window of each configuration measured on this host (reference backend,
``instance_type: local``): the window's length and each component's mean draw as codecarbon's
tracker read them (``energy_windows`` in results.json), energies from them, and emissions at the
row's grid intensity (the scenario's region; codecarbon's own default would be its country lookup).
Units as codecarbon's: seconds, kg CO2e, kg/s, W, kWh. What ecobench does not know is left empty.
"""

from __future__ import annotations

import csv
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["EMISSIONS_COLUMNS", "emissions_rows", "write_emissions"]

# codecarbon 3.3's emissions.csv header (codecarbon.output_methods.emissions_data.EmissionsData).
EMISSIONS_COLUMNS = [
    "timestamp", "project_name", "run_id", "experiment_id", "duration", "emissions", "emissions_rate",
    "cpu_power", "gpu_power", "ram_power", "cpu_energy", "gpu_energy", "ram_energy", "energy_consumed",
    "water_consumed", "country_name", "country_iso_code", "region", "cloud_provider", "cloud_region", "os",
    "python_version", "codecarbon_version", "cpu_count", "cpu_model", "gpu_count", "gpu_model", "longitude",
    "latitude", "ram_total_size", "tracking_mode", "cpu_utilization_percent", "gpu_utilization_percent",
    "ram_utilization_percent", "ram_used_gb", "on_cloud", "pue", "wue",
]


def _measured_here(r: dict[str, Any]) -> bool:
    return r.get("instance_type") == "local" and bool(r.get("energy_windows"))


def _codecarbon_version(r: dict[str, Any]) -> str:
    method = str(r.get("measurement_method") or "")
    at = method.find("codecarbon ")
    return method[at + len("codecarbon "):].split(" ", 1)[0].rstrip(")") if at >= 0 else ""


def emissions_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """emissions.csv's rows for a results document (none without a configuration measured here)."""
    machine = doc.get("machine") or {}
    os_name = "-".join(str(machine[k]) for k in ("system", "release", "machine") if machine.get(k))
    out = []
    for r in doc.get("rows", []):
        if not _measured_here(r):
            continue
        grid = r.get("grid_g_per_kwh")
        try:
            t = datetime.fromisoformat(str(r.get("window_start_utc")))
        except ValueError:
            t = None
        for w in r["energy_windows"]:
            d = float(w["duration_s"])
            kwh = {k: float(w[f"{k}_w"]) * d / 3.6e6 for k in ("cpu", "accelerator", "memory")}
            total = sum(kwh.values())
            kg = total * grid / 1000 if isinstance(grid, int | float) else None
            if t is not None:
                t += timedelta(seconds=d)
            out.append({
                "timestamp": t.isoformat(timespec="seconds") if t is not None else "",
                "project_name": doc.get("scenario", {}).get("name", ""), "run_id": doc.get("run_id", ""),
                "experiment_id": r["config_id"], "duration": d, "emissions": kg,
                "emissions_rate": kg / d if kg is not None and d > 0 else None,
                "cpu_power": w["cpu_w"], "gpu_power": w["accelerator_w"], "ram_power": w["memory_w"],
                "cpu_energy": kwh["cpu"], "gpu_energy": kwh["accelerator"], "ram_energy": kwh["memory"],
                "energy_consumed": total, "region": r.get("region", ""), "os": os_name,
                "python_version": machine.get("python", ""), "codecarbon_version": _codecarbon_version(r),
                "tracking_mode": "process", "on_cloud": "N", "pue": 1.0,
            })
    return out


def write_emissions(doc: dict[str, Any], path: Path) -> bool:
    """Write emissions.csv at ``path`` when the run measured a configuration on this host; returns
    whether it did."""
    rows = emissions_rows(doc)
    if not rows:
        return False
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, EMISSIONS_COLUMNS, lineterminator="\n", restval="")
        w.writeheader()
        w.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
    return True
