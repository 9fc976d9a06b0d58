"""Serving options, one rule each: speculative decoding, prefix caching, quantization, an 8-bit cache
and replicas split into pipeline stages or spanning instances."""

import dataclasses

import numpy as np
import pytest

from ecobench.errors import InputError
from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.serving import (
    ServeWorkload,
    decode_step_s,
    kv_gib_per_sequence,
    max_batch_by_memory,
    prefill_s,
    stage_transfers_s,
    tp_all_reduce_s,
    weights_gib_per_rank,
)
from ecobench.parallel.speculative import Speculation, expected_tokens_per_step
from ecobench.parallel.step import WORKSPACE_GIB
from ecobench.planning.serving_options import quantized_cluster, workload_options
from ecobench.scenario.model import HardwareConfig, ServingSpec
from ecobench.units import GIB
from ecobench.workloads.presets import preset

BATCH = np.array([1.0, 8.0, 64.0])


@pytest.fixture(scope="module")
def p5():
    cat = load_catalog()
    inst = cat.instance("p5.48xlarge")
    return cat, cat.accelerator_of(inst), instance_cluster(cat, inst, "bf16"), \
        current_fit().efficiency("nvidia", "serving", "h100-sxm")


def _w(model="llama3-70b", tensor=8, **kw):
    return ServeWorkload(preset(model), 1024, 256, "bf16", tensor, **kw)


@pytest.mark.parametrize("a,k,expect", [(0.0, 4, 1.0), (1.0, 4, 5.0), (0.5, 2, 1.75), (0.8, 3, 2.952)])
def test_tokens_per_target_step_follow_leviathan(a, k, expect):
    assert expected_tokens_per_step(a, k) == pytest.approx(expect)


def test_speculation_pays_only_when_drafts_are_accepted(p5):
    _, _, cl, eff = p5
    plain = decode_step_s(_w(), cl, eff, BATCH)
    ngram_good = decode_step_s(_w(speculation=Speculation(4, 0.9)), cl, eff, BATCH)
    assert (ngram_good[:2] < plain[:2] / 2).all()  # memory-bound small batches: about 4x fewer steps
    draft_bad = decode_step_s(_w(speculation=Speculation(4, 0.0, preset("llama3-8b"))), cl, eff, BATCH)
    assert (draft_bad > plain).all()  # nothing accepted: the drafter's steps and the verification are waste


def test_drafter_size_scales_its_steps_and_takes_memory(p5):
    _, _, cl, eff = p5
    small = decode_step_s(_w(speculation=Speculation(3, 0.7, draft_params=1e9)), cl, eff, BATCH)
    large = decode_step_s(_w(speculation=Speculation(3, 0.7, draft_params=8e9)), cl, eff, BATCH)
    assert (small < large).all()
    with_draft = _w(speculation=Speculation(3, 0.7, draft_params=7e9))
    assert weights_gib_per_rank(with_draft) > weights_gib_per_rank(_w())


