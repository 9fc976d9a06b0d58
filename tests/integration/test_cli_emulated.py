"""The issue's scenario: Llama 2 7B emulated on Trn1 and Trn2, layouts searched, rows marked."""

import json

import pandas as pd
import pytest

from ecobench.cli import main
from tests.conftest import SCENARIOS


def test_llama_emulated_runs_and_trainium2_finishes_sooner(tmp_path, capsys):
    assert main(["run", str(SCENARIOS / "llama_emulated.yaml"), "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    df = pd.read_csv(tmp_path / "r" / "results.csv").set_index("config_id")
    assert set(df["provenance"]) == {"emulated"}
    assert df.loc["trn2", "duration_h"] < df.loc["trn1", "duration_h"]
    assert "backend_disagreement" in df.columns
    rows = json.loads((tmp_path / "r" / "results.json").read_text())["rows"]  # the CSV keys long texts
    assert all(r["layout_choice"].startswith("auto") for r in rows)
    # trn2.48xlarge is priced in us-east-2 only (Capacity Blocks): the scenario charges that rate
    assert "no sourced" not in err and df.loc["trn2", "cost_usd"] > 0
    assert df.loc["trn2", "price_usd_per_h"] == 35.7608


@pytest.mark.parametrize("extra", [["SCENARIO"], ["--out", "OUT"], ["--results", "OUT"]])
def test_the_training_demo_with_a_scenario_or_an_output_is_bad_input(tmp_path, capsys, monkeypatch, extra):
    """trial18: emulate SCENARIO --training-demo ran the demo alone, the scenario silently dropped
    (exit 0), as were --out and --results, which the demo never writes."""
    import ecobench.hardware.neuron.training_demo as demo

    monkeypatch.setattr(demo, "run_demo", lambda: pytest.fail("ran the demo"))
    given = [str(SCENARIOS / "layoutlm_realtime.yaml") if a == "SCENARIO" else
             str(tmp_path / "out") if a == "OUT" else a for a in extra]
    assert main(["emulate", "--training-demo", *given]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--training-demo" in err and "Traceback" not in err, err
    assert "allowed: a SCENARIO (with --out or --results), or --training-demo alone" in err
    assert not (tmp_path / "out").exists()


def test_emulate_into_an_existing_out_is_refused_before_the_emulation(tmp_path, capsys, monkeypatch):
    """trial18: emulate --out EXISTING emulated every configuration, then said 'SCENARIO: --out ...:
    already exists', the scenario named first as if at fault."""
    import ecobench.reports.emulation as emulation

    monkeypatch.setattr(emulation, "emulate_scenario", lambda s: pytest.fail("emulated first"))
    assert main(["emulate", str(SCENARIOS / "llama_emulated.yaml"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ecobench: error: --out {tmp_path}: already exists"), err


def test_emulate_refuses_a_gpu_configuration_that_asks_for_the_emulated_backend(tmp_path, capsys):
    """emu24: `run` refuses backend: emulated on a GPU instance (exit 2, configs[i].backend); `emulate`
    skipped it silently (exit 0 beside a Neuron configuration) or said only that no configuration runs
    on a Neuron instance."""
    import yaml

    s = yaml.safe_load((SCENARIOS / "llama_emulated.yaml").read_text())
    s["configs"][1] = {"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16", "instances": 4,
                       "parallelism": "auto", "backend": "emulated"}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(s))
    assert main(["emulate", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "configs[1].backend: p5.48xlarge has no Neuron device the emulated backend models" in err, err
    assert "allowed: an inf2, trn1 or trn2 instance, inf1 for inference only, or backend: analytic" \
        in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()
    s["configs"][1]["backend"] = "analytic"  # a GPU configuration for `run` only: skipped, as before
    path.write_text(yaml.safe_dump(s))
    assert main(["emulate", str(path), "--out", str(tmp_path / "out")]) == 0


def _inference(tmp_path, **config):
    import yaml

    s = {"schema_version": 2, "name": "emu", "baseline": "a",
         "workload": {"model": "bert-large", "inference": {"rate_per_h": 100000, "seq_len": 512,
                                                           "batch_size": 8}},
         "configs": [{"id": "a", "instance_type": "inf2.xlarge", "precision": "bf16", "backend": "emulated",
                      **config}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(s))
    return path


@pytest.mark.parametrize("config,needles", [
    # emu24: emulate timed 100,000 sequences (880 GiB) on a 16 GiB NeuronCore, exit 0; run refused it
    ({"batch_size": 100000}, ["configs[a].batch_size: 100000 sequences of 512 tokens need 880.53 GiB per "
                              "NeuronCore on inf2.xlarge", "allowed: at most 1635"]),
    # emu24: 'NeuronCore-v3 (LNC=2) has no INT8 TensorEngine mode', no configuration, nothing allowed
    ({"instance_type": "trn2.48xlarge", "precision": "int8", "price_usd_per_h": 35.76},
     ["configs[a] (trn2.48xlarge, int8): AWS Trainium2", "has no published int8 peak; choose a precision "
      "it supports: fp32, tf32, bf16, fp16, fp8"]),
    ({"instance_type": "inf1.xlarge", "precision": "fp32"},
     ["configs[a] (inf1.xlarge, fp32): AWS Inferentia", "choose a precision it supports: bf16, fp16, int8"]),
])
def test_emulate_refuses_an_inference_configuration_as_run_does(tmp_path, capsys, config, needles):
    path = _inference(tmp_path, **config)
    for command in ("emulate", "run"):
        assert main([command, str(path), "--out", str(tmp_path / command)]) == 2, command
        err = capsys.readouterr().err
        assert all(n in err for n in needles) and "Traceback" not in err, (command, err)


def test_memory_refusals_on_neuron_name_the_neuroncore_not_the_device(tmp_path, capsys):
    """emu24: 'inf2.8xlarge, which has 16.0 GiB per device': a Neuron device is the chip (Inferentia2:
    32 GiB); the 16 GiB (trn2: 24 GiB of 96) belong to each (logical) NeuronCore, the plan's rank."""
    import yaml

    serve = {"schema_version": 2, "name": "m", "baseline": "a",
             "workload": {"model": "llama2-70b", "serving": {"requests_per_h": 3600, "input_tokens": 1024,
                                                             "output_tokens": 256}},
             "configs": [{"id": "a", "instance_type": "inf2.8xlarge", "precision": "bf16",
                          "backend": "emulated"}]}
    train = yaml.safe_load((SCENARIOS / "llama_emulated.yaml").read_text())
    train["configs"] = [{"id": "a", "instance_type": "trn2.48xlarge", "precision": "bf16", "instances": 1,
                         "price_usd_per_h": 35.76, "backend": "emulated",
                         "parallelism": {"tensor": 1, "pipeline": 1, "data": 64}}]
    train["baseline"] = "a"
    for doc, needle in ((serve, "GiB of weights per NeuronCore at tensor 1 on inf2.8xlarge, which has 16.0 "
                                "GiB per NeuronCore"),
                        (train, "GiB per NeuronCore on 1x trn2.48xlarge, which has 24.0 GiB per NeuronCore")):
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump(doc))
        assert main(["run", str(path), "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert needle in err and "per device" not in err, err
