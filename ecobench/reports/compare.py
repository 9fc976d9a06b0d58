"""`ecobench compare RUN_A RUN_B`: two runs side by side, configuration by configuration.

``compare`` turns two results documents into a :class:`Comparison` (rows matched on ``config_id``,
the change of each headline figure in % of A, and what differs between the runs' metadata); the
``terminal``, ``markdown`` and ``html`` functions render it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecobench.errors import InputError
from ecobench.reports.summary import number
from ecobench.reports.tables import FROM_CSV
from ecobench.table import note_lines
from ecobench.words import signed_pct

__all__ = ["METRICS", "Comparison", "RowDiff", "compare", "html", "load", "markdown", "terminal"]

# Headline figures in the order they are dropped last to first when the terminal is narrow:
# (column, short label, True where higher is better).
METRICS: list[tuple[str, str, bool]] = [
    ("instances", "instances", False),
    ("energy_kwh", "energy kWh", False),
    ("cost_usd", "cost USD", False),
    ("co2_kg", "CO2 kg", False),
    ("cost_usd_per_million", "USD/M", False),
    ("energy_kwh_per_million", "kWh/M", False),
    ("co2_kg_per_million", "CO2 kg/M", False),
    ("ttft_ms_p50", "TTFT p50 ms", False),
    ("tpot_ms_p50", "TPOT p50 ms", False),
    ("ttft_ms", "TTFT ms", False),  # runs written before the percentile columns
    ("tpot_ms", "TPOT ms", False),
    ("energy_j_per_output_token", "J/token", False),
    ("cost_usd_per_million_output_tokens", "USD/M tok", False),
    ("co2_g_per_million_output_tokens", "CO2 g/M tok", False),
    ("duration_h", "time h", False),
    ("throughput_per_instance_per_s", "per inst/s", True),
]
SAME_REL = 1e-12  # figures this close are one figure, rounded two ways
MODES = ("inference", "training", "serving")  # a results document's `mode`
META_KEYS = ["mode", "ecobench_version", "catalog_version", "grid_data_version", "price_snapshot"]


@dataclass(frozen=True)
class RowDiff:
    """One configuration: ``status`` is ``both``, ``added`` (only in B) or ``removed`` (only in A)."""

    config_id: str
    status: str
    instance_a: str | None
    instance_b: str | None
    values: dict[str, tuple[float | None, float | None, float | None]]  # column -> (A, B, change %)
    verdict_a: str = ""  # the row's latency targets or training deadline in A: 'met 3/3', 'MISSED TTFT p50'
    verdict_b: str = ""
    from_csv: str = ""  # the run(s) whose row is read from its sweep's results.csv: 'A', 'B', 'A and B'


@dataclass(frozen=True)
class Comparison:
    """Two runs compared: labels, the metrics either holds, the rows, and metadata that differs."""

    label_a: str
    label_b: str
    metrics: list[str]
    rows: list[RowDiff]
    meta: list[tuple[str, str, str]] = field(default_factory=list)  # (what, A, B)
    rows_note: str = ""  # where a sweep's results.json holds fewer rows than its results.csv


def load(path: Path) -> dict[str, Any]:
    """A run directory's (or a results/baseline file's) document, checked enough to compare."""
    from ecobench.reports.tables import read_results

    doc = read_results(path)
    f = path / "results.json" if path.is_dir() else path
    if not doc["rows"]:
        raise InputError(f"{f}: has no rows (one per configuration); not a results or baseline file")
    mode = doc.get("mode")
    if mode not in MODES:  # every results.json and baseline ecobench writes has one
        said = "missing" if mode is None else repr(mode)[:40]
        raise InputError(f"{f}: mode is {said}; allowed: {', '.join(MODES)}; not a results or baseline file")
    ids: set[str] = set()
    for i, r in enumerate(doc["rows"]):
        if not isinstance(r, dict) or not isinstance(r.get("config_id"), str):
            raise InputError(f"{f}: rows[{i}] has no config_id (a string); not a results file")
        if r["config_id"] in ids:
            raise InputError(f"{f}: config_id {r['config_id']!r} appears twice in rows")
        ids.add(r["config_id"])
    return doc


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def change_pct(a: float | None, b: float | None) -> float | None:
    """(B - A) / |A| in %, None where either is missing or A is 0 and B is not; 0 where B is A but for
    floating-point rounding (one figure computed by two routes: 0.724 and 0.7239999999999999), which
    was shown as -0.0%."""
    if a is None or b is None:
        return None
    if a == 0:
        return 0.0 if b == 0 else None
    if math.isclose(a, b, rel_tol=SAME_REL):
        return 0.0
    return (b - a) / abs(a) * 100.0


_MISSING = object()


# What a run's figures are, by mode: why two modes' figures do not compare.
_SPANS = {"serving": "a service's, per output token, against latency targets",
          "inference": "a service's, per inference", "training": "one training job's, with its time to train"}


def _a(word: object) -> str:
    return f"{'an' if str(word)[:1] in 'aeiou' else 'a'} {word}"


def _text(v: Any, limit: int = 80) -> str:
    if v is _MISSING or v is None:
        return "(none)"
    text = json.dumps(v, sort_keys=False) if isinstance(v, dict | list) else str(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _by_id(v: Any) -> dict[str, Any] | None:
    """A list of objects with distinct ids (the scenario's configs) as a mapping on id."""
    if isinstance(v, list) and all(isinstance(x, dict) and isinstance(x.get("id"), str) for x in v):
        ids = [x["id"] for x in v]
        if len(set(ids)) == len(ids):
            return {x["id"]: x for x in v}
    return None


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, str, str]]) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):  # a field one file lacks is one it left unset (null)
        for k in dict.fromkeys([*a, *b]):
            _diff(a.get(k), b.get(k), f"{path}.{k}", out)
        return
    ma, mb = _by_id(a), _by_id(b)
    if ma is not None and mb is not None:
        for k in dict.fromkeys([*ma, *mb]):
            _diff(ma.get(k, _MISSING), mb.get(k, _MISSING), f"{path}[{k}]", out)
        return
    out.append((path, _text(a), _text(b)))


