"""The HTML report: one self-contained file (inline styles and SVG charts, no requests) rendered
from a run's results.json with a jinja2 template, autoescaped."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ecobench.io.datacache import cache_dir
from ecobench.io.rundir import write_text_atomic
from ecobench.reports import charts
from ecobench.reports.summary import latency_targets, number, target_checks
from ecobench.words import signed_pct

_URL = re.compile(r"https?://[^\s<>\"')\]]+[^\s<>\"')\].,;:]")


def linkify(text: Any) -> Markup:
    """Text with each http(s) URL made a link (rel="noopener", opening in a new tab); everything
    escaped."""
    text = "" if text is None else str(text)
    out, at = [], 0
    for m in _URL.finditer(text):
        url = m.group(0)
        out += [str(Markup.escape(text[at:m.start()])),
                f'<a href="{Markup.escape(url)}" rel="noopener" target="_blank">{Markup.escape(url)}</a>']
        at = m.end()
    out.append(str(Markup.escape(text[at:])))
    return Markup("".join(out))


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept in ecobench's cache folder (``ecobench.io.datacache.cache_dir``;
    compiling them took a tenth of a run's start-up); none where that folder is off or cannot be
    written."""
    import os

    folder = cache_dir()
    if folder is None:
        return None
    root = folder / "jinja2"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(root)) if os.access(root, os.W_OK) else None


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("ecobench.reports", "templates"),
                             bytecode_cache=_bytecode_cache(),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = charts.fmt_num  # three significant figures, never 1e+04
    env.filters["num4"] = lambda v: charts.fmt_num(v, digits=4)
    env.filters["links"] = linkify
    env.filters["money"] = lambda v: charts.fmt_num(v, money=True)
    env.filters["signed"] = signed_pct  # a whole percent with its sign, 0% (not -0%) where it rounds to 0
    return env


MAX_CHART_ROWS = 30  # bars per chart; with more configurations: the baseline, the front and the best
MAX_TABLE_ROWS = 60  # rows per table in the report; every row is in results.csv and results.json


def _change_note(r: dict[str, Any], key: str) -> str:
    v = r.get(key)
    return "" if r["is_baseline"] or v is None else f"({signed_pct(v)})"


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and v == v else float("nan")


def front_flags(doc: dict[str, Any]) -> list[bool]:
    """Each row's `pareto` flag where the run wrote one, else the cost-CO2 front computed here."""
    rows = doc["rows"]
    if rows and all(isinstance(r.get("pareto"), bool) for r in rows):
        return [bool(r["pareto"]) for r in rows]
    co2 = headline(doc)["co2"]
    return charts.pareto_mask([(_num(r.get("cost_usd")), _num(r.get(co2))) for r in rows])


_FRONT_WORDS = {"duration_h": "training time (duration_h)", "tpot_ms_p50": "median time per output token "
                "(tpot_ms_p50)", "latency_p99_ms": "p99 latency (latency_p99_ms)"}


def front_also(doc: dict[str, Any]) -> str:
    """The objectives of the run's front besides cost and CO2, in words (results.json's ``pareto``), for
    the cost-CO2 chart: a filled point can lie above and right of another there. '' where there are
    none or the run did not flag its rows; for a results.json that does not say, those of its mode."""
    rows, mode = doc["rows"], doc["mode"]
    if not (rows and isinstance(rows[0].get("pareto"), bool)):
        return ""
    basis = doc.get("pareto")
    cols = basis.get("objectives", [])[2:] if isinstance(basis, dict) else (
        ["duration_h"] if mode == "training" else ["tpot_ms_p50"] if mode == "serving" else
        ["latency_p99_ms"] if any(r.get("latency_p99_ms") is not None for r in rows) else [])
    return " and ".join(_FRONT_WORDS.get(str(c), str(c)) for c in cols)


def shown_rows(doc: dict[str, Any], limit: int, key: str | None = None) -> list[dict[str, Any]]:
    """At most ``limit`` rows in their order: the baseline, the Pareto front, then the lowest ``key``
    (the headline CO2 by default)."""
    rows = doc["rows"]
    if len(rows) <= limit:
        return list(rows)
    key = key or headline(doc)["co2"]
    flags = front_flags(doc)
    rank = sorted(range(len(rows)), key=lambda i: (not rows[i]["is_baseline"], not flags[i],
                                                   _num(rows[i].get(key)) if rows[i].get(key) is not None
                                                   else float("inf")))
    keep = set(rank[:limit])
    return [r for i, r in enumerate(rows) if i in keep]


