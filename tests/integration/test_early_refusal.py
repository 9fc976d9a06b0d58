"""A configuration that cannot be planned at all is refused before any configuration is evaluated:
exit 2 with the evaluation's own message, and no progress line of an earlier, good configuration
(a bad last configuration used to cost the minutes spent on the ones before it)."""

import pytest
import yaml

from ecobench.cli import main

GOOD_INFERENCE = {"id": "gpu", "instance_type": "g4dn.2xlarge", "backend": "analytic", "precision": "fp32"}
GOOD_SERVING = {"id": "g6e", "instance_type": "g6e.xlarge", "precision": "bf16"}


def inference(bad):
    return {"schema_version": 2, "name": "early",
            "workload": {"model": "layoutlm-base", "inference": {"rate_per_h": 100000, "horizon_h": 1,
                                                                 "seq_len": 512, "batch_size": 1}},
            "configs": [GOOD_INFERENCE, bad], "baseline": "gpu"}


def serving(bad):
    return {"schema_version": 2, "name": "early",
            "workload": {"model": "llama3-8b",
                         "serving": {"requests_per_h": 3600, "input_tokens": 512, "output_tokens": 128,
                                     "median_ttft_ms": 2000, "median_tpot_ms": 100, "horizon_h": 1}},
            "configs": [GOOD_SERVING, bad], "baseline": "g6e"}


CASES = {
    "tdp on a chip without a datasheet TDP": (
        inference({"id": "inf1", "instance_type": "inf1.2xlarge", "precision": "bf16", "power_basis": "tdp"}),
        "configs[1].power_basis: power_basis tdp needs a datasheet TDP"),
    "device memory of an instance without accelerators": (
        inference({"id": "cpu", "instance_type": "c6i.2xlarge", "precision": "fp32",
                   "device_memory_gib": 16}),
        "configs[1].device_memory_gib: c6i.2xlarge has no accelerator whose memory to override"),
    "no spot price in the region": (
        inference({"id": "cpu", "instance_type": "c6i.2xlarge", "precision": "fp32", "pricing": "spot"}),
        "configs[cpu]: the spot snapshot has no spot price for c6i.2xlarge in us-east-1"),
    "no on-demand price in the region": (
        inference({"id": "cpu", "instance_type": "c6i.2xlarge", "precision": "fp32", "region": "us-west-2"}),
        "configs[cpu]: no on-demand price for c6i.2xlarge in us-west-2"),
    "serving on an instance without accelerators": (
        serving({"id": "cpu", "instance_type": "c6i.2xlarge", "precision": "bf16"}),
        "configs[1].instance_type: c6i.2xlarge has no accelerator to serve an LLM on"),
    "a continuous scheduler's option on another scheduler": (
        serving({"id": "static", "instance_type": "g6e.xlarge", "precision": "bf16", "scheduler": "static",
                 "max_num_batched_tokens": 4096}),
        "configs[1].max_num_batched_tokens: max_num_batched_tokens applies to the continuous scheduler only"),
    "a quantization the chip has no peak for": (
        serving({"id": "fp8", "instance_type": "g4dn.2xlarge", "precision": "fp16", "quantization": "fp8"}),
        "configs[1].quantization: NVIDIA T4 has no published fp8 peak"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_configuration_is_refused_before_any_is_evaluated(tmp_path, capsys, case):
    scenario, message = CASES[case]
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario))
    assert main(["run", str(f), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"ecobench: error: {f}: {message}" in err, err
    assert "[1/2]" not in err, "the good configuration was evaluated before the bad one was refused"
    assert not (tmp_path / "out").exists()
