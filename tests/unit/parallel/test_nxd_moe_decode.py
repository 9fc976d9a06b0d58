"""Two sourced rules of Neuron serving stacks: NxD's MoE decode reads every expert once the step's
token copies reach the expert count (``forward_all_experts``), and optimum-neuron compiles one graph at
its sequence length (every prompt padded to it, every decode step over its whole cache)."""

import dataclasses

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import Fit, prepared_points
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.hardware.published import load_points
from ecobench.parallel.serving import (
    OPTIMUM_NEURON_STACK,
    ServeWorkload,
    compiled_graph_tokens,
    decode_step_s,
    nxd_decode_all_experts,
    prefill_fused_attention,
    routed_read_share,
    serve_kernels,
    with_routed_reads,
)
from ecobench.workloads.moe_blockwise import NXD_MOE_STACKS, prefill_block_tokens
from ecobench.workloads.presets import preset

QWEN3_MOE = preset("qwen3-30b-a3b")  # 8 of 128 experts per token


@pytest.fixture(scope="module")
def trn2():
    cat = load_catalog()
    return instance_cluster(cat, cat.instance("trn2.48xlarge"), "bf16")


def _moe(stack: str | None, static: bool = True, **kw) -> ServeWorkload:
    return ServeWorkload(QWEN3_MOE, 1500, 250, "bf16", 4, static_cache=static,
                         moe_block_tokens=prefill_block_tokens(static, stack), **kw)


def test_nxd_reads_every_expert_once_the_tokens_copies_reach_the_experts():
    # expert_mlps_v2.py (NxD 0.15) l.1120-1127: T k / E >= 1 -> forward_all_experts
    assert not nxd_decode_all_experts(QWEN3_MOE, 15.0) and nxd_decode_all_experts(QWEN3_MOE, 16.0)
    assert routed_read_share(QWEN3_MOE, 16.0, nxd=True) == 1.0
    assert routed_read_share(QWEN3_MOE, 64.0, nxd=True) == 1.0
    # below it, selective loading gathers each token's k experts: T k copies, T k / E of the bytes
    assert routed_read_share(QWEN3_MOE, 4.0, nxd=True) == pytest.approx(4 * 8 / 128)
    # other stacks: the experts the tokens pick under uniform routing, as before
    assert routed_read_share(QWEN3_MOE, 16.0) == pytest.approx(1 - (120 / 128) ** 16)
    assert routed_read_share(QWEN3_MOE, 16.0) < 0.65


def test_nxd_all_experts_runs_every_token_through_every_expert():
    decode, _ = serve_kernels(_moe("optimum-neuron-vllm"))
    assert decode.routed is not None
    full = decode.weight_bytes[decode.routed].sum()
    allx = with_routed_reads(decode, QWEN3_MOE, 16.0, nxd=True)
    assert allx.weight_bytes[decode.routed].sum() == pytest.approx(full)
    assert allx.flops[decode.routed].sum() == pytest.approx(decode.flops[decode.routed].sum() * 128 / 8)
    assert np.array_equal(allx.flops[~decode.routed], decode.flops[~decode.routed])
    sel = with_routed_reads(decode, QWEN3_MOE, 4.0, nxd=True)  # selective: the routed copies' FLOPs
    assert np.array_equal(sel.flops, decode.flops)
    batched = with_routed_reads(decode, QWEN3_MOE, np.array([4.0, 16.0]), nxd=True)
    assert batched.flops.shape == batched.weight_bytes.shape == (2, len(decode.flops))
    assert np.allclose(batched.flops[1], allx.flops) and np.allclose(batched.flops[0], sel.flops)


@pytest.mark.parametrize("stack", NXD_MOE_STACKS)
def test_the_nxd_stacks_decode_slower_at_batch_16_than_other_stacks(stack, trn2):
    eff = Fit({}, ()).efficiency("aws", "serving", "trainium2", stack)
    nxd = _moe(stack)
    other = _moe("transformers-neuronx")  # static shapes, not NxD's MoE module
    assert nxd.nxd_moe and not other.nxd_moe
    b = np.array([16.0])
    assert decode_step_s(nxd, trn2, eff, b)[0] > 1.2 * decode_step_s(other, trn2, eff, b)[0]
    one = np.array([1.0])  # one token: 8 of 128 experts either way
    assert decode_step_s(nxd, trn2, eff, one)[0] == pytest.approx(decode_step_s(other, trn2, eff, one)[0])


