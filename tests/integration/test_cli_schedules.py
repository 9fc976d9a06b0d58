"""Pipeline schedules, uneven stages, any instance count and per-configuration deadlines, through
the command line."""

import json

import pytest
import yaml

from ecobench.cli import main
from tests.conftest import SCENARIOS


def _run(tmp_path, scenario):
    tmp_path.mkdir(parents=True, exist_ok=True)
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario))
    code = main(["run", str(f), "-q", "--results", str(tmp_path / "res")])
    rows = None
    if code == 0:
        (results,) = (tmp_path / "res").rglob("results.json")
        rows = json.loads(results.read_text())["rows"]
    return code, rows


def _scenario(name):
    return yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())


def test_published_cluster_sizes_run_with_idle_ranks(tmp_path):
    """The seeds' 600 p3dn, 200 p4d and 130 trn1n: BERT-Large's 65,536-sequence batch leaves ranks
    idle, reported and drawing idle power."""
    s = _scenario("bert_large_pretrain")
    s["configs"] = [
        {"id": "p3dn", "instance_type": "p3dn.24xlarge", "precision": "fp16", "instances": 600},
        {"id": "p4d", "instance_type": "p4d.24xlarge", "precision": "fp16", "instances": 200},
        {"id": "trn1n", "instance_type": "trn1n.32xlarge", "precision": "bf16", "instances": 130},
        {"id": "p4d16", "instance_type": "p4d.24xlarge", "precision": "fp16", "instances": 16},
    ]
    s["baseline"] = "p4d16"
    code, rows = _run(tmp_path, s)
    assert code == 0
    by = {r["config_id"]: r for r in rows}
    assert by["p4d16"]["idle_devices"] == 0
    for cid, ranks in (("p3dn", 4800), ("p4d", 1600), ("trn1n", 4160)):
        r = by[cid]
        used = r["data_parallel"] * r["tensor_parallel"] * r["pipeline_parallel"]
        assert r["idle_devices"] == ranks - used > 0
        assert 65536 % (r["data_parallel"] * r["microbatch"]) == 0
    # Idle ranks draw idle power: per instance, 200 p4d (1,024 of 1,600 GPUs busy) draw less than 16.
    assert by["p4d"]["power_w"] < by["p4d16"]["power_w"]


def test_bloom_pipeline_12_over_70_layers_runs(tmp_path):
    """BLOOM-176B as published: 48 nodes of 8 A100s, tensor 4 x pipeline 12 x data 8 over 70 layers."""
    s = {"schema_version": 2, "name": "bloom",
         "workload": {"architecture": {"kind": "decoder", "layers": 70, "hidden_size": 14336, "heads": 112,
                                       "intermediate_size": 57344, "vocab_size": 250880, "ffn": "gelu",
                                       "max_position_embeddings": 2048},
                      "training": {"total_tokens": 1.0e9, "phases": [{"seq_len": 2048, "fraction": 1.0}],
                                   "global_batch_size": 2048}},
         "configs": [{"id": "bloom", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": 48,
                      "parallelism": {"tensor": 4, "pipeline": 12, "zero": 1, "recompute": "full",
                                      "microbatch": 2}},
                     {"id": "zb", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": 48,
                      "parallelism": {"tensor": 4, "pipeline": 12, "zero": 1, "recompute": "full",
                                      "microbatch": 2, "schedule": "zero-bubble"}},
                     {"id": "vp", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": 48,
                      "parallelism": {"tensor": 4, "pipeline": 10, "zero": 1, "recompute": "full",
                                      "microbatch": 2, "schedule": "interleaved", "virtual_stages": 7}}],
         "baseline": "bloom"}
    code, rows = _run(tmp_path, s)
    assert code == 0
    by = {r["config_id"]: r for r in rows}
    assert by["bloom"]["pipeline_parallel"] == 12 and by["bloom"]["data_parallel"] == 8
    assert by["bloom"]["idle_devices"] == 0 and by["bloom"]["pipeline_schedule"] == "1f1b"
    assert by["zb"]["pipeline_schedule"] == "zero-bubble"
    assert by["zb"]["duration_h"] < by["bloom"]["duration_h"]
    assert by["vp"]["pipeline_schedule"] == "interleaved" and by["vp"]["idle_devices"] == 64
    assert by["vp"]["virtual_stages"] == 7 and by["bloom"]["virtual_stages"] == 1
    assert by["bloom"]["expert_parallel"] == 1


