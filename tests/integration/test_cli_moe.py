"""Mixture-of-experts through the CLI: the shipped scenario runs, bad expert settings exit 2 naming
the field and the nearest valid value, `ecobench workload` shows total and active parameters."""

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ecobench", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd or ROOT)


def test_mixtral_scenario_runs_with_expert_parallelism(tmp_path):
    proc = _run("run", str(ROOT / "scenarios/mixtral_train.yaml"), "-q", "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "run/results.json").read_text())
    rows = {r["config_id"]: r for r in doc["rows"]}
    assert set(rows) == {"p5_ep8", "p5_auto"}
    assert 0.05 < rows["p5_ep8"]["mfu"] < 0.8
    assert doc["scenario"]["configs"][0]["parallelism"]["expert"] == 8
    assert rows["p5_ep8"]["expert_parallel"] == 8 and rows["p5_auto"]["expert_parallel"] >= 1
    # MoE's throughput band is wide (about x6.8): its draws once ran past the chips' peak (mfu_high 1.14)
    assert all(r["mfu_low"] < r["mfu"] < r["mfu_high"] <= 1.0 for r in rows.values())


def _scenario(tmp_path, arch=None, parallelism=None):
    s = yaml.safe_load((ROOT / "scenarios/mixtral_train.yaml").read_text())
    s["configs"] = s["configs"][:1]
    if parallelism is not None:
        s["configs"][0]["parallelism"] = parallelism
    if arch is not None:
        s["workload"].pop("model")
        s["workload"]["architecture"] = arch
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(s))
    return path


def test_experts_not_divisible_by_expert_degree_exit_2(tmp_path):
    proc = _run("run", str(_scenario(tmp_path, parallelism={"pipeline": 4, "expert": 3})))
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr
    assert "configs[0].parallelism.expert" in err and "8 experts" in err
    assert "divisors of 8 (1, 2, 4, 8)" in err and "nearest valid value: 2" in err
    assert "Traceback" not in err


def test_experts_per_token_above_experts_exit_2(tmp_path):
    arch = {"kind": "decoder", "layers": 4, "hidden_size": 512, "heads": 8, "kv_heads": 2,
            "intermediate_size": 1024, "ffn": "swiglu", "vocab_size": 32000, "max_position_embeddings": 4096,
            "moe": {"experts": 8, "experts_per_token": 9, "expert_intermediate_size": 1024}}
    proc = _run("run", str(_scenario(tmp_path, arch=arch, parallelism={"expert": 8})))
    assert proc.returncode == 2, proc.stderr
    assert "workload.architecture.moe" in proc.stderr
    assert "experts_per_token 9 is above experts 8" in proc.stderr and "nearest valid value: 8" in proc.stderr


def test_expert_parallelism_on_a_dense_model_exit_2(tmp_path):
    path = _scenario(tmp_path, parallelism={"expert": 2})
    s = yaml.safe_load(path.read_text())
    s["workload"]["model"] = "llama2-7b"
    path.write_text(yaml.safe_dump(s))
    proc = _run("run", str(path))
    assert proc.returncode == 2 and "has no experts" in proc.stderr and "allowed: 1" in proc.stderr


