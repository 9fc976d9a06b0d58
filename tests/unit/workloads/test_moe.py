"""Mixture-of-experts and latent attention: parameters against the published counts and the
``transformers`` models, FLOPs of the active experts only, the latent cache, expert parallelism."""

import dataclasses

import numpy as np
import pytest

from ecobench.parallel.collectives import all_to_all_s
from ecobench.parallel.layout import Layout, problems
from ecobench.parallel.step import Layouts, Workload, evaluate
from ecobench.workloads import PRESETS
from ecobench.workloads.presets import PUBLISHED, PUBLISHED_ACTIVE
from ecobench.workloads.transformer import kv_cache_bytes_per_token, matmul_flops_per_token

MOE = ["mixtral-8x7b", "mixtral-8x22b", "deepseek-v3", "deepseek-v2", "qwen3-30b-a3b", "qwen3-235b-a22b"]


@pytest.mark.parametrize("name", MOE)
def test_total_and_active_params_match_published(name):
    a = PRESETS[name]
    assert a.params == pytest.approx(PUBLISHED[name].params, rel=0.01)
    # active counts are published rounded to the billion (37B, 21B): 2%
    assert a.active_params == pytest.approx(PUBLISHED_ACTIVE[name].params, rel=0.02)
    assert a.active_params < a.params


def test_mixtral_and_deepseek_v3_figures():
    mix, ds = PRESETS["mixtral-8x7b"], PRESETS["deepseek-v3"]
    assert mix.params / 1e9 == pytest.approx(46.7, abs=0.05)
    assert mix.active_params / 1e9 == pytest.approx(12.9, abs=0.05)
    assert ds.params / 1e9 == pytest.approx(671, abs=1)
    assert ds.active_params / 1e9 == pytest.approx(37, rel=0.02)
    assert ds.moe_layers == 58  # 61 layers, the first 3 dense


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_forward_flops_count_only_the_active_experts(name):
    a = PRESETS[name]
    s = 64  # short: attention's s^2 term small
    mm = matmul_flops_per_token(a, s, "training")
    core = 2 * a.heads * s * (a.qk_head_dim + a.v_head_dim) * a.layers  # attention scores and context
    # every matmul weight used once per token, twice its parameters: the active ones but the embedding
    # lookup (a gather) and the norms
    weights = a.active_params - a.vocab_size * a.hidden_size
    assert mm - core == pytest.approx(2 * weights, rel=2e-3)
    # all experts would cost several times more
    assert mm < 2 * (a.params - a.vocab_size * a.hidden_size) / 2


def test_mixtral_params_equal_transformers_model():
    transformers = pytest.importorskip("transformers")
    import torch

    a = PRESETS["mixtral-8x7b"]
    cfg = transformers.MixtralConfig(vocab_size=a.vocab_size, hidden_size=a.hidden_size,
                                     intermediate_size=a.moe.expert_intermediate_size,
                                     num_hidden_layers=a.layers, num_attention_heads=a.heads,
                                     num_key_value_heads=a.kv, num_local_experts=a.moe.experts,
                                     num_experts_per_tok=a.moe.experts_per_token, tie_word_embeddings=False)
    with torch.device("meta"):
        model = transformers.MixtralForCausalLM(cfg)
    assert a.params == sum(p.numel() for p in model.parameters())


def test_deepseek_v3_params_equal_transformers_model():
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "DeepseekV3Config"):
        pytest.skip("transformers without DeepSeek-V3")
    import torch

    a = PRESETS["deepseek-v3"]
    m, la = a.moe, a.mla
    cfg = transformers.DeepseekV3Config(
        vocab_size=a.vocab_size, hidden_size=a.hidden_size, intermediate_size=a.intermediate_size,
        moe_intermediate_size=m.expert_intermediate_size, num_hidden_layers=4, num_attention_heads=a.heads,
        num_key_value_heads=a.heads, n_shared_experts=m.shared_experts, n_routed_experts=m.experts,
        num_experts_per_tok=m.experts_per_token, first_k_dense_replace=m.first_dense_layers,
        kv_lora_rank=la.kv_lora_rank, q_lora_rank=la.q_lora_rank, qk_rope_head_dim=la.qk_rope_head_dim,
        qk_nope_head_dim=la.qk_nope_head_dim, v_head_dim=la.v_head_dim, tie_word_embeddings=False)
    with torch.device("meta"):
        model = transformers.DeepseekV3ForCausalLM(cfg)
    got = sum(p.numel() for p in model.parameters())
    small = dataclasses.replace(a, layers=4)
    assert small.params == got  # 3 dense layers and 1 MoE layer, MLA, untied head


