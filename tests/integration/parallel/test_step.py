"""The step model's mechanisms, each checked on its own (not its fitted constants)."""

from dataclasses import replace

import numpy as np
import pytest

from ecobench.parallel.layout import Layout, problems
from ecobench.parallel.step import Cluster, Efficiency, Layouts, Workload, evaluate, exposed
from ecobench.workloads import PRESETS

A100 = Cluster(ranks_per_node=8, peak_tflops=312, memory_gb_per_s=2039, memory_gib=80, intra_gb_per_s=300,
               inter_gb_per_s=50, intra_latency_s=3e-6, inter_latency_s=15e-6)
EFF = Efficiency(compute=0.6, memory=0.7, overhead_s=5e-6, network=0.8, attention=0.5)
LLAMA = Workload(PRESETS["llama2-7b"], 4096, 1024, "bf16")


def run(layouts, w=LLAMA, cl=A100, eff=EFF, nodes=16):
    return evaluate(w, cl, Layouts.of(layouts, nodes), eff)


def test_zero_stages_and_recompute_and_tensor_parallelism_cut_memory():
    base = Layout(1, 1, 128, 0, "none", 1)
    mem = run([base, replace(base, zero=1), replace(base, zero=2), replace(base, zero=3)]).memory_gib
    assert list(mem) == sorted(mem, reverse=True) and mem[0] > 2 * mem[3]
    rc = run([base, replace(base, recompute="selective"), replace(base, recompute="full")]).memory_gib
    assert rc[0] > rc[1] > rc[2]
    tp = run([base, Layout(2, 1, 64, 0, "none", 1), Layout(8, 1, 16, 0, "none", 1)]).memory_gib
    assert tp[0] > tp[1] > tp[2]


def test_training_state_bytes_per_parameter():
    """Mixed precision: 2 (weights) + 2 (gradients) + 12 (fp32 master and Adam moments) bytes per
    parameter; ZeRO-3 shards all of it, so 8 ranks hold an eighth."""
    w = Workload(PRESETS["llama2-7b"], 128, 8, "bf16")
    cl = replace(A100, ranks_per_node=8)
    one = evaluate(w, cl, Layouts.of([Layout(1, 1, 8, 0, "full", 1)], 1), EFF).memory_gib[0]
    z3 = evaluate(w, cl, Layouts.of([Layout(1, 1, 8, 3, "full", 1)], 1), EFF).memory_gib[0]
    params = PRESETS["llama2-7b"].params
    assert one == pytest.approx(16 * params / 2**30, rel=0.05)
    assert z3 == pytest.approx(16 * params / 8 / 2**30 + (one - 16 * params / 2**30), rel=0.05)


def test_pipeline_bubble_is_p_minus_1_over_m_plus_p_minus_1():
    lay = Layout(1, 4, 32, 1, "full", 1)
    r = run([lay])
    m = 1024 / (32 * 1)
    assert r.parts["microbatches"][0] == m
    pipeline_s = r.step_s[0] - r.parts["dp_comm_exposed_s"][0] - r.parts["optimizer_s"][0]
    assert r.bubble_s[0] / pipeline_s == pytest.approx(3 / (m + 3), rel=1e-9)
    interleaved = run([replace(lay, virtual=2)])
    assert interleaved.bubble_s[0] < r.bubble_s[0]


def test_more_bandwidth_never_slower_and_comm_share_reported():
    lay = [Layout(8, 1, 16, 1, "none", 1)]
    slow = run(lay, cl=replace(A100, intra_gb_per_s=30, inter_gb_per_s=5))
    fast = run(lay)
    assert fast.step_s[0] < slow.step_s[0]
    assert 0 < fast.comm_exposed_s[0] < slow.comm_exposed_s[0] < slow.step_s[0]


def test_mfu_is_a_share_of_peak_and_fp8_speeds_up_the_weight_matmuls():
    r = run([Layout(1, 1, 128, 1, "none", 1)])
    assert 0 < r.mfu[0] < EFF.compute
    fp8 = Workload(PRESETS["llama2-7b"], 4096, 1024, "fp8")
    h100 = replace(A100, peak_tflops=1979, peak_16bit_tflops=989)
    t8 = evaluate(fp8, h100, Layouts.of([Layout(1, 1, 128, 1, "none", 1)], 16), EFF).step_s[0]
    t16 = evaluate(LLAMA, replace(h100, peak_tflops=989), Layouts.of([Layout(1, 1, 128, 1, "none", 1)], 16),
                   EFF).step_s[0]
    assert t16 / 2 < t8 < t16  # attention and elementwise stay at 16 bits


def test_exposed_overlap_limits():
    c = np.array([1.0, 10.0, 0.0])
    w = np.array([10.0, 1.0, 5.0])
    e = exposed(c, w)
    assert e[0] < 0.1 and e[1] == pytest.approx(10 - 1, rel=0.02) and e[2] == 0
    assert exposed(np.array([2.0]), np.array([2.0]))[0] == pytest.approx(1.0)


def test_layout_problems_name_what_is_wrong():
    arch = PRESETS["llama2-7b"]  # 32 layers, 32 heads
    assert problems(Layout(1, 1, 128, 0, "none", 1), arch, 128, 8, 1024) == []
    msgs = " ".join(problems(Layout(3, 40, 2, 4, "none", 3), arch, 128, 8, 1000))
    for part in ("tensor 3 must divide the 32 attention heads",
                 "pipeline 40 is more stages than the 32 layers", "= 240, but the cluster has 128",
                 "not a multiple of data x microbatch", "zero 4"):
        assert part in msgs, part
    neuron = problems(Layout(1, 1, 128, 3, "none", 1), arch, 128, 32, 1024, max_zero_stage=1)
    assert "ZeRO stages up to 1" in " ".join(neuron)