def card_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The configurations with a card, the baseline first: every one of a small run; of a larger one,
    the recommended (each once), else the front and the lowest CO2."""
    rows = doc["rows"]
    base = [r for r in rows if r["is_baseline"]]
    picks = list(dict.fromkeys(r["config_id"] for r in doc.get("recommendations") or []))
    if len(rows) > 7 and picks:
        by_id = {r["config_id"]: r for r in rows}
        return base + [by_id[c] for c in picks if c in by_id and not by_id[c]["is_baseline"]]
    return base + [r for r in shown_rows(doc, 7) if not r["is_baseline"]]


def caveats(doc: dict[str, Any]) -> dict[str, list[str]]:
    """Short notes to print beside the figures they qualify: 'power' (chip power inferred, not
    published) and 'provenance' (rows obtained in different ways)."""
    rows = doc["rows"]
    inferred: dict[str, tuple[str, str]] = {}
    stand_in: dict[str, tuple[str, str]] = {}  # instance -> (chip, what its peaks stand in from)
    current = None
    for s in doc.get("sources", []):
        item = str(s.get("item", ""))
        if item.endswith(" spec"):
            current = item.removesuffix(" spec")
        elif item.endswith(" power") and s.get("inferred_from") and current:
            inferred[current] = (item.removesuffix(" power"), str(s["inferred_from"]).split(". ")[0])
        elif item.endswith(" peaks") and s.get("inferred_from") and current:
            stand_in[current] = (item.removesuffix(" peaks"), str(s["inferred_from"]).split(". ")[0])
    power = []
    for it, (chip, why) in inferred.items():
        # a tdp row counts the datasheet TDP and a measured one the supplied draw: neither the inferred figure
        ids = [r["config_id"] for r in rows
               if r.get("instance_type") == it and r.get("power_basis", "modelled") == "modelled"]
        if ids:
            shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
            power.append(f"{shown}: the {chip}; {why}.")
    kinds: dict[str, list[str]] = {}
    for r in rows:
        kinds.setdefault(str(r.get("provenance")), []).append(r["config_id"])
    prov = []
    for it, (chip, why) in stand_in.items():
        ids = [r["config_id"] for r in rows if r.get("instance_type") == it]
        if ids:
            prov.append(f"{', '.join(ids[:6])}{' and more' if len(ids) > 6 else ''}: the {chip}'s peaks are "
                        f"not its own published figures. {why}.")
    bases = basis_groups(doc)
    if len(bases) > 1:
        parts = [f"{k} ({', '.join(v[:4])}{', ...' if len(v) > 4 else ''})" for k, v in bases.items()]
        prov.append("Mixed power basis: " + "; ".join(parts) + ". Energy and CO2 on different bases "
                    "differ partly by the accounting convention (tdp: accelerator device-hours x datasheet "
                    "TDP x PUE, no host share; modelled: the draw model at the work done; measured: a "
                    "supplied or metered draw), not only by the hardware; each card and row names its basis.")
    for model in dict.fromkeys(r["power_model"] for r in rows if r.get("power_model")):  # power_points
        prov.append(f"Power model {model}.")
    if len(kinds) > 1:
        parts = [f"{k} ({', '.join(v[:4])}{', ...' if len(v) > 4 else ''})" for k, v in kinds.items()]
        prov.append("Mixed provenance: " + "; ".join(parts) + ". Differences between rows obtained in "
                    "different ways include the method's own error; compare them with care.")
    return {"power": power, "provenance": prov}


def basis_groups(doc: dict[str, Any]) -> dict[str, list[str]]:
    """Power basis -> the config ids on it (rows without one: modelled)."""
    out: dict[str, list[str]] = {}
    for r in doc["rows"]:
        out.setdefault(str(r.get("power_basis") or "modelled"), []).append(str(r["config_id"]))
    return out


def targets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's latency targets (serving: TTFT and TPOT, median and p99 where set; inference: p99)."""
    mode = doc["mode"]
    return latency_targets(mode, (doc["scenario"].get("workload") or {}).get(mode))


