"""The report's hand-drawn SVG: axes with round ticks and units, 90% whiskers, the Pareto scatter,
parity plots, well-formed XML and the size of a 500-row report."""

import copy
import math
import re
import time
import xml.etree.ElementTree as ET

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ecobench.planning.evaluate import evaluate
from ecobench.reports import charts
from ecobench.reports.html import caveats, front_flags, render, render_validation
from ecobench.reports.tables import records
from ecobench.runner import results_document
from ecobench.scenario.load import scenario_from_dict
from tests.conftest import SCENARIOS

SVG = re.compile(r"<svg.*?</svg>", re.S)


def _xml(svg: str) -> ET.Element:
    return ET.fromstring(svg)


@pytest.fixture(scope="module")
def doc():
    """A results document with 90% bands (the seed scenario draws them)."""
    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "layoutlm_realtime.yaml").read_text()))
    return results_document(s, records(evaluate(s)), "run")


def synthetic(doc, n, seed=0):
    """n rows made from the document's two, costs and CO2 scaled at random (a sweep's size)."""
    import random

    rnd = random.Random(seed)
    out = copy.deepcopy(doc)
    base = next(r for r in doc["rows"] if r["is_baseline"])
    other = next(r for r in doc["rows"] if not r["is_baseline"])
    rows = [copy.deepcopy(base)]
    for i in range(n - 1):
        r = copy.deepcopy(other if i % 2 else base)
        r["is_baseline"] = False
        r["config_id"] = f"{r['instance_type']}-{['us-east-1', 'eu-north-1', 'us-west-2'][i % 3]}-b{i}"
        f_cost, f_co2 = rnd.uniform(0.3, 3), rnd.uniform(0.1, 5)
        for k, v in list(r.items()):
            if isinstance(v, float) and k.startswith("cost_usd"):
                r[k] = v * f_cost
            if isinstance(v, float) and k.startswith(("co2_kg", "co2_operational", "co2_embodied")):
                r[k] = v * f_co2
        rows.append(r)
    out["rows"] = rows
    return out


@pytest.mark.parametrize("lo,hi,expected", [(0, 0.993, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
                                            (0, 13, [0, 5, 10, 15]), (0, 22, [0, 5, 10, 15, 20, 25])])
def test_nice_ticks_examples(lo, hi, expected):
    assert charts.nice_ticks(lo, hi) == pytest.approx(expected)


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(1e-6, 1e6))
def test_nice_ticks_cover_the_range_in_1_2_5_steps(lo, width):
    width = max(width, 1e-6 * abs(lo))
    hi = lo + width
    ticks = charts.nice_ticks(lo, hi)
    tol = 1e-9 * (abs(lo) + width)
    assert ticks[0] <= lo + tol and ticks[-1] >= hi - tol
    assert 2 <= len(ticks) <= 12
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-4


def test_numbers_have_no_scientific_notation():
    assert charts.fmt_num(1234567.8, money=True) == "1,234,568"
    assert charts.fmt_num(9.781, money=True) == "9.78"
    assert charts.fmt_num(0.000123) == "0.000123"
    assert charts.fmt_num(13.0) == "13"
    assert charts.tick_labels([0, 0.5, 1.0, 1.5]) == ["0.0", "0.5", "1.0", "1.5"]
    assert charts.tick_labels([0.001, 0.01, 0.1, 1, 10]) == ["0.001", "0.01", "0.1", "1", "10"]
    svg = charts.hbar("Cost", ["a", "b"], [2.5e7, 1.2e5], "USD", quantity="cost")
    assert "e+" not in svg and "25,000,000 USD" in svg


def test_bars_have_an_axis_with_units_and_whiskers_with_bands():
    svg = charts.hbar("Energy", ["a", "b"], [12.3, 4.0], "kWh", baseline="b", quantity="energy",
                      lows=[9.8, None], highs=[15.1, None])
    root = _xml(svg)
    ticks = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "tick"]
    assert ticks == ["0", "5", "10", "15", "20"]
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "axis-title"]
    assert titles == ["energy (kWh)"]
    assert svg.count('class="errbar"') == 1  # only the row with a band
    assert "12.3 kWh (9.8–15.1)" in svg
    assert 'class="errbar"' not in charts.hbar("Energy", ["a"], [1.0], "kWh")