def test_inline_moe_with_head_dim_and_mla_runs(tmp_path):
    arch = {"kind": "decoder", "layers": 4, "hidden_size": 1024, "heads": 16, "head_dim": 96,
            "intermediate_size": 2048, "ffn": "swiglu", "vocab_size": 32000, "max_position_embeddings": 4096,
            "moe": {"experts": 16, "experts_per_token": 2, "expert_intermediate_size": 512,
                    "shared_experts": 1, "first_dense_layers": 1, "capacity_factor": 1.25},
            "mla": {"kv_lora_rank": 256, "q_lora_rank": 384, "qk_rope_head_dim": 32, "qk_nope_head_dim": 64,
                    "v_head_dim": 64}}
    proc = _run("run", str(_scenario(tmp_path, arch=arch, parallelism={"expert": 16})), "-q",
                "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr


def test_workload_shows_total_and_active_params():
    proc = _run("workload", "deepseek-v3", "--seq-len", "4096", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert abs(s["params"] / 671e9 - 1) < 0.01 and abs(s["params_active"] / 37e9 - 1) < 0.02
    assert s["attention"] == "mla" and s["moe"]["experts"] == 256
    text = _run("workload", "mixtral-8x7b", "--seq-len", "4096").stdout
    assert "params active per token" in text and "2 of 8 experts" in text
    assert "(kv 8, head_dim 128, GQA)" in text
    # MLA: query/key heads of 128 + 64 (no rope + rope) and value heads of 128, not hidden / heads (56)
    assert (s["head_dim"], s["v_head_dim"], s["kv_lora_rank"]) == (192, 128, 512)
    assert "head_dim 192, v 128, MLA" in _run("workload", "deepseek-v3").stdout


def test_workload_head_dim_independent_of_hidden_over_heads(tmp_path):
    arch = {"kind": "decoder", "layers": 2, "hidden_size": 1024, "heads": 16, "kv_heads": 1, "head_dim": 96,
            "intermediate_size": 2048, "ffn": "swiglu", "vocab_size": 1000, "max_position_embeddings": 2048}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(arch))
    proc = _run("workload", "--arch", str(tmp_path / "a.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert "(kv 1, head_dim 96, MQA)" in proc.stdout


def test_moe_on_a_backend_without_experts_exit_2(tmp_path):
    path = _scenario(tmp_path)
    s = yaml.safe_load(path.read_text())
    s["configs"][0].update(backend="emulated", instance_type="trn1.32xlarge")
    s["configs"][0].pop("parallelism")
    path.write_text(yaml.safe_dump(s))
    proc = _run("run", str(path))
    assert proc.returncode == 2 and "configs[0].backend" in proc.stderr and "allowed: analytic" in proc.stderr


def test_expert_options_run_and_bad_expert_tensor_exit_2(tmp_path):
    base = {"tensor": 2, "pipeline": 4, "expert": 8, "zero": 1, "recompute": "selective"}
    rows = {}
    for name, extra in (("plain", {}), ("folded", {"expert_tensor": 1, "expert_dispatch": "deduplicated",
                                                   "expert_overlap": True})):
        d = tmp_path / name
        d.mkdir()
        proc = _run("run", str(_scenario(d, parallelism=base | extra)), "-q", "--out", str(d / "run"))
        assert proc.returncode == 0, proc.stderr
        doc = json.loads((d / "run/results.json").read_text())
        rows[name] = doc["rows"][0]
        if extra:
            assert doc["scenario"]["configs"][0]["parallelism"]["expert_tensor"] == 1
        else:  # defaults read as before the fields existed
            assert "expert_tensor" not in doc["scenario"]["configs"][0]["parallelism"]
    # the expert group of 8 stays in one instance, its traffic overlapped: a shorter step
    assert rows["folded"]["duration_h"] < rows["plain"]["duration_h"]
    proc = _run("run", str(_scenario(tmp_path, parallelism=base | {"expert_tensor": 3})))
    assert proc.returncode == 2, proc.stderr
    assert "expert_tensor 3 must divide tensor 2" in proc.stderr and "nearest valid value: 2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_auto_layouts_of_a_moe_model_with_offloaded_ones_join_their_step_parts():
    """Mixtral on 16x p5.48xlarge, 128-token sequences, parallelism auto: the offloaded layouts tried
    for those that do not fit had no expert parallelism, so their step parts lacked ep_comm_s and
    joining them raised KeyError (exit 3)."""
    from ecobench.api import run

    s = {"schema_version": 2, "name": "t", "baseline": "a",
         "workload": {"model": "mixtral-8x7b", "training": {"total_tokens": 1.0e12, "global_batch_size": 64,
                                                            "phases": [{"seq_len": 128, "fraction": 1.0}]}},
         "configs": [{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16", "instances": 16,
                      "parallelism": "auto"}]}
    row = run(s).rows[0]
    assert row["duration_h"] > 0 and 0 < row["mfu"] < 1
