"""The HTML report: one self-contained file (inline styles and SVG charts, no requests) rendered
from a run's results.json with a jinja2 template, autoescaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ecobench.reports import charts
from ecobench.reports.summary import number
from ecobench.rundir import write_text_atomic


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept in the user's cache folder (compiling them took a tenth of a run's
    start-up); none where that folder cannot be written."""
    import os

    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ecobench" / "jinja2"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(root)) if os.access(root, os.W_OK) else None


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("ecobench.reports", "templates"),
                              bytecode_cache=_bytecode_cache(),
                              autoescape=True, undefined=jinja2.StrictUndefined)


def _change_note(r: dict[str, Any], key: str) -> str:
    v = r.get(key)
    return "" if r["is_baseline"] or v is None else f"({v:+.0f}%)"


def figure_charts(doc: dict[str, Any]) -> list[Markup]:
    """Headline bar charts: throughput, instances or time, energy, cost, CO2, power by component."""
    rows, base = doc["rows"], next(r["config_id"] for r in doc["rows"] if r["is_baseline"])
    labels = [r["config_id"] for r in rows]
    inference = doc["mode"] == "inference"

    def bars(title: str, key: str, unit: str, change: str | None = None) -> Markup:
        vals = [r[key] if r.get(key) is not None else float("nan") for r in rows]
        notes = [_change_note(r, change) for r in rows] if change else None
        return Markup(charts.hbar(title, labels, vals, unit, base, notes))

    out = [
        bars("Throughput per instance", "throughput_per_instance_per_s", "/s"),
        bars("Instances to meet the rate" if inference else "Time to train", "instances" if inference
             else "duration_h", "" if inference else "h", "instances_change_pct" if inference
             else "duration_change_pct"),
        bars("Energy", "energy_kwh", "kWh", "energy_change_pct"),
        bars("Cost per million inferences" if inference else "Cost per run",
             "cost_usd_per_million" if inference else "cost_usd", "USD", "cost_change_pct"),
        Markup(charts.stacked_hbar("CO2: operational and embodied", labels, {
            "operational": [r["co2_operational_kg"] for r in rows],
            "embodied": [r["co2_embodied_kg"] for r in rows]}, "kg")),
        Markup(charts.stacked_hbar("Where the power goes (per instance, at the facility)", labels, {
            "accelerator": [r["power_accelerator_w"] for r in rows],
            "CPU": [r["power_cpu_w"] for r in rows], "memory": [r["power_memory_w"] for r in rows],
            "network": [r["power_network_w"] for r in rows],
            "PUE overhead": [r["power_overhead_w"] for r in rows]}, "W")),
    ]
    return out


def region_table(doc: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]], Markup]:
    """CO2 of each configuration in every catalog region (same energy, that region's grid)."""
    regions = doc["regions_g_per_kwh"]
    ordered = sorted(regions, key=regions.__getitem__)
    table = [{"region": g, "g_per_kwh": regions[g],
              "co2_kg": [r["energy_kwh"] * regions[g] / 1000 + r["co2_embodied_kg"] for r in doc["rows"]]}
             for g in ordered]
    best = min(doc["rows"], key=lambda r: r["energy_kwh"])
    chart = charts.hbar(f"CO2 of '{best['config_id']}' (lowest energy) by region", ordered,
                        [best["energy_kwh"] * regions[g] / 1000 + best["co2_embodied_kg"] for g in ordered],
                        "kg", colour=charts.PALETTE[2])
    return ordered, table, Markup(chart)


def _moving_average(values: list[float], n: int) -> list[float]:
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v - (values[i - n] if i >= n else 0.0)
        out.append(acc / min(i + 1, n))
    return out


def headline(doc: dict[str, Any]) -> dict[str, str]:
    """The headline scope's columns and its description (facility for runs made before scopes)."""
    from ecobench.power.scopes import change_column, co2_column, describe, energy_column

    scope = doc["scenario"].get("headline_scope", "facility")
    return {"scope": scope, "text": describe(scope, doc["scenario"].get("pue", 1.0)),
            "energy": energy_column(scope), "co2": co2_column(scope),
            "energy_change": change_column("energy", scope), "co2_change": change_column("co2", scope)}


def band(r: dict[str, Any], key: str, fmt: str = "%.3g") -> str:
    """'90%: low to high' for a row's figure, or '' without a band."""
    lo, hi = r.get(f"{key}_low"), r.get(f"{key}_high")
    if lo is None or hi is None:
        return ""
    return f"90%: {fmt % lo} to {fmt % hi}"


def render(doc: dict[str, Any]) -> str:
    """Render a results document (the content of results.json) to HTML."""
    regions, region_rows, region_chart = region_table(doc)
    emulated = [r for r in doc["rows"] if r.get("kernels")]
    kernel_charts = [Markup(charts.hbar(
        f"{r['config_id']}: time per sample by kernel (emulated NeuronCore)",
        [k["kernel"] for k in sorted(r["kernels"], key=lambda k: -k["time_us"])[:12]],
        [k["time_us"] for k in sorted(r["kernels"], key=lambda k: -k["time_us"])[:12]], "µs",
        colour=charts.PALETTE[3], left=190,
        notes=[f"{k['engine']} {k['utilization']:.0%}"
               for k in sorted(r["kernels"], key=lambda k: -k["time_us"])[:12]], width=640))
        for r in emulated]
    demo = doc.get("training_demo")
    demo_chart = Markup(charts.lines(
        "Training loss (20-step moving average), weights stored in each format",
        {m: _moving_average(c, 20) for m, c in demo["loss_curves"].items()}, "step", "loss")) \
        if demo else None
    return _env().get_template("report.html.j2").render(
        scenario=doc["scenario"], rows=doc["rows"], meta=doc, mode=doc["mode"],
        charts=figure_charts(doc), regions=regions, region_rows=region_rows,
        region_chart=region_chart, emulated=emulated, kernel_charts=kernel_charts,
        demo=demo, demo_chart=demo_chart, sources=doc.get("sources", []),
        assumptions=doc.get("assumptions", {}), head=headline(doc), band=band, number=number,
        uncertainty=doc.get("uncertainty"), grid_version=doc.get("grid_data_version"))


def write_html(doc: dict[str, Any], path: Path) -> None:
    """Write the report atomically (also used to regenerate it in place)."""
    write_text_atomic(path, render(doc))


def render_validation(rows: list[dict[str, Any]]) -> str:
    """A validation page: the table with errors, the holdout summary per kind of point, and published
    against ecobench values per seed experiment (holdout points are too many to chart one by one)."""
    checks = [c for c in rows if c["mode"] != "holdout_summary"]
    summary = [c for c in rows if c["mode"] == "holdout_summary"]
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in checks:
        if c["mode"] in ("replay", "predict") and not c["experiment"].startswith("neuron_"):
            groups.setdefault(f"{c['experiment']} ({c['mode']})", []).append(c)
    figs = []
    for name, cs in groups.items():
        labels, vals, notes = [], [], []
        for c in cs:
            labels += [f"{c['figure']} published", f"{c['figure']} ecobench"]
            vals += [abs(c["published"]), abs(c["ecobench"])]
            notes += ["", f"({c['error_pct']:+.0f}%)"]
        figs.append(Markup(charts.hbar(name, labels, vals, "", notes=notes, width=820, left=330)))
    return _env().get_template("validation.html.j2").render(checks=checks, summary=summary, charts=figs)
