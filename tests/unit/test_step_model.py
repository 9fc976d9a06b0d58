"""The step model's arithmetic (``parallel/step.py``): the roofline per kernel and the step's
composition, on made-up clusters; no scenario, no catalog."""

from dataclasses import replace

import numpy as np
import pytest

from ecobench.parallel.layout import Layout
from ecobench.parallel.step import Cluster, Efficiency, Layouts, Workload, evaluate, kernel_time_s
from ecobench.workloads import PRESETS

CL = Cluster(ranks_per_node=8, peak_tflops=100, memory_gb_per_s=1000, memory_gib=80, intra_gb_per_s=200,
             inter_gb_per_s=50, intra_latency_s=3e-6, inter_latency_s=15e-6)
EFF = Efficiency(compute=0.5, memory=0.8, overhead_s=1e-5, network=0.7)
BERT = Workload(PRESETS["bert-large"], 128, 4096, "bf16")


def _k(flops, act, weight, micro=1.0, on_chip=False):
    return float(kernel_time_s(np.array([flops]), np.array([act]), np.array([weight]), np.array([True]),
                               np.array([False]), micro, 100.0, 100.0, 1000.0, on_chip, 0.5, 1.0, 0.8,
                               1e-5)[0])


def test_a_kernel_takes_the_slower_of_compute_and_memory_plus_its_overhead():
    assert _k(1e12, 0.0, 0.0) == pytest.approx(1e12 / (0.5 * 100e12) + 1e-5)  # compute-bound
    assert _k(1e6, 8e9, 0.0) == pytest.approx(8e9 / (0.8 * 1000e9) + 1e-5)  # memory-bound
    # weights are read once per micro-batch, activations per sample
    assert _k(1e6, 1e9, 4e9, micro=4) == pytest.approx((4 * 1e9 + 4e9) / (0.8 * 1000e9) + 1e-5)
    assert _k(1e6, 8e9, 0.0, on_chip=True) == pytest.approx(1e6 / (0.5 * 100e12) + 1e-5)
    assert _k(0.0, 0.0, 0.0) == 0.0  # an empty kernel costs no launch


def test_the_step_is_its_parts_and_throughput_is_the_batch_over_it():
    r = evaluate(BERT, CL, Layouts.of([Layout(1, 1, 16, 0, "none", 8)], 2), EFF)
    row = r.row(0)
    assert row["step_s"] >= row["compute_s"] > 0 and row["bubble_s"] == 0.0  # no pipeline: no bubble
    assert row["sequences_per_s"] == pytest.approx(4096 / row["step_s"])
    assert 0 < row["mfu"] < EFF.compute  # never above the compute share it runs at


def test_more_instances_are_faster_but_less_than_linearly():
    two = evaluate(BERT, CL, Layouts.of([Layout(1, 1, 16, 0, "none", 8)], 2), EFF).row(0)
    four = evaluate(BERT, CL, Layouts.of([Layout(1, 1, 32, 0, "none", 8)], 4), EFF).row(0)
    speedup = four["sequences_per_s"] / two["sequences_per_s"]
    assert 1.0 < speedup <= 2.0


def test_many_layouts_at_once_equal_each_alone():
    layouts = [Layout(1, 1, 16, 0, "none", 8), Layout(2, 1, 8, 1, "selective", 4),
               Layout(1, 2, 8, 0, "full", 2)]
    together = evaluate(BERT, CL, Layouts.of(layouts, 2), EFF)
    for i, lay in enumerate(layouts):
        alone = evaluate(BERT, CL, Layouts.of([lay], 2), EFF)
        assert together.step_s[i] == pytest.approx(alone.step_s[0], rel=1e-12)
        assert together.memory_gib[i] == pytest.approx(alone.memory_gib[0], rel=1e-12)


def test_recomputation_trades_time_for_memory():
    base = Layout(1, 1, 16, 0, "none", 8)
    r = evaluate(BERT, CL, Layouts.of([base, replace(base, recompute="full")], 2), EFF)
    assert r.step_s[1] > r.step_s[0] and r.memory_gib[1] < r.memory_gib[0]
