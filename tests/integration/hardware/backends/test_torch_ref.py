"""The reference backend really runs a (tiny) model and measures it."""

import dataclasses
import statistics
import sys

import pytest

from ecobench.cli import main
from ecobench.errors import BackendError
from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict
from ecobench.units import MAX_OTHER_CPU_PCT, MAX_THROUGHPUT_CV_PCT

pytest.importorskip("torch")
pytest.importorskip("transformers")

TINY = {"layers": 4, "hidden_size": 128, "heads": 2, "intermediate_size": 512, "vocab_size": 1000,
        "max_position_embeddings": 128}
FAST = {"warmup_s": 0.2, "min_window_s": 0.3, "min_batches": 2, "repetitions": 3, "gemm_s": 0.2}


def _scenario(configs, mode="inference", arch=TINY, measurement=FAST):
    work = {"architecture": arch}
    if mode == "inference":
        work["inference"] = {"rate_per_h": 36000, "seq_len": 64, "batch_size": 4}
    else:
        work["training"] = {"total_sequences": 10000, "phases": [{"seq_len": 64, "fraction": 1.0}],
                            "batch_size": 4, "global_batch_size": 64}
    return scenario_from_dict({"schema_version": 1, "name": "tiny", "workload": work,
                               "configs": configs, "baseline": configs[0]["id"],
                               "measurement": measurement})


def test_measured_row_has_ci_method_window_and_samples():
    s = _scenario([{"id": "host", "instance_type": "local", "backend": "reference", "device": "cpu"}])
    row = evaluate(s).iloc[0]
    assert row.provenance == "measured"
    assert row.throughput_ci95_low <= row.throughput_per_instance_per_s <= row.throughput_ci95_high
    assert row.measurement_method.startswith("codecarbon") and "CPU power:" in row.measurement_method
    assert row.repetitions == 3 and row.window_start_utc <= row.window_end_utc
    assert len(row.samples["energy_kwh"]) == 3 and row.energy_kwh > 0
    assert 0 < row.mfu and row.host_gemm_tflops > 0
    assert row.power_cpu_w > 0
    assert ("no RAPL" in row.power_method) == (row.energy_provenance == "modelled") == row.cpu_power_fallback
    assert row.host_other_cpu_pct_before >= 0 and row.throughput_cv_pct >= 0


def test_decoder_and_fine_tuning_run_the_right_transformers_model():
    """A tiny Llama-style decoder pre-trained, and a tiny encoder fine-tuned as a classifier, both
    measured on the host: the model built is the one the workload describes."""
    from ecobench.hardware.backends.torch_ref import build_model

    decoder = {"kind": "decoder", "layers": 2, "hidden_size": 128, "heads": 4, "kv_heads": 2,
               "intermediate_size": 344, "ffn": "swiglu", "tied_embeddings": False, "vocab_size": 1000,
               "max_position_embeddings": 128}
    s = _scenario([{"id": "host", "instance_type": "local", "backend": "reference", "device": "cpu",
                    "instances": 1}], mode="training", arch=decoder)
    row = evaluate(s).iloc[0]
    assert row.provenance == "measured" and row.throughput_per_instance_per_s > 0
    arch = s.workload.arch()
    model, _ = build_model(arch, "training", None, "cpu")
    assert type(model).__name__ == "LlamaForCausalLM"
    assert sum(p.numel() for p in model.parameters()) == arch.params
    enc = scenario_from_dict({**s.model_dump(mode="json"), "workload": {"architecture": TINY, "training": {
        "task": "classification", "num_labels": 3, "total_sequences": 1000,
        "phases": [{"seq_len": 64, "fraction": 1.0}], "batch_size": 4, "global_batch_size": 64}}})
    enc_arch = enc.workload.arch()
    model, _ = build_model(enc_arch, "training", None, "cpu", "classification", 3)
    assert type(model).__name__ == "BertForSequenceClassification"
    expected = enc_arch.params + enc_arch.head_params("classification", 3)
    assert sum(p.numel() for p in model.parameters()) == expected


