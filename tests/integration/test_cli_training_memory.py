"""Training memory options, context parallelism, offload, FP8 and overrides through the CLI, with their
bad inputs (exit 2)."""

import json

import pandas as pd
import pytest
import yaml

from ecobench.cli import main


def _scenario(configs, phases=((8192, 1.0),), model="llama3-8b", **training):
    return {"schema_version": 2, "name": "mem", "region": "us-east-2", "uncertainty": {"draws": 0},
            "workload": {"model": model, "training": {
                "total_tokens": 1e10, "phases": [{"seq_len": s, "fraction": f} for s, f in phases],
                "global_batch_size": 64, **training}},
            "configs": configs, "baseline": configs[0]["id"]}


def _cfg(id_="a", instance="p5.48xlarge", **fields):
    return {"id": id_, "instance_type": instance, "precision": "bf16", "instances": 4, **fields}


def _run(tmp_path, scenario):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario))
    return main(["run", str(f), "-q", "--results", str(tmp_path / "res")])


def _rows(tmp_path):
    (run_dir,) = (tmp_path / "res" / "mem").iterdir()
    return pd.read_csv(run_dir / "results.csv").set_index("config_id")


def test_options_run_and_report_their_layout(tmp_path):
    par = {"tensor": 1, "pipeline": 1, "zero": 1, "recompute": "full"}
    configs = [
        _cfg("base", parallelism=par),
        _cfg("adam8", parallelism=par, optimizer="adam_8bit", master_weights=False),
        _cfg("eager", parallelism=par, attention_kernel="eager"),
        _cfg("off", parallelism={**par, "offload": "cpu"}),
        _cfg("cp2", parallelism={**par, "context": 2}),
        _cfg("auto", parallelism="auto", memory_headroom_pct=20),
    ]
    assert _run(tmp_path, _scenario(configs)) == 0
    df = _rows(tmp_path)
    m = df.memory_per_device_gib
    assert m["adam8"] < m["base"] < m["eager"]
    assert m["off"] < m["base"] and df.duration_h["off"] > df.duration_h["base"]
    assert df.context_parallel["cp2"] == 2 and df.data_parallel["cp2"] == 16
    assert df.offload["off"] == "cpu" and df.offload["base"] == "none"
    assert m["auto"] <= 80 * 0.8
    (run_dir,) = (tmp_path / "res" / "mem").iterdir()
    rows = {r["config_id"]: r for r in json.loads((run_dir / "results.json").read_text())["rows"]}
    assert "published recipe" in rows["auto"]["layout_choice"]


def test_headroom_outside_0_to_50_is_refused(tmp_path, capsys):
    assert _run(tmp_path, _scenario([_cfg(parallelism="auto", memory_headroom_pct=60)])) == 2
    err = capsys.readouterr().err
    assert "configs[0].memory_headroom_pct" in err and "50" in err


def test_context_that_does_not_divide_the_sequence_names_the_nearest(tmp_path, capsys):
    s = _scenario([_cfg(parallelism={"tensor": 1, "context": 3})])
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert "configs[0].parallelism.context" in err and "the 8192-token phase" in err
    assert "nearest valid: context 2" in err


def test_fp8_on_a_chip_without_fp8_is_refused(tmp_path, capsys):
    c = _cfg(instance="p4d.24xlarge", parallelism="auto")
    c["precision"] = "fp8"
    assert _run(tmp_path, _scenario([c])) == 2
    err = capsys.readouterr().err
    assert "configs[0].precision" in err and "nearest valid: bf16" in err
    # train23: int8 was listed among the allowed, which training refuses (not a training data type)
    assert "allowed here: fp32, tf32, bf16, fp16 (nearest valid: bf16)" in err, err


def test_fp8_on_h100_and_trainium2_runs_faster_than_bf16(tmp_path):
    configs = []
    for inst in ("p5.48xlarge", "trn2.48xlarge"):
        for dt in ("bf16", "fp8"):
            par = {"tensor": 4, "zero": 1, "recompute": "full"}
            c = _cfg(f"{inst[:3]}-{dt}", instance=inst, parallelism=par)
            c["precision"] = dt
            configs.append(c)
    assert _run(tmp_path, _scenario(configs)) == 0
    d = _rows(tmp_path).duration_h
    assert d["p5.-fp8"] < d["p5.-bf16"] and d["trn-fp8"] < d["trn-bf16"]


