"""Training memory options in the step model: optimizer state, master weights, attention kernel,
headroom, offload, context parallelism and FP8, one rule per test."""

import dataclasses

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.layout import Layout, context_problems, problems
from ecobench.parallel.memory import optimizer_step_bytes, state_bytes, usable_gib
from ecobench.parallel.offload import HOST, host_rates
from ecobench.parallel.step import Layouts, Workload, evaluate, stage_params
from ecobench.units import GIB
from ecobench.workloads import preset


def _setup(instance="p5.48xlarge", dtype="bf16"):
    cat = load_catalog()
    inst = cat.instance(instance)
    cl = instance_cluster(cat, inst, dtype)
    eff = current_fit().efficiency(cat.accelerator_of(inst).vendor, "training", inst.spec.accelerator)
    return cl, eff


def _run(w, layouts, nodes=4, instance="p5.48xlarge"):
    cl, eff = _setup(instance, w.dtype)
    return evaluate(w, cl, Layouts.of(layouts, nodes), eff)


W = Workload(preset("llama3-8b"), 8192, 64, "bf16")


@pytest.mark.parametrize(("optimizer", "master", "expected"), [
    ("adam", True, (2, 2, 12)), ("adam", False, (2, 2, 8)), ("adam_8bit", True, (2, 2, 6)),
    ("adam_8bit", False, (2, 2, 2)), ("sgd", True, (2, 2, 8)), ("sgd", False, (2, 2, 4))])
def test_state_bytes_by_optimizer_and_master_weights(optimizer, master, expected):
    assert state_bytes("bf16", optimizer, master) == expected


def test_fp32_training_keeps_no_separate_master_copy():
    assert state_bytes("fp32", "adam", True) == state_bytes("fp32", "adam", False) == (4, 4, 8)
    assert optimizer_step_bytes(12) == 32  # Adam with master weights: the historical 32 bytes


def test_optimizer_state_moves_memory_by_its_bytes_per_parameter():
    lay = Layout(1, 1, 32, 0, "full", 1)
    base = _run(W, [lay]).memory_gib[0]
    eight = _run(dataclasses.replace(W, optimizer="adam_8bit"), [lay]).memory_gib[0]
    first, _, last = stage_params(W, np.array([1]))
    params = float(max(first[0], last[0]))
    assert base - eight == pytest.approx(params * (12 - 6) / GIB, rel=1e-6)


def test_8bit_adam_streams_fewer_bytes_in_the_optimizer_step():
    lay = Layout(1, 1, 32, 0, "full", 1)
    a = _run(W, [lay]).parts["optimizer_s"][0]
    b = _run(dataclasses.replace(W, optimizer="adam_8bit"), [lay]).parts["optimizer_s"][0]
    assert b / a == pytest.approx(optimizer_step_bytes(6) / optimizer_step_bytes(12))


def test_eager_attention_stores_the_score_matrix():
    lay = Layout(1, 1, 32, 1, "none", 1)
    flash = _run(dataclasses.replace(W, fused_attention=True), [lay]).memory_gib[0]
    eager = _run(dataclasses.replace(W, fused_attention=False), [lay]).memory_gib[0]
    a = W.arch
    scores_gib = a.layers * a.heads * 8192 * 8192 * 2 / GIB  # bf16 scores of every layer, one sequence
    assert eager - flash >= scores_gib


def test_headroom_takes_its_share_of_device_memory():
    assert usable_gib(80.0, 10.0) == pytest.approx(72.0)
    assert usable_gib(80.0, 0.0) == 80.0


def test_offload_moves_the_optimizer_state_to_the_host_and_costs_pcie_time():
    lay = Layout(1, 1, 32, 1, "full", 1)
    r = _run(W, [lay, dataclasses.replace(lay, offload="cpu")])
    first, _, last = stage_params(W, np.array([1]))
    shard = float(max(first[0], last[0])) / 32
    assert r.memory_gib[0] - r.memory_gib[1] == pytest.approx(shard * 12 / GIB, rel=1e-6)
    link, host, _ = host_rates("p5.48xlarge", 8)
    up = shard * 2 / (link * 1e9)  # parameters back up, never overlapped
    cpu = shard * 32 / (host * 1e9)
    assert r.parts["optimizer_s"][1] >= up + cpu
    assert r.step_s[1] > r.step_s[0]


def test_nvme_offload_adds_the_drives_read_and_write():
    lay = Layout(1, 1, 32, 3, "full", 1)
    r = _run(W, [dataclasses.replace(lay, offload="cpu"), dataclasses.replace(lay, offload="nvme")])
    assert r.parts["optimizer_s"][1] > r.parts["optimizer_s"][0]
    assert r.memory_gib[1] == pytest.approx(r.memory_gib[0])


