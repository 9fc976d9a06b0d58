"""A configuration's `stack` (and `serve-point --stack`) is priced only on the vendor and mode its factors
were fitted on. Before, any fitted stack was taken anywhere: `--stack optimum-neuron` on a p5.48xlarge
served Llama 3 8B at a TPOT of 9.51 ms against 6.70 ms for the NVIDIA typical stack (Neuron's fitted
factors on an H100), `stack: tensorrt-llm` trained Llama 2 7B on p4d 8% faster than the typical stack
(a serving stack's compute factor on a training run), and `--stack megatron` served with a training
stack's factor: numbers, not bad input."""

import json

import pytest
import yaml

import ecobench
from ecobench.cli import main
from ecobench.hardware.backends.efficiency import fitted_stacks
from ecobench.hardware.backends.stacks import stack_refusal, stack_scopes

SERVING = {"requests_per_h": 3600, "input_tokens": 512, "output_tokens": 128}
TRAINING = {"total_tokens": 1e9, "phases": [{"seq_len": 2048, "fraction": 1.0}], "global_batch_size": 64}


def _scenario(workload, configs, **extra):
    return {"schema_version": 2, "name": "t", "uncertainty": {"draws": 0}, "workload": workload,
            "configs": configs, "baseline": configs[0]["id"], **extra}


def test_every_fitted_stack_is_priced_where_its_points_ran_and_nowhere_else():
    scopes = stack_scopes()
    assert set(fitted_stacks()) <= set(scopes)
    for stack in fitted_stacks():
        for vendor in ("aws", "nvidia"):
            for mode in ("inference", "serving", "training"):
                refused = stack_refusal(stack, vendor, mode, "here") is not None
                assert refused == ((vendor, mode) not in scopes[stack]), (stack, vendor, mode)
    assert scopes["optimum-neuron"] == {("aws", "serving")}
    assert scopes["tensorrt-llm"] == {("nvidia", "serving")}
    assert stack_refusal(None, "nvidia", "serving", "here") is None  # the vendor's typical


@pytest.mark.parametrize("instance,stack,message", [
    ("p5.48xlarge", "optimum-neuron",
     "--stack optimum-neuron is fitted on published AWS Neuron (Inferentia, Trainium) serving runs only, not "
     "on p5.48xlarge (nvidia h100-sxm) for serving; allowed: gpt-fast, lmdeploy, sglang, tensorrt-llm, vllm, "
     "vllm-v1, or no stack (the vendor's typical)"),
    ("inf2.48xlarge", "tensorrt-llm", "--stack tensorrt-llm is fitted on published NVIDIA serving runs only"),
    ("p5.48xlarge", "megatron", "--stack megatron is fitted on published NVIDIA training runs only"),
])
def test_serve_point_refuses_a_stack_of_another_vendor_or_mode(capsys, instance, stack, message):
    assert main(["serve-point", "llama3-8b", "--instance-type", instance, "--stack", stack]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("instance,stack", [("p5.48xlarge", "vllm"), ("inf2.48xlarge", "vllm-neuron")])
def test_serve_point_takes_a_stack_of_its_vendor(capsys, instance, stack):
    assert main(["serve-point", "llama3-8b", "--instance-type", instance, "--stack", stack,
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tpot_ms"] > 0


@pytest.mark.parametrize("workload,config,message", [
    ({"model": "llama3-8b", "serving": SERVING},
     {"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16", "stack": "transformers-neuronx"},
     "configs[0].stack: transformers-neuronx is fitted on published AWS Neuron (Inferentia, Trainium) "
     "serving runs only"),
    ({"model": "llama2-7b", "training": TRAINING},
     {"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": 2,
      "stack": "tensorrt-llm"},
     "configs[0].stack: tensorrt-llm is fitted on published NVIDIA serving runs only, not on p4d.24xlarge "
     "(nvidia a100-40gb) for training; allowed: deepspeed-zero3, "),
])
def test_run_refuses_a_stack_of_another_vendor_or_mode(tmp_path, capsys, workload, config, message):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_scenario(workload, [config])))
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


def test_a_sweep_skips_the_instances_its_stack_does_not_run_on():
    config = {"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16", "stack": "vllm"}
    r = ecobench.run(_scenario({"model": "llama3-8b", "serving": SERVING}, [config],
                               sweep={"instance_type": ["p5.48xlarge", "inf2.48xlarge", "g6e.xlarge"]}))
    assert "inf2.48xlarge" not in {row["instance_type"] for row in r.rows}
    sweep = r.document["sweep"]
    assert (sweep["evaluated"], sweep["skipped"]) == (2, 1)
    assert sweep["skipped_by_reason"][0]["reason"].startswith(
        "stack: vllm is fitted on published NVIDIA serving runs only, not on inf2.48xlarge")
