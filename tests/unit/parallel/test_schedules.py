"""Pipeline schedules, uneven stage splits, idle ranks and nearest instance counts (step model)."""

import numpy as np
import pytest

from ecobench.parallel.layout import Layout, problems, stage_layers
from ecobench.parallel.search import Phase, enumerate_layouts, nearest_counts
from ecobench.parallel.step import Cluster, Efficiency, Layouts, Workload, evaluate, stage_layer_counts
from ecobench.workloads.presets import preset

CL = Cluster(ranks_per_node=8, peak_tflops=312, memory_gb_per_s=2039, memory_gib=80, intra_gb_per_s=300,
             inter_gb_per_s=50, intra_latency_s=3e-6, inter_latency_s=15e-6)
EFF = Efficiency(compute=0.6, memory=0.6, overhead_s=5e-6, network=0.7)


def _w(layers=None, gb=512):
    arch = preset("llama2-7b")
    if layers:
        import dataclasses
        arch = dataclasses.replace(arch, layers=layers)
    return Workload(arch, 4096, gb, "bf16")


def _step(w, lays, nodes=4):
    return evaluate(w, CL, Layouts.of(lays, nodes), EFF)


def test_bubble_fractions_per_schedule():
    w = _w()
    p, m = 4, 16  # data 8, microbatch 4 -> 16 micro-batches
    one = Layout(1, p, 8, 0, "none", 4)
    r = _step(w, [one, Layout(1, p, 8, 0, "none", 4, 2, "interleaved"),
                  Layout(1, p, 8, 0, "none", 4, 1, "zero-bubble")])
    slot = r.bubble_s[0] / (p - 1)
    assert r.bubble_s[0] / (slot * (m + p - 1)) == pytest.approx((p - 1) / (m + p - 1))
    assert r.bubble_s[1] == pytest.approx(r.bubble_s[0] / 2)  # interleaved: divided by v
    # ZB-H1: (F + B - W) / (F + B + W) of 1F1B's; a third when the three passes take as long.
    assert 0.25 < r.bubble_s[2] / r.bubble_s[0] < 0.45
    assert r.step_s[2] < r.step_s[1] < r.step_s[0]


def test_interleaved_keeps_more_microbatches_in_flight():
    w = _w()
    r = _step(w, [Layout(1, 4, 8, 0, "none", 1), Layout(1, 4, 8, 0, "none", 1, 2, "interleaved")])
    assert r.memory_gib[1] > r.memory_gib[0]