def deadline_check(doc: dict[str, Any], r: dict[str, Any]) -> dict[str, Any] | None:
    """Training with a deadline: ``{'deadline_h', 'value_h', 'met'}`` (the row's ``meets_deadline``,
    else duration_h within deadline_h); None for other modes or without a deadline."""
    d = r.get("deadline_h") if doc["mode"] == "training" else None
    if d is None or d != d:
        return None
    v = r.get("duration_h")
    met = r.get("meets_deadline")
    if met is None and v is not None and v == v:
        met = bool(v <= d)
    return {"deadline_h": d, "value_h": v, "met": met}


def row_flags(doc: dict[str, Any], r: dict[str, Any]) -> list[str]:
    """Why a row is not a candidate, or wastes hardware, in words for the tables beside its figures:
    each latency target it misses, a missed training deadline, ranks its layout leaves idle."""
    out = []
    missed = [c["label"] for c in target_checks(r, targets(doc)) if c["met"] is False]
    if missed:
        out.append("MISSES " + ", ".join(missed))
    dl = deadline_check(doc, r)
    if dl and dl["met"] is False:
        out.append(f"MISSES the {number(dl['deadline_h'])} h deadline")
    if idle := r.get("idle_devices"):
        out.append(f"{number(idle)} ranks idle")
    return out


def no_pick(doc: dict[str, Any]) -> str | None:
    """Why a run with rows has no recommendation (None where it has some): the terminal's line that no
    row meets the training deadline or the latency targets, naming the closest (``no_recommendation``,
    ``reports.summary.nothing_meets``), else that none is eligible."""
    if doc.get("recommendations") or not doc["rows"]:
        return None
    if missed := doc.get("no_recommendation"):
        return f"{missed[0].upper()}{missed[1:]}."
    return ("No recommendation: no configuration is eligible (each needs a sourced price, and to meet the "
            "deadline or latency targets where the scenario sets them).")


def pareto_chart(doc: dict[str, Any]) -> Markup | None:
    """Cost against CO2 per configuration, the front joined by a step line (None without prices)."""
    co2 = headline(doc)["co2"]
    flags = front_flags(doc)
    pts = [charts.Point(str(r["config_id"]), _num(r.get("cost_usd")), _num(r.get(co2)),
                        r.get("cost_usd_low"), r.get("cost_usd_high"),
                        r.get(f"{co2}_low"), r.get(f"{co2}_high"),
                        flag, bool(r["is_baseline"]))
           for r, flag in zip(doc["rows"], flags, strict=True)]
    if sum(1 for p in pts if p.x == p.x and p.y == p.y) < 2:
        return None
    horizon = "the run" if doc["mode"] == "training" else "the horizon"
    return Markup(charts.pareto_scatter("Cost against CO2: the Pareto front", pts,
                                        f"cost over {horizon}", "USD", "CO2", "kg"))


