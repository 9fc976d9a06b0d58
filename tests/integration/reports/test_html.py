import json
import re
from pathlib import Path

import pytest

from ecobench.planning.evaluate import evaluate
from ecobench.reports.html import band, render
from ecobench.reports.tables import records
from ecobench.runner import results_document
from ecobench.scenario.load import scenario_from_dict


def test_report_escapes_user_text(scenario_dict):
    scenario_dict["description"] = "<script>alert(1)</script>"
    s = scenario_from_dict(scenario_dict)
    html = render(results_document(s, records(evaluate(s)), "run"))
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "http" not in html.split("<body>")[0]  # no external resources in the head


def test_training_report_shows_layouts(tmp_path):
    import yaml

    from tests.conftest import SCENARIOS

    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "llama2_7b_pretrain.yaml").read_text()))
    rows = records(evaluate(s))
    html = render(results_document(s, rows, "run"))
    assert "Training layouts" in html
    for r in rows:
        assert f"{r['tensor_parallel']} × {r['pipeline_parallel']} × {r['data_parallel']}" in html
        assert r["layout_choice"] in html
def test_report_shows_measurement_warnings_and_power_method(scenario_dict):
    s = scenario_from_dict(scenario_dict)
    doc = results_document(s, records(evaluate(s)), "run")
    row = doc["rows"][0]
    row.update(measurement_method="codecarbon", power_method="CPU power: TDP × load model, no RAPL",
               energy_provenance="modelled", throughput_ci95_low=1.0, throughput_ci95_high=2.0,
               repetitions=10, window_start_utc="a", window_end_utc="b", mfu=None, host_gemm_tflops=None,
               throughput_cv_pct=12.5, host_other_cpu_pct_before=40.0, host_other_cpu_pct_during=45.0,
               measurement_warnings="other processes used 45% of the host's CPU while measuring",
               cpu_power_fallback=True)
    html = render(doc)
    assert 'class="warning"' in html and "not reproducible on this host" in html
    assert "exposes no CPU energy counter (RAPL)" in html
    assert "CPU power: TDP × load model, no RAPL" in html and "12.5%" in html and "40% / 45%" in html


