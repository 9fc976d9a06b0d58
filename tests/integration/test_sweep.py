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
from ecobench.scenario.load import load_scenario, scenario_from_dict
from ecobench.scenario.sweep import config_at
from ecobench.scenario.sweep_size import combinations

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
    assert combinations(s.sweep) == 12


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
    ({"regions": ["us-east-1"]}, "sweep.regions: not a configuration field; did you mean 'region',"),
    # id is a configuration field: 'not a configuration field' contradicted the field table
    ({"id": ["a", "b"]}, "sweep.id: a combination's id is made of its swept values "
                         "(inf2.xlarge_bf16_eu-north-1), not swept; allowed: instance_type,"),
    ({"precision": ["fp16", "fp64"]}, "sweep.precision[1]"),
    ({"instance_type": []}, "give 1 to"),
    # trial: `sweep: {}` ran silently as no sweep
    ({}, "sweep: no axis; a sweep needs at least one axis, a configuration field with a list of values "
         "(allowed: instance_type, backend, precision,"),
    ({"batch_size": list(range(1, 1001)), "region": ["us-east-1"] * 1001}, "at most"),
    ({"instances": [2]}, "computed for inference"),
    # trial15: every combination of a repeated value was evaluated twice, under ids suffixed -7, -11, ...
    ({"precision": ["bf16", "fp16", "bf16"]}, "sweep.precision[2]: 'bf16' is also sweep.precision[0]; "
                                              "allowed: each value once"),
    ({"batch_size": [1, 2, 1]}, "sweep.batch_size[2]: 1 is also sweep.batch_size[0]"),
    # a value written two ways ran twice too
    ({"batch_size": [1000, "1e3"]}, "sweep.batch_size[1]: '1e3' is also sweep.batch_size[0]"),
    ({"price_usd_per_h": [2, 2.0]}, "sweep.price_usd_per_h[1]: 2.0 is also sweep.price_usd_per_h[0]"),
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
    # what the front and the bands are: named in results.json, not left to the docs
    assert doc["pareto"]["objectives"] == ["cost_usd", "co2_kg"]
    assert doc["pareto"]["statistic"].startswith("central values")
    assert doc["uncertainty"]["percentiles"] == [5.0, 95.0]
    # bf16 and fp16 plan alike on Inferentia: equal rows, one rank
    twins = [r for r in front if r["config_id"].startswith("inf1.2xlarge_") and r["region"] == "us-west-2"]
    assert len(twins) == 2 and twins[0]["pareto_rank"] == twins[1]["pareto_rank"] == 1
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
    d = _doc(instance_type=["inf1.2xlarge"], precision=["fp16"], price_usd_per_h=[1, 1.0000001, 2])
    d["configs"].append({"id": "inf1.2xlarge_fp16_2", "instance_type": "inf1.2xlarge", "precision": "bf16"})
    ev = evaluate_all(scenario_from_dict(d))
    ids = list(ev.table["config_id"])
    assert len(ids) == len(set(ids)) == 5
    assert {"inf1.2xlarge_fp16_1", "inf1.2xlarge_fp16_1-1", "inf1.2xlarge_fp16_2-2"} <= set(ids)


def _sweep_rows_by_one(s):
    """Each combination of ``s`` evaluated alone, through the one-configuration path."""
    from ecobench.hardware.backends import BACKENDS
    from ecobench.hardware.catalog import load_catalog
    from ecobench.planning.configs import evaluate_config

    cat = load_catalog()
    return lambda index, cid: evaluate_config(s, config_at(s, index, cid), cat, BACKENDS).row