def test_training_steps_and_projection_are_labelled():
    s = _scenario([{"id": "host", "instance_type": "local", "backend": "reference", "device": "cpu",
                    "instances": 1},
                   {"id": "c7g", "instance_type": "c7g.2xlarge", "backend": "reference",
                    "device": "cpu", "instances": 1}], mode="training")
    df = evaluate(s).set_index("config_id")
    assert df.loc["host", "provenance"] == "measured"
    assert df.loc["c7g", "provenance"] == "projected"
    assert "calibrated what-if" in df.loc["c7g", "method"]
    assert df.loc["c7g", "duration_h"] < df.loc["host", "duration_h"] * 2
    # projected figures carry their own per-repetition samples, planned from each repetition
    for cid in ("host", "c7g"):
        samples = df.loc[cid, "samples"]
        assert len(samples["energy_kwh"]) == 3 and len(samples["duration_h"]) == 3
    assert df.loc["c7g", "energy_provenance"] == "modelled"
    # the scenario's global batch of 64 is 16 micro-batches of 4 on one instance: one AdamW step each
    assert "batch 4, an AdamW step's time counted at 0.0625 of each micro-batch's (global batch 64 over " \
           "1 instance(s))" in df.loc["host", "method"]


@pytest.mark.parametrize(("mode", "batch", "instances", "global_batch", "share"), [
    ("training", 4, 1, 64, 1 / 16), ("training", 4, 4, 64, 1 / 4), ("training", 4, 1, 2, 1.0),
    ("training", 4, 1, 4, 1.0), ("inference", 4, 1, None, 1.0)])
def test_optimizer_share_follows_the_global_batch(mode, batch, instances, global_batch, share):
    from ecobench.hardware.backends.base import Job
    from ecobench.hardware.backends.torch_ref import optimizer_share

    arch = _scenario([{"id": "h", "instance_type": "local", "backend": "reference"}]).workload.arch()
    job = Job(arch=arch, mode=mode, seq_len=64, batch_size=batch, dtype="fp32", instances=instances,
              global_batch_size=global_batch)
    assert optimizer_share(job) == share


def test_a_training_step_counts_only_its_share_of_the_optimizer_step(monkeypatch):
    """A micro-batch of 4 in a global batch of 64 takes a sixteenth of an AdamW step: the step says
    the rest of the optimizer's time (here at least 50 ms, slowed on purpose) is not the workload's,
    and a window's rate leaves it out. Before 2026-11-29 every micro-batch paid a whole AdamW step:
    on a 2-layer BERT-base at batch 4 x 128 tokens a third of a step's time on this 2-vCPU host."""
    import time

    import torch

    from ecobench.hardware.backends import torch_ref
    from ecobench.hardware.backends.base import Job

    arch = _scenario([{"id": "h", "instance_type": "local", "backend": "reference"}]).workload.arch()
    adamw_step = torch.optim.AdamW.step

    def slow_step(self, *a, **k):
        time.sleep(0.05)
        return adamw_step(self, *a, **k)

    monkeypatch.setattr(torch.optim.AdamW, "step", slow_step)
    job = Job(arch=arch, mode="training", seq_len=64, batch_size=4, dtype="fp32", global_batch_size=64,
              device="cpu")
    step, per_step = torch_ref.make_step(job, "cpu")
    left_out = step()
    assert per_step == 4 and left_out >= 0.05 * 15 / 16
    whole = dataclasses.replace(job, global_batch_size=4)  # an optimizer step every micro-batch
    assert torch_ref.make_step(whole, "cpu")[0]() == 0.0


@pytest.fixture
def one_thread():
    """One intra-op thread: steadier timings on a small shared machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_projection_scales_by_the_vcpus_the_threads_occupied(one_thread):
    """One PyTorch thread occupies one core's vCPUs, not the whole host: a projection to an 8-vCPU
    instance scales the measurement by 8 over those, and the method says how many threads ran."""
    import os

    import psutil

    s = _scenario([{"id": "c6i", "instance_type": "c6i.2xlarge", "backend": "reference", "device": "cpu"}])
    row = evaluate(s).iloc[0]
    occupied = (os.cpu_count() or 1) / (psutil.cpu_count(logical=False) or os.cpu_count() or 1)
    assert f"scaled by vCPUs 8/{occupied:g} (the host's vCPUs its threads occupied)" in row.method
    assert "1 PyTorch thread on a host of " in row.method


@pytest.mark.parametrize(("threads", "occupied"), [(8, 16), (4, 8), (1, 2), (32, 16)])
def test_vcpus_occupied_by_threads_on_a_hyperthreaded_host(monkeypatch, threads, occupied):
    """16 vCPUs on 8 cores: PyTorch's default of a thread a core occupies them all."""
    import psutil

    from ecobench.hardware.backends import torch_ref

    monkeypatch.setattr(torch_ref.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 16 if logical else 8)
    used, words = torch_ref.host_vcpus_used(threads)
    assert used == occupied and words.endswith("on a host of 16 vCPUs, 8 cores")


