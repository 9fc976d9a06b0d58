"""The terminal summary keeps the columns that answer the run's question and drops the least useful
first on a narrow terminal."""

import copy

import pytest
import yaml

from ecobench.planning.evaluate import evaluate_all
from ecobench.reports.summary import fit_table, format_summary, number, targets_cell
from ecobench.scenario.load import scenario_from_dict
from tests.conftest import SCENARIOS


def _run(name, mutate=None):
    raw = yaml.safe_load((SCENARIOS / name).read_text())
    if mutate:
        mutate(raw)
    s = scenario_from_dict(raw)
    return evaluate_all(s).rows, s


@pytest.fixture(scope="module")
def serving():
    return _run("llama3_8b_chat.yaml")


def _header(text):
    return text.splitlines()[3]  # after the title, headline and power-basis lines


@pytest.mark.parametrize("width", [80, 120])
def test_serving_keeps_region_targets_cost_co2_and_p99(serving, width):
    rows, s = serving
    out = format_summary(rows, s, width=width)
    table = out.split("\n\n")[0].splitlines()[3:]
    head = table[0]
    for col in ("config", "instance", "region", "targets", "USD/Mtok", "gCO2/Mtok", "TTFT p99 ms"):
        assert col in head, (width, head)
    assert "time to train" not in out and "cost_usd " not in head
    assert all(len(line) <= width for line in table[:-1])  # every row fits; the note names the rest
    assert "met 3/3" in table[1]
    if width == 80:  # the note, wrapped at the width, ends the table
        note = " ".join(line.strip() for line in table[[i for i, line in enumerate(table)
                                                         if "not shown at this width" in line][0]:])
        assert "precision" in note and note.endswith("every column is in results.csv)"), table
    else:  # wider: more of the useful columns come back, least useful still last
        assert "instances" in head and "precision" not in head


def test_a_targeted_percentile_has_its_own_column():
    """2026-11-29: with p90_ttft_ms and p95_tpot_ms targets the terminal table showed only the p50 and
    p99 columns beside 'met 4/4': the figures each target was checked against were in results.csv
    only."""
    def mutate(raw):
        serving = raw["workload"]["serving"]
        del serving["p99_ttft_ms"]
        serving |= {"p90_ttft_ms": 800, "p95_tpot_ms": 60}
        raw["configs"] = [c for c in raw["configs"] if c["id"] in ("g6e", "p5")]
    rows, s = _run("llama3_8b_chat.yaml", mutate)
    for width in (None, 100):
        table = format_summary(rows, s, width=width).split("\n\n")[0].splitlines()[3:]
        head = table[0]
        assert "TTFT p90 ms" in head and "TPOT p95 ms" in head, (width, head)
        assert head.index("TTFT p99 ms") < head.index("TTFT p90 ms")  # beside the p99 columns
        for r, line in zip(rows, table[1:], strict=False):
            cells = f" {line} "
            assert f" {number(r['ttft_ms_p90'])} " in cells and f" {number(r['tpot_ms_p95'])} " in cells


def test_training_leads_with_instances_and_time():
    rows, s = _run("llama2_7b_pretrain.yaml")
    head = _header(format_summary(rows, s, width=80))
    for col in ("config", "instance", "region", "instances", "time h", "cost USD", "CO2 kg"):
        assert col in head
    assert head.index("instances") < head.index("time h") < head.index("cost USD")


def test_a_missed_target_is_named():
    row = {"ttft_ms": 1200.0, "tpot_ms": 10.0}
    targets = [{"column": "ttft_ms", "label": "TTFT p50", "target_ms": 1000.0},
               {"column": "tpot_ms", "label": "TPOT p50", "target_ms": 50.0}]
    assert targets_cell(row, targets) == "MISSED TTFT p50"
    assert targets_cell(dict(row, ttft_ms=900.0), targets) == "met 2/2"


def test_fit_table_drops_the_highest_rank_first_and_never_rank_zero():
    rows = [{"a": "x" * 30, "b": 1.0, "c": 2.0, "d": 3.0}]
    cols = [("a", "a", 0), ("b", "b", 5), ("c", "c", 1), ("d", "d", 5)]
    out = fit_table(copy.deepcopy(rows), cols, width=34)
    assert out.splitlines()[0].split() == ["a", "c"]  # d then b dropped (rank 5), c kept (rank 1)
    assert fit_table(rows, cols, width=5).splitlines()[0].split() == ["a"]


def test_training_bands_use_the_short_headers(tmp_path, capsys):
    """The training bands printed raw column names (throughput_per_instance_per_s, mfu) where
    inference prints 'per s/inst'."""
    from ecobench.cli import main

    assert main(["run", str(SCENARIOS / "bert_large_pretrain.yaml"), "-q", "--out", str(tmp_path / "r")]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[lines.index(next(ln for ln in lines if ln.startswith("90% bands"))) + 1]
    assert "per s/inst" in header and "MFU" in header and "throughput_per_instance_per_s" not in header


def test_a_whole_number_is_printed_in_full():
    # gpt3_175b_deadline with an unreachable deadline printed 2,048 instances as "2,050"
    from ecobench.reports.summary import number

    assert number(2048) == "2,048" and number(2048.0) == "2,048" and number(256) == "256"
    assert number(478123.4) == "478,000" and number(0.0597) == "0.0597" and number(0) == "0"


def test_a_modelled_host_draw_is_not_called_a_meter_reading():
    """A host measured without an energy counter (no RAPL on a VM) has its draw from codecarbon's TDP
    and RAM models: its power basis is 'measured' (the host's own reading is counted), and the line
    says that reading is a model's, not a meter's."""
    rows, s = _run("layoutlm_realtime.yaml")
    rows = copy.deepcopy(rows)
    first = rows[0]["config_id"]
    rows[0] |= {"power_basis": "measured", "energy_provenance": "modelled"}
    line = format_summary(rows, s, width=120).splitlines()[2]
    assert line.startswith("power basis: ")
    assert line.endswith(f"; {first}: the host's draw is codecarbon's model where it read no energy counter "
                         "(energy_provenance; power_method says how), an estimate, not a meter reading")
    rows[0]["energy_provenance"] = "measured"  # RAPL or NVML counters: nothing to add
    assert "not a meter reading" not in format_summary(rows, s, width=120)