def test_every_row_of_a_small_sweep_equals_its_row_by_row_evaluation():
    """Every combination (not only the rows shown), including swept prices (one null: the catalog's),
    regions and headrooms evaluated together as arrays, equals the same configuration evaluated on
    its own, column by column."""
    s = scenario_from_dict(_doc(instance_type=["inf2.xlarge", "g5.xlarge"], batch_size=[1, 8],
                                price_usd_per_h=[None, 2.5], region=["us-east-1", "eu-north-1"],
                                max_utilization=[0.5, 0.9], precision=["fp16"]))
    ev = evaluate_all(s)
    t = ev.table.columns()
    one = _sweep_rows_by_one(s)
    n = len(t["config_id"])
    assert n == 1 + 32
    compared = 0
    for i in range(1, n):
        row = one(int(t["sweep_index"][i]), str(t["config_id"][i]))
        for k, v in row.items():
            w = t[k][i]
            if isinstance(v, float):
                assert (math.isnan(v) and math.isnan(float(w))) or v == float(w), (k, i, v, w)
                compared += 1
            elif k not in ("config_id",):
                assert v == (w.item() if hasattr(w, "item") else w), (k, i, v, w)
        cfg = config_at(s, int(t["sweep_index"][i]), "x")
        assert t["sweep_price_usd_per_h"][i] == cfg.price_usd_per_h or (
            cfg.price_usd_per_h is None and t["sweep_price_usd_per_h"][i] is None)
    assert compared >= 32 * 25


def test_rows_in_the_order_of_today_and_prices_share_a_group():
    """Rows come group by group, each by price, headroom, region; the sweep's counts are unchanged."""
    s = scenario_from_dict(_doc(instance_type=["inf2.xlarge"], precision=["fp16"], price_usd_per_h=[1, 2],
                                max_utilization=[0.5, 0.9], region=["us-east-1", "eu-north-1"]))
    ev = evaluate_all(s)
    ids = list(ev.table["config_id"])[1:]
    assert ids == [f"inf2.xlarge_fp16_{p}_{r}_u{u}" for p in (1, 2) for u in (0.5, 0.9)
                   for r in ("us-east-1", "eu-north-1")]
    assert ev.sweep["combinations"] == ev.sweep["evaluated"] == 8


