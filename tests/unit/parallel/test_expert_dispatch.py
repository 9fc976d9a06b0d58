"""Expert parallelism as Megatron-Core and DeepSeek run it: experts whole on their ranks (parallel
folding, ``expert_tensor`` 1), the deduplicated dispatch of DeepEP/HybridEP, and all-to-alls
overlapped with compute. No scenario is built: the step model on hand-made layouts."""

import numpy as np
import pytest

from ecobench.parallel.collectives import all_to_all_s
from ecobench.parallel.layout import Layout, problems
from ecobench.parallel.step import Layouts, Workload, dispatch_inter_share, evaluate, stage_params
from ecobench.workloads import PRESETS
from ecobench.workloads.moe import moe_ffn_kernels

QWEN = PRESETS["qwen3-235b-a22b"]


def _cluster():
    from ecobench.hardware.backends.efficiency import current_fit
    from ecobench.hardware.catalog import load_catalog
    from ecobench.hardware.cluster import instance_cluster

    cat = load_catalog()
    cl = instance_cluster(cat, cat.instance("p5.48xlarge"), "bf16")
    return cl, current_fit().efficiency("nvidia", "training", "h100-sxm", "megatron")


def test_dispatch_share_is_distinct_instances_per_token():
    # one instance: nothing crosses, and a token with one expert is never deduplicated
    assert dispatch_inter_share(1, 8) == pytest.approx(1 / 8)
    assert dispatch_inter_share(4, 1) == pytest.approx(1.0)
    # 8 experts over 4 instances: 4 (1 - 0.75^8) = 3.6 instances of the 8 copies
    assert dispatch_inter_share(4, 8) == pytest.approx(4 * (1 - 0.75**8) / 8)
    # many instances: every copy lands on its own, nothing saved
    assert dispatch_inter_share(10_000, 8) == pytest.approx(1.0, abs=1e-3)
    shares = dispatch_inter_share(np.array([2, 4, 8, 16]), 8)
    assert np.all(np.diff(shares) > 0)


def test_all_to_all_inter_share_scales_the_cross_instance_bytes_only():
    full = all_to_all_s(1e9, 32, 8, 400.0, 0.0, 50.0, 0.0)
    half = all_to_all_s(1e9, 32, 8, 400.0, 0.0, 50.0, 0.0, 0.5)
    assert full == pytest.approx(24 / 32 * 1e9 / 50e9)
    assert half == pytest.approx(full / 2)
    inside = all_to_all_s(1e9, 8, 8, 400.0, 0.0, 50.0, 0.0, 0.5)  # nothing crosses: unchanged
    assert inside == pytest.approx(all_to_all_s(1e9, 8, 8, 400.0, 0.0, 50.0, 0.0))


def test_whole_experts_run_the_rank_s_token_share():
    split = moe_ffn_kernels(QWEN, 4096, "bf16", 0, tensor=2, expert=32)
    whole = moe_ffn_kernels(QWEN, 4096, "bf16", 0, tensor=2, expert=32, expert_tensor=1)
    by = lambda ks: {k.name: k for k in ks}  # noqa: E731
    s, w = by(split)["moe.experts.up"], by(whole)["moe.experts.up"]
    assert w.flops == pytest.approx(s.flops)  # the same work per rank, other shapes
    assert w.dims[1] == s.dims[1] // 2  # half the token rows ...
    assert w.dims[3] == 2 * s.dims[3]  # ... through twice the expert width


def test_whole_experts_hold_more_weight_per_rank():
    w = Workload(QWEN, 4096, 2048, "bf16")
    p = np.array([8])
    _, mid_split, _ = stage_params(w, p, 32)
    _, mid_whole, _ = stage_params(w, p, 32, 2)  # tensor 2 / expert_tensor 1
    routed = QWEN.routed_expert_params * (np.ceil(94 / 8)) / QWEN.layers
    assert mid_whole[0] - mid_split[0] == pytest.approx(routed / 32, rel=1e-6)


def test_folded_expert_group_stays_in_the_instance():
    cl, eff = _cluster()
    w = Workload(QWEN, 4096, 2048, "bf16")
    lays = [Layout(4, 8, 8, 1, "none", 1, 4, expert=8),  # expert group spans tensor x expert: 4 instances
            Layout(4, 8, 8, 1, "none", 1, 4, expert=8, expert_tensor=1)]  # 8 ranks of one instance
    r = evaluate(w, cl, Layouts.of(lays, 32), eff)
    assert r.parts["ep_comm_s"][1] < 0.25 * r.parts["ep_comm_s"][0]
    assert r.step_s[1] < r.step_s[0]


def test_dedup_and_overlap_shorten_the_exposed_all_to_all():
    cl, eff = _cluster()
    w = Workload(QWEN, 4096, 2048, "bf16")
    base = dict(tensor=2, pipeline=8, data=16, zero=1, virtual=4, expert=32, expert_tensor=1)
    lays = [Layout(**base), Layout(**base, expert_dispatch="deduplicated"),
            Layout(**base, expert_overlap=True), Layout(**base, expert_dispatch="deduplicated",
                                                        expert_overlap=True)]
    r = evaluate(w, cl, Layouts.of(lays, 32), eff)
    ep = r.parts["ep_comm_s"]
    assert ep[1] < ep[0] and ep[2] < ep[0] and ep[3] < min(ep[1], ep[2])
    # the compute and the memory do not depend on how tokens travel
    assert np.allclose(r.memory_gib, r.memory_gib[0])
    # a layout read back keeps its expert options
    L = Layouts.of(lays, 32)
    assert [L.layout(i) for i in range(4)] == lays


def test_expert_tensor_problems():
    msgs = problems(Layout(4, 1, 64, 1, expert=8, expert_tensor=3), QWEN, 256, 8, 2048)
    assert any("expert_tensor 3 must divide tensor 4" in m and "1, 2, 4" in m for m in msgs)
    assert problems(Layout(4, 1, 64, 1, expert=8, expert_tensor=1), QWEN, 256, 8, 2048) == []
    bad = problems(Layout(1, 1, 256, 1, expert=8, expert_dispatch="nvshmem"), QWEN, 256, 8, 2048)  # type: ignore[arg-type]
    assert any("expert_dispatch 'nvshmem'" in m for m in bad)
