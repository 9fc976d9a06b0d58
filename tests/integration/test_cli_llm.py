"""The LLM-training scenarios a user runs from the command line, and their bad inputs (exit 2)."""

import json

import pandas as pd
import pytest
import yaml

from ecobench.cli import main
from tests.conftest import SCENARIOS


def _run(tmp_path, scenario):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario))
    return main(["run", str(f), "-q", "--results", str(tmp_path / "res")])


def _llama(**changes):
    s = yaml.safe_load((SCENARIOS / "llama2_7b_pretrain.yaml").read_text())
    for path, value in changes.items():
        node = s
        *parents, leaf = path.split(".")
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[leaf] = value
    return s


def test_issue_examples_run(tmp_path, capsys):
    for name in ("llama2_7b_pretrain", "gpt3_175b_deadline"):
        assert main(["run", str(SCENARIOS / f"{name}.yaml"), "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "layouts (ranks" in out and "deadline 336 h" in out
    (run_dir,) = (tmp_path / "gpt3_175b_deadline").iterdir()
    df = pd.read_csv(run_dir / "results.csv")
    for col in ("tensor_parallel", "pipeline_parallel", "data_parallel", "zero_stage",
                "memory_per_device_gib", "mfu", "comm_overhead_pct"):
        assert df[col].notna().all(), col
    assert (df.duration_h <= 336).all()
    assert (df.tensor_parallel * df.pipeline_parallel * df.data_parallel
            == df.instances * df.instance_type.map({"p4d.24xlarge": 8, "trn1n.32xlarge": 32})).all()


def test_gpt3_on_one_t4_is_refused_with_the_memory_message(tmp_path, capsys):
    s = {"schema_version": 2, "name": "g", "workload": {"model": "gpt3-175b", "training": {
        "total_tokens": 3e11, "phases": [{"seq_len": 2048, "fraction": 1.0}], "global_batch_size": 1536}},
        "configs": [{"id": "t4", "instance_type": "g4dn.xlarge", "precision": "fp16", "instances": 1,
                     "parallelism": {"tensor": 1, "pipeline": 1, "zero": 0}}], "baseline": "t4"}
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert "configs[0].parallelism" in err and "GiB per device" in err
    assert "needs 2" in err and "14.9 GiB per device" in err and "Traceback" not in err
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("changes,expect", [
    ({"workload.model": "llama2-7"}, "did you mean 'llama2-7b'"),
    ({"configs.0.parallelism": {"tensor": 3}}, "tensor 3 must divide the 32 attention heads"),
    ({"configs.0.parallelism": {"pipeline": 40}}, "pipeline 40 is more stages than the 32 layers"),
    ({"configs.0.parallelism": {"tensor": 16}}, "tensor 16 must divide the 8 ranks of one instance"),
    ({"configs.0.parallelism": {"tensor": 2, "data": 128}}, "but the cluster has 128 ranks"),
    ({"configs.0.parallelism": "manual"}, "configs[0].parallelism"),
    ({"configs.0.parallelism": {"pipeline": 4, "virtual_stages": 2}}, "needs schedule: interleaved"),
    ({"configs.0.parallelism": {"pipeline": 4, "schedule": "interleaved", "virtual_stages": 3}},
     "pipeline 4 x virtual_stages 3 must divide the 32 layers (each virtual stage holds the same layers); "
     "virtual_stages that do: 2, 4, 8"),
    ({"configs.0.parallelism": {"pipeline": 4, "schedule": "interleaved"}}, "virtual_stages >= 2"),
    ({"workload.training.total_sequences": 5}, "exactly one of total_tokens or total_sequences"),
])
def test_bad_llm_inputs_are_exit_2(tmp_path, capsys, changes, expect):
    s = _llama(**changes)
    for c in s["configs"]:
        if c.get("instances", 0) is None:
            del c["instances"]
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert expect in err, err
    assert "Traceback" not in err


def test_inline_decoder_with_bad_kv_heads(tmp_path, capsys):
    s = _llama()
    s["workload"] = {"architecture": {"kind": "decoder", "layers": 4, "hidden_size": 512, "heads": 8,
                                      "kv_heads": 3, "intermediate_size": 1024, "ffn": "swiglu"},
                     "training": s["workload"]["training"]}
    assert _run(tmp_path, s) == 2
    assert "kv_heads (3) must divide heads (8)" in capsys.readouterr().err


def test_hf_config_that_is_not_a_language_model(tmp_path, capsys):
    (tmp_path / "cfg.json").write_text(json.dumps({"model_type": "vit", "hidden_size": 768}))
    s = _llama()
    s["workload"]["model"] = None
    del s["workload"]["model"]
    s["workload"]["architecture"] = {"from_hf_config": "cfg.json"}
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert "workload.architecture.from_hf_config" in err and "model_type 'vit'" in err


def test_workload_command(capsys):
    assert main(["workload", "llama3-8b", "--seq-len", "8192", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"] == 8_030_261_248
    assert out["flops_per_token_training"] == pytest.approx(3 * out["flops_per_token_forward"])
    assert out["bytes_per_precision"]["bf16"]["optimizer_bytes"] == 12 * out["params"]
    assert main(["workload", "gpt3-175b"]) == 0
    assert "174,604,259,328" in capsys.readouterr().out
    assert main(["workload", "llama3-8b", "--seq-len", "100000"]) == 2
    capsys.readouterr()
    # as serve-point's --input-tokens says it, not argparse's "invalid int value: '8k'"
    with pytest.raises(SystemExit) as e:
        main(["workload", "llama3-8b", "--seq-len", "8k"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert "argument --seq-len: '8k' is not a number; allowed: an integer from 1 to" in err, err
    assert main(["workload", "llama3-8b", "--seq-len", "8e3", "--format", "json"]) == 0  # as a scenario does
    capsys.readouterr()
    config = SCENARIOS / "models" / "llama3-8b" / "config.json"
    assert main(["workload", str(config), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == 8_030_261_248


def test_workload_table_names_the_unit_of_the_training_columns(capsys):
    """The training columns (weights, gradients, optimizer) were headed without their unit, beside
    'weights GiB' and 'state GiB' columns: every column of the table is in GiB."""
    assert main(["workload", "llama3-8b"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "precision" in line)
    assert header.split() == ["precision", "weights", "GiB", "training", "GiB:", "weights", "gradients",
                              "optimizer", "state", "GiB"], header
    assert len(header) <= 80


def test_validate_holdout_rows_and_summary(capsys):
    assert main(["validate", "--mode", "holdout", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    hold = [r for r in rows if r["mode"] == "holdout"]
    llm = [r for r in hold if r["experiment"].startswith("llm_train_")]
    assert len(llm) >= 20
    for r in hold:
        assert {"experiment", "figure", "published", "ecobench", "error_pct"} <= set(r)
        assert r["error_pct"] == pytest.approx((r["ecobench"] / r["published"] - 1) * 100)
    summary = {r["kind"]: r for r in rows if r["mode"] == "holdout_summary"}
    assert summary["llm_train"]["count"] == len(llm)
    assert summary["llm_train"]["median_abs_error_pct"] <= 15.0


def test_validate_holdout_summary_columns_line_up(capsys):
    """Long kinds (emulated_serve_inf2) and figures (energy_j_per_output_token) pushed their rows'
    numbers out of the header's columns."""
    assert main(["validate", "--mode", "holdout", "-q"]) == 0
    out = capsys.readouterr().out
    lines = out.split("\nholdout (", 1)[1].splitlines()[1:]
    header, rows = lines[0], [ln for ln in lines[1:] if ln.strip()]
    assert any("emulated_serve_" in r for r in rows) and any("energy_j_per_output_token" in r for r in rows)
    points_end = header.index("points") + len("points")
    median_end = header.index("median |error|") + len("median |error|")
    for r in rows:
        assert r[points_end - 1].isdigit() and r[points_end] == " ", r
        assert r[median_end - 1] == "%" and r[median_end] == " ", r
