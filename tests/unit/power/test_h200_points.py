"""ecobench's own H200 measurements: every corpus figure and catalog draw taken from them equals what the
recorded windows (tests/fixtures/gpu_h200/, tools/measure_gpu_states.py, 2026-11-29) give."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ecobench.hardware.catalog import load_catalog
from ecobench.power.corpus import load_corpus
from ecobench.power.params import power_model
from tests.unit.power.own_gpu import assert_decode_point_is_its_windows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RUN = json.loads((FIXTURES / "gpu_h200" / "gpu_states_run1.json").read_text())
H100_RUNS = [json.loads((FIXTURES / "gpu_h100" / f"gpu_states_run{i}.json").read_text()) for i in (1, 2)]


def _busy(part: str) -> dict[int, dict]:
    file = FIXTURES / "gpu_h200" / f"gpu_states_busy_{part}.json"
    return {w["batch"]: w for w in json.loads(file.read_text())["busy"][part]}


def _points(kind: str) -> dict[str, object]:
    return {p.id: p for p in load_corpus().points if p.source == "ecobench_h200_2026" and p.kind == kind}


def _idle_w(gpu: str, day: str) -> float:
    with (FIXTURES / gpu / f"smi_before_context_{day}.csv").open() as f:
        row = next(csv.DictReader(f, skipinitialspace=True))
    return float(row["power.draw [W]"].split()[0])


def test_the_run_is_the_h200_named_in_the_source() -> None:
    assert RUN["gpu"] == "NVIDIA H200" and RUN["power_limit_w"] == 700.0 and not RUN["errors"]
    for part in ("bert", "decode"):
        busy = json.loads((FIXTURES / "gpu_h200" / f"gpu_states_busy_{part}.json").read_text())
        assert busy["gpu"] == "NVIDIA H200" and not busy["errors"]
    assert {p.group for p in load_corpus().sources.values() if p.url.startswith("tests/fixtures/gpu_h")} \
        == {"ecobench_gpu"}  # the two GPUs' points share a tool, a method and a host: held out together


@pytest.mark.parametrize("batch", [1, 8, 32, 128])
def test_decode_points_are_the_warm_windows_energy_over_time(batch: int) -> None:
    p = _points("power_serve")[f"ecobench_h200_hf_llama3_8b_decode_b{batch}"]
    windows = [r for r in RUN["decode"]["runs"] if r["batch"] == batch and r["rep"] >= 1]
    assert len(windows) == 2
    assert_decode_point_is_its_windows(p, windows)
    busy = _busy("decode").get(batch)  # only batch 1 was profiled before the device time ran out
    assert (p.gpu_busy_share is None) == (busy is None)
    if busy:
        assert p.gpu_busy_share == pytest.approx(busy["kernel_s"] / busy["wall_s"], abs=1e-3)


def test_train_and_bert_points_are_their_windows() -> None:
    train = RUN["train"]
    (p,) = _points("power_train").values()
    assert p.power_w == pytest.approx(train["power_w"], rel=1e-3)
    assert p.tokens_per_s == pytest.approx(train["tokens_per_s"], rel=1e-3)
    infer = _points("power_infer")
    busy = _busy("bert")
    assert len(infer) == len(RUN["bert"]) == 4
    for w in RUN["bert"]:
        q = infer[f"ecobench_h200_bert_large_fp16_s384_b{w['batch']}"]
        assert q.power_w == pytest.approx(w["power_w"], rel=1e-3)
        assert q.samples_per_s == pytest.approx(w["samples_per_s"], rel=1e-3)
        b = busy[w["batch"]]
        assert q.gpu_busy_share == pytest.approx(min(1.0, b["kernel_s"] / b["wall_s"]), abs=1e-3)


def test_catalog_idle_and_the_stall_draw_read_both_gpus() -> None:
    h200 = load_catalog().accelerators["h200"].power
    assert h200.idle_w == pytest.approx(_idle_w("gpu_h200", "2026-11-29"), abs=0.05)
    h200_stall = (RUN["idle_end"]["power_w"] - h200.idle_w) / (h200.max_w - h200.idle_w)
    h100 = load_catalog().accelerators["h100-sxm"].power
    h100_blocked = sum(run["idle_end"]["power_w"] for run in H100_RUNS) / len(H100_RUNS)
    h100_stall = (h100_blocked - h100.idle_w) / (h100.max_w - h100.idle_w)
    perseus = ((83.64 - 34) / 266, (70.38 - 34) / 266)  # the sourced blocking powers (power_model.yaml)
    stall = power_model().draw.stall
    assert stall.central == pytest.approx((sum(perseus) + h100_stall + h200_stall) / 4, abs=5e-4)
    assert stall.low == pytest.approx(h200_stall, abs=5e-4)
    assert stall.high == pytest.approx(max(perseus), abs=5e-4)


def test_the_states_agree_with_the_h100s() -> None:
    """The two Hopper chips, one tool: dense bf16 products hold each at its 700 W limit with the clock
    throttled, a device-to-device copy near the middle of the range, a blocked context near its floor."""
    h100 = H100_RUNS[0]
    for state, (lo, hi) in {"compute": (0.95, 1.02), "memory": (0.45, 0.6), "spin": (0.0, 0.12)}.items():
        for run, idle in ((RUN, 77.52), (h100, 71.32)):
            share = (run[state]["power_w"] - idle) / (700 - idle)
            assert lo <= share <= hi, (run["gpu"], state, share)
    assert RUN["compute"]["sm_clock_mhz_mean"] < RUN["max_sm_clock_mhz"]  # throttled at the limit
    assert RUN["memory"]["gb_per_s"] > h100["memory"]["gb_per_s"]  # HBM3e: 4.25 against 3.02 TB/s
