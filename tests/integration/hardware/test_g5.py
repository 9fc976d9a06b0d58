"""g5 (A10G) models like any GPU now that its peaks are sourced (the A10 datasheet's, standing in)."""

import json

import pandas as pd
import yaml

from ecobench.cli import main

SERVING = {
    "schema_version": 2, "name": "g5_serving",
    "workload": {"model": "llama3-8b", "serving": {"requests_per_h": 3600, "input_tokens": 1024,
                                                   "output_tokens": 256, "ttft_ms": 2000, "tpot_ms": 100,
                                                   "horizon_h": 24}},
    "configs": [{"id": "g5", "instance_type": "g5.xlarge", "precision": "bf16"},
                {"id": "g5_2x", "instance_type": "g5.2xlarge", "precision": "fp16"},
                {"id": "g6e", "instance_type": "g6e.xlarge", "precision": "bf16"}],
    "baseline": "g6e",
}
INFERENCE = {
    "schema_version": 2, "name": "g5_inference",
    "workload": {"model": "bert-base", "inference": {"rate_per_h": 100000, "seq_len": 128}},
    "configs": [{"id": "g5", "instance_type": "g5.xlarge", "precision": "fp16"},
                {"id": "g5_fp32", "instance_type": "g5.xlarge", "precision": "fp32"},
                {"id": "g4", "instance_type": "g4dn.xlarge", "precision": "fp16"}],
    "baseline": "g4",
}


def _run(tmp_path, scenario: dict) -> tuple[pd.DataFrame, dict]:
    path = tmp_path / f"{scenario['name']}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "r"
    assert main(["run", str(path), "--out", str(out)]) == 0
    doc = json.loads((out / "results.json").read_text())
    return pd.read_csv(out / "results.csv").set_index("config_id"), doc


def _peaks_source(doc: dict) -> dict:
    return next(s for s in doc["sources"] if s["item"] == "NVIDIA A10G peaks")


def test_g5_serving_runs_on_the_a10_datasheet_peaks(tmp_path):
    df, doc = _run(tmp_path, SERVING)
    for cid in ("g5", "g5_2x"):
        row = df.loc[cid]
        assert row["backend"] == "analytic" and row["provenance"] == "estimated"
        assert row["accelerator"] == "a10g" and row["throughput_per_instance_per_s"] > 0
        assert 0 < row["tpot_ms_p50"] <= 100 and row["cost_usd"] > 0 and row["energy_kwh"] > 0
    # decode is memory-bound: an A10G (600 GB/s) is slower per token than an L40S (864 GB/s)
    assert df.loc["g5", "tpot_ms_p50"] > df.loc["g6e", "tpot_ms_p50"]
    src = _peaks_source(doc)
    assert "a10-datasheet.pdf" in src["source"] and "A10 datasheet" in src["inferred_from"]
    html = (tmp_path / "r" / "report.html").read_text()
    assert "g5: the NVIDIA A10G&#39;s peaks are not its own published figures" in html


def test_g5_encoder_inference_runs_in_fp16_and_fp32(tmp_path):
    df, doc = _run(tmp_path, INFERENCE)
    for cid in ("g5", "g5_fp32"):
        assert df.loc[cid, "backend"] == "analytic" and df.loc[cid, "throughput_per_instance_per_s"] > 0
        assert df.loc[cid, "energy_kwh"] > 0 and df.loc[cid, "cost_usd"] > 0
    # FP32 (31.2 TFLOPS) is slower than FP16 tensor cores (125) for the same model
    assert df.loc["g5", "throughput_per_instance_per_s"] > df.loc["g5_fp32", "throughput_per_instance_per_s"]
    assert _peaks_source(doc)["inferred_from"]
