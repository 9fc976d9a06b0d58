"""One replica's decode step, prefill and memory."""

import dataclasses

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.serving import (
    ServeWorkload,
    decode_step_s,
    kv_gib_per_sequence,
    max_batch_by_memory,
    memory_gib_per_rank,
    prefill_s,
    weights_gib_per_rank,
)
from ecobench.units import GIB
from ecobench.workloads.presets import preset


@pytest.fixture(scope="module")
def h100():
    cat = load_catalog()
    cl = instance_cluster(cat, cat.instance("p5.48xlarge"), "bf16")
    return cl, current_fit().efficiency("nvidia", "serving", "h100-sxm")


def _w(model="llama3-8b", tensor=1, **kw):
    return ServeWorkload(preset(model), 1024, 256, "bf16", tensor, **kw)


def test_kv_cache_and_weights_per_rank():
    w = _w()
    a = w.arch
    kv_bytes = 2 * a.layers * a.kv_heads * (a.hidden_size // a.heads) * 2  # K and V, bf16
    assert kv_gib_per_sequence(w) == pytest.approx((1024 + 256) * kv_bytes / GIB)
    assert weights_gib_per_rank(w) == pytest.approx(a.params * 2 / GIB)
    assert weights_gib_per_rank(_w(tensor=4)) == pytest.approx(weights_gib_per_rank(w) / 4)
    assert weights_gib_per_rank(_w(weight_dtype="int8")) == pytest.approx(weights_gib_per_rank(w) / 2)


def test_largest_batch_fits_and_one_more_does_not(h100):
    cl, _ = h100
    w = _w()
    cap = max_batch_by_memory(w, cl)
    assert cap > 1
    assert memory_gib_per_rank(w, cap) <= cl.memory_gib < memory_gib_per_rank(w, cap + 1)
    assert max_batch_by_memory(_w("llama2-70b"), cl) == 0  # 129 GiB of weights on an 80 GB GPU


def test_decode_is_at_least_the_weight_read_and_shared_by_the_batch(h100):
    cl, eff = h100
    w = _w()
    t = decode_step_s(w, cl, eff, np.array([1.0, 8.0, 64.0]))
    floor = w.arch.params * 2 / (cl.memory_gb_per_s * 1e9)
    assert t[0] >= floor
    assert t[0] < t[1] < t[2] and t[2] / 64 < t[0] / 4  # a batch shares the weight read


def test_tensor_parallel_splits_the_step_and_adds_all_reduces(h100):
    cl, eff = h100
    one, eight = (float(decode_step_s(_w("llama2-13b", t), cl, eff, np.array([1.0]))[0]) for t in (1, 8))
    assert one / 8 < eight < one
    no_latency = dataclasses.replace(eff, collective_latency_s=0.0)
    assert float(decode_step_s(_w("llama2-13b", 8), cl, no_latency, np.array([1.0]))[0]) < eight


def test_static_cache_reads_the_whole_compiled_length(h100):
    cl, eff = h100
    paged, static = (float(decode_step_s(_w(static_cache=s), cl, eff, np.array([32.0]))[0])
                     for s in (False, True))
    assert static > paged


def test_prefill_grows_with_prompts(h100):
    cl, eff = h100
    one, four = prefill_s(_w(), cl, eff, 1.0), prefill_s(_w(), cl, eff, 4.0)
    assert 3 * one < four <= 4.2 * one


def test_int8_weights_halve_the_weight_read_not_the_activations():
    from ecobench.parallel.serving import serve_kernels

    bf16, int8 = (serve_kernels(_w(weight_dtype=d))[0] for d in (None, "int8"))
    assert int8.weight_bytes.sum() == pytest.approx(bf16.weight_bytes.sum() / 2)
    assert np.all(int8.act_bytes >= 0) and int8.act_bytes.sum() == pytest.approx(bf16.act_bytes.sum())


def test_tensor_parallel_rings_get_the_chips_whole_link():
    """NeuronCores share their chip's NeuronLink: a ring crosses each chip boundary once, so it runs
    at the chip's link (the catalog's per-rank share times the ranks of a chip); a GPU's own link."""
    from ecobench.parallel.serving import tp_ring_gb_per_s

    cat = load_catalog()
    trn2 = instance_cluster(cat, cat.instance("trn2.48xlarge"), "bf16")
    gpu = instance_cluster(cat, cat.instance("p5.48xlarge"), "bf16")
    assert trn2.ranks_per_chip == 4 and gpu.ranks_per_chip == 1
    assert tp_ring_gb_per_s(trn2) == pytest.approx(4 * trn2.intra_gb_per_s)
    assert tp_ring_gb_per_s(gpu) == pytest.approx(gpu.intra_gb_per_s)


def test_static_shape_prefill_runs_its_padded_bucket(h100):
    cl, eff = h100
    plain = _w()
    padded = _w(prefill_bucket_tokens=2048)
    assert padded.prefill_tokens == plain.prefill_tokens == 1024 and padded.prefill_compute_tokens == 2048
    assert float(prefill_s(padded, cl, eff)) > 1.5 * float(prefill_s(plain, cl, eff))
    assert _w(prefill_bucket_tokens=512).prefill_compute_tokens == 1024  # a bucket never truncates
