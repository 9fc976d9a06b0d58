"""The terminal summary of a run: the headline scope's figures and their 90% bands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ecobench.power.scopes import (
    change_column,
    co2_column,
    co2_token_column,
    describe,
    energy_column,
    token_column,
)

if TYPE_CHECKING:
    from ecobench.planning.evaluate import Evaluation
    from ecobench.scenario.model import Scenario

BANDED_INFERENCE = ["throughput_per_instance_per_s", "instances", "{energy}", "cost_usd_per_million", "{co2}",
                    "{energy_change}", "cost_change_pct", "{co2_change}"]
BANDED_SERVING = ["instances", "ttft_ms_p50", "tpot_ms_p50", "{energy_token}",
                  "cost_usd_per_million_output_tokens", "{co2_token}", "{energy_change}",
                  "cost_change_pct", "{co2_change}"]
BANDED_TRAINING = ["throughput_per_instance_per_s", "duration_h", "power_w", "mfu", "{energy}", "cost_usd",
                   "{co2}",
                   "{energy_change}", "cost_change_pct", "{co2_change}"]


LATENCY_TARGETS = {  # mode -> (the workload's target field, the row's column, the name people use)
    "serving": [(f"{stat}_{m}_ms", f"{m}_ms_{label}", f"{m.upper()} {label}")
                for stat, label in (("median", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"))
                for m in ("ttft", "tpot")]
    # runs written before the percentile targets (their scenarios and columns had these names)
    + [("ttft_ms", "ttft_ms", "TTFT p50"), ("tpot_ms", "tpot_ms", "TPOT p50"),
       ("ttft_p99_ms", "ttft_p99_ms", "TTFT p99"), ("tpot_p99_ms", "tpot_p99_ms", "TPOT p99")],
    "inference": [("latency_ms_p99", "latency_p99_ms", "latency p99")],
}


def latency_targets(mode: str, spec: Any) -> list[dict[str, Any]]:
    """The latency targets a workload sets: ``{'column', 'label', 'target_ms'}`` each (``spec`` is the
    workload's serving or inference block, a model or a dict)."""
    if spec is None:
        return []
    get = spec.get if isinstance(spec, dict) else (lambda k: getattr(spec, k, None))
    return [{"column": col, "label": label, "target_ms": float(get(field))}
            for field, col, label in LATENCY_TARGETS.get(mode, []) if get(field) is not None]


def target_checks(row: dict[str, Any], targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target against the row's latency: ``{'label', 'target_ms', 'value_ms', 'met'}`` (met None
    where the row has no such latency)."""
    out = []
    for t in targets:
        v = row.get(t["column"])
        ok = None if v is None or v != v else bool(v <= t["target_ms"])
        out.append({"label": t["label"], "target_ms": t["target_ms"], "value_ms": v, "met": ok})
    return out


def targets_cell(row: dict[str, Any], targets: list[dict[str, Any]]) -> str:
    """'met 3/3' or 'MISSED TTFT p99' (the terminal's targets column)."""
    checks = target_checks(row, targets)
    missed = [c["label"] for c in checks if c["met"] is False]
    if missed:
        return "MISSED " + ", ".join(missed)
    return f"met {sum(1 for c in checks if c['met'])}/{len(checks)}"


BASIS_TEXT = {"modelled": "modelled (the draw model at the work done)",
              "tdp": "tdp (accelerator device-hours x datasheet TDP x PUE, no host share)",
              "measured": "measured (a supplied or metered draw)"}


def basis_text(bases: dict[str, str]) -> str:
    """Which power basis the rows' figures use: one for all, else each row's (config id -> basis)."""
    kinds = list(dict.fromkeys(bases.values()))
    if len(kinds) == 1:
        return f"{BASIS_TEXT.get(kinds[0], kinds[0])}, every row"
    return "; ".join(f"{b}: {', '.join(c for c, x in bases.items() if x == b)}" for b in kinds)


def modelled_host_text(rows: list[dict[str, Any]]) -> str:
    """What the power basis line adds for rows measured on this host whose draw codecarbon modelled
    where it read no energy counter (a VM without RAPL): a 'measured' basis, but not a meter reading."""
    ids = [str(r["config_id"]) for r in rows if r.get("power_basis") == "measured"
           and r.get("energy_provenance") in ("modelled", "partly measured")]
    if not ids:
        return ""
    return (f"; {', '.join(ids)}: the host's draw is codecarbon's model where it read no energy counter "
            "(energy_provenance; power_method says how), an estimate, not a meter reading")


def columns(template: list[str], scope: Any) -> list[str]:
    """Fill the scope's energy and CO2 columns into a column list."""
    names = {"energy": energy_column(scope), "co2": co2_column(scope), "energy_token": token_column(scope),
             "co2_token": co2_token_column(scope),
             "energy_change": change_column("energy", scope), "co2_change": change_column("co2", scope)}
    return [c.format(**names) for c in template]


def number(v: Any) -> str:
    """Three significant figures, written out (with thousands separators) rather than in exponent
    form up to 10^12: ``400,000`` not ``4e+05``; a whole number (a count: instances, replicas) in
    full, ``2,048`` not ``2,050``."""
    if v is None or v != v:
        return "n/a"
    if abs(v) < 1e12 and float(v).is_integer():
        return f"{v:,.0f}"
    if 1e3 <= abs(v) < 1e12:
        return f"{float(f'{v:.3g}'):,.0f}"
    return f"{v:,.3g}"


def _fmt(v: Any) -> str:
    return number(v)


# The terminal's columns by mode, in the order printed: (header, row column, how much it answers the
# question: 0 is kept at any width; higher numbers are dropped first when the terminal is narrow).
# '{co2}' and friends are the headline scope's columns; 'targets' is computed.
ANSWER = {
    "serving": [("config", "config_id", 0), ("instance", "instance_type", 0), ("region", "region", 0),
                ("targets", "targets", 0), ("instances", "instances", 2),
                ("USD/Mtok", "cost_usd_per_million_output_tokens", 0),
                ("gCO2/Mtok", "{co2_token}", 0), ("TTFT p99 ms", "ttft_ms_p99", 1),
                ("TPOT p99 ms", "tpot_ms_p99", 3), ("cost Δ%", "cost_change_pct", 4),
                ("CO2 Δ%", "{co2_change}", 4), ("TTFT p50 ms", "ttft_ms_p50", 6),
                ("TPOT p50 ms", "tpot_ms_p50", 6), ("scheduler", "scheduler", 9),
                ("energy Δ%", "{energy_change}", 7), ("J/tok", "{energy_token}", 8),
                ("replicas", "replicas", 9), ("tensor", "tensor_parallel", 9), ("batch", "batch", 10),
                ("precision", "precision", 10), ("weights", "weight_precision", 10),
                ("KV cache", "kv_cache_precision", 10), ("LNC", "lnc", 10)],
    "training": [("config", "config_id", 0), ("instance", "instance_type", 0), ("region", "region", 0),
                 ("instances", "instances", 0), ("time h", "duration_h", 0), ("cost USD", "cost_usd", 0),
                 ("CO2 kg", "{co2}", 0), ("time Δ%", "duration_change_pct", 4),
                 ("cost Δ%", "cost_change_pct", 4), ("CO2 Δ%", "{co2_change}", 4),
                 ("energy kWh", "{energy}", 5), ("energy Δ%", "{energy_change}", 7),
                 ("power W", "power_w", 8), ("precision", "precision", 9), ("LNC", "lnc", 9),
                 ("provenance", "provenance", 10)],
    "inference": [("config", "config_id", 0), ("instance", "instance_type", 0), ("region", "region", 0),
                  ("targets", "targets", 0), ("instances", "instances", 2), ("p99 ms", "latency_p99_ms", 1),
                  ("USD/M", "cost_usd_per_million", 0), ("CO2 kg", "{co2}", 0),
                  ("cost Δ%", "cost_change_pct", 4), ("CO2 Δ%", "{co2_change}", 4),
                  ("energy kWh", "{energy}", 5),
                  ("energy Δ%", "{energy_change}", 7), ("per s/inst", "throughput_per_instance_per_s", 8),
                  ("power W", "power_w", 8), ("precision", "precision", 9), ("LNC", "lnc", 9),
                  ("provenance", "provenance", 10)],
}


def fit_table(rows: list[dict[str, Any]], cols: list[tuple[str, str, int]], width: int | None = None,
              fmt: Any = None) -> str:
    """Rows as a right-aligned text table under short headers, dropping the least useful column (the
    highest rank, the rightmost of equals) until it fits ``width`` (default: the terminal's; piped
    output is not cut unless COLUMNS says so); the columns left out are named below it. Columns of
    rank 0 stay whatever the width."""
    from ecobench.table import _is_number, note_lines, terminal_width

    fmt = fmt or number
    width = terminal_width() if width is None else width
    cells = {key: [head] + [fmt(v) if _is_number(v) or v is None else str(v)
                            for v in (r.get(key) for r in rows)] for head, key, _ in cols}
    widths = {key: max(len(c) for c in cells[key]) for _, key, _ in cols}
    keep = list(cols)

    def total() -> int:
        return sum(widths[k] for _, k, _ in keep) + 2 * (len(keep) - 1)

    while total() > width:
        droppable = [c for c in keep if c[2] > 0]
        if not droppable:
            break
        keep.remove(max(reversed(droppable), key=lambda c: c[2]))
    lines = ["  ".join(cells[k][i].rjust(widths[k]) for _, k, _ in keep) for i in range(len(rows) + 1)]
    left = [c[1] for c in cols if c not in keep]
    if left:
        lines += note_lines(f"(not shown at this width: {', '.join(left)}; every column is in results.csv)",
                            width)
    return "\n".join(lines)


def format_summary(rows: list[dict[str, Any]], s: Scenario, width: int | None = None) -> str:
    """The columns that answer the run's question at the headline scope (serving: region, latency
    targets met, cost and CO2 per million output tokens, p99; training: instances, time, cost, CO2),
    the least useful dropped first on a narrow terminal; then each figure's 90% band."""
    mode = s.workload.mode
    present = set().union(*(r.keys() for r in rows)) if rows else set()
    names = {"energy": energy_column(s.headline_scope), "co2": co2_column(s.headline_scope),
             "energy_change": change_column("energy", s.headline_scope),
             "co2_change": change_column("co2", s.headline_scope),
             "energy_token": token_column(s.headline_scope), "co2_token": co2_token_column(s.headline_scope)}
    spec = {"serving": s.workload.serving, "inference": s.workload.inference}.get(mode)
    goals = latency_targets(mode, spec)
    shown = [dict(r, targets=targets_cell(r, goals)) if goals else r for r in rows]
    cols = [(h, k.format(**names), rank) for h, k, rank in ANSWER[mode]]
    if s.headline_scope != "facility":  # power_w is the facility's draw whatever the headline scope
        cols = [("facility W" if k == "power_w" else h, k, rank) for h, k, rank in cols]
    # a targeted percentile the table has no column of (p90, p95): its own, beside the p99 columns,
    # so the figure each target is checked against is shown with the target
    extra = [(f"{g['label']} ms", g["column"], 1) for g in goals
             if g["column"] not in {k for _, k, _ in cols}]
    if extra:
        at = max((i + 1 for i, (_, k, _) in enumerate(cols) if k.endswith("_p99")), default=len(cols))
        cols = [*cols[:at], *extra, *cols[at:]]
    bases = {r["config_id"]: r.get("power_basis", "modelled") for r in rows}
    if len(set(bases.values())) > 1:  # say which basis each row's figures use
        cols = [cols[0], ("basis", "power_basis", 1), *cols[1:]]
    cols = [c for c in cols if c[1] in present or (c[1] == "targets" and goals)]
    per_token = f" (per-token energy and CO2: {s.headline_scope} scope)" if mode == "serving" else ""
    goal_text = ("; targets: " + ", ".join(f"{t['label']} {number(t['target_ms'])} ms" for t in goals)
                 if goals else "")
    lines = [f"{s.name}: {mode}, baseline {s.baseline}, region {s.region}{goal_text}",
             f"headline: {describe(s.headline_scope, s.pue)}{per_token} (every scope is in results.csv)",
             f"power basis: {basis_text(bases)}{modelled_host_text(rows)}"]
    models = dict.fromkeys(r["power_model"] for r in rows if r.get("power_model"))  # power_points
    lines += [f"power model: {m}" for m in models]
    lines.append(fit_table(shown, cols, width))
    banded_template = {"inference": BANDED_INFERENCE, "training": BANDED_TRAINING,
                       "serving": BANDED_SERVING}[mode]
    banded = [c for c in columns(banded_template, s.headline_scope) if f"{c}_low" in present]
    if banded:
        heads = {"throughput_per_instance_per_s": "per s/inst", "mfu": "MFU"} | {k: h for h, k, _ in cols}
        table = [{"config_id": r["config_id"],
                  **{c: f"{_fmt(r.get(f'{c}_low'))} to {_fmt(r.get(f'{c}_high'))}" for c in banded}}
                 for r in rows]
        lines.append(f"\n90% bands (5th to 95th percentile of {s.uncertainty.draws} draws, seed "
                     f"{s.uncertainty.seed}; throughput, chip power, draw, host, memory, PUE, grid):")
        ranks = {k: r for _, k, r in cols}
        lines.append(fit_table(table, [("config", "config_id", 0)]
                               + [(heads.get(c, c), c, max(1, ranks.get(c, 5))) for c in banded], width))
    if any(r.get("profile") for r in rows):
        misses = [t if (t := str(r.get("targets", ""))).startswith("MISSED") else "" for r in shown]
        lines += profile_lines([r.get("profile") for r in rows], [r["config_id"] for r in rows], misses)
    return "\n".join(lines)


FRONT_ROWS_PRINTED = 15


def nothing_meets(ev: Evaluation, s: Scenario) -> str | None:
    """Where rows have every objective but none meets the training deadline or the latency targets
    (so there is no Pareto front and no recommendation), one line saying so and naming the closest:
    the shortest training, or the row least over its tightest target; else None."""
    import numpy as np

    from ecobench.planning.pareto import eligible, objectives

    t = ev.table
    objs = objectives(s, t)
    if len(t["config_id"]) == 0 or eligible(t, objs, s).any():
        return None
    known = np.ones(len(t["config_id"]), dtype=bool)
    for o in objs:
        known &= np.isfinite(t[o.column].astype(float))
    mode = s.workload.mode
    if mode == "training" and s.workload.training and s.workload.training.deadline_h is not None:
        hours = np.where(known, t["duration_h"].astype(float), np.inf)
        if not np.isfinite(hours).any():
            return None
        i = int(np.argmin(hours))
        goal = f"training.deadline_h {number(s.workload.training.deadline_h)}"
        how = f"{number(hours[i])} h"
        if "instances" in t:
            how += f" on {number(t['instances'][i])} instances"
    else:
        goals = [g for g in latency_targets(mode, {"serving": s.workload.serving,
                                                   "inference": s.workload.inference}.get(mode))
                 if g["column"] in t]
        if not goals:
            return None
        over = np.stack([t[g["column"]].astype(float) / g["target_ms"] for g in goals])
        worst = np.where(known, np.nanmax(np.where(np.isnan(over), -np.inf, over), axis=0), np.inf)
        if not np.isfinite(worst).any():
            return None
        i = int(np.argmin(worst))
        named = ", ".join(f"{g['label']} {number(g['target_ms'])} ms" for g in goals)
        goal = f"the latency targets ({named})"
        how = ", ".join(f"{g['label']} {number(float(t[g['column']][i]))} ms" for g in goals)
    return (f"\nno configuration meets {goal}: the closest is {t['config_id'][i]} ({t['instance_type'][i]}, "
            f"{how}); no Pareto front or recommendation (they are drawn from configurations that meet it)")




def format_decisions(ev: Evaluation, s: Scenario) -> str:
    """The sweep's counts, the ranked Pareto front and the recommendations."""
    from ecobench.planning.pareto import objectives

    lines = []
    if ev.sweep is not None:
        sw = ev.sweep
        lines.append(f"\nsweep: {sw['combinations']:,} combinations, {sw['evaluated']:,} evaluated, "
                     f"{sw['skipped']:,} skipped")
        lines += [f"  skipped {x['count']:,}: {x['reason']}" for x in sw["skipped_by_reason"][:5]]
        if len(sw["skipped_by_reason"]) > 5:
            lines.append(f"  ... and {len(sw['skipped_by_reason']) - 5} more reasons (results.json: sweep)")
    front = sorted((r for r in ev.rows if r.get("pareto")), key=lambda r: r["pareto_rank"])
    n_front = int(sum(bool(x) for x in ev.table["pareto"]))
    if front:
        objs = objectives(s, ev.table)
        cols = [("rank", "pareto_rank", 3), ("config", "config_id", 0), ("instance", "instance_type", 1),
                ("region", "region", 0), ("precision", "precision", 5),
                *[(o.column, o.column, 0) for o in objs]]
        lines.append(f"\nPareto front ({n_front} of {len(ev.table['pareto']):,} rows; lowest "
                     f"{', '.join(o.words for o in objs)}; ranked by cost):")
        lines.append(fit_table(front[:FRONT_ROWS_PRINTED], cols))
        if n_front > FRONT_ROWS_PRINTED:
            lines.append(f"... {n_front - FRONT_ROWS_PRINTED} more on the front (results.csv: pareto)")
    if (missed := nothing_meets(ev, s)) is not None:
        lines.append(missed)
    if ev.recommendations:
        lines.append("\nrecommendations:")
        lines += [f"  {r['objective']}: {r['reason']}" for r in ev.recommendations]
    return "\n".join(lines)


def autoscaling_effect(p: dict[str, Any]) -> str:
    """What autoscaling does to the static fleet's instance-hours: avoids a share of them, or, where its
    floor (``min_instances``) is above the static fleet, adds to them."""
    pct = p["idle_avoided_pct"]
    if pct >= 0:
        return f"autoscaling avoids {pct:.0f}% of the static instance-hours"
    return (f"autoscaling adds {-pct:.0f}% to the static instance-hours: its floor of {p['min_instances']} "
            "instances is above the static fleet")


def profile_lines(profiles: list[Any], ids: list[str], misses: list[str] | None = None) -> list[str]:
    """One line per configuration with a load profile: the day's cost, CO2 and energy of each
    strategy, and the idle capacity autoscaling avoids; ``misses``: the latency targets each row
    misses at the workload's rate ('MISSED ...', or ''), said beside its day."""
    out = ["\nA day of the load profile (static fleet for the peak hour / autoscaled / batch job; energy and "
           "CO2 at the facility scope, CO2 with embodied):"]
    for cid, p, missed in zip(ids, profiles, misses or [""] * len(ids), strict=True):
        if not isinstance(p, dict):
            continue
        parts = [f"{k} {number(p[k]['cost_usd'])} USD, {number(p[k]['co2_kg'])} kg CO2, "
                 f"{number(p[k]['energy_kwh'])} kWh" for k in ("static", "autoscaled", "batch")]
        out.append(f"  {cid}: " + " | ".join(parts) + f" ({autoscaling_effect(p)})"
                   + (f"; at the workload's rate it {missed} (the day's fleets are planned to the same "
                      "targets)" if missed else ""))
    return out