def test_stacked_bars_and_lines_have_axes():
    svg = charts.stacked_hbar("Power", ["a"], {"x": [30.0], "y": [50.0]}, "W", quantity="power")
    assert 'class="tick"' in svg and "power (W)" in svg and "80 W" in svg
    _xml(svg)
    svg = charts.lines("Loss", {"bf16": [3.0, 2.0, 1.5]}, "step", "loss")
    assert svg.count('class="axis-title"') == 2
    _xml(svg)


def test_pareto_mask():
    pts = [(1, 5), (2, 2), (5, 1), (3, 3), (2, 2), (float("nan"), 0), (6, 6)]
    assert charts.pareto_mask(pts) == [True, True, True, False, True, False, False]
    assert charts.pareto_mask([]) == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 5)), max_size=40))
def test_pareto_mask_is_the_set_of_non_dominated_points(pts):
    mask = charts.pareto_mask(pts)

    def dominates(a, b):
        return all(x <= y for x, y in zip(a, b, strict=True)) and a != b

    for p, on in zip(pts, mask, strict=True):
        assert on == (not any(dominates(q, p) for q in pts))


def test_pareto_scatter_draws_every_point_and_joins_the_front():
    pts = [charts.Point("base", 10, 1.0, 8, 12, 0.8, 1.2, False, True),
           charts.Point("cheap", 1, 0.5, flag=True), charts.Point("clean", 3, 0.02, flag=True),
           charts.Point("worse", 20, 2.0, flag=False), charts.Point("no price", float("nan"), 1.0)]
    svg = charts.pareto_scatter("t", pts, "cost", "USD", "CO2", "kg")
    root = _xml(svg)
    classes = [e.get("class") for e in root.iter() if (e.get("class") or "").startswith("point")]
    assert len(classes) == 4 and classes.count("point front") == 2 and classes.count("point baseline") == 1
    assert svg.count('class="front"') == 1
    assert svg.count('class="errbar"') == 2  # the baseline's two whiskers
    assert "log scale" in svg  # cost spreads 20x, CO2 100x
    for label in ("base", "cheap", "clean", "worse"):
        assert f">{label}</text>" in svg


def test_parity_plot_has_identity_line_band_and_shapes():
    pts = [charts.Point("a", 100, 110, flag=True), charts.Point("b", 10, 30, 20, 40, flag=False),
           charts.Point("c", 5, 5, flag=None), charts.Point("d", -5, -4, flag=True)]
    svg = charts.parity("p", pts, 25.0, numbers=["1", "2", None, "3"])
    root = _xml(svg)
    assert svg.count('class="identity"') == 1 and svg.count('class="target-band"') == 1
    kinds = [e.get("class") for e in root.iter() if (e.get("class") or "").startswith("point")]
    assert sorted(kinds) == ["point missed", "point ok", "point untargeted"]  # d is off the log scale
    assert "target ±25%" in svg and "log scale" in svg


def test_report_of_500_rows_is_small_fast_and_well_formed(doc):
    big = synthetic(doc, 500)
    t0 = time.perf_counter()
    html = render(big)
    elapsed = time.perf_counter() - t0
    assert len(html.encode()) < 2 * 2**20
    assert elapsed < 2.0
    svgs = SVG.findall(html)
    assert len(svgs) >= 8
    for svg in svgs:
        _xml(svg)
    scatter = next(s for s in svgs if "Pareto front" in s)
    points = [e for e in _xml(scatter).iter() if (e.get("class") or "").startswith("point")]
    assert len(points) == 500
    assert sum(1 for e in points if e.get("class") == "point front") == sum(front_flags(big)) - (
        1 if front_flags(big)[0] else 0)
    assert "Showing 60 of 500 configurations" in html


def test_report_bars_carry_bands_and_prefers_the_runs_pareto_flag(doc):
    html = render(doc)
    assert html.count('class="errbar"') >= 8
    flagged = copy.deepcopy(doc)
    for r in flagged["rows"]:
        r["pareto"] = True  # the run's own front (it may count time too)
    scatter = next(s for s in SVG.findall(render(flagged)) if "Pareto front" in s)
    assert scatter.count('class="point front"') == 1 and scatter.count('class="point baseline"') == 1


