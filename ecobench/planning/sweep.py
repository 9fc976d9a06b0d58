"""A sweep's configurations evaluated group by group: the backend once per group, the plan over the
group's regions and headrooms as numpy arrays; combinations that cannot run are counted, not fatal."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ecobench.errors import BackendError, InputError
from ecobench.hardware.backends import Backend
from ecobench.hardware.catalog import Catalog
from ecobench.planning.configs import Cells, _price, evaluate_config, locate, pricing_model
from ecobench.power.carbon import GridIntensity, grid_intensity
from ecobench.scenario.model import Scenario
from ecobench.scenario.sweep import Group, groups, label
from ecobench.table import Columns, concat

_PREFIX = r"configs["


def _reason(exc: Exception) -> str:
    """The part of an error that names the cause, without the configuration's own id."""
    text = str(exc).split("\n")[0]
    if text.startswith(_PREFIX) and "): " in text:
        text = text.split("): ", 1)[1]
    elif text.startswith(_PREFIX) and "]: " in text:
        text = text.split("]: ", 1)[1]
    return text[:300]


def _spread(v: Any, u: int, r: int) -> np.ndarray:
    """A row value as a column of the group's u x r cells (headroom-major)."""
    n = u * r
    if isinstance(v, np.ndarray) and v.ndim:
        return np.broadcast_to(v, (u, r)).ravel()
    if isinstance(v, list) and len(v) == r:
        cell = np.empty(r, dtype=object)
        cell[:] = v
        return np.broadcast_to(cell[None, :], (u, r)).ravel()
    if isinstance(v, (bool, np.bool_)) or v is None or isinstance(v, (str, dict, list)):
        out = np.empty(n, dtype=object)
        out[:] = [v] * n
        return out
    return np.full(n, float(v))


def evaluate_group(s: Scenario, g: Group, catalog: Catalog, backends: Mapping[str, Backend],
                   skipped: Counter[str]) -> Columns:
    """The group's rows as columns (none if it cannot run); skipped cells are counted by reason."""
    cfg = g.config
    cells_per_region = len(g.utils)
    inst = catalog.instance(cfg.instance_type)  # every swept name was checked when the scenario loaded
    keep, prices, sources = [], [], []
    for j, region in enumerate(g.regions):
        try:
            price, source = _price(s, cfg, inst, region)
        except InputError:
            spot = "spot " if pricing_model(s, cfg) == "spot" else ""
            skipped[f"no {spot}price for {cfg.instance_type} in {region}"] += cells_per_region
            continue
        keep.append(j)
        prices.append(price)
        sources.append(source)
    if not keep:
        return {}
    regions = [g.regions[j] for j in keep]
    grids = [grid_intensity(catalog, r, s.overrides.grid_g_per_kwh) for r in regions]
    default_u = s.workload.inference.max_utilization if s.workload.inference else 1.0
    utils = np.array([default_u if u is None else u for u in g.utils], dtype=float)[:, None]
    grid = GridIntensity(np.array([x.g_per_kwh for x in grids])[None, :],  # type: ignore[arg-type]
                         [x.source for x in grids], [x.year for x in grids])  # type: ignore[arg-type]
    cells = Cells(regions, utils, np.array(prices, dtype=float)[None, :], sources, grid)
    try:
        row = evaluate_config(s, cfg, catalog, backends, 0, cells).row
    except (InputError, BackendError) as exc:
        skipped[_reason(locate(exc, cfg, 0))] += cells_per_region * len(regions)
        return {}
    u, r = len(g.utils), len(regions)
    cols = {k: _spread(v, u, r) for k, v in row.items()}
    ids = np.empty(u * r, dtype=object)
    ids[:] = [g.config_id(i, keep[j]) for i in range(u) for j in range(r)]
    cols["config_id"] = ids
    cols["is_baseline"] = _spread(False, u, r)
    cols["sweep_index"] = g.indices[:, keep].ravel().astype(float)
    for axis in g.axes:
        if axis == "region":
            cols["sweep_region"] = _spread(regions, u, r)
        elif axis == "max_utilization":
            cols["sweep_max_utilization"] = np.broadcast_to(utils, (u, r)).ravel().copy()
        else:
            v = g.coords[axis]
            cols[f"sweep_{axis}"] = _spread(label(v) if isinstance(v, dict) else v, u, r)
    return cols


def evaluate_sweep(s: Scenario, catalog: Catalog, backends: Mapping[str, Backend],
                   progress: Callable[[str], None] | None = None) -> tuple[Columns, dict[str, Any]]:
    """Every combination of the sweep: the table and its counts (combinations, evaluated, skipped by
    reason, most frequent first)."""
    from ecobench.scenario.sweep import combinations

    total = combinations(s)
    skipped: Counter[str] = Counter()
    parts = []
    done = 0
    step = max(1, total // 10)
    next_report = step
    for g in groups(s):
        parts.append(evaluate_group(s, g, catalog, backends, skipped))
        done += g.indices.size
        if progress and done >= next_report and done < total:
            progress(f"sweep: {done:,}/{total:,} combinations")
            next_report += step
    table = concat(parts)
    evaluated = len(table["config_id"]) if table else 0
    info = {"combinations": total, "evaluated": evaluated, "skipped": total - evaluated,
            "skipped_by_reason": [{"reason": k, "count": v} for k, v in skipped.most_common()]}
    return table, info