def test_offload_where_the_catalog_has_no_host_figures_is_refused(tmp_path, capsys):
    c = _cfg(instance="trn2.48xlarge", parallelism={"tensor": 4, "zero": 1, "offload": "cpu"})
    assert _run(tmp_path, _scenario([c])) == 2
    assert "configs[0].parallelism.offload" in capsys.readouterr().err


def test_training_options_on_serving_are_refused(tmp_path, capsys):
    s = {"schema_version": 2, "name": "srv", "workload": {"model": "llama3-8b", "serving": {
        "requests_per_h": 100, "input_tokens": 100, "output_tokens": 100, "ttft_ms": 1000, "tpot_ms": 100}},
        "configs": [{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16", "optimizer": "sgd"}],
        "baseline": "a"}
    assert _run(tmp_path, s) == 2
    assert "optimizer applies to training" in capsys.readouterr().err


def test_overrides_change_the_cluster(tmp_path):
    par = {"tensor": 1, "pipeline": 1, "zero": 1, "recompute": "full"}
    configs = [_cfg("cat", parallelism=par), _cfg("slow", parallelism=par, network_gbps=100),
               _cfg("big", parallelism=par, device_memory_gib=141)]
    assert _run(tmp_path, _scenario(configs)) == 0
    df = _rows(tmp_path)
    assert df.duration_h["slow"] > df.duration_h["cat"]
    assert df.duration_h["big"] == pytest.approx(df.duration_h["cat"])
    # A layout that needs more than the catalog's 80 GB fits the overridden memory.
    big = {"tensor": 1, "pipeline": 1, "zero": 0, "recompute": "none"}
    for sub in ("x", "y"):
        (tmp_path / sub).mkdir()
    assert _run(tmp_path / "x", _scenario([_cfg("a", parallelism=big)])) == 2
    assert _run(tmp_path / "y", _scenario([_cfg("a", parallelism=big, device_memory_gib=400)])) == 0


def test_workload_reads_an_inline_architecture(tmp_path, capsys):
    f = tmp_path / "arch.yaml"
    f.write_text(yaml.safe_dump({"architecture": {
        "kind": "decoder", "layers": 126, "hidden_size": 16384, "heads": 128, "kv_heads": 8,
        "intermediate_size": 53248, "ffn": "swiglu", "tied_embeddings": False, "vocab_size": 128256,
        "max_position_embeddings": 131072}}))
    assert main(["workload", "--arch", str(f), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 4.0e11 < out["params"] < 4.1e11
    s = tmp_path / "s.yaml"
    s.write_text(yaml.safe_dump(_scenario([_cfg(parallelism="auto")])))
    assert main(["workload", str(s), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "llama3-8b"
    f.write_text("architecture: {kind: decoder, layers: 2}\n")
    assert main(["workload", "--arch", str(f)]) == 2
    assert "missing hidden_size" in capsys.readouterr().err


def test_workload_of_a_fine_tune_scenario_has_its_classification_head(tmp_path, capsys):
    """`workload SCENARIO` counts the head `run` evaluates: workload.training.task and num_labels."""
    from ecobench.planning.jobs import make_job
    from ecobench.scenario.load import load_scenario

    s = tmp_path / "s.yaml"
    s.write_text(yaml.safe_dump(_scenario([_cfg(parallelism="auto")], task="classification", num_labels=3)))

    def workload(*extra):
        assert main(["workload", str(s), "--format", "json", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    clf, pretrain, ten = workload(), workload("--task", "pretrain"), workload("--num-labels", "10")
    assert clf["task"] == "classification" and pretrain["task"] == "pretrain"
    hidden = clf["hidden_size"]
    assert pretrain["params"] - clf["params"] == hidden * (clf["vocab_size"] - 3)  # LM head -> 3-label score
    assert ten["params"] - clf["params"] == hidden * 7
    assert clf["flops_per_token_training"] < pretrain["flops_per_token_training"]
    sc = load_scenario(s)
    job = make_job(scenario=sc, config=sc.configs[0], mode="training", seq_len=8192, batch_size=1)
    assert (job.task, job.num_labels) == ("classification", 3)


def test_a_layout_that_does_not_fit_names_the_headroom_and_its_fixes(tmp_path, capsys):
    s = _scenario([_cfg(parallelism={"tensor": 1, "pipeline": 1, "zero": 1, "recompute": "full"},
                        memory_headroom_pct=50)], model="llama2-13b", phases=((4096, 1.0),))
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert "which has 80.0 GiB per device, 40.0 GiB usable after 50% headroom; it fits with" in err


def test_a_layout_that_leaves_ranks_idle_says_so_where_it_does_not_fit(tmp_path, capsys):
    """trial: "TP1 PP1 DP16 ... needs 119.0 GiB per device on 3x p4d.24xlarge" showed a DP of 16 beside a
    cluster of 24 ranks (a global batch of 1024 divides among 16 replicas, not 24; 8 ranks idle)."""
    s = _scenario([_cfg(instance="p4d.24xlarge", instances=3)], model="llama2-7b", phases=((4096, 1.0),),
                  global_batch_size=1024)
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert ("TP1 PP1 DP16 ZeRO-0 mb1 recompute none uses 16 of the 24 ranks of 3x p4d.24xlarge (8 stay idle) "
            "and needs ") in err, err
    assert "GiB per device, which has 40.0 GiB per device" in err


def test_a_deadline_with_a_stated_context_degree_keeps_it(tmp_path):
    s = _scenario([{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16",
                    "parallelism": {"tensor": 8, "context": 4, "zero": 1, "recompute": "full"}}],
                  phases=((32768, 1.0),), deadline_h=100.0)
    s["workload"]["model"] = None
    s["workload"]["architecture"] = {"kind": "decoder", "layers": 32, "hidden_size": 4096, "heads": 32,
                                     "kv_heads": 8, "intermediate_size": 14336, "ffn": "swiglu",
                                     "tied_embeddings": False, "vocab_size": 128256,
                                     "max_position_embeddings": 131072}
    del s["workload"]["model"]
    assert _run(tmp_path, s) == 0
    df = _rows(tmp_path)
    assert df.context_parallel["a"] == 4 and df.tensor_parallel["a"] == 8
    assert df.duration_h["a"] <= 100.0


def test_the_fixes_of_a_layout_with_a_stated_data_degree_keep_it(tmp_path, capsys):
    """With data 2 stated, it suggested pipeline >= 8 (data 1) and 2 instances (data 16): layouts
    that do not hold the data degree the configuration fixed."""
    def scenario(par, model="llama2-7b"):
        return _scenario([_cfg(instance="p4d.24xlarge", instances=1, parallelism=par)], model=model,
                         phases=((4096, 1.0),), global_batch_size=512)

    for d in "abcd":
        (tmp_path / d).mkdir()

    assert _run(tmp_path / "a", scenario({"data": 2})) == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith("36.0 GiB usable after 10% headroom; it fits with tensor >= 4 (keeping "
                                 "data 2)"), err
    assert _run(tmp_path / "b", scenario({"data": 2, "tensor": 4})) == 0  # the fix holds
    (run_dir,) = (tmp_path / "b" / "res" / "mem").iterdir()
    row = pd.read_csv(run_dir / "results.csv").iloc[0]
    assert (row.data_parallel, row.tensor_parallel) == (2, 4)
    capsys.readouterr()
    assert _run(tmp_path / "c", scenario({"data": 8}, "llama2-70b")) == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith("no single change of tensor, pipeline, context, zero, offload, recompute or "
                                 "microbatch fits (keeping data 8): use another data degree, a device with "
                                 "more memory, or parallelism: auto"), err
    # ranks left idle: the layout that uses them all keeps data 2 (it named TP2 PP1 DP4)
    assert _run(tmp_path / "d", scenario({"data": 2, "tensor": 2, "zero": 3})) == 0
    err = capsys.readouterr().err
    assert ("TP2 PP1 DP2 ZeRO-3 mb1 recompute none uses 4 of the 8 ranks of 1x p4d.24xlarge; 4 stay idle, "
            "drawing idle power: TP2 PP2 DP2 ZeRO-3 mb1 recompute none uses them all") in err, err


def test_a_microbatch_that_divides_no_global_batch_names_those_that_do(tmp_path, capsys):
    """train23: microbatch 3 with a 1,024-sequence batch on 2 p4d said "the nearest instance counts that
    do: 1 and 4", where microbatch 3 runs at no count (1024 is no multiple of 3): the counts were those
    of other micro-batches. It names the micro-batches that divide the batch at this data degree."""
    s = _scenario([_cfg(instance="p4d.24xlarge", instances=2,
                        parallelism={"microbatch": 3, "zero": 3, "recompute": "full"})],
                  model="llama2-7b", phases=((4096, 1.0),), global_batch_size=1024)
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert "nearest instance counts" not in err, err
    assert err.rstrip().endswith("is not a multiple of data x microbatch = 16 x 3 (allowed at data 16: "
                                 "microbatch 1, 2, 4, 8, 16, 32, 64)"), err
    # A data degree that divides no global batch names those that do and fit the cluster.
    s["configs"][0]["parallelism"] = {"data": 3, "zero": 3, "recompute": "full"}
    (tmp_path / "b").mkdir()
    assert _run(tmp_path / "b", s) == 2
    assert "(allowed at microbatch 1: data 1, 2, 4, 8, 16)" in capsys.readouterr().err


def test_the_nearest_counts_of_a_layout_that_does_not_fit_are_counts_where_it_fits(tmp_path, capsys):
    """train23: TP1 PP4 ZeRO-1 recompute selective of Mixtral on 8 p5 (82.4 GiB) named "the nearest
    instance counts that fit this tensor and pipeline: 4 and 16", where it needs 90.6 and 78.3 GiB
    (other ZeRO stages and recompute fitted there); 4 named 2 and 8, 16 named 8 and 32. The count named
    now runs the configuration as written, and the one below it does not."""
    par = {"pipeline": 4, "zero": 1, "recompute": "selective", "microbatch": 1}
    s = _scenario([_cfg(instances=8, parallelism=par)], model="mixtral-8x7b", phases=((4096, 1.0),),
                  global_batch_size=256)
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert "fit this tensor and pipeline" not in err
    counts = [int(x) for x in err.rsplit("the nearest instance counts that fit this layout: ", 1)[1]
              .strip().split(" and ")]
    for n in counts:
        s["configs"][0]["instances"] = n
        (tmp_path / str(n)).mkdir()
        assert _run(tmp_path / str(n), s) == 0, capsys.readouterr().err
    s["configs"][0]["instances"] = counts[-1] // 2
    (tmp_path / "half").mkdir()
    assert _run(tmp_path / "half", s) == 2


def test_a_context_degree_beyond_the_cluster_is_counted_in_the_product(tmp_path, capsys):
    """train23: "tensor x context 64 x pipeline x data = 8 x 1 x 1 = 512" left the context degree out of
    the product and named 4 and 16 instances, where TP8 CP64 needs 64."""
    s = _scenario([_cfg(instances=8, parallelism={"tensor": 8, "context": 64, "zero": 1})],
                  phases=((131072, 1.0),), global_batch_size=32)
    s["workload"]["model"] = None
    del s["workload"]["model"]
    s["workload"]["architecture"] = {"kind": "decoder", "layers": 32, "hidden_size": 4096, "heads": 32,
                                     "kv_heads": 8, "intermediate_size": 14336, "ffn": "swiglu",
                                     "tied_embeddings": False, "vocab_size": 128256,
                                     "max_position_embeddings": 131072}
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert "tensor x context x pipeline x data = 8 x 64 x 1 x 1 = 512, but the cluster has 64 ranks" in err
    assert err.rstrip().endswith("the nearest instance counts that do: 64"), err