@pytest.mark.slow
def test_depth_extrapolation_matches_full_depth_within_15pct(one_thread):
    # wide enough that the matmuls, not Python dispatch, set the time
    arch = TINY | {"hidden_size": 256, "heads": 4, "intermediate_size": 1024}
    m = FAST | {"repetitions": 4, "min_window_s": 0.5, "gemm_s": 0, "track_energy": False}
    full = _scenario([{"id": "h", "instance_type": "local", "backend": "reference",
                       "device": "cpu"}], arch=arch, measurement=m)
    part = _scenario([{"id": "h", "instance_type": "local", "backend": "reference",
                       "device": "cpu", "layers": 1}], arch=arch, measurement=m)
    # alternate the two measurements so that drift in the machine's speed hits both alike
    t_full, t_part, loaded = [], [], []
    for _ in range(8):
        for sc, out in ((full, t_full), (part, t_part)):
            row = evaluate(sc).iloc[0]
            out.append(row.throughput_per_instance_per_s)
            loaded.append(row.host_other_cpu_pct_during)
    if max(loaded) > MAX_OTHER_CPU_PCT:
        # the measurement itself says it cannot be trusted (item 3); judging it would test the load
        pytest.skip(f"other processes used up to {max(loaded):.0f}% of the host's CPU while measuring")
    spread = 100 * statistics.stdev(t_full) / statistics.fmean(t_full)
    if spread > MAX_THROUGHPUT_CV_PCT:
        # identical full-depth runs differ by more than a measurement is trusted to (the backend's own
        # reproducibility threshold): the host's speed, not the extrapolation, would be judged. On the
        # 2-core CI host they varied 104-136/s (2026-11-27), and the ratio read 0.82 and 0.84; later
        # that day, shared with other jobs, CV 6-29% and ratios 0.80-1.38 before and after the paired
        # extrapolation, while interleaved single steps put both within 1% (benchmarks/bench_depth.py)
        pytest.skip(f"identical full-depth runs varied {spread:.1f}% (CV, threshold "
                    f"{MAX_THROUGHPUT_CV_PCT:g}%): the host is too noisy to judge the extrapolation")
    ratio = statistics.median(t_part) / statistics.median(t_full)
    print("RATIO", ratio)
    assert ratio == pytest.approx(1.0, rel=0.15), (t_full, t_part)


def test_the_warm_up_runs_right_before_the_first_window(monkeypatch):
    """The energy meter's set-up (1.7 s the first time in a process on this host, 2026-11-29:
    codecarbon reads its CPU table) comes before the warm-up, not between it and the first window."""
    from types import SimpleNamespace

    from ecobench.hardware.backends import torch_ref

    events = []

    class Tracker(torch_ref.Tracker):
        def __init__(self):
            events.append("meter set up")
            super().__init__()

    def warm_up(step, seconds):
        warm_up_was(step, seconds)
        events.append("warm-up")

    def window(step, samples_per_step, spec):
        events.append("window")
        return window_was(step, samples_per_step, spec)

    warm_up_was, window_was = torch_ref._warm_up, torch_ref._window
    monkeypatch.setattr(torch_ref, "Tracker", Tracker)
    monkeypatch.setattr(torch_ref, "_warm_up", warm_up)
    monkeypatch.setattr(torch_ref, "_window", window)
    spec = SimpleNamespace(warmup_s=0.0, min_window_s=0.01, min_batches=1, repetitions=2)
    w = torch_ref.measure(lambda: 0.0, 1, spec, "t", track_energy=True)
    assert events == ["meter set up", "warm-up", "window", "window"] and len(w.energy) == 2


def test_load_while_the_alternated_steps_ran_makes_the_row_noisy(monkeypatch):
    """The alternated 1- and k-layer steps set every window's depth factor, so the host's load while
    they run counts as the windows' does. On this host (2026-11-29, scenarios/local_measure.yaml) they
    ran 5.6 times slower than the windows, loaded by other jobs, while the row read 3% during."""
    from ecobench.hardware.backends import torch_ref

    reads = iter([0.0, 0.0, 0.0, 60.0])  # the three windows quiet, then the alternated steps loaded
    monkeypatch.setattr(torch_ref, "probe_other_cpu_pct", lambda: 0.0)
    monkeypatch.setattr(torch_ref, "other_cpu_pct", lambda a, b: next(reads))
    s = _scenario([{"id": "h", "instance_type": "local", "backend": "reference", "device": "cpu",
                    "layers": 2}], measurement=FAST | {"track_energy": False, "gemm_s": 0})
    row = evaluate(s).iloc[0]
    assert row.host_other_cpu_pct_during == 60.0
    assert "other processes used 60% of the host's CPU while measuring" in row.measurement_warnings
    assert "of the CPU before, 60% during (60% during the alternated steps)" in row.method