def figure_charts(doc: dict[str, Any]) -> list[Markup]:
    """Headline bar charts (90% whiskers where bands exist) that answer the run's question: serving,
    instances, cost and CO2 per million output tokens and each latency against its target; training,
    instances and time; inference, instances and cost per million; then energy, CO2 and power."""
    rows = shown_rows(doc, MAX_CHART_ROWS)
    base = next((r["config_id"] for r in rows if r["is_baseline"]), None)
    labels = [r["config_id"] for r in rows]
    mode = doc["mode"]

    def bars(title: str, key: str, unit: str, quantity: str, change: str | None = None,
             target: float | None = None, notes: list[str] | None = None) -> Markup:
        vals = [r[key] if r.get(key) is not None else float("nan") for r in rows]
        if change:
            notes = [_change_note(r, change) for r in rows]
        return Markup(charts.hbar(title, labels, vals, unit, base, notes, quantity=quantity,
                                  lows=[r.get(f"{key}_low") for r in rows],
                                  highs=[r.get(f"{key}_high") for r in rows], target=target))

    def latency(t: dict[str, Any]) -> Markup:
        verdicts = [{True: "meets", False: "MISSES", None: ""}[c["met"]]
                    for c in (target_checks(r, [t])[0] for r in rows)]
        return bars(f"{t['label']} against the {charts.fmt_num(t['target_ms'])} ms target", t["column"],
                    "ms", t["label"], target=t["target_ms"], notes=verdicts)

    over = f" over {number(horizon_h(doc))} h" if horizon_h(doc) else ""  # inference, serving: the horizon
    instances = bars("Instances to meet the rate", "instances", "", "instances", "instances_change_pct")
    energy = bars(f"Energy at the facility{over}", "energy_kwh", "kWh", "energy", "energy_change_pct")
    co2 = Markup(charts.stacked_hbar(f"CO2 at the facility{over}: operational and embodied", labels, {
        "operational": [r["co2_operational_kg"] for r in rows],
        "embodied": [r["co2_embodied_kg"] for r in rows]}, "kg", quantity="CO2"))
    power = Markup(charts.stacked_hbar("Where the power goes (per instance, at the facility)", labels, {
        "accelerator": [r["power_accelerator_w"] for r in rows],
        "CPU": [r["power_cpu_w"] for r in rows], "memory": [r["power_memory_w"] for r in rows],
        "network": [r["power_network_w"] for r in rows],
        "PUE overhead": [r["power_overhead_w"] for r in rows]}, "W", quantity="power per instance"))
    if mode == "serving":  # per token at the headline scope (the same tokens: its change is the run's)
        from ecobench.power.scopes import change_column, co2_token_column, token_column

        head = headline(doc)
        scope = head["scope"] if rows and co2_token_column(head["scope"]) in rows[0] else "facility"
        return [instances,
                bars("Cost per million output tokens", "cost_usd_per_million_output_tokens", "USD",
                     "cost per million output tokens", "cost_change_pct"),
                bars(f"CO2 per million output tokens, {scope} scope", co2_token_column(scope), "g",
                     "CO2 per million output tokens", change_column("co2", scope)),
                *[latency(t) for t in targets(doc)],
                bars(f"Energy per output token, {scope} scope", token_column(scope), "J",
                     "energy per output token"),
                power]
    if mode == "training":
        checks = [deadline_check(doc, r) for r in rows]
        deadline = next((c["deadline_h"] for c in checks if c), None)
        if deadline is None:
            time = bars("Time to train", "duration_h", "h", "time", "duration_change_pct")
        else:  # the deadline drawn as a dashed line, each bar's verdict after its change
            notes = [" ".join(x for x in (_change_note(r, "duration_change_pct"),
                                          {True: "meets", False: "MISSES"}.get(c["met"] if c else None, ""))
                              if x) for r, c in zip(rows, checks, strict=True)]
            time = bars(f"Time to train against the {number(deadline)} h deadline", "duration_h", "h", "time",
                        target=deadline, notes=notes)
        return [bars("Instances", "instances", "", "instances"),
                time,
                bars("Cost of the run", "cost_usd", "USD", "cost", "cost_change_pct"),
                energy, co2,
                bars("Throughput per instance", "throughput_per_instance_per_s", "per s", "throughput"),
                power]
    return [instances,
            bars("Cost per million inferences", "cost_usd_per_million", "USD", "cost per million",
                 "cost_change_pct"),
            *[latency(t) for t in targets(doc)],
            energy, co2,
            bars("Throughput per instance", "throughput_per_instance_per_s", "per s", "throughput"),
            power]


def horizon_h(doc: dict[str, Any]) -> float | None:
    """Hours an inference or serving run's totals (energy, CO2) cover: the scenario's horizon, else the
    baseline row's duration (results.json files without it); None for training (the run is the job)."""
    mode = doc["mode"]
    if mode == "training":
        return None
    h = ((doc["scenario"].get("workload") or {}).get(mode) or {}).get("horizon_h")
    base = next((r for r in doc["rows"] if r["is_baseline"]), None)
    return h or (base.get("duration_h") if base else None)