def test_a_sweep_report_leads_with_the_decisions(tmp_path):
    from ecobench.cli import main

    out = tmp_path / "run"
    assert main(["run", str(Path(__file__).resolve().parents[3] / "scenarios" / "layoutlm_sweep.yaml"),
                 "-q", "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    decisions = html.index("<h2>Decisions</h2>")
    assert decisions < html.index("<h2>Against the baseline</h2>")
    assert "18 combinations, 15 evaluated, 3 skipped" in html
    for objective in ("cost", "co2", "energy", "balanced"):
        assert f'<td class="l" data-label="objective">{objective}</td>' in html
    # The report (and results.json) hold some of the sweep's rows; it says how many of results.csv's.
    shown = len(json.loads((out / "results.json").read_text())["rows"])
    in_csv = len((out / "results.csv").read_text().splitlines()) - 1
    assert shown < in_csv
    assert f"This report and results.json show {shown} of the {in_csv} rows" in html
    # and the CSV's other rows carry no band: said, not left to be read as no uncertainty
    assert "its 90% bands (the *_low and *_high columns) for the rows shown here only" in html


def test_the_inferred_chip_power_caveat_names_only_rows_that_use_the_draw_model():
    """A tdp row counts the datasheet TDP and a measured row its supplied draw, so the H100's inferred
    idle does not qualify their figures (the caveat named them)."""
    from ecobench.reports.html import caveats

    base = {"instance_type": "p5.48xlarge", "precision": "bf16", "instances": 2, "parallelism": "auto"}
    s = scenario_from_dict({
        "schema_version": 2, "name": "bases", "baseline": "model", "uncertainty": {"draws": 50},
        "workload": {"model": "llama2-7b", "training": {"total_tokens": 1e9, "global_batch_size": 64,
                                                        "phases": [{"seq_len": 2048, "fraction": 1.0}]}},
        "configs": [base | {"id": "model"}, base | {"id": "tdp", "power_basis": "tdp"},
                    base | {"id": "meas", "power_basis": "measured", "measured_power_w": 5000.0,
                            "measured_power_scope": "accelerator"}]})
    notes = caveats(results_document(s, records(evaluate(s)), "run"))["power"]
    assert len(notes) == 1 and notes[0].startswith("model: the NVIDIA H100"), notes


def _table(html: str, heading: str) -> str:
    start = html.index(f"<h2>{heading}</h2>")
    return html[start:html.index("</table>", start)]


def test_the_table_against_the_baseline_names_its_scope_whatever_the_headline(scenario_dict):
    """The cards follow the headline scope; the table against the baseline holds the facility figures
    (energy_kwh, co2_operational_kg, the facility changes) and says so, not a bare 'energy (kWh)'."""
    scenario_dict["headline_scope"] = "accelerator"
    s = scenario_from_dict(scenario_dict)
    doc = results_document(s, records(evaluate(s)), "run")
    html = render(doc)
    table = _table(html, "Against the baseline")
    assert "<th>energy, facility (kWh over 1 h)</th>" in table and "<th>CO2 Δ, facility</th>" in table
    assert "<th>energy (kWh" not in table
    assert "at the facility scope; the headline's accelerator scope is in the cards" in table
    # so is the table by region: each region's grid times energy_kwh (facility), plus embodied
    assert "Operational CO2 of each configuration's facility-scope energy over 1 h at each region" in html
    row = next(r for r in doc["rows"] if not r["is_baseline"])
    assert row["energy_kwh"] != row["energy_accelerator_kwh"]  # the two scopes differ here
    scenario_dict["headline_scope"] = "facility"
    s = scenario_from_dict(scenario_dict)
    assert "the headline's" not in _table(render(results_document(s, records(evaluate(s)), "run")),
                                          "Against the baseline")


def test_inference_and_serving_totals_name_their_horizon(scenario_dict):
    """Energy and CO2 of an inference or serving run are totals over the horizon, beside costs per
    million: the cards and the table say over how long (and, inference, how many inferences)."""
    scenario_dict["workload"]["inference"]["horizon_h"] = 24
    s = scenario_from_dict(scenario_dict)
    doc = results_document(s, records(evaluate(s)), "run")
    assert {r["duration_h"] for r in doc["rows"]} == {24.0} and doc["rows"][0]["inferences"] == 2_400_000
    html = render(doc)
    assert "the energy and CO2 over the 24 h horizon (2,400,000 inferences; facility scope" in html
    table = _table(html, "Against the baseline")
    assert "<th>energy, facility (kWh over 24 h)</th>" in table
    assert "<th>CO2 operational, facility (kg over 24 h)</th>" in table
    assert "Energy and CO2 are totals over 24 h (the horizon)." in _table(html, "Energy and CO2 by scope")
    del doc["scenario"]["workload"]["inference"]["horizon_h"]  # a results.json without it: the rows'
    assert "over the 24 h horizon" in render(doc)


def test_a_training_report_names_no_horizon():
    import yaml

    from tests.conftest import SCENARIOS

    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "bert_large_pretrain.yaml").read_text()))
    table = _table(render(results_document(s, records(evaluate(s)), "run")), "Against the baseline")
    assert "<th>energy, facility (kWh)</th>" in table and " h horizon" not in table


def test_throughput_below_one_per_second_keeps_its_significant_figures():
    """GPT-3 175B trains at under one sequence per instance-second: one decimal showed 0.5 and 0.4 for
    rows 0.91x apart (and would show 0.0 below 0.05); the table shows three significant figures and
    names what is counted."""
    import yaml

    from ecobench.reports.charts import fmt_num
    from tests.conftest import SCENARIOS

    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "gpt3_175b_deadline.yaml").read_text()))
    doc = results_document(s, records(evaluate(s)), "run")
    table = _table(render(doc), "Against the baseline")
    assert "<th>sequences / instance / s</th>" in table
    for r in doc["rows"]:
        v = r["throughput_per_instance_per_s"]
        assert 0.05 < v < 1 and fmt_num(v) != f"{v:.1f}"
        assert f'>{fmt_num(v)} <span class="prov">(×' in table


def test_a_latency_target_on_a_card_carries_its_unit():
    import yaml

    from tests.conftest import SCENARIOS

    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text()))
    html = render(results_document(s, records(evaluate(s)), "run"))
    assert '<span class="prov">(target 1,000 ms)</span>' in html  # TTFT p50 1 s, as the scenario sets
    assert '<span class="prov">(target 1,000)</span>' not in html


def test_a_serving_card_shows_co2_per_token_at_the_scope_of_its_change():
    """The card's change is the headline scope's; its figure was the facility's whatever the headline:
    at the accelerator scope trn1 read 89.3 g (the baseline 114 g) marked +10%. Figure and change
    are now of one scope."""
    import re

    import yaml

    from ecobench.reports.charts import fmt_num
    from tests.conftest import SCENARIOS

    scenario = yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text())
    scenario["headline_scope"] = "accelerator"
    s = scenario_from_dict(scenario)
    doc = results_document(s, records(evaluate(s)), "run")
    html = render(doc)
    card = r'<b>([^<]*) g</b> CO2 per million output tokens <span[^>]*>([^<]*)</span>'
    shown = dict(re.findall(card, html))
    base = next(r for r in doc["rows"] if r["is_baseline"])
    base_g = base["co2_accelerator_kg"] * 1e9 / base["output_tokens"]
    assert len(shown) == len(doc["rows"]) - 1
    for r in doc["rows"]:
        if r["is_baseline"]:
            continue
        g = r["co2_accelerator_kg"] * 1e9 / r["output_tokens"]
        assert shown[fmt_num(g)] == f"{r['co2_accelerator_change_pct']:+.0f}%"
        assert (g < base_g) == (r["co2_accelerator_change_pct"] < 0)  # the sign agrees with the figures


