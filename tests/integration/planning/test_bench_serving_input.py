"""benchmarks/bench_serving_plan.py on a scenario the planner refuses, or a bad --repeat: exit 2 with one
line naming the file, the field and the bound, never a traceback."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_serving_plan.py"


@pytest.fixture()
def bench():
    spec = importlib.util.spec_from_file_location("bench_serving_plan", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_model_no_configuration_fits_is_one_line_and_exit_2(bench, monkeypatch, capsys):
    # a target no configuration meets is a row that misses it (not refused): a model too large is
    monkeypatch.setitem(bench.SCENARIO["workload"], "model", "llama3-70b")
    assert bench.main(["--repeat", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("bench_serving_plan: error: ")
    assert "bench_serving_plan.py: SCENARIO: configs[" in err
    assert "GiB of weights per device" in err


@pytest.mark.parametrize("repeat", ["0", "101", "x"])
def test_a_bad_repeat_is_exit_2(bench, capsys, repeat):
    with pytest.raises(SystemExit) as e:
        bench.main(["--repeat", repeat])
    assert e.value.code == 2 and "allowed: a whole number 1-100" in capsys.readouterr().err