def region_table(doc: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]], Markup, list[dict[str, Any]]]:
    """CO2 of each configuration in every catalog region (same energy, that region's grid); with many
    configurations, the columns are the baseline, the front and the lowest CO2."""
    regions = doc["regions_g_per_kwh"]
    ordered = sorted(regions, key=regions.__getitem__)
    cols = shown_rows(doc, 12)
    table = [{"region": g, "g_per_kwh": regions[g],
              "co2_kg": [r["energy_kwh"] * regions[g] / 1000 + r["co2_embodied_kg"] for r in cols]}
             for g in ordered]
    # the lowest-energy row among those that meet the targets or deadline and leave no rank idle (a
    # row that misses them is no candidate: p4d_idle, 1,454 h against a 336 h deadline, was featured)
    clean = [r for r in doc["rows"] if not row_flags(doc, r)]
    best = min(clean or doc["rows"], key=lambda r: r["energy_kwh"])
    which = "lowest energy" if len(clean) in (0, len(doc["rows"])) else "lowest energy of those that qualify"
    chart = charts.hbar(f"CO2 of '{best['config_id']}' ({which}) by region", ordered,
                        [best["energy_kwh"] * regions[g] / 1000 + best["co2_embodied_kg"] for g in ordered],
                        "kg", colour=charts.PALETTE[2], quantity="CO2")
    return ordered, table, Markup(chart), cols


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


def band(r: dict[str, Any], key: str, fmt: str | Callable[[float], str] | None = None) -> Markup | str:
    """'90%: low to high' for a row's figure (three significant figures unless ``fmt``: a
    %-format or a function), or '' without a band."""
    lo, hi = r.get(f"{key}_low"), r.get(f"{key}_high")
    if lo is None or hi is None:
        return ""
    # The range is an inline block that breaks only after 'to': a narrow cell breaks after '90%:' first,
    # and inside the range ('1,401,975 to' above '2,522,948') only where the range alone does not fit, so
    # a table of seven-figure bands fits a 1280 px window (with no-break spaces throughout, the
    # comparison's last columns sat off-screen in a horizontal scroll).
    if fmt is None:
        show: Callable[[float], str] = charts.fmt_num
    elif callable(fmt):
        show = fmt
    else:
        show = lambda v: fmt % v  # noqa: E731
    return Markup('90%: <span class="rng">{}\u00a0to {}</span>').format(show(lo), show(hi))


def render(doc: dict[str, Any]) -> str:
    """Render a results document (the content of results.json) to HTML."""
    regions, region_rows, region_chart, region_cols = region_table(doc)
    emulated = [r for r in doc["rows"] if r.get("kernels")]
    kernel_charts = [Markup(charts.hbar(
        f"{r['config_id']}: time per sample by kernel (emulated NeuronCore)",
        [k["kernel"] for k in sorted(r["kernels"], key=lambda k: -k["time_us"])[:12]],
        [k["time_us"] for k in sorted(r["kernels"], key=lambda k: -k["time_us"])[:12]], "µs",
        colour=charts.PALETTE[3], left=190, quantity="time per sample",
        notes=[f"{k['engine']} {k['utilization']:.0%}"
               for k in sorted(r["kernels"], key=lambda k: -k["time_us"])[:12]], width=640))
        for r in emulated]
    demo = doc.get("training_demo")
    demo_chart = Markup(charts.lines(
        "Training loss (20-step moving average), weights stored in each format",
        {m: _moving_average(c, 20) for m, c in demo["loss_curves"].items()}, "step", "loss")) \
        if demo else None
    return _env().get_template("report.html.j2").render(
        scenario=doc["scenario"], rows=shown_rows(doc, MAX_TABLE_ROWS), meta=doc, mode=doc["mode"],
        all_rows=len(doc["rows"]), chart_rows=min(len(doc["rows"]), MAX_CHART_ROWS),
        cards=card_rows(doc), targets=targets(doc), checks=target_checks, horizon_h=horizon_h(doc),
        deadline=lambda r: deadline_check(doc, r), flags=lambda r: row_flags(doc, r),
        baseline=next((r for r in doc["rows"] if r["is_baseline"]), None),
        recommendations=doc.get("recommendations") or [], no_pick=no_pick(doc), sweep=doc.get("sweep"),
        charts=figure_charts(doc), pareto=pareto_chart(doc), caveats=caveats(doc),
        on_front=sum(front_flags(doc)), front_also=front_also(doc), mixed_basis=len(basis_groups(doc)) > 1,
        unpriced=sum(1 for r in doc["rows"] if r.get("cost_usd") is None),
        region_cols=region_cols, regions=regions, region_rows=region_rows,
        region_chart=region_chart, emulated=emulated, kernel_charts=kernel_charts,
        demo=demo, demo_chart=demo_chart, sources=doc.get("sources", []),
        assumptions=doc.get("assumptions", {}), head=headline(doc), band=band, signed=signed_pct,
        number=number,
        uncertainty=doc.get("uncertainty"), grid_version=doc.get("grid_data_version"))