def test_unsupported_precision_and_projection_to_accelerator():
    s = _scenario([{"id": "h", "instance_type": "local", "backend": "reference", "device": "cpu",
                    "precision": "fp16"}])
    with pytest.raises(BackendError, match="not supported by the reference backend on cpu"):
        evaluate(s)
    s = _scenario([{"id": "h", "instance_type": "g4dn.xlarge", "backend": "reference",
                    "device": "cpu"}])
    with pytest.raises(BackendError, match="cannot be projected"):
        evaluate(s)


def test_without_torch_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    s = _scenario([{"id": "h", "instance_type": "local", "backend": "reference"}])
    with pytest.raises(BackendError, match=r"pip install 'ecobench-ml\[torch\]'"):
        evaluate(s)


def test_interrupt_mid_measurement_leaves_no_run_dir(tmp_path, monkeypatch, capsys):
    import yaml

    import ecobench.hardware.backends.torch_ref as ref

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(ref, "_window", interrupted)
    s = _scenario([{"id": "h", "instance_type": "local", "backend": "reference", "device": "cpu"}])
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(s.model_dump(mode="json")))
    assert main(["run", str(f), "--results", str(tmp_path / "res")]) == 130
    assert not (tmp_path / "res" / "tiny").exists() or not any((tmp_path / "res" / "tiny").iterdir())


def test_replayed_zeus_windows_are_the_rows_gpu_energy():
    """The Zeus path end to end without a GPU: a replayed monitor stands in for ZeusMonitor, and each
    window's recorded GPU energy is that repetition's accelerator draw in the row's samples."""
    from ecobench.hardware.backends.torch_ref import ReferenceBackend
    from ecobench.measure.testing import ReplayZeusMonitor
    from ecobench.measure.zeus_meter import GpuMeter

    monitor = ReplayZeusMonitor([30.0, 60.0, 90.0], times_s=[0.5, 0.5, 0.5])
    backend = ReferenceBackend(gpu_meter=lambda device: (GpuMeter(monitor, version="0.16.0"), ""))
    s = _scenario([{"id": "host", "instance_type": "local", "backend": "reference", "device": "cpu"}])
    row = evaluate(s, backends={"reference": backend}).iloc[0]
    assert monitor.keys == ["rep0", "rep1", "rep2"]
    zeus_part, codecarbon_part = row.measurement_method.split(" for the GPU; ")
    assert zeus_part == "Zeus (NVML energy counter), zeus 0.16.0"
    assert codecarbon_part.startswith("codecarbon ") and codecarbon_part.endswith(" for the CPU and RAM")
    assert "GPU power: Zeus (NVML energy counter) (whole device)" in row.power_method
    assert row.energy_provenance in ("measured", "partly measured")
    # each window's draw is its recorded J / s (30, 60, 90 J over 0.5 s), however long it really ran
    assert row.samples["power_accelerator_w"] == pytest.approx([60.0, 120.0, 180.0])
    assert 60.0 < row.power_accelerator_w < 180.0  # weighted by the windows' lengths


def test_zeus_is_asked_for_on_an_nvidia_gpu_only(monkeypatch):
    import torch

    from ecobench.hardware.backends.torch_ref import zeus_for

    assert zeus_for("cpu") == (None, "")  # nothing to say on a CPU
    monkeypatch.setattr(torch.version, "hip", "6.0", raising=False)
    meter, why = zeus_for("cuda")
    assert meter is None and "NVIDIA GPUs only" in why


@pytest.mark.gpu
def test_cuda_measurement_uses_zeus_or_nvml():
    import importlib.util

    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    s = _scenario([{"id": "g", "instance_type": "local", "backend": "reference", "device": "cuda",
                    "precision": "fp16"}])
    row = evaluate(s).iloc[0]
    if importlib.util.find_spec("zeus") is not None:
        assert "Zeus (NVML energy counter)" in row.measurement_method
        assert "GPU power: Zeus" in row.power_method and "NVML counters" not in row.power_method
    else:
        assert "GPU power: NVML" in row.measurement_method and "Zeus not used" in row.measurement_method
    assert row.power_accelerator_w > 0 and all(w > 0 for w in row.samples["power_accelerator_w"])


@pytest.mark.gpu
def test_zeus_meters_a_cuda_window():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    pytest.importorskip("zeus")
    from ecobench.measure.zeus_meter import open_zeus

    meter, why = open_zeus(torch.cuda.current_device())
    assert meter is not None, why
    a = torch.randn(4096, 4096, device="cuda")
    with meter.window("matmul") as got:
        for _ in range(50):
            a @ a
    assert got[0].duration_s > 0 and got[0].energy_j > 0
