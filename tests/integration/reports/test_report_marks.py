"""What a reader deciding from report.html alone must not miss: a training row over its deadline, a
serving row over its latency targets and a layout that leaves ranks idle are marked in words beside
the row's figures (cards, the table against the baseline, the serving plans), not only in the
terminal's warnings; the time-to-train chart draws the deadline."""

import re

import yaml

from ecobench.planning.evaluate import evaluate
from ecobench.reports.html import band, render
from ecobench.reports.tables import records
from ecobench.runner import results_document
from ecobench.scenario.load import scenario_from_dict
from tests.conftest import SCENARIOS


def _doc(name: str, mutate=None) -> dict:
    d = yaml.safe_load((SCENARIOS / name).read_text())
    if mutate:
        mutate(d)
    s = scenario_from_dict(d)
    return results_document(s, records(evaluate(s)), "run")


def _section(html: str, heading: str, end: str = "</table>") -> str:
    start = html.index(f"<h2>{heading}</h2>")
    return html[start:html.index(end, start)]


def _row(table: str, config_id: str) -> str:
    """The <tr> of one configuration in a table section."""
    m = re.search(r'<tr[^>]*>\s*<td class="cfg">' + re.escape(config_id) + r"\b.*?</tr>", table, re.S)
    assert m is not None, config_id
    return m.group(0)


def _card(html: str, config_id: str) -> str:
    m = re.search(r'<div class="card[^"]*">\s*<div class="k"><b>' + re.escape(config_id) + r"</b>.*?</ul>",
                  html, re.S)
    assert m is not None, config_id
    return m.group(0)


def _late_and_idle(doc: dict) -> dict:
    """gpt3_175b_deadline with its trn1n row as a fixed, smaller cluster would plan it: 1,173 h against
    the 336 h deadline, and 104 ranks its layout leaves idle (the planner's own figures for 64
    trn1n.32xlarge and for a given TP8 PP6 DP8 layout on 61 p4d.24xlarge)."""
    row = next(r for r in doc["rows"] if r["config_id"] == "trn1n")
    row.update(duration_h=1173.0, meets_deadline=False, idle_devices=104)
    return row


def _late_and_idle_html() -> str:
    """The report of gpt3_175b_deadline with its trn1n row late and leaving ranks idle."""
    doc = _doc("gpt3_175b_deadline.yaml")
    _late_and_idle(doc)
    return render(doc)


def test_a_training_row_over_its_deadline_is_marked_in_its_card_and_the_comparison():
    """The report never said a row missed the deadline: trn1n at 1,173 h against 336 h read '-3% CO2'
    in green in its card and in the table against the baseline, with no word of the deadline."""
    html = _late_and_idle_html()
    late, base = _card(html, "trn1n"), _card(html, "p4d")
    assert re.search(r"deadline 336 h</span> <span class=\"bad\">MISSES</span>", late)
    assert re.search(r"deadline 336 h</span> <span class=\"good\">meets</span>", base)
    assert "104 ranks idle" in late and '<span class="bad">IDLE</span>' in late
    table = _section(html, "Against the baseline")
    row = _row(table, "trn1n")
    assert '<span class="bad flag">MISSES the 336 h deadline</span>' in row
    assert '<span class="bad flag">104 ranks idle</span>' in row
    assert 'class="bad flag"' not in _row(table, "p4d")  # the baseline meets it, all ranks busy


def test_the_time_to_train_chart_draws_the_deadline_and_each_verdict():
    html = _late_and_idle_html()
    start = html.index("Time to train against the 336 h deadline")
    chart = html[start:html.index("</svg>", start)]
    assert 'class="target"' in chart and "target 336 h" in chart
    assert "MISSES</tspan>" in chart  # trn1n's verdict in red
    assert re.search(r">[^<]*meets</text>", chart)  # the baseline's


def test_without_a_deadline_no_deadline_line_or_verdict():
    doc = _doc("llama2_7b_pretrain.yaml")
    assert all(r.get("deadline_h") is None for r in doc["rows"])
    html = render(doc)
    cards = html[html.index("What the run takes</h2>"):html.index("<h2>Against the baseline</h2>")]
    assert "deadline" not in cards and 'class="bad flag"' not in html
    assert "Time to train" in html and "Time to train against" not in html


def test_serving_rows_that_miss_a_target_are_marked_in_the_comparison_and_the_plans():
    """The cards said MISSES; the table against the baseline (green -87% cost) and the serving plans
    (TTFT 114 / 154 ms) did not, for a row over a 5 ms median TTFT target."""
    def tight(d):
        d["workload"]["serving"].update(median_ttft_ms=5, p99_ttft_ms=3000, median_tpot_ms=50)

    doc = _doc("llama3_8b_chat.yaml", tight)
    html = render(doc)
    for heading in ("Against the baseline", "Serving plans"):
        table = _section(html, heading)
        for r in doc["rows"]:
            row = _row(table, r["config_id"])
            if r["ttft_ms_p50"] > 5:
                assert '<span class="bad flag">MISSES TTFT p50</span>' in row, (heading, r["config_id"])
            else:
                assert "MISSES" not in row


def test_rows_that_meet_every_target_carry_no_mark():
    doc = _doc("llama3_8b_chat.yaml")
    html = render(doc)
    assert 'class="bad flag"' not in html


