"""Per-stack serving parameters: a fixed host cost per decode step, the collective latency, and the
repeated key/value reads of decode attention kernels that predate grouped-query kernels."""

import dataclasses

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import PRIORS, UNSTATED_STACK, Fit, current_fit, fitted_stacks
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.serving import ServeWorkload, decode_step_s, kv_reread_bytes, prefill_s
from ecobench.workloads.presets import preset
from ecobench.workloads.transformer import kv_cache_bytes_per_token

BATCHES = np.array([1.0, 8.0, 64.0])


@pytest.fixture(scope="module")
def cluster():
    cat = load_catalog()
    return instance_cluster(cat, cat.instance("p5.48xlarge"), "bf16")


def _w(model="llama3-8b", tensor=1, **kw):
    return ServeWorkload(preset(model), 1024, 256, "bf16", tensor, **kw)


def test_each_stack_gets_its_own_step_cost_and_collective_latency():
    fit = Fit({"step.fast": 1e-4, "step.slow": 8e-3, "collective.fast": 3e-6, "collective.slow": 3e-5}, ())
    fast = fit.efficiency("nvidia", "serving", "h100-sxm", "fast")
    slow = fit.efficiency("nvidia", "serving", "h100-sxm", "slow")
    unseen = fit.efficiency("nvidia", "serving", "h100-sxm", "never-seen")
    assert (fast.step_overhead_s, slow.step_overhead_s) == (1e-4, 8e-3)
    assert (fast.collective_latency_s, slow.collective_latency_s) == (3e-6, 3e-5)
    assert unseen.step_overhead_s == PRIORS["step"][0]  # a stack never fitted: the prior centre
    assert fit.efficiency("nvidia", "training", "h100-sxm", "slow").step_overhead_s == 0.0


def test_step_cost_adds_once_per_decode_step_and_not_to_prefill(cluster):
    eff = current_fit().efficiency("nvidia", "serving", "h100-sxm", "vllm")
    w = _w()
    base = dataclasses.replace(eff, step_overhead_s=0.0)
    more = dataclasses.replace(eff, step_overhead_s=2e-3)
    diff = decode_step_s(w, cluster, more, BATCHES) - decode_step_s(w, cluster, base, BATCHES)
    assert diff == pytest.approx(np.full(3, 2e-3), rel=1e-9)
    assert prefill_s(w, cluster, more, 4.0) == pytest.approx(prefill_s(w, cluster, base, 4.0))


def test_tensor_parallel_step_grows_with_the_stack_collective_latency(cluster):
    eff = current_fit().efficiency("nvidia", "serving", "h100-sxm", "vllm")
    w = _w("llama2-70b", tensor=4)
    lo = decode_step_s(w, cluster, dataclasses.replace(eff, collective_latency_s=2e-6), BATCHES)
    hi = decode_step_s(w, cluster, dataclasses.replace(eff, collective_latency_s=2e-5), BATCHES)
    # two all-reduces per layer, each 2 x log2(4) latency steps
    expected = w.arch.layers * 2 * 2 * 2 * (2e-5 - 2e-6)
    assert hi - lo == pytest.approx(np.full(3, expected), rel=1e-6)


def test_ungrouped_decode_attention_reads_each_kv_head_once_per_query_head(cluster):
    gqa = _w(grouped_kv_reads=False)  # llama3-8b: 32 query heads over 8 key/value heads
    per_token = kv_cache_bytes_per_token(gqa.arch, "bf16")
    assert kv_reread_bytes(gqa) == pytest.approx(3 * per_token * gqa.context)
    assert kv_reread_bytes(_w()) == 0.0  # a grouped kernel
    assert kv_reread_bytes(_w("llama2-7b", grouped_kv_reads=False)) == 0.0  # multi-head: no groups
    eff = dataclasses.replace(current_fit().efficiency("nvidia", "serving", "h100-sxm", "tensorrt-llm"),
                              kv_reread=0.5)
    extra = decode_step_s(gqa, cluster, eff, BATCHES) - decode_step_s(_w(), cluster, eff, BATCHES)
    bandwidth = eff.memory * cluster.memory_gb_per_s * 1e9
    assert extra == pytest.approx(0.5 * BATCHES * kv_reread_bytes(gqa) / bandwidth, rel=1e-9)


def test_stored_fit_has_a_step_cost_per_serving_stack_and_offers_no_unstated_stack():
    values = current_fit().values
    for stack in ("tensorrt-llm", "vllm", "transformers-neuronx", UNSTATED_STACK):
        lo, hi = 1e-6, 0.2
        assert lo < values[f"step.{stack}"] < hi, stack
    assert UNSTATED_STACK not in fitted_stacks()
    assert {"tensorrt-llm", "vllm", "transformers-neuronx"} <= set(fitted_stacks())
