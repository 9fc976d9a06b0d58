"""Bounded fuzzing of every file users hand ecobench: scenarios (inference, training, serving,
sweeps, parallelism), HF configs, load-profile CSVs, Neuron sysfs trees, results and baselines for
compare, report and check.

Every generated case must end in a clean exit: a scenario runs (0, finite figures) or is bad input
(2); a check passes, finds a regression, is bad input or refuses noisy rows (0, 1, 2, 5). Never a
traceback, an internal error (3), a hang, or a file outside the results folder. The number of
cases is fixed and the examples derandomized, so the test takes the same few seconds each time;
benchmarks/fuzz_inputs.py runs thousands.
"""

import contextlib
import io
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecobench.cli import main
from ecobench.scenario.load import scenario_from_dict
from tests.fuzz_cases import (
    INFERENCE,
    SERVING,
    TRAINING,
    materialize,
    results_texts,
    scenario_texts,
    surface_cases,
)
from tests.integration.test_gate_inputs import _rates, _write_run

FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_fuzz_bases_are_valid():
    for base in (INFERENCE, TRAINING, SERVING):
        scenario_from_dict(base)


def _finite_figures(run_dir: Path) -> None:
    doc = json.loads((run_dir / "results.json").read_text())
    for row in doc["rows"]:
        for key in ("throughput_per_instance_per_s", "instances", "energy_kwh", "cost_usd", "co2_kg",
                    "power_w", "duration_h"):
            assert isinstance(row[key], int | float) and math.isfinite(row[key]) and row[key] >= 0, (key, row)


@FUZZ
@given(text=scenario_texts())
def test_fuzz_scenarios_end_cleanly(text):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        f = root / "s.yaml"
        f.write_text(text, encoding="utf-8", errors="surrogatepass")
        code, _, err = _cli("run", str(f), "-q", "--results", str(root / "results"))
        assert code in (0, 2), err
        assert "Traceback" not in err and "internal error" not in err, err
        outside = [p for p in root.iterdir() if p.name not in ("s.yaml", "results")]
        assert outside == [], outside
        runs = list((root / "results").glob("*/*")) if (root / "results").exists() else []
        if code == 0:
            assert len(runs) == 1
            _finite_figures(runs[0])
        else:
            assert runs == [] and str(f) in err


@pytest.fixture(scope="module")
def results_doc(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzzdoc")
    run, doc = _write_run(d, "r", _rates(5.0))
    return run, doc


@FUZZ
@given(data=st.data())
def test_fuzz_baselines_and_runs_end_cleanly(results_doc, data):
    run, doc = results_doc
    text = data.draw(results_texts(doc))
    as_run = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "results.json"
        f.write_text(text, encoding="utf-8")
        args = ["check", d, "--baseline", str(run)] if as_run else ["check", str(run), "--baseline", str(f)]
        code, _, err = _cli(*args, "--fail-on", "energy_kwh:+5%", "--fail-on", "cost_usd:+5%")
        assert code in (0, 1, 2, 5), err
        assert "Traceback" not in err and "internal error" not in err, err


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzz_the_whole_surface_ends_cleanly(results_doc, data):
    """Issue 24: every generated input, of every kind, ends in a clean exit; an error echoes at
    most a short piece of the file."""
    run, doc = results_doc
    case = data.draw(surface_cases(str(run), doc))
    with tempfile.TemporaryDirectory() as d:
        args = materialize(case, d)
        code, _, err = _cli(*args)
        assert code in case.allowed, (case.kind, err)
        assert "Traceback" not in err and "internal error" not in err, (case.kind, err)
        assert "\x1b" not in err, (case.kind, err)
        assert len(err) < 20_000, (case.kind, len(err))