def test_caveats_are_said_once_above_the_figures(doc):
    notes = caveats(doc)
    assert notes["power"] and "inf1" in notes["power"][0] and "Inferentia" in notes["power"][0]
    assert notes["provenance"] == []
    mixed = copy.deepcopy(doc)
    mixed["rows"][0]["provenance"] = "measured"
    html = render(mixed)
    assert len(caveats(mixed)["provenance"]) == 1
    assert html.count("Mixed provenance") == 1 and html.count("power inferred, not published") == 1
    charts_at = html.index("<h2>Charts</h2>")
    assert html.index('id="caveats"') < charts_at and html.find('href="#caveats"', charts_at) > 0


def test_validation_page_draws_parity_plots_with_verdicts_in_words():
    def check(exp, fig, mode, pub, eco, ok, kind=None, target="±35%"):
        return {"experiment": exp, "figure": fig, "mode": mode, "published": pub, "ecobench": eco,
                "error_pct": 100 * (eco - pub) / pub, "error_points": None, "target": target,
                "within_target": ok, "kind": kind, "source": None, "low": None, "high": None, "in_band": None}

    rows = [check("seed", "cost_usd", "replay", 100, 105, True, target="±10%"),
            check("seed", "energy_change_pct", "replay", -90, -80, False, target="±5 points"),
            *[check(f"p{i}", "tokens_per_s", "holdout", 100 + i, 100 + 2 * i, abs(i) <= 35, "llm_train")
              for i in range(40)]]
    html = render_validation(rows)
    svgs = SVG.findall(html)
    assert len(svgs) == 2
    for svg in svgs:
        _xml(svg)
        assert svg.count('class="identity"') == 1 and svg.count('class="target-band"') == 1
    assert svgs[1].count('class="point missed"') == 4 and svgs[1].count('class="point ok"') == 36
    assert ">MISSED</td>" in html and ">ok</td>" in html
    # one collapsible group per kind of point, its MISSED count in the summary line
    summaries = re.findall(r"<details class=\"group\"[^>]*>\s*<summary>(.*?)</summary>", html, re.S)
    assert len(summaries) == 2
    assert '40 points: 36 ok, <span class="bad">4 MISSED</span>' in summaries[1]
    assert "Every figure" not in html and html.count("<details") == 3  # the 40 points folded in their group
    assert "listed (–) but not plotted" in html  # the percentage-point figure


def test_crowded_tick_labels_are_thinned_and_empty_bands_drawn_as_none():
    svg = charts.hbar("Cost", ["a-long-configuration-name", "b"], [39629.0, 9347.0], "USD", quantity="cost",
                      lows=[39629.0, 8000.0], highs=[39629.0, 11000.0], notes=["", "(-76%) a long note here"])
    root = _xml(svg)
    grid = [e for e in root.iter("{http://www.w3.org/2000/svg}line") if e.get("stroke") == charts.GRID_COLOUR]
    labels = [e for e in root.iter("{http://www.w3.org/2000/svg}text") if e.get("class") == "tick"]
    assert 2 <= len(labels) < len(grid)  # every tick keeps its grid line; labels too close are dropped
    assert svg.count('class="errbar"') == 1 and "39,629 USD (" not in svg


@pytest.fixture(scope="module")
def serving_doc():
    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text()))
    return results_document(s, records(evaluate(s)), "run")


def test_a_serving_report_answers_per_token_with_each_target(serving_doc):
    html = render(serving_doc)
    assert "time to train" not in html.lower() and "cost per run" not in html.lower()
    cards = html[html.index('<div class="cards">'):html.index("<h2>Against the baseline</h2>")]
    assert len(re.findall(r'<div class="card[ "]', cards)) == len(serving_doc["rows"])  # baseline too
    assert "per million output tokens" in cards and "CO2 per million output tokens" in cards
    for label in ("TTFT p50", "TPOT p50", "TTFT p99"):
        assert cards.count(label) == len(serving_doc["rows"])
    assert "MISSES" not in cards and ">meets<" in cards
    titles = re.findall(r'aria-label="([^"]*)"', html)
    assert {"Instances to meet the rate", "Cost per million output tokens",
            "CO2 per million output tokens, facility scope", "TTFT p99 against the 3,000 ms target",
            "Energy per output token, facility scope"} <= set(titles)
    slow = copy.deepcopy(serving_doc)
    slow["rows"][0]["ttft_ms_p99"] = 3500.0
    html = render(slow)
    cards = html[html.index('<div class="cards">'):html.index("<h2>Against the baseline</h2>")]
    assert cards.count(">MISSES<") == 1
    chart = next(s for s in SVG.findall(html) if "TTFT p99 against" in s)
    assert chart.count(">MISSES</tspan>") == 1 and chart.count('class="target"') == 1