def test_the_charts_name_the_scope_and_horizon_of_their_totals(scenario_dict):
    """The energy and CO2 charts plot energy_kwh and co2_*_kg (facility, over the horizon) whatever
    the headline scope: their titles say so."""
    import re

    scenario_dict["headline_scope"] = "it"
    scenario_dict["workload"]["inference"]["horizon_h"] = 8
    s = scenario_from_dict(scenario_dict)
    titles = re.findall(r'aria-label="([^"]*)"', render(results_document(s, records(evaluate(s)), "run")))
    assert {"Energy at the facility over 8 h", "CO2 at the facility over 8 h: operational and embodied"} \
        <= set(titles)
    assert "Energy" not in titles


def test_a_quantized_serving_row_names_its_weight_format():
    """inf2_int8 serves int8 weights at bf16 compute: its card and table row said only 'bf16', like
    the bf16 row beside it."""
    import yaml

    from tests.conftest import SCENARIOS

    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text()))
    doc = results_document(s, records(evaluate(s)), "run")
    row = next(r for r in doc["rows"] if r["config_id"] == "inf2_int8")
    assert (row["precision"], row["weight_precision"], row["kv_cache_precision"]) == ("bf16", "int8", "bf16")
    html = render(doc)
    assert "<b>inf2_int8</b> · bf16, int8 weights</div>" in html
    assert "inf2.48xlarge · bf16, int8 weights</span>" in _table(html, "Against the baseline")
    assert "<b>inf2</b> · bf16</div>" in html  # the same formats throughout: no more said


def test_a_card_cost_below_half_a_cent_is_not_shown_as_zero(scenario_dict):
    """Cards wrote cost per million with two decimals: $0.0042 read $0.00, and 0.724 read 0.72 beside
    the table's 0.724. They now use the table's money format."""
    s = scenario_from_dict(scenario_dict)
    doc = results_document(s, records(evaluate(s)), "run")
    row = next(r for r in doc["rows"] if not r["is_baseline"])
    row["cost_usd_per_million"] = 0.0042
    cards = render(doc).split('<div class="cards">', 1)[1].split("<h2>", 1)[0]
    assert "<b>$0.00420</b> per million inferences" in cards and "$0.00<" not in cards


def test_a_training_card_cost_below_half_a_dollar_is_not_shown_as_zero():
    """A training card wrote the run's cost in whole dollars: $0.40 read $0."""
    import yaml

    from tests.conftest import SCENARIOS

    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "small_encoder_pretrain.yaml").read_text()))
    doc = results_document(s, records(evaluate(s)), "run")
    row = next(r for r in doc["rows"] if not r["is_baseline"])
    row["cost_usd"] = 0.4
    cards = render(doc).split('<div class="cards">', 1)[1].split("<h2>", 1)[0]
    assert "<b>$0.400</b> for the run" in cards and "<b>$0</b>" not in cards


def _decisions(html: str) -> str:
    start = html.index("<h2>Decisions</h2>")
    return html[start:html.index("<h2 id=\"answer\">", start)]


@pytest.mark.parametrize("name,change", [
    ("llama3_8b_chat.yaml", lambda sc: sc["workload"]["serving"].update(median_tpot_ms=0.01)),
    ("llama2_7b_pretrain.yaml", lambda sc: sc["workload"]["training"].update(deadline_h=0.5)),
])
def test_a_report_without_recommendations_says_why_as_the_terminal_does(name, change):
    """Where no row meets the latency targets or the training deadline, the report had no Decisions
    section and no word of why (the terminal names the closest row); it now says what the terminal
    says."""
    import yaml

    from ecobench.planning.evaluate import evaluate_all
    from ecobench.reports.summary import nothing_meets
    from tests.conftest import SCENARIOS

    scenario = yaml.safe_load((SCENARIOS / name).read_text())
    change(scenario)
    s = scenario_from_dict(scenario)
    ev = evaluate_all(s)
    doc = results_document(s, ev.rows, "run", ev)
    assert doc["recommendations"] == []
    terminal = nothing_meets(ev, s)
    assert terminal is not None
    shown = _decisions(render(doc))
    assert '<p class="warning">No configuration meets ' in shown
    closest = terminal.split(": the closest is ", 1)[1]
    assert f": the closest is {closest}." in shown.replace("&#39;", "'")