def write_html(doc: dict[str, Any], path: Path) -> None:
    """Write the report atomically (also used to regenerate it in place)."""
    write_text_atomic(path, render(doc))


VERDICT = {True: "ok", False: "MISSED", None: "reported"}
LISTED_POINTS = 16  # points listed beside a parity plot: all of a small group, else the worst missed


def _target_pct(target: str) -> float | None:
    m = re.search(r"±([0-9.]+)%", target)
    return float(m.group(1)) if m else None


def parity_groups(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One parity plot per kind of point (seed experiments per mode; holdout per kind and figure): the
    chart, the target band drawn, counts in words and the points listed beside it."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in checks:
        if c["mode"] in ("replay", "predict") and c["experiment"].startswith("neuron_"):
            name = f"Emulated NeuronCore, {c['mode']} (stored fit)"
        elif c["mode"] in ("replay", "predict"):
            name = f"Seed experiments, {c['mode']}"
        else:
            name = f"Holdout: {c.get('kind') or c['experiment']}, {c['figure']}"
        groups.setdefault(name, []).append(c)
    out = []
    for name, cs in groups.items():
        pcts = [p for p in (_target_pct(str(c["target"])) for c in cs) if p is not None]
        target = max(set(pcts), key=pcts.count) if pcts else None
        small = len(cs) <= LISTED_POINTS
        logged = [c for c in cs if (c["published"] or 0) > 0 and (c["ecobench"] or 0) > 0]
        plotted = {id(c) for c in logged}
        if small:
            listed = list(cs)
        else:
            listed = sorted((c for c in cs if c["within_target"] is False),
                            key=lambda c: -abs(c["error_pct"]))[:LISTED_POINTS // 2]
        tags, k = {}, 0
        for c in listed:
            if id(c) in plotted:
                k += 1
                tags[id(c)] = str(k)
        pts = [charts.Point(c["experiment"] + " " + c["figure"], c["published"], c["ecobench"],
                            y_low=c.get("low"), y_high=c.get("high"), flag=c["within_target"])
               for c in logged]
        numbers = [tags.get(id(c)) for c in logged]
        svg = charts.parity(name, pts, target, c_figure(cs),
                            whiskers=len(pts) <= 100, numbers=numbers)
        counts = {v: sum(1 for c in cs if VERDICT[c["within_target"]] == v) for v in VERDICT.values()}
        out.append({"name": name, "chart": Markup(svg), "target": target, "count": len(cs),
                    "one_target": len(set(pcts)) == 1 and len(pcts) == len(cs),
                    "off_log": len(cs) - len(logged), "counts": counts, "small": small, "checks": cs,
                    "listed": [dict(c, tag=tags.get(id(c), "–"), verdict=VERDICT[c["within_target"]])
                               for c in listed]})
    return out


def c_figure(cs: list[dict[str, Any]]) -> str:
    """The figure's name where the group has one, else 'value'."""
    figs = {c["figure"] for c in cs}
    return figs.pop() if len(figs) == 1 else "value"


def render_validation(rows: list[dict[str, Any]]) -> str:
    """A validation page: the holdout summary per kind of point, parity plots (ecobench against
    published, log-log, the target band shaded) in one collapsible group per kind of point, its
    counts (MISSED among them) in the group's summary line, the worst points listed beside the plot
    and every point in a table folded inside the group."""
    checks = [c for c in rows if c["mode"] != "holdout_summary"]
    summary = [c for c in rows if c["mode"] == "holdout_summary"]
    return _env().get_template("validation.html.j2").render(
        checks=checks, summary=summary, groups=parity_groups(checks), verdict=VERDICT)