def test_streamed_files_equal_the_table_written_whole(tmp_path, monkeypatch):
    """results.csv and results.parquet written chunk by chunk (chunks of 5 rows here) hold what the
    whole table written at once holds: the same bytes of CSV, the same Parquet table."""
    pq = pytest.importorskip("pyarrow.parquet")
    from ecobench.planning import sweep_table
    from ecobench.reports.tables import csv_columns, csv_integers, key_texts, write_parquet
    from ecobench.runner import results_document, write_run
    from ecobench.table import write_csv

    s = scenario_from_dict(_doc(instance_type=["inf2.xlarge", "g4dn.xlarge"], batch_size=[1, 4],
                                price_usd_per_h=[None, 3], region=["us-east-1", "eu-north-1", "ca-central-1"],
                                precision=["fp16", "bf16"]))
    ev = evaluate_all(s)
    whole = ev.table.columns()
    monkeypatch.setattr(sweep_table, "CHUNK_ROWS", 5)
    monkeypatch.setattr(sweep_table.SweepTable.chunks, "__defaults__", (None, 5))
    for fmt in ("csv", "parquet"):
        out = tmp_path / fmt
        write_run(results_document(s, ev.rows, fmt, ev), out, ev.table, table_format=fmt)
    keyed, _ = key_texts(whole)
    names = csv_columns(list(keyed))
    write_csv(keyed, names, tmp_path / "whole.csv", integers=csv_integers(names))
    assert (tmp_path / "csv" / "results.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    write_parquet(whole, csv_columns(list(whole)), tmp_path / "whole.parquet")
    streamed = pq.read_table(tmp_path / "parquet" / "results.parquet")
    assert streamed.equals(pq.read_table(tmp_path / "whole.parquet"))


def test_writing_a_large_sweep_reports_its_progress(tmp_path, monkeypatch):
    """A 1,000,000-row sweep printed nothing for the 15 s its results.csv took to write, after its
    one group was evaluated in 2 s: each chunk written is reported (chunks of 5 rows here)."""
    from ecobench.planning import sweep_table
    from ecobench.runner import results_document, write_run

    s = scenario_from_dict(_doc(instance_type=["inf2.xlarge"], precision=["fp16"],
                                price_usd_per_h=[1, 2, 3, 4],
                                region=["us-east-1", "eu-north-1", "us-west-2"]))
    ev = evaluate_all(s)
    monkeypatch.setattr(sweep_table, "CHUNK_ROWS", 5)
    monkeypatch.setattr(sweep_table.SweepTable.chunks, "__defaults__", (None, 5))
    said: list[str] = []
    write_run(results_document(s, ev.rows, "r", ev), tmp_path / "r", ev.table, progress=said.append)
    # the configuration's row, then 12 combinations in chunks of 5: nothing said once all are written
    assert said == ["writing results.csv: 6/13 rows", "writing results.csv: 11/13 rows"]


def test_a_configuration_id_a_combination_would_take_gets_its_index():
    d = _doc(instance_type=["inf2.xlarge", "inf1.2xlarge"], precision=["fp16"])
    d["configs"].append({"id": "inf2.xlarge_fp16", "instance_type": "g5.xlarge", "precision": "fp16"})
    ev = evaluate_all(scenario_from_dict(d))
    ids = list(ev.table["config_id"])
    assert len(ids) == len(set(ids)) == 4
    assert ids[2:] == ["inf2.xlarge_fp16-0", "inf1.2xlarge_fp16"]


def test_null_region_in_a_sweep_is_bad_input(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(_doc(region=[None])))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "sweep.region[0]" in err and "null is not a region" in err and "Traceback" not in err


def test_a_sweep_estimated_too_long_is_refused_naming_estimate_and_limit():
    with pytest.raises(InputError) as exc:
        scenario_from_dict(_doc(instance_type=["inf2.xlarge"], batch_size=list(range(1, 10_001)),
                                host_cpu_utilization=[round(0.01 * i, 2) for i in range(1, 101)]), "s.yaml")
    text = str(exc.value)
    assert "estimated 2,015 s" in text and "1,000,000 backend evaluations" in text and "at most 600 s" in text


def _serving_doc(**sweep: list) -> dict:
    return {"schema_version": 2, "name": "serving_sweep", "baseline": "base",
            "workload": {"model": "llama3-8b", "serving": {"requests_per_h": 18000, "input_tokens": 1024,
                                                           "output_tokens": 256, "p99_ttft_ms": 2000}},
            "configs": [{"id": "base", "instance_type": "g6e.xlarge", "precision": "bf16"}], "sweep": sweep}


def test_a_serving_sweep_prices_its_groups_as_serving_groups():
    """trial14: 5 instance types x 3 regions x 2 schedulers x 4,999 max_batch values ran > 10 min; priced
    as inference groups (2 ms) it was estimated at about 100 s. A serving group costs ~16 ms."""
    doc = _serving_doc(instance_type=["inf2.48xlarge", "inf2.24xlarge", "g6e.xlarge", "g6e.12xlarge",
                                      "p4d.24xlarge"], region=["us-east-1", "eu-north-1", "us-west-2"],
                       scheduler=["continuous", "static"], max_batch=list(range(1, 5000)))
    with pytest.raises(InputError) as exc:
        scenario_from_dict(doc, "s.yaml")
    text = str(exc.value)
    assert "estimated 802 s for 49,990 backend evaluations (serving, about 16 ms each" in text
    assert "at most 600 s" in text


def test_a_serving_sweep_too_long_exits_2_before_evaluating(tmp_path, capsys, monkeypatch):
    import ecobench.runner

    def never(*_a, **_k):
        raise AssertionError("the sweep was evaluated")

    monkeypatch.setattr(ecobench.runner, "evaluate_all", never)
    f = tmp_path / "s.yaml"
    doc = _serving_doc(instance_type=["g6e.xlarge", "p4d.24xlarge"], max_batch=list(range(1, 10_000)),
                       scheduler=["continuous", "static"])
    f.write_text(yaml.safe_dump(doc))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "sweep: estimated 641 s for 39,996 backend evaluations (serving" in err and "at most 600 s" in err
    assert "sweep fewer values" in err and "Traceback" not in err and not (tmp_path / "run").exists()


def test_a_serving_sweep_estimate_counts_the_memory_its_groups_keep():
    """A serving group keeps its plan's detail until the sweep is written (~57 KB measured, bounds.py):
    the estimate had counted 600 bytes a row for every mode, 0.6 GiB for a sweep measured to need ~2.8."""
    from ecobench.scenario.sweep_size import estimate

    sweep = {"instance_type": ["g6e.xlarge", "p4d.24xlarge"], "max_batch": list(range(1, 5001)),
             "region": ["us-east-1", "eu-north-1"]}
    serving, inference = estimate(sweep, True, "serving"), estimate(sweep, True, "inference")
    assert serving.memory_gib - inference.memory_gib == pytest.approx(10_000 * 57_000 / 2**30)
    assert serving.memory_gib > 1.1


def test_a_sweep_estimated_over_the_memory_bound_is_refused(monkeypatch):
    from ecobench import bounds

    monkeypatch.setattr(bounds, "SWEEP_MAX_ESTIMATED_GIB", 0.5)
    with pytest.raises(InputError, match=r"estimated 0\.6 GiB of memory; at most 0\.5 GiB"):
        scenario_from_dict(_doc(region=["us-east-1", "eu-north-1"]), "s.yaml")


def test_a_sweep_with_every_combination_skipped_writes_the_configurations(tmp_path):
    from ecobench.runner import results_document, write_run

    s = scenario_from_dict(_doc(instance_type=["g4dn.xlarge"], precision=["bf16"]))
    ev = evaluate_all(s)
    assert ev.sweep["evaluated"] == 0 and ev.sweep["skipped"] == 1
    write_run(results_document(s, ev.rows, "run", ev), tmp_path / "run", ev.table)
    lines = (tmp_path / "run" / "results.csv").read_text().splitlines()
    assert len(lines) == 2 and lines[1].startswith("base,")
    assert ",True," in lines[1] or lines[1].endswith(",True")  # is_baseline, as when written whole


def test_headrooms_that_need_more_instances_than_the_bound_are_skipped_and_counted():
    """A combination whose plan needs more than bounds.MAX_INSTANCES instances is skipped and counted
    (a configuration of ``configs`` is refused): only the low headroom of the slow instance here, so
    the group's other headroom is kept, and every row kept equals its own evaluation."""
    from ecobench.planning.sweep import OVER_BOUND

    d = _doc(instance_type=["g4dn.xlarge", "inf2.xlarge"], precision=["fp16"],
             region=["us-east-1", "eu-north-1"], price_usd_per_h=[None, 2.5], max_utilization=[0.3, 0.95])
    d["workload"]["inference"]["rate_per_h"] = 6e9
    d["configs"][0]["instance_type"] = "inf2.xlarge"
    s = scenario_from_dict(d)
    ev = evaluate_all(s)
    assert ev.sweep["skipped_by_reason"] == [{"reason": OVER_BOUND, "count": 4}]
    t = ev.table.columns()
    ids = [str(c) for c in t["config_id"]]
    assert len(ids) == 1 + 12
    assert not any(c.startswith("g4dn") and c.endswith("u0.3") for c in ids)
    assert sum(c.startswith("g4dn") and c.endswith("u0.95") for c in ids) == 4
    one = _sweep_rows_by_one(s)
    for i in range(1, len(ids)):
        row = one(int(t["sweep_index"][i]), ids[i])
        assert row["instances"] == t["instances"][i] <= 100_000
        assert row["cost_usd"] == t["cost_usd"][i]


def test_combinations_skipped_for_one_cause_are_counted_as_one_reason():
    """A skipped combination's reason leaves out where it was (``configs[<its id>]``): a workload batch
    too large for inf1, over 7 host utilisations, is one reason counted 7 times, not 7 reasons naming
    each combination's id."""
    d = _doc(instance_type=["inf1.2xlarge"], host_cpu_utilization=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    d["workload"] = {"model": "bert-large", "inference": {"rate_per_h": 100000, "seq_len": 512,
                                                           "batch_size": 1024}}
    d["configs"] = [{"id": "base", "instance_type": "g6e.48xlarge", "precision": "fp16"}]
    ev = evaluate_all(scenario_from_dict(d))
    [only] = ev.sweep["skipped_by_reason"]
    assert only["count"] == 7
    assert only["reason"].startswith("workload.inference.batch_size: 1024 sequences of 512 tokens need ")
    assert "configs[" not in only["reason"] and "inf1.2xlarge (fp16: the weights" in only["reason"]


def test_a_skipped_layout_is_counted_by_its_cause_with_its_field_not_a_configuration_index():
    """A training combination's error names ``configs[0].parallelism`` when located; the sweep's reason
    keeps the field and drops the location (configs[0] is not the combination), and a layout that
    cannot run on any swept cluster size is one reason: the cause, not the cluster it was tried on."""
    d = yaml.safe_load((ROOT / "scenarios" / "llama2_7b_pretrain.yaml").read_text())
    d["configs"] = [d["configs"][0]]
    d["sweep"] = {"instances": [1, 2, 4], "parallelism": [{"tensor": 3}, {"tensor": 1}]}
    ev = evaluate_all(scenario_from_dict(d))
    reasons = {x["reason"]: x["count"] for x in ev.sweep["skipped_by_reason"]}
    assert not any(r.startswith("configs[") for r in reasons), reasons
    tensor = [r for r in reasons if "tensor 3 must divide the 32 attention heads" in r]
    assert len(tensor) == 1 and reasons[tensor[0]] == 3
    assert tensor[0].startswith("parallelism: tensor 3 must divide")
    memory = [r for r in reasons if "GiB per device" in r]
    assert memory and all(r.startswith("parallelism: TP1 PP1 ") for r in memory)


def test_a_front_of_tied_rows_shows_its_first_hundred_rows(monkeypatch):
    """network_gbps does not change an inference plan: 150 swept values give 150 equal rows, one rank
    for all. results.json held every row of rank 100 or less, so all 150 (with 10,000 values, 10,000
    rows each evaluated again with its bands); it holds the front's first 100 rows."""
    from ecobench.planning import evaluate

    monkeypatch.setattr(evaluate, "SWEEP_BEST_SHOWN", 0)  # the front alone
    s = scenario_from_dict(_doc(instance_type=["inf2.xlarge"], precision=["bf16"],
                                network_gbps=[10 + i for i in range(150)]))
    ev = evaluate_all(s)
    front = [r for r in ev.rows if r["pareto"]]
    assert {r["pareto_rank"] for r in front} == {1}
    assert len(front) == evaluate.SWEEP_FRONT_SHOWN == 100
    assert ev.sweep is not None and ev.sweep["rows_shown"] == 1 + 100


def test_instance_types_by_lnc_sweep_the_others_once_at_their_own():
    """ux29: sweeping instance_type x lnc skipped every trn1 and GPU combination ('lnc: 1: trn1.32xlarge's
    trainium ... remove it'), leaving only the trn2 rows; each instance without the setting is swept
    once, at its chip's own, and only trn2 is expanded by lnc."""
    d = {"schema_version": 2, "name": "lnc_sweep", "uncertainty": {"draws": 0}, "baseline": "base",
         "workload": {"model": "llama3-8b", "serving": {"requests_per_h": 3600, "input_tokens": 1024,
                                                        "output_tokens": 256}},
         "configs": [{"id": "base", "instance_type": "trn2.48xlarge", "precision": "bf16",
                      "price_usd_per_h": 35.7608}],
         "sweep": {"instance_type": ["trn1.32xlarge", "trn2.48xlarge", "g6e.xlarge"], "lnc": [2, 1]}}
    s = scenario_from_dict(d, "s.yaml")
    ev = evaluate_all(s)
    assert ev.sweep is not None and (ev.sweep["combinations"], ev.sweep["evaluated"]) == (6, 4)
    assert [r["count"] for r in ev.sweep["skipped_by_reason"]] == [1, 1]
    rows = {r["config_id"]: r for r in ev.rows}
    assert sorted(rows) == ["base", "g6e.xlarge", "trn1.32xlarge", "trn2.48xlarge_1", "trn2.48xlarge_2"]
    assert (rows["trn2.48xlarge_1"]["lnc"], rows["trn2.48xlarge_2"]["lnc"]) == (1, 2)
    for cid in ("trn1.32xlarge", "g6e.xlarge"):
        assert "lnc" not in rows[cid] and rows[cid]["sweep_lnc"] is None and rows[cid]["energy_kwh"] > 0
        assert config_at(s, int(rows[cid]["sweep_index"]), cid).lnc is None  # as the sweep evaluated it