def test_deadline_is_per_configuration(tmp_path, capsys):
    """A configuration that cannot meet the deadline is a row at its fastest reachable size; the
    other configuration's answer is kept."""
    s = _scenario("llama2_7b_pretrain")
    s["workload"]["training"]["deadline_h"] = 400
    s["workload"]["training"]["max_instances"] = 64
    for c in s["configs"]:
        del c["instances"]
    s["configs"].append({"id": "p3dn", "instance_type": "p3dn.24xlarge", "precision": "fp16",
                         "parallelism": "auto"})
    code, rows = _run(tmp_path, s)
    assert code == 0, capsys.readouterr().err
    by = {r["config_id"]: r for r in rows}
    assert by["p4d"]["meets_deadline"] is True and by["p4d"]["duration_h"] <= 400
    slow = by["p3dn"]
    assert slow["meets_deadline"] is False and slow["duration_h"] > 400 and slow["instances"] == 64
    assert "cannot be met" in slow["layout_choice"] and "fastest reachable" in slow["layout_choice"]
    assert "fastest reachable" in capsys.readouterr().err


def test_nothing_fits_names_the_nearest_counts(tmp_path, capsys):
    s = _scenario("llama2_7b_pretrain")
    # 175B: even ZeRO-3 with the optimizer state offloaded to the host (which auto tries) needs more
    # than one p4d's memory.
    s["workload"]["model"] = "gpt3-175b"
    s["workload"]["training"]["phases"] = [{"seq_len": 2048, "fraction": 1.0}]
    s["configs"] = [{"id": "p4d", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": 1,
                     "parallelism": "auto"}]
    s["baseline"] = "p4d"
    code, _ = _run(tmp_path, s)
    assert code == 2
    err = capsys.readouterr().err
    assert "no layout of 1x p4d.24xlarge fits" in err and "the nearest instance counts that do: " in err
    nearest = int(err.rsplit("do: ", 1)[1].split()[0])
    assert nearest > 1
    # The count it names runs, and the one below it does not.
    s["configs"][0]["instances"] = nearest
    assert _run(tmp_path / "a", s)[0] == 0
    s["configs"][0]["instances"] = nearest - 1
    assert _run(tmp_path / "b", s)[0] == 2


def _llama_on(instances, parallelism="auto"):
    s = _scenario("llama2_7b_pretrain")
    s["workload"]["training"]["total_tokens"] = 1.0e10
    s["configs"] = [{"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": instances,
                     "parallelism": parallelism}]
    s["baseline"] = "a"
    s["uncertainty"] = {"draws": 0}
    return s


def test_auto_fills_odd_clusters_with_uneven_pipeline_stages(tmp_path):
    """train23: 3 p4d (24 ranks) with a 1,024-sequence batch left 8 GPUs idle under auto (TP1 PP1 DP16,
    44.8 h) and said no layout fills every rank, while TP1 PP3 DP8 (stages of 11, 11 and 10 of the 32
    layers) fills them and takes 31.4 h: the search tried only pipeline degrees dividing the layers."""
    code, rows = _run(tmp_path / "auto", _llama_on(3))
    assert code == 0
    (auto,) = rows
    assert auto["idle_devices"] == 0
    assert 24 % auto["pipeline_parallel"] == 0 and 32 % auto["pipeline_parallel"] != 0
    assert "pipeline 3 splits them unevenly (10 or 11 layers a stage)" in auto["layout_choice"]
    # More instances take less time: 2, 3, 4, 5, 6 and 8 p4d (3 took as long as 2, and 5 and 6 as 4).
    times = [_run(tmp_path / f"n{n}", _llama_on(n))[1][0]["duration_h"] for n in (2, 3, 4, 5, 6, 8)]
    assert times == sorted(times, reverse=True) and len(set(times)) == len(times)
    assert times[1] < 0.8 * times[0]


