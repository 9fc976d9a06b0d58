"""The results data dictionary names every column ecobench writes; docs/results.md and the JSON Schemas
are current and what ecobench writes validates against them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecobench.cli import main
from ecobench.reports.columns import CHANGES, COLUMNS, JSON_TYPES, describe
from ecobench.runner import results_document
from ecobench.table import CHANGE_METRICS

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios"
# inference, training, serving and emulated (all draw 1000 times for their 90% bands); a sweep, a
# load profile and spot prices
RUNS = ["layoutlm_realtime", "bert_large_pretrain", "llama3_8b_chat", "llama_emulated", "layoutlm_sweep",
        "layoutlm_daily_profile", "layoutlm_spot"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for name in RUNS:
        assert main(["run", str(SCENARIOS / f"{name}.yaml"), "-q", "--out", str(root / name)]) == 0
        out[name] = json.loads((root / name / "results.json").read_text())
    return out


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location("results_docs", ROOT / "tools" / "results_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _validator(name: str) -> Any:
    schema = json.loads((ROOT / "docs" / "schemas" / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_generated_docs_are_current() -> None:
    for path, text in _tool().generated().items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run python tools/results_docs.py"


def test_every_written_column_is_documented(runs: dict[str, dict[str, Any]]) -> None:
    seen = {k for doc in runs.values() for r in doc["rows"] for k in r}
    assert {"ttft_ms_p50", "cost_usd_per_million", "tensor_parallel", "kernels", "energy_kwh_low"} <= seen
    assert [c for c in sorted(seen) if describe(c) is None] == []


def test_measured_and_emulated_columns_are_documented() -> None:
    """The reference backend's columns (local_measure.yaml takes a minute to run): every key of
    the engine and measurement columns is named."""
    import inspect
    import re

    from ecobench.planning.modes.base import engine_columns
    from ecobench.planning.modes.measured import measurement_columns

    source = inspect.getsource(engine_columns) + inspect.getsource(measurement_columns)
    keys = set(re.findall(r'"([a-z_0-9]+)": ', source))
    assert {"measurement_method", "throughput_ci95_low", "samples", "kernels"} <= keys
    assert [k for k in sorted(keys) if k not in COLUMNS] == []


def test_columns_have_units_in_words_and_known_types() -> None:
    assert set(CHANGES.values()) == set(CHANGE_METRICS) and set(CHANGES) == set(CHANGE_METRICS.values())
    assert set(JSON_TYPES) <= set(COLUMNS)
    assert set(JSON_TYPES.values()) <= {"string", "integer", "boolean", "object", "array"}
    for name, (unit, meaning) in COLUMNS.items():
        assert meaning, name
        if name.endswith(("_kwh", "_usd", "_kg", "_w", "_h", "_ms", "_pct")):
            assert unit, name
    assert describe("co2_kg_high") == (COLUMNS["co2_kg"][0], describe("co2_kg_high")[1])  # type: ignore[index]
    assert describe("sweep_region") is not None and describe("sweep_index") == COLUMNS["sweep_index"]
    assert describe("nonsense_low") is None and describe("nonsense") is None


def test_results_validate_against_the_schema(runs: dict[str, dict[str, Any]]) -> None:
    v = _validator("results.schema.json")
    for name, doc in runs.items():
        assert [e.message for e in v.iter_errors(doc)] == [], name
    doc = runs["layoutlm_realtime"]
    extended = {**doc, "recommendations": [{"objective": "co2", "config_id": "inf2", "reason": "-81% CO2"}],
                "sweep": {"axes": {"region": ["eu-north-1"]}},
                "rows": [{**r, "pareto": True, "pareto_rank": 1, "sweep_index": 0,
                          "sweep_region": "eu-north-1"} for r in doc["rows"]]}
    assert list(v.iter_errors(extended)) == []
    assert not v.is_valid({**doc, "rows": [{**doc["rows"][0], "energy_kwhh": 1.0}]})  # an unknown column
    assert not v.is_valid({**doc, "rows": [{**doc["rows"][0], "energy_kwh": "1.0"}]})  # a string
    assert not v.is_valid({k: x for k, x in doc.items() if k != "rows"})
    assert not v.is_valid({**doc, "recommendations": [{"objective": "co2"}]})


def test_integer_columns_are_written_as_whole_numbers(runs: dict[str, dict[str, Any]]) -> None:
    """The data dictionary's integer columns (instances, pareto_rank...) are JSON integers in every
    mode: an inference run wrote ``"instances": 2.0`` (JSON Schema accepts 2.0 as an integer, a
    reader's ``isinstance(v, int)`` does not)."""
    for name, doc in runs.items():
        floats = {(r["config_id"], k, v) for r in doc["rows"] for k, v in r.items()
                  if JSON_TYPES.get(k) == "integer" and v is not None and not isinstance(v, int)}
        assert floats == set(), name
        assert all(isinstance(r["instances"], int) for r in doc["rows"]), name


def test_top_level_keys_are_those_written() -> None:
    from ecobench.reports.columns import TOP_LEVEL
    from ecobench.scenario.load import load_scenario

    doc = results_document(load_scenario(SCENARIOS / "layoutlm_realtime.yaml"), [], "r")
    assert {k for k, (_, required, _) in TOP_LEVEL.items() if required} <= set(doc) <= set(TOP_LEVEL)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_scenarios_validate_against_the_schema(path: Path) -> None:
    v = _validator("scenario.schema.json")
    assert [e.message for e in v.iter_errors(yaml.safe_load(path.read_text()))] == []


def test_scenario_schema_rejects_what_the_loader_rejects() -> None:
    v = _validator("scenario.schema.json")
    good = yaml.safe_load((SCENARIOS / "layoutlm_realtime.yaml").read_text())
    assert v.is_valid(good)
    assert not v.is_valid({**good, "colour": "green"})
    assert not v.is_valid({**good, "workload": {**good["workload"], "inference": {
        **good["workload"]["inference"], "rate_per_h": "a lot"}}})


def test_a_serving_row_says_how_its_weights_and_cache_are_stored(tmp_path):
    """A new user could not tell inf2 from inf2_int8 in the results: precision reads bf16 for both."""
    import pandas as pd

    from ecobench.cli import main

    out = tmp_path / "run"
    assert main(["run", "scenarios/llama3_8b_chat.yaml", "-q", "--out", str(out)]) == 0
    rows = pd.read_csv(out / "results.csv").set_index("config_id")
    weights = rows["weight_precision"]
    assert weights["inf2"] == "bf16" and weights["inf2_int8"] == "int8"
    assert set(rows["kv_cache_precision"]) == {"bf16"} and set(rows["precision"]) == {"bf16"}