def _kv_bytes_per_token(arch, tensor: int, nbytes: int = 2) -> float:
    """Keys and values of every layer, the key/value heads split over ``tensor`` ranks (at least one)."""
    return arch.layers * 2 * max(arch.kv_heads // tensor, 1) * arch.head_dim * nbytes


@pytest.mark.parametrize("model,drafter,kv_dtype,nbytes", [
    ("llama3-70b", "llama3-8b", None, 2),  # GQA drafter: its cache 0.4 of the target's per token
    ("llama2-70b", "llama2-7b", None, 2),  # MHA drafter: 1.6 times the target's (32 kv heads vs 8)
    ("llama3-70b", "llama3-8b", "fp8", 1),  # an 8-bit cache: the drafter's in the target's cache type
])
def test_a_draft_models_own_cache_shrinks_the_batch_by_its_share(p5, model, drafter, kv_dtype, nbytes):
    """A draft model keeps its own key/value cache per sequence (vLLM gives it as many blocks as the
    target's): the batch the memory holds is the free memory over the target's and the drafter's cache
    per sequence together. It counted the target's alone (llama3-70b with a llama3-8b drafter on p5 at
    tensor 8, 1,024 + 256 tokens: 1,243 sequences, now 888; llama2-70b with llama2-7b: 1,256 -> 483).
    A drafter given by size alone (same weights) and n-gram lookup keep none."""
    _, _, cl, _ = p5
    target, draft = preset(model), preset(drafter)
    plain = _w(model, kv_dtype=kv_dtype)
    with_model = _w(model, kv_dtype=kv_dtype, speculation=Speculation(4, 0.7, draft))
    by_size = _w(model, kv_dtype=kv_dtype, speculation=Speculation(4, 0.7, draft_params=draft.params))
    ngram = _w(model, kv_dtype=kv_dtype, speculation=Speculation(4, 0.7))
    tokens = 1024 + 256
    free_gib = cl.memory_gib - (target.params + draft.params) * 2 / 8 / GIB - WORKSPACE_GIB
    target_kv, draft_kv = _kv_bytes_per_token(target, 8, nbytes), _kv_bytes_per_token(draft, 8, nbytes)
    assert max_batch_by_memory(with_model, cl) == int(free_gib * GIB // (tokens * (target_kv + draft_kv)))
    assert max_batch_by_memory(by_size, cl) == int(free_gib * GIB // (tokens * target_kv))
    assert max_batch_by_memory(with_model, cl) < max_batch_by_memory(by_size, cl)
    assert kv_gib_per_sequence(with_model) * GIB == pytest.approx(tokens * (target_kv + draft_kv))
    assert kv_gib_per_sequence(ngram) == kv_gib_per_sequence(by_size) == kv_gib_per_sequence(plain)
    assert max_batch_by_memory(ngram, cl) == max_batch_by_memory(plain, cl)


def test_prefix_cache_hits_skip_prefill_not_decode(p5):
    _, _, cl, eff = p5
    cached = _w(cached_input_tokens=768)
    assert cached.prefill_tokens == 256
    assert float(prefill_s(cached, cl, eff)) < 0.4 * float(prefill_s(_w(), cl, eff))
    assert decode_step_s(cached, cl, eff, BATCH) == pytest.approx(decode_step_s(_w(), cl, eff, BATCH))


def test_a_padded_prefill_draws_as_the_bucket_it_runs_whatever_the_cache_hits():
    """Neuron pads a prompt to its context-encoding bucket: 1,024 prompt tokens with 256 found in the
    prefix cache still run the 1,024-token graph, kernels and all-reduces alike (prefill_s), so the
    busy replica's activity is the uncached prompt's. The activity once charged the all-reduces at the
    768 uncached tokens beside kernels at 1,024, shifting the prefill's time from its all-reduces to
    compute: a prefix cache raised the Neuron rows' accelerator draw (llama3_8b_chat inf2 at a 25% hit
    rate: 799.8 -> 806.6 W, energy per output token +0.4% at the same plan)."""
    from ecobench.planning.serving import serving_activity

    cat = load_catalog()
    inst = cat.instance("inf2.48xlarge")
    cl = instance_cluster(cat, inst, "bf16")
    eff = current_fit().efficiency("aws", "serving", inst.spec.accelerator)
    plain = ServeWorkload(preset("llama3-8b"), 1024, 256, "bf16", 8, static_cache=True)
    hit = dataclasses.replace(plain, cached_input_tokens=256)
    assert (hit.prefill_tokens, hit.prefill_compute_tokens, plain.prefill_compute_tokens) == (768, 1024, 1024)
    assert float(prefill_s(hit, cl, eff)) == pytest.approx(float(prefill_s(plain, cl, eff)), rel=1e-12)
    for share in (1.0, 0.3):
        a, b = serving_activity(hit, cl, eff, 16.0, share), serving_activity(plain, cl, eff, 16.0, share)
        assert (a.compute, a.memory, a.stall) == pytest.approx((b.compute, b.memory, b.stall), rel=1e-12)

def test_weight_and_cache_quantization_bytes():
    w = _w()
    assert weights_gib_per_rank(_w(weight_dtype="int8")) == pytest.approx(weights_gib_per_rank(w) / 2)
    assert weights_gib_per_rank(_w(weight_dtype="int4")) == pytest.approx(weights_gib_per_rank(w) / 4)
    assert kv_gib_per_sequence(_w(kv_dtype="fp8")) == pytest.approx(kv_gib_per_sequence(w) / 2)


def _cfg(**kw):
    return HardwareConfig(id="a", instance_type="p5.48xlarge", precision="bf16", **kw)


def test_w8a8_runs_weight_matmuls_at_the_8bit_peak(p5):
    _, acc, cl, eff = p5
    q = quantized_cluster(cl, acc, "fp8")
    assert q.peak_tflops == pytest.approx(acc.peak_tflops["fp8"])
    assert q.peak_16bit_tflops == pytest.approx(cl.peak_tflops)
    assert quantized_cluster(cl, acc, "int4") is cl
    w8 = _w(tensor=1, weight_dtype="fp8")  # one rank: the prompt's kernels alone, no all-reduce
    prompt = float(prefill_s(w8, q, eff))  # compute-bound: faster at the 8-bit peak
    assert prompt < 0.8 * float(prefill_s(w8, cl, eff))


def test_w8a8_refused_where_the_chip_has_no_8bit_peak():
    cat = load_catalog()
    inst = cat.instance("p4d.24xlarge")  # A100: INT8, no FP8
    acc = cat.accelerator_of(inst)
    cl = instance_cluster(cat, inst, "bf16")
    with pytest.raises(InputError, match="no published fp8 peak.*allowed: int8, int4"):
        quantized_cluster(cl, acc, "fp8")
    assert quantized_cluster(cl, acc, "int8").peak_tflops == pytest.approx(
        acc.peak_tflops["int8"])


def test_options_off_leave_the_workload_unchanged():
    spec = ServingSpec(requests_per_h=3600, input_tokens=1000, output_tokens=100, ttft_ms=1000, tpot_ms=50)
    assert workload_options(spec, _cfg()) == {}
    hit = workload_options(spec.model_copy(update={"prefix_cache_hit_rate": 0.9}), _cfg())
    assert hit == {"cached_input_tokens": 900}


def test_pipeline_stages_split_memory_and_add_transfers(p5):
    _, _, cl, eff = p5
    big = _w("llama2-70b", tensor=4)
    two = dataclasses.replace(big, pipeline=2)
    assert weights_gib_per_rank(two) == pytest.approx(weights_gib_per_rank(big) / 2)
    assert kv_gib_per_sequence(two) == pytest.approx(kv_gib_per_sequence(big) / 2)
    assert max_batch_by_memory(two, cl) > 2 * max_batch_by_memory(big, cl)
    # a round: the whole model at B/2 per micro-batch plus one transfer (stages inside one instance)
    step = decode_step_s(two, cl, eff, BATCH)
    half = BATCH / 2
    assert step == pytest.approx(decode_step_s(big, cl, eff, half) + stage_transfers_s(two, cl, half))
    assert (stage_transfers_s(two, cl, BATCH) > 0).all()
    spanning = dataclasses.replace(big, tensor=8, pipeline=2)  # 16 ranks: two p5 instances
    inside = dataclasses.replace(big, tensor=4, pipeline=2)
    assert (stage_transfers_s(spanning, cl, BATCH) > stage_transfers_s(inside, cl, BATCH)).all()


def test_tensor_over_instances_all_reduces_over_the_network(p5):
    _, _, cl, eff = p5
    inside, across = _w(tensor=8), _w(tensor=16)
    tokens = np.array([64.0])
    assert tp_all_reduce_s(across, cl, eff, tokens)[0] > tp_all_reduce_s(inside, cl, eff, tokens)[0]
