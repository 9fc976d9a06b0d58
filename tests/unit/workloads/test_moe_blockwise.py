"""NxD's blockwise routed experts in a Neuron prefill: the path ExpertMLPsV2.forward takes, the
blocks forward_blockwise provisions, and the kernels' rows, weights and moved bytes."""

import pytest

from ecobench.parallel.serving import ServeWorkload, serve_kernels
from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads import PRESETS
from ecobench.workloads.moe_blockwise import (
    NXD_BLOCK_TOKENS,
    blockwise_blocks,
    expert_path,
    expert_work,
    nxd_prefill_kernels,
)
from ecobench.workloads.transformer import prefill_kernels


def test_paths_follow_expert_mlps_v2_forward():
    # T k / E < 1: selective loading; T k < block: all experts; else blockwise
    assert expert_path(tokens=8, experts=128, top_k=8) == "selective"  # 64 / 128
    assert expert_path(tokens=16, experts=128, top_k=8) == "all_experts"  # 128 copies < 512
    assert expert_path(tokens=63, experts=128, top_k=8) == "all_experts"  # 504 < 512
    assert expert_path(tokens=64, experts=128, top_k=8) == "blockwise"  # 512
    assert expert_path(tokens=600, experts=16, top_k=1) == "blockwise"


def test_blocks_are_the_worst_case_provisioning():
    # N = ceil((T k - (E - 1)) / B) + E - 1: the deep dive's example (1000 tokens, 8 experts, top 2,
    # block 256) gives ceil(1993 / 256) + 7 = 15
    assert blockwise_blocks(1000, 8, 2, 256) == 15
    # Qwen3-30B-A3B's 2048-token bucket: 16384 copies, 128 experts: ceil(16257 / 512) + 127
    assert blockwise_blocks(2048, 128, 8) == 32 + 127
    # Llama 4 Scout (16 experts, top 1): ceil(2033 / 512) + 15
    assert blockwise_blocks(2048, 16, 1) == 4 + 15
    # never more blocks than token copies (T k smaller than E)
    assert blockwise_blocks(3, 128, 8, 1) == 24
    # every worst-case routing fits: E - 1 experts with one copy each, the rest on one expert
    for tokens, experts, k in [(2048, 128, 8), (512, 128, 4), (1500, 16, 1), (777, 64, 6)]:
        pairs = tokens * k
        worst = (experts - 1) + -(-(pairs - (experts - 1)) // NXD_BLOCK_TOKENS)
        assert blockwise_blocks(tokens, experts, k) >= worst


def test_expert_work_counts_padded_rows_and_one_expert_per_block():
    w = expert_work(2048, 128, 8)
    assert w.path == "blockwise" and w.blocks == 159
    assert w.rows == 159 * 512 > 2048 * 8  # padded blocks: ~5x the routed copies
    assert w.weight_copies == 159  # one expert's weights per block
    assert w.moved_rows == 3 * 159 * 512  # gather, read and write back the output rows
    a = expert_work(16, 128, 8)
    assert (a.rows, a.weight_copies) == (128 * 16, 128)  # every expert over every token


def test_prefill_kernels_of_a_moe_layer():
    arch = PRESETS["qwen3-30b-a3b"]
    m = arch.moe
    tokens, tensor, b = 2048, 4, BYTES_PER_DTYPE["bf16"]
    base = prefill_kernels(arch, tokens, 1, "bf16", tensor)
    ks = nxd_prefill_kernels(base, arch, tokens, "bf16", tensor)
    assert len(ks) == len(base)
    h, f = arch.hidden_size, m.expert_intermediate_size // tensor
    up = [k for k in ks if k.name == "moe.experts.up"]
    base_up = [k for k in base if k.name == "moe.experts.up"]
    assert len(up) == arch.moe_layers
    n = 159
    assert up[0].flops == pytest.approx(2.0 * n * 512 * h * 2 * f)
    assert up[0].flops / base_up[0].flops == pytest.approx(n * 512 / (tokens * m.experts_per_token))
    act = n * 512 * (h + 2 * f) * b
    assert up[0].bytes == pytest.approx(act + n * h * 2 * f * b)  # a block's expert's weights, N times
    perm = [k for k in ks if k.name == "moe.permute"][0]
    assert perm.bytes == pytest.approx(3 * n * 512 * h * b)
    # what is not a routed expert is unchanged
    rest = [k for k in ks if not k.name.startswith(("moe.experts", "moe.permute"))]
    assert rest == [k for k in base if not k.name.startswith(("moe.experts", "moe.permute"))]


def test_only_neuron_nxd_workloads_and_moe_models_change():
    moe, dense = PRESETS["qwen3-30b-a3b"], PRESETS["llama3-8b"]
    nxd = ServeWorkload(moe, 1500, 250, "bf16", 4, static_cache=True, prefill_bucket_tokens=2048,
                        moe_block_tokens=NXD_BLOCK_TOKENS)
    plain = ServeWorkload(moe, 1500, 250, "bf16", 4, static_cache=True, prefill_bucket_tokens=2048)
    assert serve_kernels(nxd)[1].flops.sum() > 2 * serve_kernels(plain)[1].flops.sum()
    assert (serve_kernels(nxd)[0].flops == serve_kernels(plain)[0].flops).all()  # decode unchanged
    d1 = ServeWorkload(dense, 1500, 250, "bf16", 4, moe_block_tokens=NXD_BLOCK_TOKENS)
    d0 = ServeWorkload(dense, 1500, 250, "bf16", 4)
    assert (serve_kernels(d1)[1].flops == serve_kernels(d0)[1].flops).all()
    # a short prompt takes the selective path: the routed copies only
    short = prefill_kernels(moe, 8, 1, "bf16", 4)
    assert nxd_prefill_kernels(short, moe, 8, "bf16", 4) == short


def test_serve_point_prefills_moe_blockwise_on_neuron_nxd_only():
    from ecobench.planning.serve_point import serve_point

    def ttft(stack):
        p = serve_point("qwen3-30b-a3b", "trn2.48xlarge", "bf16", 1, 1500, 250, tensor=4, stack=stack)
        return p.figures["ttft_ms"][0]

    # the default Neuron stack runs NxD's MoE module (blockwise: 159 blocks for 16,384 routed copies);
    # transformers-neuronx computes the routed copies alone (a GPU stack such as vllm is refused on
    # trn2 since its factors were fitted on NVIDIA runs only: hardware/backends/stacks.py)
    assert ttft(None) > 1.5 * ttft("transformers-neuronx")


def test_one_rule_decides_blockwise_prefill():
    from ecobench.workloads.moe_blockwise import prefill_block_tokens

    assert prefill_block_tokens(True, None) == NXD_BLOCK_TOKENS  # Neuron, default stack: NxD Inference
    assert prefill_block_tokens(True, "vllm-neuron") == NXD_BLOCK_TOKENS
    assert prefill_block_tokens(True, "transformers-neuronx") == 0
    assert prefill_block_tokens(False, "nxd-inference") == 0  # dynamic shapes (GPU): routed copies only


def test_planner_and_serve_point_time_a_neuron_moe_prefill_alike():
    """The serving planner's workload runs NxD's blockwise experts as serve-point's does: the same
    prefill time for the same Neuron MoE request."""
    from ecobench.hardware.backends.efficiency import current_fit
    from ecobench.hardware.catalog import load_catalog
    from ecobench.hardware.cluster import instance_cluster
    from ecobench.parallel.serving import prefill_s
    from ecobench.planning.serve_point import serve_point
    from ecobench.planning.serving import _serve_workload, traffic_of
    from ecobench.scenario.model import HardwareConfig, ServingSpec

    cat = load_catalog()
    inst = cat.instance("trn2.48xlarge")
    acc = cat.accelerator_of(inst)
    assert acc is not None and acc.static_kv_cache
    spec = ServingSpec(requests_per_h=3600, input_tokens=1500, output_tokens=250, ttft_ms=5000, tpot_ms=100)
    cfg = HardwareConfig(id="a", instance_type="trn2.48xlarge", precision="bf16")
    point = serve_point("qwen3-30b-a3b", "trn2.48xlarge", "bf16", 1, 1500, 250, tensor=4)
    planned = _serve_workload(PRESETS["qwen3-30b-a3b"], traffic_of(spec), spec, cfg, 4, True)
    assert planned.moe_block_tokens == NXD_BLOCK_TOKENS
    fit = current_fit()
    eff = fit.efficiency(acc.vendor, "serving", inst.spec.accelerator, None)
    cl = instance_cluster(cat, inst, "bf16")
    planner_ms = 1e3 * (float(prefill_s(planned, cl, eff, 1.0)) + fit.request_overhead_s(acc.vendor)
                        + eff.step_overhead_s)
    assert point.figures["ttft_ms"][0] == pytest.approx(planner_ms, rel=1e-9)
