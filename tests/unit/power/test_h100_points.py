"""ecobench's own H100 measurements: every corpus figure and catalog draw taken from them equals what the
recorded windows (tests/fixtures/gpu_h100/gpu_states_run*.json, tools/measure_gpu_states.py) give."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ecobench.hardware.catalog import load_catalog
from ecobench.power.corpus import load_corpus
from ecobench.power.fit import EAGER_ENGINE, HOST_BOUND_ENGINE, split_rest
from ecobench.power.params import power_model
from tests.unit.power.own_gpu import assert_decode_point_is_its_windows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gpu_h100"
RUNS = [json.loads((FIXTURES / f"gpu_states_run{i}.json").read_text()) for i in (1, 2)]


def _points(kind: str) -> dict[str, object]:
    return {p.id: p for p in load_corpus().points if p.source == "ecobench_h100_2026" and p.kind == kind}


def _warm_decode(batch: int) -> list[dict]:
    """Every metered generate() of ``batch`` but each run's first (the cold one the corpus leaves out)."""
    return [r for run in RUNS for r in run["decode"]["runs"] if r["batch"] == batch and r["rep"] >= 1]


def test_runs_are_the_h100_named_in_the_source() -> None:
    assert {run["gpu"] for run in RUNS} == {"NVIDIA H100 80GB HBM3"}
    assert {run["power_limit_w"] for run in RUNS} == {700.0}
    assert all(not run["errors"] for run in RUNS)


@pytest.mark.parametrize("batch", [1, 8, 32, 128])
def test_decode_points_are_the_warm_windows_energy_over_time(batch: int) -> None:
    p = _points("power_serve")[f"ecobench_h100_hf_llama3_8b_decode_b{batch}"]
    windows = _warm_decode(batch)
    assert len(windows) == 3
    assert_decode_point_is_its_windows(p, windows)


def test_train_and_bert_points_are_their_windows() -> None:
    train = RUNS[0]["train"]
    (p,) = _points("power_train").values()
    assert p.power_w == pytest.approx(train["power_w"], rel=1e-3)
    assert p.tokens_per_s == pytest.approx(train["tokens_per_s"], rel=1e-3)
    infer = _points("power_infer")
    for w in RUNS[0]["bert"]:
        q = infer[f"ecobench_h100_bert_large_fp16_s384_b{w['batch']}"]
        assert q.power_w == pytest.approx(w["power_w"], rel=1e-3)
        assert q.samples_per_s == pytest.approx(w["samples_per_s"], rel=1e-3)


def test_catalog_idle_and_stall_draw_read_the_measurement() -> None:
    with (FIXTURES / "smi_before_context_2026-11-28.csv").open() as f:
        row = next(csv.DictReader(f, skipinitialspace=True))
    idle_w = float(row["power.draw [W]"].split()[0])
    h100 = load_catalog().accelerators["h100-sxm"].power
    assert h100.idle_w == pytest.approx(idle_w, abs=0.05)
    blocked_w = sum(run["idle_end"]["power_w"] for run in RUNS) / len(RUNS)
    h100_stall = (blocked_w - idle_w) / (h100.max_w - idle_w)
    stall = power_model().draw.stall
    # the central is the mean of four blocking powers: Perseus's two, this H100's and the H200's
    # (test_h200_points.py); the H100's is the second lowest
    assert sorted([stall.low, h100_stall, stall.central]) == [stall.low, h100_stall, stall.central]


@pytest.mark.parametrize(("engine", "eager"), [
    ("HF transformers 5.17.0 generate() (eager PyTorch 2.11.0)", True),
    ("HF transformers + FastChat (PyTorch 2.0.1)", True),
    ("PyTorch 2.11.0 eager (transformers 5.17.0 BertModel)", True),
    ("HF transformers generate() with torch.compile reduce-overhead", False),
    ("TensorRT (NVIDIA MLPerf harness)", False),
    ("vLLM 0.11.1", False),
])
def test_eager_engines(engine: str, eager: bool) -> None:
    assert (EAGER_ENGINE.search(engine) is not None) is eager
    assert HOST_BOUND_ENGINE.search(engine) is None


def test_an_eager_engines_rest_of_time_is_host_gaps() -> None:
    p = _points("power_serve")["ecobench_h100_hf_llama3_8b_decode_b128"]  # no profiled busy share
    assert p.gpu_busy_share is None
    assert split_rest(p, 0.1, 0.2) == pytest.approx((0.1, 0.2, 0.7))
    tensor_rt = p.model_copy(update={"engine": "TensorRT-LLM"})
    assert split_rest(tensor_rt, 0.1, 0.2) == pytest.approx((0.1, 0.9, 0.0))


def test_a_measured_busy_share_sets_the_host_gaps() -> None:
    p = _points("power_serve")["ecobench_h100_hf_llama3_8b_decode_b1"]
    idle = 1.0 - p.gpu_busy_share
    # the GPU idles for what the profiler did not see it busy; the rest of its busy time is slow kernels
    assert split_rest(p, 0.1, 0.05) == pytest.approx((0.1, 0.9 - idle, idle))
    # a busy share below the roofline's: the gaps are at most the time the roofline leaves
    low = p.model_copy(update={"gpu_busy_share": 0.1})
    assert split_rest(low, 0.5, 0.2) == pytest.approx((0.5, 0.2, 0.3))


def test_busy_shares_are_the_profiled_kernel_time_over_the_wall_time() -> None:
    busy = {f"ecobench_h100_hf_llama3_8b_decode_b{w['batch']}": w for w in json.loads(
        (FIXTURES / "gpu_states_busy_run3.json").read_text())["busy"]["decode"]}
    busy |= {f"ecobench_h100_bert_large_fp16_s384_b{w['batch']}": w for w in json.loads(
        (FIXTURES / "gpu_states_busy_run4.json").read_text())["busy"]["bert"]}
    points = _points("power_serve") | _points("power_infer")
    assert len(busy) == 7
    for pid, w in busy.items():
        assert points[pid].gpu_busy_share == pytest.approx(min(1.0, w["kernel_s"] / w["wall_s"]), abs=1e-3)