def test_a_gpu_stack_keeps_the_routed_share(trn2):
    gpu = _moe("vllm", static=False)
    assert not gpu.nxd_moe
    decode, _ = serve_kernels(gpu)
    assert np.array_equal(with_routed_reads(decode, QWEN3_MOE, 16.0, gpu.nxd_moe).weight_bytes,
                          with_routed_reads(decode, QWEN3_MOE, 16.0).weight_bytes)


def test_optimum_neuron_compiles_one_graph_at_its_sequence_length(trn2):
    assert compiled_graph_tokens(True, OPTIMUM_NEURON_STACK, 4096) == 4096
    # the same backend behind TGI or in a generate() loop (the Inf2 sources of 2026-11-29)
    for server in ("optimum-neuron-tgi", "optimum-neuron"):
        assert compiled_graph_tokens(True, server, 4096) == 4096
        assert not prefill_fused_attention(server, 1, 2048) and prefill_fused_attention(server, 1, 4096)
    assert compiled_graph_tokens(True, "nxd-inference", 4096) == 0  # buckets
    assert compiled_graph_tokens(False, OPTIMUM_NEURON_STACK, 4096) == 0  # not static shapes
    dense = preset("llama3-8b")
    one = ServeWorkload(dense, 1000, 250, "bf16", 4, static_cache=True, graph_tokens=4096)
    bucketed = ServeWorkload(dense, 1000, 250, "bf16", 4, static_cache=True)
    assert (one.prefill_compute_tokens, one.context) == (4096, 4096)
    assert (bucketed.prefill_compute_tokens, bucketed.context) == (1024, 1250)
    eff = Fit({}, ()).efficiency("aws", "serving", "trainium2", OPTIMUM_NEURON_STACK)
    b = np.array([32.0])  # the whole 4,096-token cache of 32 sequences read every step
    assert decode_step_s(one, trn2, eff, b)[0] > decode_step_s(bucketed, trn2, eff, b)[0]
    assert decode_step_s(dataclasses.replace(one, graph_tokens=1250), trn2, eff, b)[0] == pytest.approx(
        decode_step_s(bucketed, trn2, eff, b)[0])


def test_the_fit_takes_the_optimum_points_compiled_length_and_nxd_decode():
    by_id = {p.point.id: p for p in prepared_points() if p.serve is not None}
    optimum = [p for p in by_id.values() if p.stack == OPTIMUM_NEURON_STACK]
    assert len(optimum) == 8
    for p in optimum:
        assert p.serve.prefill_compute_tokens == p.serve.context == p.point.seq_len
        assert p.serve.nxd_moe
    # NxD Inference compiles buckets: its cache read stays the prompt plus output
    nxdi = by_id["neuron_trn2_llama_3_3_70b_b1_in10000_out1501"].serve
    assert nxdi.graph_tokens == 0 and nxdi.context == 10000 + 1501


def test_every_optimum_neuron_point_states_its_one_bucket():
    pts = load_points()
    for p in pts.points:
        if p.kind == "llm_serve" and (p.stack or pts.sources[p.source].stack) == OPTIMUM_NEURON_STACK:
            assert p.context_bucket_tokens == p.seq_len == 4096, p.id  # the .env's SEQUENCE_LENGTH


@pytest.mark.parametrize(("stack", "nxd", "graph"), [
    ("optimum-neuron-vllm", True, 2048), ("vllm-neuron", True, 0), (None, True, 0),  # None: NxD Inference
    ("transformers-neuronx", False, 0)])
def test_the_planner_takes_the_same_rules(stack, nxd, graph):
    from ecobench.planning.serving import _serve_workload, traffic_of
    from ecobench.scenario.model import HardwareConfig, ServingSpec

    spec = ServingSpec(requests_per_h=3600, input_tokens=1000, output_tokens=1048, ttft_ms=5000, tpot_ms=100)
    cfg = HardwareConfig(id="a", instance_type="trn2.48xlarge", precision="bf16", stack=stack)
    w = _serve_workload(QWEN3_MOE, traffic_of(spec), spec, cfg, 4, True, lnc=2)
    assert (w.nxd_moe, w.graph_tokens) == (nxd, graph)