def test_a_serving_reports_per_token_charts_are_at_the_headline_scope():
    """Until 2026-11-29 they stayed at the facility scope under any headline scope, beside cards and a
    summary at the headline's (g6e: 30.1 g/Mtok of the accelerators against 118 at the facility)."""
    d = yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text())
    d["headline_scope"] = "accelerator"
    s = scenario_from_dict(d)
    doc = results_document(s, records(evaluate(s)), "run")
    html = render(doc)
    titles = set(re.findall(r'aria-label="([^"]*)"', html))
    want = {"CO2 per million output tokens, accelerator scope", "Energy per output token, accelerator scope"}
    assert want <= titles and not any("facility scope" in t for t in titles if "token" in t)
    chart = next(c for c in SVG.findall(html) if "CO2 per million output tokens, accelerator" in c)
    row = next(r for r in doc["rows"] if not r["is_baseline"])
    acc, fac = row["co2_accelerator_g_per_million_output_tokens"], row["co2_g_per_million_output_tokens"]
    assert acc < fac and charts.fmt_num(acc) in chart and charts.fmt_num(fac) not in chart


def test_training_cards_lead_with_instances_and_time():
    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "llama2_7b_pretrain.yaml").read_text()))
    html = render(results_document(s, records(evaluate(s)), "run"))
    answer, charts_at = html.index('<div class="cards">'), html.index("<h2>Charts</h2>")
    assert answer < charts_at
    card = html[answer:html.index("</div>\n", html.index('<ul class="facts">', answer))]
    assert card.index("16 × p4d.24xlarge") < card.index("to train") < card.index("for the run")


def test_source_urls_are_escaped_links():
    from ecobench.reports.html import linkify

    out = str(linkify('see https://example.com/a?b=1&c=<2> and "http://x.org/y".'))
    assert '<a href="https://example.com/a?b=1&amp;c=" rel="noopener" target="_blank">' in out
    assert "&lt;2&gt;" in out and '<a href="http://x.org/y" rel="noopener"' in out and "<2>" not in out


def test_validation_page_says_what_each_point_was_held_out_from_and_its_band():
    """What the CLI and the JSON report for every held-out row (the source or group left out of its
    fit, the 90% band, whether the published value is inside it) and per kind (coverage, band
    width) is on the page too."""
    def held(i, source, low, high):
        return {"experiment": f"llm_train_p{i}", "figure": "tokens_per_s", "mode": "holdout",
                "published": 100.0, "ecobench": 110.0, "error_pct": 10.0, "error_points": None,
                "target": "±35%", "within_target": True, "kind": "llm_train", "source": source,
                "low": low, "high": high, "in_band": low <= 100.0 <= high}

    rows = [held(i, f"source_{i % 3}", 80.0 if i % 4 else 101.0, 150.0) for i in range(20)]
    rows.append({"experiment": "llm_train", "figure": "tokens_per_s", "mode": "holdout_summary",
                 "kind": "llm_train", "count": 20, "median_abs_error_pct": 10.0, "worst_abs_error_pct": 10.0,
                 "worst": "llm_train_p0", "target": "median ≤ 15%, worst ≤ 35%", "within_target": True,
                 "coverage_pct": 75.0, "median_band_width_pct": 63.6, "median_band_ratio": 1.88})
    html = render_validation(rows)
    every = html[html.index("Every point of this group"):]
    assert "source_2" in every and every.count(">yes</td>") == 15 and every.count(">no</td>") == 5
    assert "80 to 150" in every and "101 to 150" in every
    summary = html[html.index("Out of sample (holdout)"):html.index("ecobench against published")]
    assert "75.0%" in summary and "x1.88" in summary
    intro = html.split("<h2>")[0]  # which model predicts which held-out rows
    assert "emulated NeuronCore" in intro and "draw model" in intro