def test_offload_needs_zero_and_nvme_needs_zero_3():
    a = preset("llama3-8b")
    assert any("zero 1, 2 or 3" in m for m in context_problems(Layout(1, 1, 8, 0, offload="cpu"), a, 8192))
    assert any("needs zero 3" in m for m in context_problems(Layout(1, 1, 8, 2, offload="nvme"), a, 8192))
    assert not context_problems(Layout(1, 1, 8, 3, offload="nvme"), a, 8192)


def test_instances_without_host_figures_have_no_offload_rates():
    assert "trn2.48xlarge" not in HOST
    assert all(np.isnan(host_rates("trn2.48xlarge", 64)))
    cl, _ = _setup("trn2.48xlarge")
    assert np.isnan(cl.host_link_gb_per_s)


def test_context_parallelism_divides_activations_and_compute_per_rank():
    w = Workload(preset("llama3-8b"), 32768, 16, "bf16")
    plain = Layout(1, 1, 32, 1, "full", 1)
    cp = Layout(1, 1, 8, 1, "full", 1, context=4)
    r = _run(w, [plain, cp])
    assert r.parts["cp_comm_s"][0] == 0 and r.parts["cp_comm_s"][1] > 0
    # The same 32 ranks and ZeRO-1 shards: four context ranks share a sequence, each holding a quarter
    # of its activations.
    first, _, last = stage_params(w, np.array([1]))
    state = float(max(first[0], last[0])) * (2 + 2 + 12 / 32) / GIB + 1.0  # + the fixed workspace
    act = r.memory_gib[0] - state
    assert r.memory_gib[1] - state == pytest.approx(act / 4, rel=1e-6)
    assert r.mfu[1] > 0


def test_all_to_all_context_comm_is_on_the_critical_path():
    w = Workload(preset("llama3-8b"), 32768, 16, "bf16")
    ring = Layout(1, 1, 8, 1, "full", 1, context=4)
    a2a = dataclasses.replace(ring, context_comm="all_to_all")
    r = _run(w, [ring, a2a])
    assert r.parts["cp_comm_s"][0] != r.parts["cp_comm_s"][1]
    assert r.parts["cp_comm_s"][1] > 0


def test_context_must_divide_the_sequence_and_names_the_nearest_degree():
    msgs = problems(Layout(1, 1, 8, context=3), preset("llama3-8b"), 24, 8, 64, 3, 8192)
    assert any("context 3 must divide the sequence length 8192 (nearest valid: context 2)" in m for m in msgs)


def test_all_to_all_needs_the_context_degree_to_divide_the_heads():
    a = preset("llama3-8b")  # 32 heads
    msgs = context_problems(Layout(8, 1, 1, context=8, context_comm="all_to_all"), a, 32768)
    assert any("must divide them (nearest valid: context 4" in m for m in msgs)


def test_fp8_runs_weight_matmuls_at_the_fp8_peak():
    lay = Layout(1, 1, 32, 1, "full", 1)
    bf16 = _run(W, [lay]).step_s[0]
    fp8 = _run(dataclasses.replace(W, dtype="fp8"), [lay]).step_s[0]
    cl, _ = _setup(dtype="fp8")
    assert cl.peak_tflops == pytest.approx(2 * cl.peak_16bit_tflops, rel=1e-3)
    assert fp8 < bf16  # matmuls at twice the peak; attention and the rest stay at BF16
    assert fp8 > bf16 / 2


def test_fixes_offer_offload_when_it_is_enough():
    from ecobench.parallel.search import Phase, fixes_that_fit

    lay = Layout(1, 1, 32, 1, "full", 1)
    cl, eff = _setup()
    r = evaluate(W, cl, Layouts.of([lay, dataclasses.replace(lay, offload="cpu")], 4), eff)
    tight = dataclasses.replace(cl, memory_gib=float(r.memory_gib.mean()))  # between the two needs
    fixes = fixes_that_fit([Phase(W, 1.0)], tight, lay, 4, eff)
    assert "offload: cpu" in fixes


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_default_recipe_streams_32_bytes_per_parameter_in_the_optimizer_step(dtype):
    w = dataclasses.replace(W, dtype=dtype)
    lay = Layout(1, 1, 32, 0, "full", 1)
    cl, eff = _setup(dtype=dtype)
    r = evaluate(w, cl, Layouts.of([lay], 4), eff)
    first, _, last = stage_params(w, np.array([1]))
    params = float(max(first[0], last[0]))
    assert r.parts["optimizer_s"][0] == pytest.approx(params * 32 / (eff.memory * cl.memory_gb_per_s * 1e9))