def field_differences(a: Any, b: Any, path: str) -> list[tuple[str, str, str]]:
    """(field path under ``path``, A's value, B's value) of every field that differs between two
    nested mappings (lists of objects with ids matched on id)."""
    out: list[tuple[str, str, str]] = []
    _diff(a, b, path, out)
    return out


def _as_planned(scenario: dict[str, Any]) -> dict[str, Any]:
    """The scenario with each configuration's ``lnc`` as planned: the one given, else its chip's default
    (``hardware/lnc.py``; a chip without the setting keeps none), so the default given or not is no change."""
    from ecobench.hardware.catalog import load_catalog
    from ecobench.hardware.lnc import default_lnc

    configs = scenario.get("configs")
    if not isinstance(configs, list):
        return scenario
    instances = load_catalog().instances

    def planned(c: Any) -> Any:
        kind = c.get("instance_type") if isinstance(c, dict) else None
        inst = instances.get(kind) if isinstance(kind, str) else None
        if inst is None or c.get("lnc") is not None or default_lnc(inst.spec.accelerator) is None:
            return c
        return {**c, "lnc": default_lnc(inst.spec.accelerator)}

    return {**scenario, "configs": [planned(c) for c in configs]}


def meta_differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Versions, data snapshots, git commit and scenario fields that differ between the runs
    (the scenario's configurations matched on id)."""
    out = [(k, _text(a.get(k)), _text(b.get(k))) for k in META_KEYS if a.get(k) != b.get(k)]
    ga, gb = a.get("git"), b.get("git")
    if isinstance(ga or {}, dict) and isinstance(gb or {}, dict):
        ga, gb = ga or {}, gb or {}
        for k in ("commit", "dirty"):
            if ga.get(k) != gb.get(k):
                out.append((f"git {k}", _text(ga.get(k)), _text(gb.get(k))))
    elif ga != gb:  # not the mapping ecobench writes: shown as it is
        out.append(("git", _text(ga), _text(gb)))
    sa, sb = a.get("scenario"), b.get("scenario")
    if isinstance(sa, dict) and isinstance(sb, dict):
        _diff(_as_planned(sa), _as_planned(sb), "scenario", out)
    elif sa != sb:  # a baseline file keeps no scenario
        def said(x: Any) -> str:
            return "(recorded)" if x else "(not recorded)"

        out.append(("scenario", said(sa), said(sb)))
    return out


def verdict(doc: dict[str, Any], row: dict[str, Any] | None) -> str:
    """A row's targets in its own run, as the terminal's targets column says them: serving and
    inference, each latency target ('met 3/3', 'MISSED TTFT p50'); training, the deadline ('deadline
    met', 'MISSED deadline'); ranks left idle after either ('; 104 ranks idle'). Empty where the run
    sets none. Lower latencies read green in the table even where B misses targets A met: this says so."""
    from ecobench.reports.summary import latency_targets, targets_cell

    if row is None:
        return ""
    mode = doc.get("mode")
    spec = ((doc.get("scenario") or {}).get("workload") or {}).get(mode) if mode else None
    out = ""
    if mode in ("serving", "inference") and (targets := latency_targets(mode, spec)):
        out = targets_cell(row, targets)
    elif mode == "training" and row.get("meets_deadline") is not None:
        out = "deadline met" if row["meets_deadline"] else "MISSED deadline"
    if idle := row.get("idle_devices"):
        out += f"{'; ' if out else ''}{number(idle)} ranks idle"
    return out


def compare(a: dict[str, Any], b: dict[str, Any], label_a: str = "A", label_b: str = "B") -> Comparison:
    """Match the rows of ``a`` and ``b`` on config_id (A's order, then rows only in B); runs of two
    modes are bad input (a month of serving and a training job share no figure's meaning)."""
    if a.get("mode") != b.get("mode"):
        first, second = (_SPANS.get(str(d.get("mode")), f"{_a(d.get('mode'))} run's") for d in (a, b))
        raise InputError(f"{label_a} is {_a(a.get('mode'))} run and {label_b} {_a(b.get('mode'))} run: their "
                         f"figures are not the same quantities (the first's are {first}, the second's "
                         f"{second}); allowed: two runs of one mode")
    rows_a = {r["config_id"]: r for r in a["rows"]}
    rows_b = {r["config_id"]: r for r in b["rows"]}
    metrics = [m for m, _, _ in METRICS
               if any(_num(r.get(m)) is not None for r in [*rows_a.values(), *rows_b.values()])]
    rows = []
    for cid in dict.fromkeys([*rows_a, *rows_b]):
        ra, rb = rows_a.get(cid), rows_b.get(cid)
        status = "both" if ra and rb else ("removed" if ra else "added")
        values = {}
        for m in metrics:
            va, vb = _num(ra.get(m)) if ra else None, _num(rb.get(m)) if rb else None
            values[m] = (va, vb, change_pct(va, vb))
        from_csv = " and ".join(side for side, r in (("A", ra), ("B", rb)) if r and r.get(FROM_CSV))
        rows.append(RowDiff(cid, status, ra.get("instance_type") if ra else None,
                            rb.get("instance_type") if rb else None, values, verdict(a, ra), verdict(b, rb),
                            from_csv))
    return Comparison(label_a, label_b, metrics, rows, meta_differences(a, b), rows_note(a, b))


def with_sweep_rows(doc: dict[str, Any], path: Path, other: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (read from ``path``) with the rows of ``other`` it lacks read from its sweep's
    results.csv (``reports.tables.sweep_csv_rows``): a configuration one run shows and the other
    does not (off its front) is compared, not listed as added or removed."""
    from ecobench.io.rundir import results_file
    from ecobench.reports.tables import sweep_csv_rows

    more = sweep_csv_rows(results_file(path), doc, (r["config_id"] for r in doc["rows"]),
                          [r["config_id"] for r in other["rows"]])
    return {**doc, "rows": doc["rows"] + more} if more else doc


def rows_note(a: dict[str, Any], b: dict[str, Any]) -> str:
    """What is compared where a run is a sweep whose results.json keeps fewer rows than its
    results.csv (``sweep.rows_in_csv``): only the results.json rows; '' otherwise."""
    parts = []
    for label, doc in (("A", a), ("B", b)):
        sw = doc.get("sweep")
        in_csv = sw.get("rows_in_csv") if isinstance(sw, dict) else None
        shown = sum(not r.get(FROM_CSV) for r in doc["rows"])
        if isinstance(in_csv, int) and not isinstance(in_csv, bool) and in_csv > shown:
            parts.append(f"{label}: {shown} of its sweep's {in_csv:,}")
    if not parts:
        return ""
    return (f"compared: the rows of each results.json ({'; '.join(parts)}; a sweep's other rows are "
            "only in its results.csv)")


_LABELS = {m: label for m, label, _ in METRICS}
_HIGHER_BETTER = {m for m, _, hb in METRICS if hb}


def value(m: str, v: float | None) -> str:
    """A figure as the summary writes it; money never in exponent form (0.000012, not 1.2e-05)."""
    if v is None:
        return ""
    if m.startswith("cost_usd") and 0 < abs(v) < 1e-3:
        return f"{v:.{3 - math.floor(math.log10(abs(v)))}f}"
    return number(v)


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:+.1f}%"


def _cells(r: RowDiff, metrics: list[str], compact: bool = False) -> list[str]:
    note = {"both": "", "added": " (added)", "removed": " (removed)"}[r.status]
    note += f" ({r.from_csv}: from results.csv)" if r.from_csv else ""
    out = [r.config_id + note]
    for m in metrics:
        va, vb, ch = r.values[m]
        a, b = value(m, va), value(m, vb)
        if compact:
            out.append(f"{a or '-'} -> {b or '-'}" + (f" ({signed_pct(ch)})" if ch is not None else ""))
        else:
            out += [a, b, _pct(ch)]
    return out


def _header(metrics: list[str], compact: bool = False) -> list[str]:
    if compact:
        return ["config", *(f"{_LABELS[m]} A -> B" for m in metrics)]
    return ["config", *(h for m in metrics for h in (f"{_LABELS[m]} A", "B", "change"))]


def _lines(c: Comparison, metrics: list[str], compact: bool) -> list[str]:
    table = [_header(metrics, compact), *(_cells(r, metrics, compact) for r in c.rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(x.ljust(w) if i == 0 else x.rjust(w)
                      for i, (x, w) in enumerate(zip(row, widths, strict=True))).rstrip() for row in table]


def _changed(c: Comparison, metric: str) -> bool:
    """Whether ``metric`` differs between A and B in any configuration both runs have."""
    return any(r.status == "both" and r.values[metric][2] != 0 for r in c.rows)


def _fit(c: Comparison, width: int, compact: bool) -> tuple[list[str], list[str]]:
    """The figures that fit ``width``, in their usual order; the figures that changed are kept before
    those that did not (a change of region moves cost and CO2, not instances or energy), each group
    by importance."""
    keep = sorted(c.metrics, key=lambda m: not _changed(c, m))  # stable: importance within each group
    metrics = list(c.metrics)
    lines = _lines(c, metrics, compact)
    while len(keep) > 1 and max(len(line) for line in lines) > width:
        keep.pop()
        metrics = [m for m in c.metrics if m in keep]
        lines = _lines(c, metrics, compact)
    return metrics, lines


def _verdict_lines(c: Comparison) -> list[str]:
    """Each configuration's targets in A and B, where either run sets any (empty otherwise)."""
    if not any(r.verdict_a or r.verdict_b for r in c.rows):
        return []
    return ["targets (latency or deadline) A -> B:",
            *(f"  {r.config_id}: {r.verdict_a or '-'} -> {r.verdict_b or '-'}" for r in c.rows)]


def _meta_lines(c: Comparison) -> list[str]:
    if not c.meta:
        return ["the runs' versions, data snapshots, commit and scenario are the same"]
    return ["what differs between the runs:", *(f"  {k}: {va} -> {vb}" for k, va, vb in c.meta)]


def terminal(c: Comparison, width: int = 100) -> str:
    """A table that fits ``width`` columns: A, B and the change of each figure in columns of their own,
    or "A -> B (change)" in one where that shows more figures; the least important figures are
    dropped until it fits."""
    metrics, lines = _fit(c, width, compact=False)
    if len(metrics) < len(c.metrics):
        more, compact_lines = _fit(c, width, compact=True)
        if len(more) > len(metrics):
            metrics, lines = more, compact_lines
    out = [f"A: {c.label_a}", f"B: {c.label_b}", "change: B against A, in % of A",
           *([c.rows_note] if c.rows_note else []), "", *lines]
    dropped = [m for m in c.metrics if m not in metrics]
    if dropped:
        moved = [m for m in dropped if _changed(c, m)]
        same = f"{'; ' if moved else ''}unchanged: {', '.join(m for m in dropped if m not in moved)}"
        listed = ", ".join(moved) + (same if len(moved) < len(dropped) else "")
        out += note_lines(f"not shown at this width: {listed} (see --markdown or --html)", width)
    added = sum(r.status == "added" for r in c.rows)
    removed = sum(r.status == "removed" for r in c.rows)
    if added or removed:
        out.append(f"{added} configuration(s) only in B (added), {removed} only in A (removed)")
    targets = _verdict_lines(c)
    return "\n".join([*out, *([""] + targets if targets else []), "", *_meta_lines(c)])


def _md(text: str) -> str:
    """A cell ecobench wrote itself (a header, a formatted figure): only table syntax escaped."""
    return text.replace("|", "\\|").replace("\n", " ")


def _md_text(text: str) -> str:
    """Text from a file (ids, paths, scenario fields, versions): inert markdown, no HTML, no
    control characters (``ecobench.io.textsafe.markdown``)."""
    from ecobench.io.textsafe import markdown as inert

    return inert(text)


def markdown(c: Comparison) -> str:
    """A GitHub markdown table with every figure, then the metadata that differs; every text that
    came from a file is escaped (a description cannot add an image, a link or a cell)."""
    head = _header(c.metrics)
    head[1::3] = [f"`{m}` A" for m in c.metrics]
    lines = [f"A: {_md_text(c.label_a)}, B: {_md_text(c.label_b)}; change: B against A, in % of A",
             *([_md(c.rows_note)] if c.rows_note else []), "",
             "| " + " | ".join(_md(h) for h in head) + " |",
             "|---|" + "---:|" * (len(head) - 1)]
    for r in c.rows:
        cells = _cells(r, c.metrics)
        first = _md_text(r.config_id) + cells[0][len(r.config_id):]  # the id, then our "(added)" note
        lines.append("| " + " | ".join([first, *(_md(x) for x in cells[1:])]) + " |")
    if any(r.verdict_a or r.verdict_b for r in c.rows):
        lines += ["", "| config | targets A | targets B |", "|---|---|---|"]
        lines += [f"| {_md_text(r.config_id)} | {_md(r.verdict_a or '-')} | {_md(r.verdict_b or '-')} |"
                  for r in c.rows]
    lines += ["", "| differs | A | B |", "|---|---|---|"]
    lines += [f"| {_md_text(k)} | {_md_text(va)} | {_md_text(vb)} |" for k, va, vb in c.meta] or [
        "| (nothing) | | |"]
    return "\n".join(lines) + "\n"


def html(c: Comparison) -> str:
    """A small self-contained page (the report's style), autoescaped."""
    import jinja2

    def tone(m: str, ch: float | None) -> str:
        if ch is None or abs(ch) < 0.05:
            return ""
        return "good" if (ch > 0) == (m in _HIGHER_BETTER) else "bad"

    env = jinja2.Environment(loader=jinja2.PackageLoader("ecobench.reports", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    return env.get_template("compare.html.j2").render(
        c=c, labels=_LABELS, value=value, pct=_pct, tone=tone)

