"""Sweeps: expansion, skipping, the vectorised rows against the scalar path, the CLI."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from ecobench.cli import main
from ecobench.errors import InputError
from ecobench.planning.evaluate import evaluate_all
from ecobench.scenario.model import load_scenario, scenario_from_dict
from ecobench.scenario.sweep import combinations, config_at

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "scenarios" / "layoutlm_sweep.yaml"


def _doc(**sweep: list) -> dict:
    d = yaml.safe_load(EXAMPLE.read_text())
    d["sweep"] = sweep
    return d


def test_issue_example_expands_skips_and_counts():
    ev = evaluate_all(load_scenario(EXAMPLE))
    assert ev.sweep is not None
    assert ev.sweep["combinations"] == 18
    # the T4 (g4dn.xlarge) has no bf16: 3 regions skipped, named by their reason
    assert ev.sweep["skipped"] == 3
    assert "bf16" in ev.sweep["skipped_by_reason"][0]["reason"]
    assert len(ev.table["config_id"]) == 1 + 15
    assert len(set(ev.table["config_id"])) == 16


def test_vectorised_rows_equal_the_scalar_evaluation():
    """Every shown sweep row is evaluated a second time through the one-configuration path; both
    must agree on every column (bands aside)."""
    s = scenario_from_dict(_doc(instance_type=["inf1.2xlarge", "g4dn.xlarge", "inf2.xlarge"],
                                region=["us-east-1", "eu-north-1"], batch_size=[1, 4],
                                max_utilization=[0.5, 0.9], precision=["fp16"]))
    ev = evaluate_all(s)
    ids = list(ev.table["config_id"])
    compared = 0
    for r in ev.rows[1:]:
        i = ids.index(r["config_id"])
        for k, v in r.items():
            if k.endswith(("_low", "_high")) or k not in ev.table:
                continue
            w = ev.table[k][i]
            if isinstance(v, float) and not isinstance(v, bool):
                assert (math.isnan(v) and math.isnan(float(w))) or math.isclose(v, float(w), rel_tol=1e-9), k
                compared += 1
            elif v is not None:
                assert v == (w.item() if hasattr(w, "item") else w), k
    assert compared > 100


def test_sweep_index_gives_back_the_coordinates():
    s = scenario_from_dict(_doc(instance_type=["inf1.2xlarge", "inf2.xlarge"],
                                region=["us-east-1", "eu-north-1"], batch_size=[1, 2, 8]))
    ev = evaluate_all(s)
    t = ev.table
    for i in range(1, len(t["config_id"])):
        cfg = config_at(s, int(t["sweep_index"][i]), str(t["config_id"][i]))
        assert cfg.instance_type == t["instance_type"][i] == t["sweep_instance_type"][i]
        assert cfg.region == t["region"][i]
        assert cfg.batch_size == t["sweep_batch_size"][i]
    assert combinations(s) == 12


def test_headroom_changes_instances_not_throughput():
    s = scenario_from_dict(_doc(instance_type=["g4dn.xlarge"], precision=["fp16"],
                                max_utilization=[0.25, 1.0]))
    t = evaluate_all(s).table
    low, full = (np.flatnonzero(t["sweep_max_utilization"] == u)[0] for u in (0.25, 1.0))
    assert t["throughput_per_instance_per_s"][low] == t["throughput_per_instance_per_s"][full]
    assert t["instances"][low] >= 3 * t["instances"][full]
    assert t["cost_usd"][low] > t["cost_usd"][full]


@pytest.mark.parametrize("sweep, words", [
    ({"colour": ["red"]}, "not a configuration field"),
    ({"precision": ["fp16", "fp64"]}, "sweep.precision[1]"),
    ({"instance_type": []}, "give 1 to"),
    ({"batch_size": list(range(1, 1001)), "region": ["us-east-1"] * 1001}, "at most"),
    ({"instances": [2]}, "computed for inference"),
])
def test_bad_sweeps_are_bad_input(sweep, words):
    with pytest.raises(InputError, match=None) as exc:
        scenario_from_dict(_doc(**sweep), "s.yaml")
    assert words in str(exc.value)


def test_unknown_instance_and_region_in_a_sweep_are_named():
    for sweep, words in (({"instance_type": ["inf9.huge"]}, "sweep.instance_type"),
                         ({"region": ["mars-north-1"]}, "sweep.region")):
        with pytest.raises(InputError) as exc:
            scenario_from_dict(_doc(**sweep), "s.yaml")
        assert words in str(exc.value)


def test_headroom_sweep_refused_for_training():
    d = yaml.safe_load((ROOT / "scenarios" / "bert_large_pretrain.yaml").read_text())
    d["sweep"] = {"max_utilization": [0.5]}
    with pytest.raises(InputError, match="applies to inference"):
        scenario_from_dict(d, "s.yaml")


def test_cli_run_writes_front_recommendations_and_full_csv(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(EXAMPLE), "-q", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Pareto front" in printed and "recommendations:" in printed and "skipped 3" in printed
    doc = json.loads((out / "results.json").read_text())
    assert {r["objective"] for r in doc["recommendations"]} >= {"cost", "co2", "energy", "balanced"}
    assert doc["sweep"]["rows_in_csv"] == 16
    front = [r for r in doc["rows"] if r["pareto"]]
    assert front and all(r["pareto_rank"] >= 1 for r in front)
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + 16
    header = csv_lines[0].split(",")
    assert {"pareto", "pareto_rank", "sweep_index", "sweep_instance_type", "sweep_region"} <= set(header)
    cost_pick = next(r for r in doc["recommendations"] if r["objective"] == "cost")
    picked = next(r for r in doc["rows"] if r["config_id"] == cost_pick["config_id"])
    assert picked["cost_usd"] == min(r["cost_usd"] for r in doc["rows"])
    assert picked["pareto"]
    assert "against the baseline base" in cost_pick["reason"]


def test_ids_that_read_alike_stay_unique():
    d = _doc(instance_type=["inf1.2xlarge"], precision=["fp16"], price_usd_per_h=[1, 1.0, 2])
    d["configs"].append({"id": "inf1.2xlarge_fp16_2", "instance_type": "inf1.2xlarge", "precision": "bf16"})
    ev = evaluate_all(scenario_from_dict(d))
    ids = list(ev.table["config_id"])
    assert len(ids) == len(set(ids)) == 5
    assert {"inf1.2xlarge_fp16_1", "inf1.2xlarge_fp16_1-1", "inf1.2xlarge_fp16_2-2"} <= set(ids)
