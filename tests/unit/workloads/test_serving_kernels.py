"""Prefill and decode kernels against PyTorch's FLOP counter on a small Llama-style model."""

import pytest

from ecobench.workloads.architecture import Architecture
from ecobench.workloads.hf_config import to_transformers_config
from ecobench.workloads.transformer import decode_kernels, kv_cache_bytes_per_token, prefill_kernels, totals

SMALL = Architecture("small-llama", layers=2, hidden_size=256, heads=8, intermediate_size=688,
                     vocab_size=1000, max_position_embeddings=512, kind="decoder", kv_heads=2, ffn="swiglu",
                     tied_embeddings=False, norm="rmsnorm", position="rotary", bias=False, type_vocab_size=0)


def _cache_kwargs(model, out) -> dict:
    """The KV cache argument under this transformers version's name (``cache`` since 5.x deprecated
    ``past_key_values``, which older versions need)."""
    import inspect

    if "cache" in inspect.signature(model.forward).parameters:
        return {"cache": out.cache}
    return {"past_key_values": out.past_key_values}


def _mm(kernels):
    return sum(k.flops for k in kernels if k.kind in ("matmul", "attention"))


@pytest.mark.slow
def test_prefill_and_decode_flops_match_pytorch_counter():
    transformers = pytest.importorskip("transformers")
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(to_transformers_config(SMALL, transformers)).eval()
    prompt = torch.randint(1, SMALL.vocab_size, (1, 96))
    with torch.no_grad():
        counter = FlopCounterMode(display=False)
        with counter:
            out = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
        prefill = counter.get_total_flops()
        counter = FlopCounterMode(display=False)
        with counter:
            model(input_ids=prompt[:, :1], use_cache=True, **_cache_kwargs(model, out))
        decode = counter.get_total_flops()
    assert _mm(prefill_kernels(SMALL, 96, 1, "fp32")) == pytest.approx(prefill, rel=0.02)
    # the new token attends to the 96 cached tokens and to itself
    assert _mm(decode_kernels(SMALL, 97, 1, "fp32")) == pytest.approx(decode, rel=0.02)


def test_decode_reads_the_weights_once_per_batch_and_the_cache_per_sequence():
    one = totals(decode_kernels(SMALL, 400, 1, "bf16"))[1]
    eight = totals(decode_kernels(SMALL, 400, 8, "bf16"))[1]
    cache = 400 * kv_cache_bytes_per_token(SMALL, "bf16")
    assert cache == pytest.approx(400 * SMALL.layers * 2 * 2 * 32 * 2)
    assert eight < one / 2  # per sequence: the weights are shared by the batch
    int8 = totals(decode_kernels(SMALL, 400, 1, "bf16", weight_dtype="int8"))[1]
    assert int8 < 0.6 * one
    fp8_cache = totals(decode_kernels(SMALL, 400, 1, "bf16", kv_dtype="fp8"))[1]
    assert one - fp8_cache == pytest.approx(cache / 2, rel=0.01)