def test_uneven_split_stage_layers():
    assert stage_layers(32, 4) == (8, 8, 8)
    assert stage_layers(70, 12) == (5, 6, 5)  # BLOOM: ten middle stages hold 6, the ends 5
    assert stage_layers(11, 2) == (6, 6, 5)
    assert stage_layers(23, 4) == (6, 6, 5)  # the middle two take two, then the first
    assert stage_layers(7, 1) == (7, 7, 7)
    f, m, la = stage_layer_counts(70, np.array([12, 7, 3]))
    assert list(f) == [5, 10, 23] and list(m) == [6, 10, 24] and list(la) == [5, 10, 23]
    for layers in range(1, 80):
        for p in range(1, min(layers, 16) + 1):
            first, mid, last = stage_layers(layers, p)
            assert max(first, mid, last) == -(-layers // p)


def test_uneven_split_slowest_stage_sets_the_step():
    # 31 layers over 4 stages hold 8, 8, 8 and 7 (with the head): slower than 7 each (28 layers),
    # faster than 8 each (32 layers, where the last stage carries 8 layers and the head).
    r = _step(_w(31), [Layout(1, 4, 8, 0, "none", 1)])
    r32 = _step(_w(32), [Layout(1, 4, 8, 0, "none", 1)])
    r28 = _step(_w(28), [Layout(1, 4, 8, 0, "none", 1)])
    assert r28.step_s[0] < r.step_s[0] < r32.step_s[0]
    # Mean layers per stage (7.75) would understate the slowest stage: 8 middle layers set the slot.
    r33 = _step(_w(33), [Layout(1, 4, 8, 0, "none", 1)])  # 8, 9, 8, 8: a 9-layer middle stage
    assert r33.step_s[0] > r32.step_s[0]
    assert problems(Layout(1, 4, 8), _w(31).arch, 32, 8, 512) == []


def test_idle_ranks_and_nearest_counts():
    arch = _w().arch
    # 5 instances (40 ranks) with data 32: 8 ranks idle is allowed, 48 ranks is not.
    assert problems(Layout(1, 1, 32, 0, "none", 1), arch, 40, 8, 512) == []
    assert "but the cluster has 40 ranks" in problems(Layout(1, 1, 48), arch, 40, 8, 512)[0]
    ph = [Phase(_w(gb=512), 1e6)]
    exact = enumerate_layouts(ph, 8, 5)
    assert len(exact) == 0  # 40 ranks: no data degree dividing 512 fills them with tensor x pipeline
    idle = enumerate_layouts(ph, 8, 5, idle=True)
    assert len(idle) and (idle.tensor * idle.pipeline * idle.data <= 40).all() and (idle.nodes == 5).all()
    assert (512 % idle.data == 0).all()
    assert nearest_counts(ph, CL, 5, EFF) == (4, 8)


def _gpt3():
    from ecobench.workloads.presets import preset as _p
    return Workload(_p("gpt3-175b"), 2048, 1536, "fp16")


def test_zero3_ring_latency_grows_with_the_data_parallel_group():
    """Per-layer ZeRO-3 collectives on a ring pay d - 1 step latencies: at a fixed global batch the
    exposed communication per micro-batch grows with the group."""
    from ecobench.parallel.step import layer_tensors

    w = _gpt3()
    assert layer_tensors(w.arch) == 12  # GPT: 4 weights, 4 biases, 2 LayerNorms' scale and shift
    per_micro = []
    for d, nodes in ((384, 48), (1536, 192)):
        r = evaluate(w, CL, Layouts.of([Layout(1, 1, d, 3, "full", 1)], nodes), EFF)
        per_micro.append(r.parts["dp_comm_exposed_s"][0] / r.parts["microbatches"][0])
    # 3 collectives per layer and micro-batch (gather, gather, reduce-scatter), 1,152 more ring steps.
    added = 3 * 96 * (1535 - 383) * CL.inter_latency_s
    assert per_micro[1] - per_micro[0] > 0.5 * added
    # A stack that gathers each of the 12 tensors on its own pays the latency 12 times.
    import dataclasses
    lay = Layouts.of([Layout(1, 1, 1536, 3, "full", 1)], 192)
    flat = evaluate(w, CL, lay, EFF)
    each = evaluate(w, CL, lay, dataclasses.replace(EFF, zero3_per_tensor=True))
    assert each.step_s[0] > flat.step_s[0] + 11 * 2 * 96 * 1535 * CL.inter_latency_s * 0.5


def test_zero3_backward_collectives_overlap_the_recomputation():
    """With full recomputation the recomputed forward runs on the backward's gathered parameters
    (no extra gather) and lengthens the window the backward's collectives hide behind."""
    w = _gpt3()
    lay = [Layout(1, 1, 384, 3, "none", 1), Layout(1, 1, 384, 3, "full", 1)]
    r = evaluate(w, CL, Layouts.of(lay, 48), EFF)
    assert r.parts["dp_comm_exposed_s"][1] < r.parts["dp_comm_exposed_s"][0]



def test_zero3_synchronised_gathers_are_exposed_and_reduce_scatters_still_overlap():
    """A stack whose parameter gathers synchronise the device (DeepSpeed's ZeRO-3 of 2021) exposes
    both gathers of every layer in full; its reduce-scatters still hide behind the backward. With
    compute made negligible every collective is exposed: three per layer (gather, gather,
    reduce-scatter), the upper bound; the synchronised stack exposes at least two of them."""
    import dataclasses

    w = _gpt3()
    lay = Layouts.of([Layout(1, 1, 384, 3, "full", 4)], 48)
    eff = dataclasses.replace(EFF, zero3_per_tensor=True)
    sync = dataclasses.replace(eff, zero3_sync_gathers=True)
    instant = dataclasses.replace(CL, peak_tflops=1e12, memory_gb_per_s=1e12)
    three = evaluate(w, instant, lay, sync).parts["dp_comm_exposed_s"][0]
    assert three == pytest.approx(evaluate(w, instant, lay, eff).parts["dp_comm_exposed_s"][0], rel=1e-3)
    overlapped = evaluate(w, CL, lay, eff)
    synced = evaluate(w, CL, lay, sync)
    exposed = synced.parts["dp_comm_exposed_s"][0]
    assert 2 / 3 * three < exposed < three
    assert exposed > overlapped.parts["dp_comm_exposed_s"][0]
    assert synced.step_s[0] - exposed == pytest.approx(overlapped.step_s[0]
                                                       - overlapped.parts["dp_comm_exposed_s"][0], rel=1e-9)


def test_filling_or_idle_offers_uneven_pipelines_that_fill_the_ranks():
    """24 ranks and a 512-sequence batch: no pipeline degree dividing the 32 layers fills them, pipeline
    3 (and 6, 12, 24) does; the idle layouts stay among the candidates."""
    from ecobench.parallel.search import filling_or_idle

    ph = [Phase(_w(gb=512), 1e6)]
    assert len(enumerate_layouts(ph, 8, 3)) == 0
    L = filling_or_idle(ph, 8, 3)
    used = L.tensor * L.pipeline * L.data * L.context
    full = used == 24
    assert set(np.unique(L.pipeline[full])) == {3, 6, 12, 24}
    assert (used[~full] < 24).any() and (512 % L.data == 0).all()


def test_uneven_pipeline_degrees_are_bounded():
    """A 997-layer model (prime: no even split but 1 and 997) made the deadline search enumerate every
    degree up to the layers at every count up to 100,000 instances (2.7 GB, 16 s); uneven degrees stop
    at MAX_UNEVEN_PIPELINE, even ones do not."""
    from ecobench.parallel.search import MAX_UNEVEN_PIPELINE, every_pipeline

    ps = every_pipeline(997)
    assert ps[:3] == [1, 2, 3] and ps[-1] == 997
    assert max(p for p in ps if 997 % p) == MAX_UNEVEN_PIPELINE == 128
    assert every_pipeline(32) == list(range(1, 33))
