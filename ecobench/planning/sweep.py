"""A sweep's configurations evaluated group by group: the backend once per group, the plan over the
group's regions, prices and headrooms as numpy arrays; combinations that cannot run are counted, not
fatal. Each group's result is kept compact (arrays of the shapes the plan gave, not one value per row)
(``sweep_rows``) and streamed to a spill file (``sweep_table``); only the columns the Pareto front and the
recommendations read stay in memory, one value per row."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ecobench.bounds import MAX_INSTANCES
from ecobench.errors import BackendError, EcobenchError, InputError
from ecobench.hardware.backends import Backend
from ecobench.hardware.catalog import Catalog
from ecobench.planning.configs import Cells, _price, evaluate_config, pricing_model
from ecobench.planning.sweep_rows import GroupRows
from ecobench.planning.sweep_table import SweepTable
from ecobench.power.carbon import GridIntensity, grid_intensity
from ecobench.scenario.model import HardwareConfig, Scenario
from ecobench.scenario.sweep import Group, groups, ids_distinct, label
from ecobench.table import Columns

SCENARIO_PRICE = "scenario price_usd_per_h"  # the price source of a configuration's own price
OVER_BOUND = (f"needs more than the {MAX_INSTANCES:,} instances a plan may have (README 'Input bounds'): "
              "a larger instance or a lower rate")


def _reason(exc: EcobenchError, cfg: HardwareConfig) -> str:
    """Why a group was skipped, as combinations skipped for the same cause share it: the error before
    it is located (no ``configs[...]``: the group's id is no combination's), its field in front, its
    ``cause`` where it has one (a layout's problems, not the cluster size it was tried on), the
    group's id where the message names it left out."""
    text = (exc.cause or str(exc)).split("\n")[0]
    text = text.replace(f"configs[{cfg.id}], ", "").replace(f"configs[{cfg.id}]", "this combination")
    if exc.config_field:
        text = f"{exc.config_field}: {text}"
    return text[:300]


def _per_column(values: list[Any]) -> np.ndarray:
    """Values of one per column as an object array of shape (1, columns)."""
    out = np.empty((1, len(values)), dtype=object)
    out[0, :] = values
    return out


def _number_or_none(values: list[Any]) -> np.ndarray:
    """Swept values of one per column, shape (1, columns): numbers as floats (as a constant of a group
    is), None where null (then an object array)."""
    if any(v is None or isinstance(v, (bool, np.bool_, str, dict, list)) for v in values):
        return _per_column([v if v is None or isinstance(v, (bool, np.bool_, str, dict, list)) else float(v)
                            for v in values])
    return np.array(values, dtype=float)[None, :]


def evaluate_group(s: Scenario, g: Group, catalog: Catalog, backends: Mapping[str, Backend],
                   skipped: Counter[str]) -> GroupRows | None:
    """The group's rows, compact (None if none can run); skipped cells are counted by reason."""
    if g.repeat:
        skipped[g.repeat] += g.indices.size
        return None
    cfg = g.config
    n_u = len(g.utils)
    inst = catalog.instance(cfg.instance_type)  # every swept name was checked when the scenario loaded
    swept_price = "price_usd_per_h" in g.axes
    catalog_prices: list[tuple[float, str] | None] | None = None
    cols_p: list[int] = []
    cols_r: list[int] = []
    prices: list[float] = []
    sources: list[str] = []
    n_r = len(g.regions)
    for p, value in enumerate(g.prices):
        if swept_price and value is not None:
            cols_p += [p] * n_r
            cols_r += range(n_r)
            prices += [float(value)] * n_r
            sources += [SCENARIO_PRICE] * n_r
            continue
        if catalog_prices is None:
            pcfg = cfg.model_copy(update={"price_usd_per_h": None}) if swept_price else cfg
            catalog_prices = []
            for region in g.regions:
                try:
                    catalog_prices.append(_price(s, pcfg, inst, region))
                except InputError:
                    catalog_prices.append(None)
        for j, found in enumerate(catalog_prices):
            if found is None:
                spot = "spot " if pricing_model(s, cfg) == "spot" else ""
                skipped[f"no {spot}price for {cfg.instance_type} in {g.regions[j]}"] += n_u
                continue
            cols_p.append(p)
            cols_r.append(j)
            prices.append(found[0])
            sources.append(found[1])
    if not cols_p:
        return None
    n_c = len(cols_p)
    regions = [g.regions[j] for j in cols_r]
    by_region = {r: grid_intensity(catalog, r, s.overrides.grid_g_per_kwh) for r in dict.fromkeys(regions)}
    grids = [by_region[r] for r in regions]
    default_u = s.workload.inference.max_utilization if s.workload.inference else 1.0
    utils = np.array([default_u if u is None else u for u in g.utils], dtype=float)[:, None]
    grid = GridIntensity(np.array([x.g_per_kwh for x in grids])[None, :],  # type: ignore[arg-type]
                         [x.source for x in grids], [x.year for x in grids])  # type: ignore[arg-type]
    cells = Cells(regions, utils, np.array(prices, dtype=float)[None, :], sources, grid)
    try:
        row = evaluate_config(s, cfg, catalog, backends, 0, cells).row
    except (InputError, BackendError) as exc:
        skipped[_reason(exc, cfg)] += n_u * n_c
        return None
    over = _over_bound(row.get("instances"), n_u)
    if over.any():  # such headrooms are skipped, as a configuration of ``configs`` is refused
        skipped[OVER_BOUND] += int(over.sum()) * n_c
        if over.all():
            return None
        g = _headrooms(g, np.flatnonzero(~over))
        n_u = len(g.utils)
        utils = utils[~over]
        cells = replace(cells, utils=utils)
        row = evaluate_config(s, cfg, catalog, backends, 0, cells).row
    pcol = np.array(cols_p)
    rcol = np.array(cols_r)
    order_u: np.ndarray | None = None
    order_c: np.ndarray | None = None
    if len(set(cols_p)) > 1:  # rows by price, then headroom, then region
        order_u, order_c = _price_major(pcol, n_u)
    uu = order_u if order_u is not None else np.repeat(np.arange(n_u), n_c)
    cc = order_c if order_c is not None else np.tile(np.arange(n_c), n_u)
    index = g.indices[pcol[cc], uu, rcol[cc]]
    sweep: dict[str, Any] = {}
    for axis in g.axes:
        if axis == "region":
            sweep["sweep_region"] = _per_column(regions)
        elif axis == "max_utilization":
            sweep["sweep_max_utilization"] = utils
        elif axis == "price_usd_per_h":
            sweep["sweep_price_usd_per_h"] = np.array(g.prices, dtype=float)[pcol][None, :] \
                if None not in g.prices else _number_or_none([g.prices[p] for p in cols_p])
        else:
            v = g.coords[axis]
            sweep[f"sweep_{axis}"] = label(v) if isinstance(v, dict) else v
    ids = g.ids(cols_p, cols_r)
    return GroupRows(row, order_u, order_c, (n_u, n_c), ids, index, sweep)


def _over_bound(instances: Any, n_u: int) -> np.ndarray:
    """Which headrooms' plans need more than ``MAX_INSTANCES`` instances (in any column)."""
    if instances is None:
        return np.zeros(n_u, dtype=bool)
    n = np.asarray(instances, dtype=float)
    n = n.reshape(n.shape + (1,) * (2 - n.ndim)) if n.ndim < 2 else n
    return np.broadcast_to(n > MAX_INSTANCES, (n_u, n.shape[1])).any(axis=1)


def _headrooms(g: Group, keep: np.ndarray) -> Group:
    """The group at the headrooms ``keep`` only."""
    return replace(g, utils=[g.utils[u] for u in keep], indices=g.indices[:, keep, :],
                   tails=tuple(g.tails[u] for u in keep) if len(g.tails) > 1 else g.tails)


def _price_major(pcol: np.ndarray, n_u: int) -> tuple[np.ndarray, np.ndarray]:
    """(headroom, column) of each written row when the columns (one block of columns per price, in
    order) are written block by block, each block headroom by headroom."""
    n_c = len(pcol)
    starts = np.flatnonzero(np.r_[True, pcol[1:] != pcol[:-1]])
    sizes = np.diff(np.r_[starts, n_c])
    block = np.repeat(np.arange(len(starts)), sizes)
    s, k = starts[block], sizes[block]  # per column: its block's first column and width
    u = np.arange(n_u)[:, None]
    c = np.arange(n_c)[None, :]
    pos = (s * n_u + u * k + (c - s)).ravel()
    order_u = np.empty(n_u * n_c, dtype=np.intp)
    order_c = np.empty(n_u * n_c, dtype=np.intp)
    order_u[pos] = np.broadcast_to(u, (n_u, n_c)).ravel()
    order_c[pos] = np.broadcast_to(c, (n_u, n_c)).ravel()
    return order_u, order_c


class _Ids:
    """The sweep's ids made unique as they stream: an id that a configuration of ``configs`` or an
    earlier combination already has (values that read alike, ids cut at 100 characters) gets its
    ``sweep_index`` appended. Where the sweep's ids are distinct by construction only the
    configurations' ids are checked, until one matches."""

    def __init__(self, s: Scenario, taken: set[str]) -> None:
        self.taken = set(taken)
        self.seen: set[str] | None = None if ids_distinct(s) else set(taken)

    def unique(self, rec: GroupRows, earlier: Callable[[], Iterable[str]]) -> None:
        if self.seen is None:
            if self.taken.isdisjoint(rec.ids):
                return
            self.seen = self.taken | set(earlier())
        seen = self.seen
        out = rec.ids
        for i, (c, index) in enumerate(zip(out, rec.index.tolist(), strict=True)):
            if c in seen:
                c = out[i] = f"{c[:88]}-{int(index)}"
            seen.add(c)


def evaluate_sweep(s: Scenario, catalog: Catalog, backends: Mapping[str, Backend], head: Columns,
                   light: list[str], progress: Callable[[str], None] | None = None
                   ) -> tuple[SweepTable, dict[str, Any]]:
    """Every combination of the sweep after the table ``head`` (the configurations' rows): the
    table, streamed to a spill file, and its counts (combinations, evaluated, skipped by reason, most
    frequent first). The columns named in ``light`` (and every ``sweep_*``) stay in memory."""
    from ecobench.scenario.sweep_size import combinations

    total = combinations(s.sweep)
    skipped: Counter[str] = Counter()
    table = SweepTable(head, light, s.baseline)
    ids = _Ids(s, set(head["config_id"].tolist()))
    done = 0
    step = max(1, total // 10)
    next_report = step
    for g in groups(s, catalog):
        rec = evaluate_group(s, g, catalog, backends, skipped)
        if rec is not None:
            ids.unique(rec, table.sweep_ids)
            table.append(rec)
        done += g.indices.size
        if progress and done >= next_report and done < total:
            progress(f"sweep: {done:,}/{total:,} combinations")
            next_report += step
    table.close()
    evaluated = table.rows - len(head["config_id"])
    info = {"combinations": total, "evaluated": evaluated, "skipped": total - evaluated,
            "skipped_by_reason": [{"reason": k, "count": v} for k, v in skipped.most_common()]}
    return table, info
