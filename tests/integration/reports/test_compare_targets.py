"""`ecobench compare` said nothing of targets: B's rows, all over a 5 ms TTFT target, read 'TTFT p50
-52.8%' in green against A's, which met theirs. Each row's targets (or deadline) in A and B are now
in the HTML table, the terminal and the markdown."""

import yaml

from ecobench.planning.evaluate import evaluate
from ecobench.reports.compare import compare, html, markdown, terminal, verdict
from ecobench.reports.tables import records
from ecobench.runner import results_document
from ecobench.scenario.load import scenario_from_dict
from tests.conftest import SCENARIOS


def _doc(name, mutate=None):
    d = yaml.safe_load((SCENARIOS / name).read_text())
    if mutate:
        mutate(d)
    s = scenario_from_dict(d)
    return results_document(s, records(evaluate(s)), "run")


def _tight(d):
    d["workload"]["serving"].update(median_ttft_ms=5)


def test_compare_shows_each_rows_targets_in_both_runs():
    a, b = _doc("llama3_8b_chat.yaml"), _doc("llama3_8b_chat.yaml", _tight)
    c = compare(a, b)
    g6e = next(r for r in c.rows if r.config_id == "g6e")
    assert g6e.verdict_a == "met 3/3" and g6e.verdict_b == "MISSED TTFT p50"
    assert "  g6e: met 3/3 -> MISSED TTFT p50" in terminal(c, width=200)
    assert "| g6e | met 3/3 | MISSED TTFT p50 |" in markdown(c)
    page = html(c)
    assert '<th colspan="2">targets (latency or deadline)</th>' in page
    assert '<td class="">met 3/3</td><td class="bad">MISSED TTFT p50</td>' in page


def test_training_compare_gives_the_deadline_and_idle_ranks():
    a = _doc("gpt3_175b_deadline.yaml")
    trn1n = next(r for r in a["rows"] if r["config_id"] == "trn1n")
    row = dict(trn1n, meets_deadline=False, idle_devices=104)
    assert verdict(a, row) == "MISSED deadline; 104 ranks idle"
    assert verdict(a, a["rows"][0]) == "deadline met"


def test_without_targets_compare_adds_no_targets_column():
    a = _doc("llama2_7b_pretrain.yaml")
    c = compare(a, a)
    assert all(not r.verdict_a and not r.verdict_b for r in c.rows)
    assert "targets" not in html(c) and "targets" not in terminal(c) and "targets" not in markdown(c)