def test_auto_that_leaves_ranks_idle_names_global_batches_that_fill_them(tmp_path):
    """7 p4d (56 ranks) and a 6-layer encoder: no pipeline degree (at most the layers) absorbs the
    factor 7, so ranks stay idle; the choice names global batches that would fill them."""
    import re

    s = _scenario("small_encoder_pretrain")
    s["workload"]["training"]["phases"] = [{"seq_len": 128, "fraction": 1.0}]
    s["configs"] = [{"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": 7,
                     "parallelism": "auto"}]
    s["baseline"] = "a"
    code, (row,) = _run(tmp_path, s)
    assert code == 0 and row["idle_devices"] > 0
    m = re.search(r"so (\d+) stay idle; global_batch_size ([\d,]+) or ([\d,]+) \(multiples of data (\d+) x "
                  r"microbatch (\d+)\) would fill them", row["layout_choice"])
    assert m, row["layout_choice"]
    idle, lo, hi, data, micro = (int(g.replace(",", "")) for g in m.groups())
    assert idle == row["idle_devices"] and micro == row["microbatch"]
    assert data * row["tensor_parallel"] * row["pipeline_parallel"] == 56
    assert lo % (data * micro) == 0 and hi == lo + data * micro and lo <= 65536 < hi


def test_a_deadline_takes_the_fewest_instances_uneven_stages_allow(tmp_path):
    """train23: with a 35 h deadline auto took 4 p4d ("no valid layout between 2 and 4") while 3 p4d
    meet it as TP1 PP3 DP8 (31.4 h), and with 9 h took 16 where 12 meet it (8.3 h): the deadline search
    tried only pipeline degrees dividing the layers."""
    import re

    s = _llama_on(1)
    s["workload"]["training"].update(deadline_h=35, max_instances=64)
    del s["configs"][0]["instances"]
    code, (row,) = _run(tmp_path / "a", s)
    assert code == 0 and row["meets_deadline"] is True
    assert row["instances"] == 3 and row["pipeline_parallel"] == 3 and row["idle_devices"] == 0
    assert "pipeline 3 splits the 32 layers unevenly (10 or 11 a stage)" in row["layout_choice"]
    fewer = re.search(r"; 2 take ([\d.]+) h\)", row["layout_choice"])  # one fewer misses the deadline
    assert fewer and float(fewer.group(1)) > 35, row["layout_choice"]
    s["workload"]["training"]["deadline_h"] = 9
    code, (row,) = _run(tmp_path / "b", s)
    assert code == 0 and row["instances"] == 12 and row["duration_h"] <= 9


def test_a_supplied_throughput_is_not_refused_for_the_memory_of_a_layout_it_never_stated(tmp_path):
    """train23: measured_throughput_per_s 5 sequences/s per p4d for Llama 2 7B on 3 p4d, no parallelism,
    exited 2 because the data-parallel default (TP1 PP1 DP16, no ZeRO) needs 119 GiB per device: the
    run it measures did fit. The draw is modelled at auto's layout, and the row says why."""
    s = _llama_on(3)
    del s["configs"][0]["parallelism"]
    s["configs"][0]["measured_throughput_per_s"] = 5.0
    code, rows = _run(tmp_path, s)
    assert code == 0
    (row,) = rows
    assert row["layout_choice"].startswith("supplied throughput (measured_throughput_per_s), no parallelism "
                                           "given: the data-parallel default TP1 PP1 DP16 ZeRO-0 mb1 "
                                           "recompute none needs 119.0 GiB per device")
    assert "the draw is modelled at auto: " in row["layout_choice"]
    assert row["idle_devices"] == 0 and row["memory_per_device_gib"] <= 36.0
    assert row["duration_h"] * 3600 * 3 * 5.0 == pytest.approx(row["sequences"], rel=1e-9)


def test_nothing_fits_names_a_count_that_fits_only_with_uneven_stages(tmp_path, capsys):
    """train23: Llama 2 70B on 1 trn1 named "the nearest instance counts that do: 4", while 3 run it as
    TP8 PP12 DP1 (stages of 6 or 7 of the 80 layers), as auto now plans."""
    s = _llama_on(1)
    s["workload"]["model"] = "llama2-70b"
    s["configs"][0]["instance_type"] = "trn1.32xlarge"
    assert _run(tmp_path / "one", s)[0] == 2
    assert capsys.readouterr().err.rstrip().endswith("the nearest instance counts that do: 3")
    s["configs"][0]["instances"] = 3
    code, (row,) = _run(tmp_path / "three", s)
    assert code == 0 and row["idle_devices"] == 0 and 80 % row["pipeline_parallel"] != 0
