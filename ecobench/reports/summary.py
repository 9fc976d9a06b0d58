"""The terminal summary of a run: the headline scope's figures and their 90% bands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ecobench.power.scopes import change_column, co2_column, describe, energy_column

if TYPE_CHECKING:
    from ecobench.planning.evaluate import Evaluation
    from ecobench.scenario.model import Scenario

INFERENCE = ["config_id", "instance_type", "precision", "provenance", "throughput_per_instance_per_s",
             "instances", "power_w", "{energy}", "cost_usd_per_million", "{co2}", "{energy_change}",
             "cost_change_pct", "{co2_change}"]
TRAINING = ["config_id", "instance_type", "precision", "provenance", "instances", "duration_h", "power_w",
            "{energy}", "cost_usd", "{co2}", "{energy_change}", "cost_change_pct", "{co2_change}"]
SERVING = ["config_id", "instance_type", "precision", "instances", "replicas", "tensor_parallel", "batch",
           "ttft_ms", "tpot_ms", "output_tokens_per_s_per_instance", "{energy_token}",
           "cost_usd_per_million_output_tokens", "co2_g_per_million_output_tokens", "{energy_change}",
           "cost_change_pct", "{co2_change}"]
BANDED_INFERENCE = ["throughput_per_instance_per_s", "instances", "{energy}", "cost_usd_per_million", "{co2}",
                    "{energy_change}", "cost_change_pct", "{co2_change}"]
BANDED_SERVING = ["instances", "ttft_ms", "tpot_ms", "{energy_token}", "cost_usd_per_million_output_tokens",
                  "co2_g_per_million_output_tokens", "{energy_change}", "cost_change_pct", "{co2_change}"]
BANDED_TRAINING = ["throughput_per_instance_per_s", "duration_h", "power_w", "mfu", "{energy}", "cost_usd",
                   "{co2}",
                   "{energy_change}", "cost_change_pct", "{co2_change}"]


BASIS_TEXT = {"modelled": "modelled (the draw model at the work done)",
              "tdp": "tdp (accelerator device-hours x datasheet TDP x PUE, no host share)",
              "measured": "measured (a supplied or metered draw)"}


def token_column(scope: Any) -> str:
    """The serving column of a scope's energy per output token."""
    return {"accelerator": "energy_accelerator_j_per_output_token", "it": "energy_it_j_per_output_token",
            "facility": "energy_j_per_output_token"}[scope]


def basis_text(bases: dict[str, str]) -> str:
    """Which power basis the rows' figures use: one for all, else each row's (config id -> basis)."""
    kinds = list(dict.fromkeys(bases.values()))
    if len(kinds) == 1:
        return f"{BASIS_TEXT.get(kinds[0], kinds[0])}, every row"
    return "; ".join(f"{b}: {', '.join(c for c, x in bases.items() if x == b)}" for b in kinds)


def columns(template: list[str], scope: Any) -> list[str]:
    """Fill the scope's energy and CO2 columns into a column list."""
    names = {"energy": energy_column(scope), "co2": co2_column(scope), "energy_token": token_column(scope),
             "energy_change": change_column("energy", scope), "co2_change": change_column("co2", scope)}
    return [c.format(**names) for c in template]


def number(v: Any) -> str:
    """Three significant figures, written out (with thousands separators) rather than in exponent
    form up to 10^12: ``400,000`` not ``4e+05``."""
    if v is None or v != v:
        return "n/a"
    if 1e3 <= abs(v) < 1e12:
        return f"{float(f'{v:.3g}'):,.0f}"
    return f"{v:,.3g}"


def _fmt(v: Any) -> str:
    return number(v)


def format_summary(rows: list[dict[str, Any]], s: Scenario) -> str:
    """The central figures at the headline scope, then each figure's 90% band."""
    from ecobench.table import text_table

    mode = s.workload.mode
    present = set().union(*(r.keys() for r in rows)) if rows else set()
    template = {"inference": INFERENCE, "training": TRAINING, "serving": SERVING}[mode]
    if mode == "inference" and "latency_p99_ms" in present:
        template = [*template[:6], "latency_p99_ms", *template[6:]]
    cols = [c for c in columns(template, s.headline_scope) if c in present]
    per_token = f" (per-token energy: {s.headline_scope} scope)" if mode == "serving" else ""
    bases = {r["config_id"]: r.get("power_basis", "modelled") for r in rows}
    if len(set(bases.values())) > 1:  # say which basis each row's figures use
        cols = [cols[0], "power_basis", *cols[1:]]
    lines = [f"{s.name}: {mode}, baseline {s.baseline}, region {s.region}",
             f"headline: {describe(s.headline_scope, s.pue)}{per_token} (every scope is in results.csv)",
             f"power basis: {basis_text(bases)}",
             text_table(rows, cols, number)]
    banded_template = {"inference": BANDED_INFERENCE, "training": BANDED_TRAINING,
                       "serving": BANDED_SERVING}[mode]
    banded = [c for c in columns(banded_template, s.headline_scope) if f"{c}_low" in present]
    if banded:
        table = [{"config_id": r["config_id"],
                  **{c: f"{_fmt(r.get(f'{c}_low'))} to {_fmt(r.get(f'{c}_high'))}" for c in banded}}
                 for r in rows]
        lines.append(f"\n90% bands (5th to 95th percentile of {s.uncertainty.draws} draws, seed "
                     f"{s.uncertainty.seed}; throughput, chip power, draw, host, memory, PUE, grid):")
        lines.append(text_table(table, ["config_id", *banded], number))
    if any(r.get("profile") for r in rows):
        lines += profile_lines([r.get("profile") for r in rows], [r["config_id"] for r in rows])
    return "\n".join(lines)


FRONT_ROWS_PRINTED = 15


def format_decisions(ev: Evaluation, s: Scenario) -> str:
    """The sweep's counts, the ranked Pareto front and the recommendations."""
    from ecobench.planning.pareto import objectives
    from ecobench.table import text_table

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
        cols = ["pareto_rank", "config_id", "instance_type", "region", "precision",
                *[o.column for o in objs]]
        lines.append(f"\nPareto front ({n_front} of {len(ev.table['pareto']):,} rows; lowest "
                     f"{', '.join(o.words for o in objs)}; ranked by cost):")
        lines.append(text_table(front[:FRONT_ROWS_PRINTED], cols, number))
        if n_front > FRONT_ROWS_PRINTED:
            lines.append(f"... {n_front - FRONT_ROWS_PRINTED} more on the front (results.csv: pareto)")
    if ev.recommendations:
        lines.append("\nrecommendations:")
        lines += [f"  {r['objective']}: {r['reason']}" for r in ev.recommendations]
    return "\n".join(lines)


def profile_lines(profiles: list[Any], ids: list[str]) -> list[str]:
    """One line per configuration with a load profile: the day's cost, CO2 and energy of each
    strategy, and the idle capacity autoscaling avoids."""
    out = ["\nA day of the load profile (static fleet for the peak hour / autoscaled / batch job):"]
    for cid, p in zip(ids, profiles, strict=True):
        if not isinstance(p, dict):
            continue
        parts = [f"{k} {number(p[k]['cost_usd'])} USD, {number(p[k]['co2_kg'])} kg CO2, "
                 f"{number(p[k]['energy_kwh'])} kWh" for k in ("static", "autoscaled", "batch")]
        out.append(f"  {cid}: " + " | ".join(parts)
                   + f" (autoscaling avoids {p['idle_avoided_pct']:.0f}% of the static instance-hours)")
    return out