def test_a_report_with_no_eligible_row_says_there_is_no_recommendation(scenario_dict):
    s = scenario_from_dict(scenario_dict)
    doc = results_document(s, records(evaluate(s)), "run")
    doc["recommendations"] = []
    assert "No recommendation: no configuration is eligible" in _decisions(render(doc))


def test_the_serving_plans_table_says_which_latency_its_band_is_of_and_the_co2_scope():
    """'206 / 725' over '90%: 39.7 to 826' read as a band of both; it is of the median alone. The
    table's CO2 per million tokens is the facility's whatever the headline scope."""
    import yaml

    from tests.conftest import SCENARIOS

    s = scenario_from_dict(yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text()))
    doc = results_document(s, records(evaluate(s)), "run")
    table = _table(render(doc), "Serving plans")
    assert "<th>g CO2 / M output tokens (facility)</th>" in table
    banded = [r for r in doc["rows"] if r.get("ttft_ms_p50_low") is not None]
    assert banded
    for r in banded:
        assert f'<span class="prov">p50 {band(r, "ttft_ms_p50")}</span>' in table
        assert f'<span class="prov">p50 {band(r, "tpot_ms_p50")}</span>' in table


def test_a_change_band_that_ends_near_zero_reads_0_pct_not_minus_0(scenario_dict):
    """inf2_int8's band read '-55% to -0%' (its end -0.003%): an end that rounds to none is 0%."""
    s = scenario_from_dict(scenario_dict)
    doc = results_document(s, records(evaluate(s)), "run")
    row = next(r for r in doc["rows"] if not r["is_baseline"])
    row.update(energy_change_pct=-0.2, energy_change_pct_low=-54.7, energy_change_pct_high=-0.003)
    assert band(row, "energy_change_pct", "%+.0f%%").endswith("-0%</span>")  # what the report showed
    html = render(doc)
    assert '90%: <span class="rng">-55%\u00a0to 0%</span>' in html and "to -0%" not in html
    table = _table(html, "Against the baseline")
    cell = re.search(r'<td data-label="energy Δ[^"]*" class="([^"]*)">([^<]*)<', table)
    assert cell is not None and cell.groups() == ("", "0%")  # -0.2%: no sign, not marked better


@pytest.mark.parametrize(("name", "also"), [
    ("bert_large_pretrain", "the run's front also counts training time (duration_h)"),
    ("llama3_8b_chat", "the run's front also counts median time per output token (tpot_ms_p50)"),
    ("layoutlm_realtime", None)])
def test_the_cost_co2_chart_names_the_other_objectives_of_the_front(name, also):
    """The chart's caption said the front 'may also count time or latency' in every run; results.json's
    pareto names the objectives, and the caption the ones the chart does not show (none for a front over
    cost and CO2 alone)."""
    import yaml

    from ecobench.planning.evaluate import evaluate_all
    from tests.conftest import SCENARIOS

    s = scenario_from_dict(yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text()))
    ev = evaluate_all(s)
    doc = results_document(s, ev.rows, "run", ev)
    html = render(doc)
    assert "may also count" not in html
    if also is None:
        assert doc["pareto"]["objectives"] == ["cost_usd", "co2_kg"] and "front also counts" not in html
    else:
        assert also in html
        del doc["pareto"]  # a results.json written before it named them: the mode's objective
        assert also in render(doc)


def test_a_report_of_configurations_in_several_regions_names_each_ones_region(scenario_dict):
    """One configuration moved to eu-north-1: the report's header said 'region us-east-1' and no card or
    row said otherwise, though that row's price and grid (27 g/kWh) are eu-north-1's."""
    scenario_dict["region"] = "us-east-1"
    scenario_dict["configs"][0]["region"] = "eu-north-1"
    scenario_dict["uncertainty"] = {"draws": 0}
    s = scenario_from_dict(scenario_dict)
    html = render(results_document(s, records(evaluate(s)), "run"))
    assert "regions eu-north-1, us-east-1 (the scenario's: us-east-1; each card and row names its own)" \
        in html
    assert "× inf1.xlarge <span class=\"prov\">in eu-north-1</span>" in html
    assert "inf1.xlarge · bf16 · eu-north-1" in html
    one = dict(scenario_dict, configs=[dict(c, region=None) for c in scenario_dict["configs"]])
    s = scenario_from_dict(one)
    html = render(results_document(s, records(evaluate(s)), "run"))
    assert "· region us-east-1 ·" in html and "in us-east-1</span>" not in html
