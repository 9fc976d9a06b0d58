"""Real GPU windows replayed: Zeus logs recorded by `tools/record_gpu_fixture.py` on an NVIDIA H100
80GB HBM3 (2026-11-27; tests/fixtures/gpu_h100/) and an NVIDIA H200 (2026-11-29;
tests/fixtures/gpu_h200/), both driver 580.159.04, torch 2.11.0+cu130, zeus 0.16.0, go through the
reference backend's Zeus path on any host, and each row must give the GPU draw the live run on the GPU
reported from the same windows."""

import json
from pathlib import Path

import pytest

from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict

pytest.importorskip("torch")
pytest.importorskip("transformers")

FIXTURES = Path(__file__).parents[3] / "fixtures"
GPUS = ("gpu_h100", "gpu_h200")
CASES = sorted((gpu, p.name.removesuffix(".live.json")) for gpu in GPUS
               for p in (FIXTURES / gpu).glob("*.live.json"))
TINY = {"layers": 2, "hidden_size": 64, "heads": 2, "intermediate_size": 128, "vocab_size": 500,
        "max_position_embeddings": 64}
MAX_W = {"gpu_h100": 700.0, "gpu_h200": 700.0}  # each recording GPU's power.max_limit (nvidia-smi, env.txt)
NAME = {"gpu_h100": "NVIDIA H100 80GB HBM3", "gpu_h200": "NVIDIA H200"}


def test_fixtures_are_there():
    cases = ("bert_base_infer_fp16", "llama3_8b_2l_train_bf16")
    assert CASES == [(gpu, case) for gpu in GPUS for case in cases]


@pytest.mark.parametrize(("gpu", "case"), CASES)
def test_replayed_gpu_windows_give_the_live_rows_gpu_draw(gpu, case):
    from ecobench.hardware.backends.torch_ref import ReferenceBackend
    from ecobench.measure.testing import ReplayZeusMonitor
    from ecobench.measure.zeus_meter import GpuMeter

    live = json.loads((FIXTURES / gpu / f"{case}.live.json").read_text())
    assert live["gpu"] == NAME[gpu]
    monitor = ReplayZeusMonitor.from_log(FIXTURES / gpu / f"{case}.zeus.csv")
    windows = len(monitor.windows)
    assert windows == live["repetitions"]
    # a tiny model on this host: only the replayed windows' GPU energy and lengths reach the row
    s = scenario_from_dict({
        "schema_version": 1, "name": case,
        "workload": {"architecture": TINY, "inference": {"rate_per_h": 3600, "seq_len": 32, "batch_size": 2}},
        "configs": [{"id": "h", "instance_type": "local", "backend": "reference", "device": "cpu"}],
        "baseline": "h",
        "measurement": {"warmup_s": 0.1, "min_window_s": 0.1, "min_batches": 1, "repetitions": windows,
                        "gemm_s": 0.1}})
    backend = ReferenceBackend(gpu_meter=lambda device: (GpuMeter(monitor, version=live["zeus"]), ""))
    row = evaluate(s, backends={"reference": backend}).iloc[0]
    assert monitor.keys == [f"rep{i}" for i in range(windows)]
    assert row.samples["power_accelerator_w"] == pytest.approx(live["samples_power_accelerator_w"], rel=1e-9)
    # the row's draw is its windows' draws weighted by the host windows' lengths (here: this host's)
    d = [w["duration_s"] for w in row.energy_windows]
    weighted = sum(x * w for x, w in zip(d, row.samples["power_accelerator_w"], strict=True)) / sum(d)
    assert row.power_accelerator_w == pytest.approx(weighted, rel=1e-9)
    # live, the host windows bracket Zeus's by milliseconds of 2-s windows: the live draw is the log's
    # energy over its time to 0.1% (measured: 0.05% and 0.01%)
    assert live["power_accelerator_w"] == pytest.approx(
        sum(sum(w.values()) for w in monitor.windows) / sum(monitor.times_s), rel=1e-3)
    gpu_method = row.measurement_method.split(" for the GPU; ")[0]
    assert gpu_method == live["measurement_method"].split(" for the GPU; ")[0]
    # what the GPU drew: above nothing, below its power limit, in every window
    assert all(0 < w <= MAX_W[gpu] for w in live["samples_power_accelerator_w"])
