"""Decoders, task heads and presets, checked against independent counts: parameter counts of the
``transformers`` models built from the same configs (meta device, nothing allocated or downloaded) and
FLOPs from PyTorch's FlopCounterMode running small models with random weights."""

import pytest

from ecobench.workloads import PRESETS, build_kernels
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.presets import PUBLISHED
from ecobench.workloads.transformer import forward_kernels, matmul_flops_per_token, tensor_split

DECODERS = ["gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b"]


def _mm(kernels):
    return sum(k.flops for k in kernels if k.kind in ("matmul", "attention"))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_params_within_one_percent_of_published(name):
    # BERT-Large's published "340M" is a rounded figure: the model has 335M (checked exactly below)
    rel = 0.015 if name == "bert-large" else 0.01
    assert PRESETS[name].params == pytest.approx(PUBLISHED[name].params, rel=rel)


def _hf_config(arch: Architecture):
    import transformers

    from ecobench.workloads.hf_config import to_transformers_config

    return to_transformers_config(arch, transformers)


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_preset_params_equal_transformers_model(name):
    transformers = pytest.importorskip("transformers")
    import torch

    arch = PRESETS[name]
    cfg = _hf_config(arch)
    cls = transformers.LlamaForCausalLM if arch.ffn == "swiglu" else transformers.GPT2LMHeadModel
    with torch.device("meta"):
        model = cls(cfg)
    # transformers counts a tied LM head once, as ecobench does
    assert arch.params == sum(p.numel() for p in model.parameters())


SMALL = {
    "llama-gqa": Architecture("small-llama", layers=2, hidden_size=256, heads=8, intermediate_size=688,
                              vocab_size=1000, max_position_embeddings=512, kind="decoder", kv_heads=2,
                              ffn="swiglu", tied_embeddings=False, norm="rmsnorm", position="rotary",
                              bias=False, type_vocab_size=0),
    "gpt2": Architecture("small-gpt2", layers=2, hidden_size=256, heads=4, intermediate_size=1024,
                         vocab_size=1000, max_position_embeddings=512, kind="decoder", type_vocab_size=0),
}


def _count(model, inputs, backward):
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        out = model(**inputs)
        if backward:
            out.logits.float().sum().backward()
    return counter.get_total_flops()


@pytest.mark.slow
@pytest.mark.parametrize("small", sorted(SMALL))
@pytest.mark.parametrize("mode", ["inference", "training"])
def test_decoder_flops_match_pytorch_counter(small, mode):
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    arch = SMALL[small]
    cls = transformers.LlamaForCausalLM if arch.ffn == "swiglu" else transformers.GPT2LMHeadModel
    model = cls(_hf_config(arch))
    model.train(mode == "training")
    s = 128
    inputs = {"input_ids": torch.randint(0, arch.vocab_size, (1, s))}
    if mode == "training":
        counted = _count(model, inputs, backward=True)
        ours = _mm(build_kernels(arch, s, 1, "fp32", "training"))
    else:
        with torch.no_grad():
            counted = _count(model, inputs, backward=False)
        ours = _mm(forward_kernels(arch, s, 1, "fp32", "training"))  # the causal LM computes its logits
    assert ours == pytest.approx(counted, rel=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_classification_head_flops_match_pytorch_counter(kind):
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    s = 128
    if kind == "encoder":
        arch = PRESETS["bert-base"]
        cfg = transformers.BertConfig(attn_implementation="eager", num_labels=3)
        model = transformers.BertForSequenceClassification(cfg)
    else:
        arch = SMALL["llama-gqa"]
        cfg = _hf_config(arch)
        cfg.num_labels = 3
        cfg.pad_token_id = 0
        model = transformers.LlamaForSequenceClassification(cfg)
    model.train()
    inputs = {"input_ids": torch.randint(1, arch.vocab_size, (1, s))}
    counted = _count(model, inputs, backward=True)
    ours = _mm(build_kernels(arch, s, 1, "fp32", "training", task="classification", num_labels=3))
    assert ours == pytest.approx(counted, rel=0.02)
    assert sum(p.numel() for p in model.parameters()) == arch.params + arch.head_params("classification", 3)


def test_fine_tuning_saves_the_pretraining_heads():
    """BERT-base at 128 tokens: the MLM/NSP heads cost about 28% more FLOPs than a classifier."""
    arch = PRESETS["bert-base"]
    pre = _mm(build_kernels(arch, 128, 1, "bf16", "training"))
    cls = _mm(build_kernels(arch, 128, 1, "bf16", "training", task="classification"))
    assert 1.2 < pre / cls < 1.35


def test_decoder_flops_per_token_are_two_n_plus_attention():
    """Forward FLOPs per token: 2 per weight used in a matmul (not the embedding table, which is
    looked up) plus QK^T and PV over the whole sequence."""
    arch = PRESETS["llama2-7b"]
    fwd = matmul_flops_per_token(arch, 4096)
    attention = 4 * arch.layers * 4096 * arch.hidden_size
    assert fwd == pytest.approx(2 * (arch.params - arch.vocab_size * arch.hidden_size) + attention, rel=1e-3)


def test_gqa_kv_heads_must_divide_heads_and_tensor_split():
    with pytest.raises(ValueError, match="kv_heads"):
        Architecture("x", layers=2, hidden_size=256, heads=8, intermediate_size=512, vocab_size=100,
                     kind="decoder", kv_heads=3)
    arch = PRESETS["llama3-70b"]  # 64 query heads, 8 key/value heads
    assert tensor_split(arch, 8) == (8, 1)
    assert tensor_split(arch, 32) == (2, 1)  # key/value heads replicated
    with pytest.raises(ValueError, match="divide"):
        tensor_split(arch, 3)


def test_fused_causal_attention_executes_half_the_scores():
    arch = PRESETS["llama2-7b"]
    (att,) = [k for k in forward_kernels(arch, 2048, 1, "bf16") if k.kind == "attention"][:1]
    assert att.executed_flops == pytest.approx(att.flops / 2)
