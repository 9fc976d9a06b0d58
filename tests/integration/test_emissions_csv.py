"""Measured runs write a codecarbon-compatible emissions.csv; progress writes no carriage return when
stderr is not a terminal."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from ecobench.cli import main
from ecobench.reports.emissions import EMISSIONS_COLUMNS, emissions_rows

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _tiny(tmp_path: Path, track: bool = True) -> Path:
    s = {"schema_version": 1, "name": "tiny",
         "workload": {"architecture": {"layers": 2, "hidden_size": 64, "heads": 2, "intermediate_size": 128,
                                       "vocab_size": 500, "max_position_embeddings": 64},
                      "inference": {"rate_per_h": 3600, "seq_len": 32, "batch_size": 2}},
         "configs": [{"id": "h", "instance_type": "local", "backend": "reference", "device": "cpu"},
                     {"id": "c6i", "instance_type": "c6i.2xlarge", "backend": "reference", "device": "cpu"}],
         "baseline": "h",
         "measurement": {"warmup_s": 0.1, "min_window_s": 0.2, "repetitions": 3, "gemm_s": 0,
                         "track_energy": track}}
    f = tmp_path / "tiny.yaml"
    f.write_text(yaml.safe_dump(s))
    return f


def test_codecarbon_header_is_codecarbons() -> None:
    import dataclasses

    data = pytest.importorskip("codecarbon.output_methods.emissions_data")
    assert EMISSIONS_COLUMNS == [f.name for f in dataclasses.fields(data.EmissionsData)]


def test_measured_run_writes_emissions_csv_without_carriage_returns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "run"
    assert main(["run", str(_tiny(tmp_path)), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "measuring" in err  # stderr is captured: not a terminal
    with (out / "emissions.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == EMISSIONS_COLUMNS
    assert [r["experiment_id"] for r in rows] == ["h"] * 3  # the projection measured nothing of its own
    assert b"\r" not in (out / "emissions.csv").read_bytes()
    doc = json.loads((out / "results.json").read_text())
    host = next(r for r in doc["rows"] if r["config_id"] == "h")
    for r, w in zip(rows, host["energy_windows"], strict=True):
        assert float(r["duration"]) == w["duration_s"] and float(r["cpu_power"]) == w["cpu_w"]
        assert float(r["energy_consumed"]) > 0
        kwh = float(r["energy_consumed"])
        assert float(r["emissions"]) == pytest.approx(kwh * host["grid_g_per_kwh"] / 1000)
        assert r["project_name"] == "tiny" and r["run_id"] == doc["run_id"]


def test_no_emissions_csv_without_a_measurement(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(out)]) == 0
    assert not (out / "emissions.csv").exists()
    untracked = {"config_id": "h", "instance_type": "local", "energy_windows": None}
    assert emissions_rows({"rows": [untracked]}) == []
