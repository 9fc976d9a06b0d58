"""Scenario -> results table: every configuration (and sweep combination) evaluated, compared with the
baseline, on the Pareto front, with the recommendations and the Monte Carlo bands."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ecobench.errors import EcobenchError, InputError
from ecobench.hardware.backends import BACKENDS, Backend
from ecobench.hardware.catalog import Catalog, load_catalog
from ecobench.planning.configs import check_config, evaluate_config, locate
from ecobench.planning.measured_serving import lengths_mismatch
from ecobench.planning.serving import LEAST_REACHABLE, ONE_SLOT, least_reachable, slo_misses
from ecobench.power.uncertainty import McConfig, bands
from ecobench.scenario.model import LOCAL_INSTANCE, HardwareConfig, Scenario
from ecobench.table import CHANGE_METRICS, change_pct
from ecobench.words import counted, fmt_num

if TYPE_CHECKING:
    import pandas as pd

    from ecobench.table import Columns

def row_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """What a reader must know about some rows: an empty cost (no sourced price), a disagreement
    between backends, a serving benchmark of other request lengths (measured_serving), a missed
    deadline, a latency target no batch meets (``slo`` says misses), a measured CPU power that
    codecarbon modelled for want of a counter, an MFU above 1 (a supplied throughput beyond the
    hardware's peak) (``ecobench run`` prints them on stderr)."""
    out = []
    for row in rows:
        if math.isnan(row["price_usd_per_h"]):
            what = ("no price for the local host" if row["instance_type"] == LOCAL_INSTANCE else
                    f"no sourced {row['instance_type']} price in any region")
            out.append(f"{row['config_id']}: {what}: cost columns are empty (set price_usd_per_h)")
        if note := lengths_mismatch(row.get("method")):
            out.append(f"{row['config_id']}: the measured_serving benchmark's requests differ from the "
                       f"workload's ({note}), yet its requests/s size the fleet: benchmark with "
                       "the scenario's lengths")
        if row.get("backend_disagreement"):
            out.append(f"{row['config_id']}: {row['backend_disagreement']}")
        if row.get("meets_deadline") is False:
            n = row["instances"]
            out.append(f"{row['config_id']}: {counted(n, 'instance')} {'takes' if n == 1 else 'take'} "
                       f"{row['duration_h']:.3g} h, "
                       f"over training.deadline_h {row['deadline_h']:g} (meets_deadline false): "
                       + ("no cluster up to training.max_instances meets it; this is the fastest reachable"
                          if str(row.get("layout_choice") or "").startswith("training.deadline_h") else
                          "leave out instances to have ecobench find the fewest that finish in time"))
        choice = str(row.get("layout_choice") or "")
        if row.get("idle_devices") and choice.startswith(("given; ", "data parallel (default); ")):
            out.append(f"{row['config_id']}: {choice.partition('; ')[2]} (idle_devices)")
        least = least_reachable(row.get("layout_choice"))
        for target, value in slo_misses(row.get("slo")):
            if target.startswith("latency_ms_p99 "):  # an encoder service (plan_inference's slo)
                out.append(f"{row['config_id']}: no load meets {target} on {row['instance_type']}: a batch "
                           f"alone takes longer ({row['method'].partition(';')[0]}); planned at full load, "
                           f"p99 {fmt_num(float(value))} ms ({counted(row['instances'], 'instance')}) (slo)")
                continue
            where = (f"{fmt_num(float(row['batch']))} requests in flight per replica"
                     if str(row.get("layout_choice") or "").startswith(ONE_SLOT) else "batch 1")
            out.append(f"{row['config_id']}: no batch meets {target} on {row['instance_type']}: "
                       f"{fmt_num(float(value))} ms{'' if least else ' at best'} at {where} (tensor "
                       f"{row['tensor_parallel']}), where this row is planned "
                       f"({counted(row['instances'], 'instance')})"
                       + (f"; {LEAST_REACHABLE}{least}" if least else "") + " (slo; layout_choice says why)")
        mfu = row.get("mfu")
        if isinstance(mfu, float | int) and not isinstance(mfu, bool) and mfu > 1.0:
            supplied = row.get("provenance") == "supplied" or row.get("measured_throughput_per_s") is not None
            what = "supplied (measured_throughput_per_s)" if supplied else "planned"
            out.append(f"{row['config_id']}: mfu {mfu:.3g} is above 1: the throughput {what} exceeds what "
                       "the hardware's peak allows; check it (an MFU above about 0.6 is rarely reached)")
        if row.get("cpu_power_fallback") is True:
            out.append(f"{row['config_id']}: this host exposes no CPU energy counter (RAPL), so codecarbon "
                       "modelled the CPU's power from its TDP (x load) instead of measuring it "
                       "(cpu_power_fallback true; power_method says how)")
    out += [f"{target} is under 1 ms (missed): latency targets are in milliseconds "
            f"({value:g} s would be {fmt_num(value * 1000)} ms); check the unit"
            for target, value in _sub_ms_targets(rows)]
    return out


def _sub_ms_targets(rows: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """Each missed latency target under 1 ms (``("median_tpot_ms 0.05", 0.05)``), once: most likely
    seconds written into a field in milliseconds."""
    seen: dict[str, float] = {}
    for row in rows:
        for target, _ in slo_misses(row.get("slo")):
            try:
                value = float(target.rpartition(" ")[2].replace(",", ""))
            except ValueError:
                continue
            if value < 1:
                seen.setdefault(target, value)
    return list(seen.items())


def run_warnings(s: Scenario, rows: list[dict[str, Any]], noisy: bool = True) -> list[str]:
    """Every warning of a run, one line each: the scenario's deprecated names, :func:`row_warnings`,
    a decoder configuration left at fp32 and (``noisy``) each measured row flagged as not reproducible
    (``ecobench run`` prints them on stderr, the noisy rows in a block of their own; ``ecobench.run``
    issues them as warnings)."""
    out = list(s.workload.serving.deprecated_names) if s.workload.serving is not None else []
    out += row_warnings(rows)
    if s.workload.arch().kind == "decoder":
        out += [f"{c.id}: precision not set, so fp32; LLMs train and serve in bf16 (or lower): set "
                "precision" for c in s.configs if "precision" not in c.model_fields_set]
    out += [f"{r['config_id']}: the measurement is not reproducible on this host "
            f"({r['measurement_warnings']}); `ecobench check` and `ecobench baseline` refuse it (exit 5) "
            "unless --allow-noisy"
            for r in rows if noisy and r.get("measurement_warnings")]
    return out


def add_changes(rows: list[dict[str, Any]], baseline_id: str,
                base: list[dict[str, Any]] | None = None) -> None:
    """Add ``<metric>_change_pct`` and ``throughput_ratio`` against the baseline row (found in ``base``,
    default ``rows``), in place."""
    ref = next(r for r in (rows if base is None else base) if r["config_id"] == baseline_id)
    for r in rows:
        r["throughput_ratio"] = r["throughput_per_instance_per_s"] / ref["throughput_per_instance_per_s"]
        for col, short in CHANGE_METRICS.items():
            r[f"{short}_change_pct"] = change_pct(r[col], ref[col])


@dataclass
class Evaluation:
    """What a run writes: ``rows`` for results.json and the report (every configuration of
    ``configs``, and of a sweep the front, the picks and the best per objective, with bands),
    ``table`` every row (results.csv), the sweep's counts and the recommendations."""

    rows: list[dict[str, Any]]
    table: Any  # Columns; of a sweep, a SweepTable (ecobench.planning.sweep_table)
    recommendations: list[dict[str, Any]]
    sweep: dict[str, Any] | None = None


SWEEP_FRONT_SHOWN = 100  # front rows a sweep's results.json and report show (all are in results.csv)
SWEEP_BEST_SHOWN = 10  # and the best rows by each objective


def evaluate_all(s: Scenario, *, catalog: Catalog | None = None,
                 backends: Mapping[str, Backend] | None = None,
                 progress: Callable[[str], None] | None = None) -> Evaluation:
    """Every configuration of ``configs`` and of the sweep, compared with the baseline; the Pareto
    front and the recommendations over all of them. A sweep's table is a
    :class:`~ecobench.planning.sweep_table.SweepTable` (streamed to a spill file). With
    ``power_points`` the run uses the power model refitted with them (``calibrate.calibrated_model``),
    and each row's ``power_model`` says so."""
    from ecobench.power.params import RUN_MODEL

    if s.power_points is None:
        return _evaluate_all(s, catalog, backends, progress)
    from ecobench.power.calibrate import calibrated_model

    try:
        model = calibrated_model(s.power_points)
    except InputError as exc:  # the file, checked before anything runs
        raise InputError(f"power_points: {exc}") from None
    token = RUN_MODEL.set(model)
    try:
        return _evaluate_all(s, catalog, backends, progress)
    finally:
        RUN_MODEL.reset(token)


def _evaluate_all(s: Scenario, catalog: Catalog | None, backends: Mapping[str, Backend] | None,
                  progress: Callable[[str], None] | None) -> Evaluation:
    import numpy as np

    from ecobench import table as tb
    from ecobench.measure.defaults import SHOW_PROGRESS
    from ecobench.planning.pareto import (
        columns_read,
        eligible,
        objectives,
        pareto_columns,
        recommendations,
    )

    cat = catalog or load_catalog()
    bk = BACKENDS if backends is None else backends
    for i, cfg in enumerate(s.configs):  # a bad configuration refused before any is evaluated
        try:
            check_config(s, cfg, cat, bk, i)
        except EcobenchError as exc:
            locate(exc, cfg, i)
            raise
    quiet = SHOW_PROGRESS.set(progress is not None)  # -q: no measurement bar either
    try:
        rows, mcs = _evaluate_rows(s, s.configs, cat, bk, progress)
    finally:
        SHOW_PROGRESS.reset(quiet)
    add_changes(rows, s.baseline)
    table: Any = tb.from_rows(rows)
    info = None
    if s.sweep:
        from ecobench.planning.sweep import evaluate_sweep

        table, info = evaluate_sweep(s, cat, bk, table, columns_read(s), progress)
    pareto, rank = pareto_columns(s, table)
    if info is None:
        table["pareto"], table["pareto_rank"] = pareto, rank
    else:
        table.set_column("pareto", pareto)
        table.set_column("pareto_rank", rank)
    shown = np.arange(len(rows))
    if info is not None and table.rows > len(rows):
        objs = objectives(s, table)
        ok = np.flatnonzero(eligible(table, objs, s))
        picked = {r["config_id"] for r in recommendations(s, table)}  # their rows are shown in full
        ranks = np.asarray(table["pareto_rank"], dtype=float)
        on = np.flatnonzero(~np.isnan(ranks))  # the first rows of the front (rows that tie share a rank)
        extra = set(on[np.argsort(ranks[on], kind="stable")[:SWEEP_FRONT_SHOWN]].tolist())
        for o in objs:
            extra |= set(ok[np.argsort(table[o.column][ok].astype(float), kind="stable")[:SWEEP_BEST_SHOWN]]
                         .tolist())
        ids = table["config_id"]
        extra |= {int(i) for c in picked for i in np.flatnonzero(ids == c)}
        extra = {i for i in extra if i >= len(rows)}
        shown = np.array(sorted(extra | set(range(len(rows)))))
        info["rows_shown"] = len(shown)
        more, more_mcs = _evaluate_rows(s, [_sweep_config(s, table, i, cat) for i in shown[len(rows):]], cat,
                                        bk, None)
        add_changes(more, s.baseline, base=rows)
        rows = rows + more
        mcs += more_mcs
        for name in dict.fromkeys(k for r in rows for k in r if k.startswith("profile_")):
            # the shown rows' day of load (the sweep's groups have none): in results.csv as in results.json
            table.set_rows(name, shown, np.array([r.get(name, np.nan) for r in rows], dtype=float))
    if s.uncertainty.draws and mcs:
        add_bands(rows, mcs, s)
        for name in dict.fromkeys(k for r in rows for k in r if k.endswith(("_low", "_high"))):
            values = [r.get(name, np.nan) if r.get(name) is not None else np.nan for r in rows]
            if info is not None:
                table.set_rows(name, shown, np.array(values, dtype=float))
                continue
            col = table.get(name)
            if col is None:
                col = table[name] = np.full(tb.length(table), np.nan)
            col[shown] = values
    recs = recommendations(s, table)  # after the bands: the picks' reasons say what they say of the gains
    sweep_names = [k for k in table if k.startswith("sweep_")]
    for r, i in zip(rows, shown, strict=True):
        r["pareto"] = bool(table["pareto"][i])
        r["pareto_rank"] = tb.clean(table["pareto_rank"][i])
        for k in sweep_names:
            if k not in r:
                r[k] = tb.clean(table[k][i])
    return Evaluation(rows, table, recs, info)


def _sweep_config(s: Scenario, t: Any, i: int, cat: Catalog) -> HardwareConfig:
    from ecobench.scenario.sweep import config_at

    return config_at(s, int(t["sweep_index"][i]), str(t["config_id"][i]), cat)


def _evaluate_rows(s: Scenario, configs: list[HardwareConfig], cat: Catalog, bk: Mapping[str, Backend],
                   progress: Callable[[str], None] | None) -> tuple[list[dict[str, Any]], list[McConfig]]:
    from ecobench.power.params import RUN_MODEL

    rows: list[dict[str, Any]] = []
    mcs: list[McConfig] = []
    for i, cfg in enumerate(configs, 1):
        if progress:
            progress(f"[{i}/{len(configs)}] {cfg.id}: {cfg.instance_type} via "
                     + ("supplied throughput" if cfg.measured_throughput_per_s
                        else "measured serving" if cfg.measured_serving else cfg.backend))
        try:
            result = evaluate_config(s, cfg, cat, bk, i - 1)
        except EcobenchError as exc:
            locate(exc, cfg, i - 1)
            raise
        if RUN_MODEL.get() is not None:  # a scenario's power_points: the refitted model, named
            result.row["power_model"] = RUN_MODEL.get().version  # type: ignore[union-attr]
        rows.append(result.row)
        if result.mc is not None:
            mcs.append(result.mc)
    return rows, mcs


def evaluate(s: Scenario, *, catalog: Catalog | None = None,
             backends: Mapping[str, Backend] | None = None,
             progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Every row (``configs`` and the sweep) as a DataFrame; :func:`evaluate_all` for the rest."""
    import pandas as pd

    ev = evaluate_all(s, catalog=catalog, backends=backends, progress=progress)
    if ev.sweep is None:
        return pd.DataFrame(ev.rows)
    return pd.DataFrame(ev.table.columns())


def add_change_columns(t: Columns, baseline_id: str) -> None:
    """``add_changes`` over a column table, in place."""
    import numpy as np

    b = int(np.flatnonzero(t["config_id"] == baseline_id)[0])
    thr = t["throughput_per_instance_per_s"].astype(float)
    t["throughput_ratio"] = thr / thr[b]
    for col, short in CHANGE_METRICS.items():
        v = t[col].astype(float)
        t[f"{short}_change_pct"] = change_pct(v, v[b])


def add_bands(rows: list[dict[str, Any]], mcs: list[McConfig], s: Scenario) -> None:
    """Add the Monte Carlo's ``*_low`` / ``*_high`` columns to the rows, in place. A band holds the
    central value: where a figure is at its largest (or smallest) at the central inputs, e.g. an
    accelerator that draws less whether its throughput comes out faster (less busy) or slower (more
    time at stall draw), the draws' 5th-95th percentiles can miss it, and the band extends to it."""
    found = bands(mcs, s.baseline, s.uncertainty.draws, s.uncertainty.seed)
    for r in rows:
        band = found.get(r["config_id"], {})
        for k in band:
            central = r.get(k.rsplit("_", 1)[0])
            if not (isinstance(central, float) and math.isfinite(central) and math.isfinite(band[k])):
                continue
            if abs(band[k] - central) <= 1e-9 * abs(central):  # no input moves it: rounding
                band[k] = central
            elif k.endswith("_low"):
                band[k] = min(band[k], central)
            else:
                band[k] = max(band[k], central)
        r.update(band)