def test_a_band_may_break_after_to_so_wide_tables_fit():
    """'1,401,975\u00a0to\u00a02,522,948' could not wrap: the gpt3_175b_deadline table against the
    baseline was 1,276 px wide in a 1,216 px box at a 1,280 px window, its CO2 change off-screen."""
    r = {"x": 1.9e6, "x_low": 1401975.0, "x_high": 2522948.0}
    assert band(r, "x") == '90%: <span class="rng">1,401,975\u00a0to 2,522,948</span>'
    assert band(r, "x", "%.0f") == '90%: <span class="rng">1401975\u00a0to 2522948</span>'


def test_when_no_row_meets_the_targets_the_scatter_does_not_promise_a_front():
    """Every row over a 5 ms TTFT target: no row on the front, yet the caption read 'Filled points are
    on the Pareto front ... the dashed step line joins them' above a chart with neither."""
    def impossible(d):
        d["workload"]["serving"].update(median_ttft_ms=5, median_tpot_ms=2, p99_ttft_ms=10)

    doc = _doc("llama3_8b_chat.yaml", impossible)
    assert not any(r["pareto"] for r in doc["rows"])
    html = render(doc)
    side = html[html.index("<h2>Cost against CO2</h2>"):html.index("<h2>Charts</h2>")]
    assert "Filled points are on the Pareto front" not in side
    assert "<b>No point is on the Pareto front</b>" in side and "latency targets" in side


def test_with_a_front_the_scatter_caption_explains_it():
    html = render(_doc("llama3_8b_chat.yaml"))
    side = html[html.index("<h2>Cost against CO2</h2>"):html.index("<h2>Charts</h2>")]
    assert "Filled points are on the Pareto front" in side and "No point is on" not in side


def test_the_emulated_layer_error_is_written_out_not_in_exponent_form():
    """'one encoder layer's relative error against FP32: 3.38e-03' in llama_emulated's report; the
    report writes numbers out (0.00338)."""
    from ecobench.reports.charts import fmt_num

    doc = _doc("llama_emulated.yaml")
    errs = [r["numeric_error"] for r in doc["rows"] if r.get("engine_utilization") and r.get("numeric_error")]
    assert errs
    html = render(doc)
    for e in errs:
        assert f"relative error against FP32: {fmt_num(e)}</p>" in html
    assert not re.search(r"relative error against FP32: [\d.]+e[-+]\d", html)


def test_a_run_of_mixed_power_bases_names_each_rows_basis_and_warns_once():
    """g6e on the tdp basis against p5 modelled: its card read '-71% CO2' with no word of the basis
    (only the decisions' text said it); the terminal has a basis column. Now each card and row of the
    comparison names its basis, and 'Read with care' says what a mixed basis means."""
    def g6e_tdp(d):
        next(c for c in d["configs"] if c["id"] == "g6e")["power_basis"] = "tdp"

    doc = _doc("llama3_8b_chat.yaml", g6e_tdp)
    html = render(doc)
    assert "· <b>tdp</b> power basis" in _card(html, "g6e")
    assert "· <b>modelled</b> power basis" in _card(html, "p5")
    assert "· tdp power</span>" in _row(_section(html, "Against the baseline"), "g6e")
    caveat = html[html.index('id="caveats"'):html.index("</div>", html.index('id="caveats"'))]
    assert "Mixed power basis: modelled (" in caveat and "tdp (g6e)" in caveat


def test_one_power_basis_adds_no_basis_words():
    html = render(_doc("llama3_8b_chat.yaml"))
    assert "power basis</div>" not in html and "Mixed power basis" not in html


def test_the_region_chart_features_a_row_that_qualifies():
    """The region chart took the lowest-energy row whatever it was: a row over its deadline with ranks
    idle. It now takes the lowest-energy row of those that meet the targets and leave no rank idle."""
    doc = _doc("gpt3_175b_deadline.yaml")
    late = _late_and_idle(doc)
    late["energy_kwh"] = min(r["energy_kwh"] for r in doc["rows"]) / 2  # the lowest energy, but late
    from html import unescape

    page = unescape(render(doc))
    assert "CO2 of 'trn1n'" not in page
    ok = min((r for r in doc["rows"] if r is not late), key=lambda r: r["energy_kwh"])
    assert f"CO2 of '{ok['config_id']}' (lowest energy of those that qualify) by region" in page


def test_the_training_layouts_mark_idle_ranks_and_a_missed_deadline():
    html = _late_and_idle_html()
    start = html.index("<h2>Training layouts</h2>")
    table = html[start:html.index("</table>", start)]
    row = re.search(r"<tr><td>trn1n.*?</tr>", table, re.S).group(0)
    assert '<span class="bad flag">104 ranks idle</span>' in row
    assert '<span class="bad flag">MISSES the 336 h deadline</span>' in row


def test_the_serving_intro_does_not_promise_targets_every_row_misses():
    """The intro said 'within the latency targets' alone, also when every row missed them."""
    html = render(_doc("llama3_8b_chat.yaml"))
    intro = html[html.index('<p class="prov">'):]
    intro = intro[:intro.index("</p>")]
    assert "within the latency targets (where a configuration cannot meet them, planned nearest them" in intro


def test_the_cards_time_to_train_reads_as_the_tables():
    """A card rounded the time to three significant figures ("1,170 h") beside the table's "1,173" for the
    same row: a reader comparing them saw two answers."""
    doc = _doc("llama2_7b_pretrain.yaml")
    for r in doc["rows"]:
        r["duration_h"] = 1173.4
    html = render(doc)
    table = _section(html, "Against the baseline")
    for r in doc["rows"]:
        assert "<b>1,173 h</b> to train" in _card(html, r["config_id"])
        assert ">1,173<br>" in _row(table, r["config_id"])