def test_mla_cache_keeps_the_latent():
    ds = PRESETS["deepseek-v3"]
    assert kv_cache_bytes_per_token(ds, "bf16") == 61 * (512 + 64) * 2
    assert kv_cache_bytes_per_token(ds, "bf16", tensor=8) == kv_cache_bytes_per_token(ds, "bf16")
    # GQA: 8 key/value heads of 128, both keys and values
    assert kv_cache_bytes_per_token(PRESETS["mixtral-8x7b"], "bf16") == 32 * 2 * 8 * 128 * 2


def test_all_to_all():
    assert all_to_all_s(1e9, 1, 8, 400.0, 1e-6, 50.0, 5e-6) == 0.0
    inside = all_to_all_s(1e9, 8, 8, 400.0, 1e-6, 50.0, 5e-6)
    across = all_to_all_s(1e9, 16, 8, 400.0, 1e-6, 50.0, 5e-6)
    assert inside == pytest.approx(7 / 8 * 1e9 / 400e9 + 7e-6)
    assert across > 4 * inside  # half the buffer leaves the instance at an eighth of the bandwidth


def _cluster():
    from ecobench.hardware.backends.efficiency import current_fit
    from ecobench.hardware.catalog import load_catalog
    from ecobench.hardware.cluster import instance_cluster

    cat = load_catalog()
    cl = instance_cluster(cat, cat.instance("p5.48xlarge"), "bf16")
    return cl, current_fit().efficiency("nvidia", "training", "h100-sxm", "megatron")


def test_expert_parallelism_shards_memory_and_adds_all_to_all():
    cl, eff = _cluster()
    w = Workload(PRESETS["mixtral-8x7b"], 4096, 256, "bf16")
    lays = [Layout(1, 4, 16, 1, "selective", 1, expert=e) for e in (1, 2, 8)]
    r = evaluate(w, cl, Layouts.of(lays, 8), eff)
    mem = r.memory_gib
    assert mem[0] > mem[1] > mem[2]
    assert r.parts["ep_comm_s"][0] == 0.0 < r.parts["ep_comm_s"][1] < r.parts["ep_comm_s"][2]
    # MFU counts the active experts: the same model FLOPs whatever the split
    assert np.allclose(r.mfu * r.step_s, r.mfu[0] * r.step_s[0])


def test_capacity_factor_slows_the_step():
    cl, eff = _cluster()
    a = PRESETS["mixtral-8x7b"]
    skewed = dataclasses.replace(a, moe=dataclasses.replace(a.moe, capacity_factor=1.5))
    lay = Layouts.of([Layout(1, 4, 16, 1, "selective", 1, expert=8)], 8)
    even = evaluate(Workload(a, 4096, 256, "bf16"), cl, lay, eff)
    slow = evaluate(Workload(skewed, 4096, 256, "bf16"), cl, lay, eff)
    assert slow.step_s[0] > 1.1 * even.step_s[0]
    assert slow.mfu[0] < even.mfu[0]


def test_dense_models_are_unchanged_by_the_moe_code():
    a = PRESETS["llama2-7b"]
    assert a.active_params == a.params and a.moe_layers == 0
    assert a.layer_params == a.attention_params + a.ffn_params + 2 * a.norm_params


def test_expert_degree_problems():
    a = PRESETS["mixtral-8x7b"]
    msgs = problems(Layout(1, 1, 64, 0, expert=3), a, 64, 8, 256)
    assert any("must divide the 8 experts" in m and "nearest: 2" in m for m in msgs)
    assert any("data-parallel degree 64" in m for m in msgs)
    assert problems(Layout(1, 1, 64, 0, expert=8), a, 64, 8, 256) == []
    dense = problems(Layout(1, 1, 8, 0, expert=2), PRESETS["llama2-7b"], 8, 8, 256)
    assert any("has no experts" in m for m in dense)


def test_hf_configs_of_moe_models_read_as_the_presets():
    from ecobench.workloads.hf_config import architecture_from_hf

    mixtral = {"model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096,
               "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
               "vocab_size": 32000, "max_position_embeddings": 32768, "num_local_experts": 8,
               "num_experts_per_tok": 2}
    deepseek = {"model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168,
                "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 18432,
                "vocab_size": 129280, "max_position_embeddings": 163840, "n_routed_experts": 256,
                "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1,
                "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536,
                "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
    for cfg, name in ((mixtral, "mixtral-8x7b"), (deepseek, "deepseek-v3")):
        a = architecture_from_hf(cfg, "hf", "config.json")
        assert (a.params, a.active_params) == (PRESETS[name].params, PRESETS[name].active_params)
