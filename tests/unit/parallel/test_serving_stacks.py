"""Per-stack serving parameters: a fixed host cost per decode step, the collective latency, and the
repeated key/value reads of decode attention kernels that predate grouped-query kernels."""

import dataclasses

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import (
    HOST_STEP_STACKS,
    PCIE_ALL_REDUCE,
    PRIORS,
    UNSTATED_STACK,
    Fit,
    collective_key,
    current_fit,
    fitted_stacks,
    launch_key,
    prepared_points,
)
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


def test_only_a_host_bound_stack_pays_a_cost_per_sequence_of_a_step():
    fit = Fit({"seq_step.vllm": 7e-5, "seq_step.tensorrt-llm": 5e-5}, ())
    vllm = fit.efficiency("nvidia", "serving", "h100-sxm", "vllm")
    assert "vllm" in HOST_STEP_STACKS and vllm.seq_step_overhead_s == 7e-5 and vllm.steps_wait_on_host
    # a C++ runtime has none, whatever a parameter file holds; nor has training
    trt = fit.efficiency("nvidia", "serving", "h100-sxm", "tensorrt-llm")
    assert trt.seq_step_overhead_s == 0.0 and not trt.steps_wait_on_host
    # SGLang's overlap scheduler prepares the next batch while the device runs: no per-sequence stall
    assert fit.efficiency("nvidia", "serving", "a100-80gb", "sglang").seq_step_overhead_s == 0.0
    assert fit.efficiency("nvidia", "training", "h100-sxm", "vllm").seq_step_overhead_s == 0.0
    # a host-bound stack the fit never saw a point of: the sourced prior centre
    assert Fit({}, ()).efficiency("nvidia", "serving", "h100-sxm", "vllm").seq_step_overhead_s \
        == PRIORS["seq_step"][0]


def test_cost_per_sequence_grows_a_decode_step_with_its_batch(cluster):
    eff = current_fit().efficiency("nvidia", "serving", "h100-sxm", "tensorrt-llm")
    w = _w()
    more = dataclasses.replace(eff, seq_step_overhead_s=1e-4)
    diff = decode_step_s(w, cluster, more, BATCHES) - decode_step_s(w, cluster, eff, BATCHES)
    assert diff == pytest.approx(1e-4 * BATCHES, rel=1e-9)


def test_host_bound_steps_are_stalls_in_the_serving_activity(cluster):
    from ecobench.planning.serving import serving_activity

    eff = current_fit().efficiency("nvidia", "serving", "h100-sxm", "tensorrt-llm")
    w = _w()
    plain = serving_activity(w, cluster, eff, 32.0, 0.1)
    host = serving_activity(w, cluster, dataclasses.replace(eff, seq_step_overhead_s=1e-4), 32.0, 0.1)
    assert plain.stall == 0.0 and 0.0 < host.stall < 1.0
    assert host.compute + host.memory + host.stall == pytest.approx(1.0)
    assert host.compute < plain.compute and host.memory < plain.memory


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


def test_all_reduce_latency_is_fitted_per_implementation_across_stacks():
    """A source that states its all-reduce shares that implementation's latency with every stack that
    runs it; vLLM and TensorRT-LLM default to their custom all-reduce; other stacks keep their own."""
    fit = Fit({"collective.custom": 4e-6, "collective.nccl": 2e-5, "collective.transformers-neuronx": 3e-6},
              ())
    latency = lambda *args: fit.efficiency(*args).collective_latency_s  # noqa: E731
    assert latency("nvidia", "serving", "h100-sxm", "vllm") == 4e-6
    assert latency("nvidia", "serving", "a100-80gb", "sglang") == 4e-6  # SGLang's default too
    assert latency("nvidia", "serving", "h100-sxm", "tensorrt-llm", "nccl") == 2e-5
    assert latency("aws", "serving", "inferentia2", "transformers-neuronx") == 3e-6
    assert collective_key(UNSTATED_STACK) == f"collective.{UNSTATED_STACK}"
    assert collective_key(UNSTATED_STACK, "nccl") == "collective.nccl"


def test_published_points_take_the_all_reduce_and_grouping_of_their_runs():
    """The DLI sweep ran TensorRT-LLM's custom all-reduce on NVLink boards and NCCL on PCIe L40S (whose
    latency is fitted apart from NCCL's over NVLink); its XQA kernel serves groups of 8 query heads
    (Llama-2-70B) but not Mistral-7B's groups of 4."""
    by_id = {p.point.id: p for p in prepared_points()}
    assert by_id["dli_trt090_llama270b_h100sxm_fp8_tp4_b1_isl128_osl128"].all_reduce == "custom"
    pcie = by_id["dli_trt090_llama270b_l40s_fp8_tp4_b1_isl2048_osl128"]
    nvlink = by_id["trtllm_v05_llama270b_h100sxm_tp4_b64_isl128_osl128"]
    assert (pcie.all_reduce, nvlink.all_reduce) == (PCIE_ALL_REDUCE, "nccl")
    assert collective_key(pcie.stack, pcie.all_reduce) in pcie.keys
    assert collective_key(pcie.stack, pcie.all_reduce) != collective_key(nvlink.stack, nvlink.all_reduce)
    llama = by_id["dli_trt090_llama270b_h100sxm_fp8_tp4_b1_isl128_osl128"].serve
    mistral = by_id["dli_trt090_mistral7b_h100sxm_fp8_tp1_b64_isl128_osl2048"].serve
    assert llama is not None and mistral is not None
    assert llama.grouped_kv_reads and kv_reread_bytes(llama) == 0.0
    assert not mistral.grouped_kv_reads and kv_reread_bytes(mistral) > 0.0
    sglang = by_id["sglang056_llama3170b_a100_tp8_c1_isl610_osl422"]
    assert (sglang.stack, sglang.all_reduce) == ("sglang", "custom")
    assert collective_key(sglang.stack, sglang.all_reduce) == "collective.custom"


def test_a_moe_decode_step_reads_only_the_experts_its_tokens_route_to() -> None:
    from ecobench.parallel.serving import routed_read_share, serve_kernels, with_routed_reads

    mixtral = preset("mixtral-8x7b")  # 2 of 8 experts per token
    assert routed_read_share(mixtral, 1.0) == pytest.approx(2 / 8)
    assert routed_read_share(mixtral, 2.0) == pytest.approx(1 - (6 / 8) ** 2)
    assert routed_read_share(mixtral, 256.0) == pytest.approx(1.0, abs=1e-12)
    assert routed_read_share(preset("llama3-8b"), 1.0) == 1.0  # dense: every weight, every step
    w = ServeWorkload(mixtral, 128, 128, "bf16", tensor=2)
    decode, _ = serve_kernels(w)
    assert decode.routed is not None and decode.routed.sum() == 2 * mixtral.layers  # up and down per layer
    one = with_routed_reads(decode, mixtral, 1.0)
    routed = decode.weight_bytes[decode.routed].sum()
    assert one.weight_bytes.sum() == pytest.approx(decode.weight_bytes.sum() - 0.75 * routed)
    many = with_routed_reads(decode, mixtral, np.array([1.0, 64.0]))
    assert many.weight_bytes.shape == (2, len(decode.weight_bytes))


def test_an_eager_step_takes_the_longer_of_its_device_time_and_its_launches(cluster):
    """An eager engine launches every kernel from the host while the device runs: a step whose device
    time is short (an 8B model's decode at batch 1) is set by the launches (kernels x seconds each), a
    long one (a prefill of 64 prompts) by the device; the launches do not shrink with tensor
    parallelism (every rank launches the same kernels, plus its all-reduces)."""
    from ecobench.parallel.serving import launch_bound_s, serve_kernels, step_launches

    graph = current_fit().efficiency("nvidia", "serving", "h100-sxm", UNSTATED_STACK)
    assert graph.launch_s == 0.0
    eager = dataclasses.replace(graph, launch_s=5e-5)
    w = _w()
    decode, prefill = serve_kernels(w)
    launches = step_launches(w, decode)
    assert launches == np.count_nonzero(decode.flops > 0)  # TP 1: no all-reduce to launch
    one = np.array([1.0])
    device = decode_step_s(w, cluster, graph, one)[0] - graph.step_overhead_s
    assert 5e-5 * launches > device  # the premise: at batch 1 the launches take longer
    launch_bound = graph.step_overhead_s + 5e-5 * launches
    assert decode_step_s(w, cluster, eager, one)[0] == pytest.approx(launch_bound, rel=1e-3)
    # a prefill of 64 prompts of 1,024 tokens keeps the device busier than its launches
    assert prefill_s(w, cluster, eager, 64.0) == pytest.approx(prefill_s(w, cluster, graph, 64.0))
    assert launch_bound_s(np.array([1.0]), w, prefill, eager)[0] == 1.0
    w8 = _w(tensor=8)
    d8, _ = serve_kernels(w8)
    assert step_launches(w8, d8) == np.count_nonzero(d8.flops > 0) + 2 * w8.arch.layers  # + all-reduces
    assert np.count_nonzero(d8.flops > 0) == launches


def test_only_an_eager_source_pays_the_launches():
    """launch.eager.<accelerator> is a parameter of the sources that ran eager (the Splitwise profiles,
    AccelMark's vLLM V0 runs decoding past its CUDA-graph context limit);
    a source or a configuration with CUDA graphs (every stack's default) has no launch cost, so its
    predictions do not change whatever the launch cost is."""
    fit = Fit({launch_key("eager", "h100-sxm"): 4e-5}, ())
    assert fit.efficiency("nvidia", "serving", "h100-sxm", "vllm").launch_s == 0.0
    assert fit.efficiency("nvidia", "serving", "h100-sxm", "vllm", None, "graph").launch_s == 0.0
    assert fit.efficiency("nvidia", "training", "h100-sxm", "megatron", None, "eager").launch_s == 0.0
    assert fit.efficiency("nvidia", "serving", "h100-sxm", UNSTATED_STACK, "nccl", "eager").launch_s == 4e-5
    unseen = fit.efficiency("nvidia", "serving", "a100-80gb", UNSTATED_STACK, "nccl", "eager")
    assert unseen.launch_s == PRIORS["launch"][0]
    pts = prepared_points()
    eager = [p for p in pts if p.launch == "eager"]
    assert eager and {p.point.source for p in eager} == {"splitwise_sim_perf_model_llama2_70b",
                                                     "accelmark_vllm073_longctx"}
    assert all(launch_key("eager", p.accelerator) in p.keys for p in eager)
    graph = next(p for p in pts if p.serve is not None and p.launch is None and p.accelerator == "h100-sxm")
    assert not any(k.startswith("launch.") for k in graph.keys)
    values = current_fit().values
    with_graph = lambda f: f.efficiency(graph.vendor, graph.point.mode, graph.accelerator,  # noqa: E731
                                        graph.stack, graph.all_reduce, graph.launch)
    low, high = (Fit({**values, launch_key("eager", "h100-sxm"): v}, ()) for v in (1e-6, 1e-3))
    assert graph.predict(with_graph(low)) == graph.predict(with_graph(high))


def test_an_eager_step_rounds_the_turn_from_device_to_launch_bound():
    """The longer of device and launch time, a little more where they are close (never less than the
    longer, at most 2^(1/16) above it), and exactly the device's where nothing is launched."""
    from ecobench.parallel.serving import overlap_s

    device = np.array([1e-3, 1e-3, 1e-3, 0.0, 2e-2])
    host = np.array([0.0, 1e-3, 1.5e-3, 0.0, 1e-4])
    got = overlap_s(device, host)
    assert got[0] == device[0] and got[3] == 0.0
    assert got[1] == pytest.approx(1e-3 * 2 ** (1 / 16))
    assert np.all(got >= np.maximum(device, host))
    assert got[2] == pytest.approx(1.5e-3, rel=1e-4) and got[4] == pytest.approx(2e-2, rel=1e-12)


def test_an_eager_source_pays_a_cost_per_sequence_of_a_step_and_a_graph_runtime_does_not():
    """An engine that launches its kernels eagerly runs its step loop in Python (the Splitwise
    profiles: inferred a vLLM branch of 2023), so it pays seq_step.<stack> per sequence of a step and
    its steps wait on the host; a TensorRT-LLM source (C++ runtime, CUDA graphs) pays none."""
    fit = Fit({"seq_step.unstated": 3e-4, "seq_step.tensorrt-llm": 5e-5}, ())
    eager = fit.efficiency("nvidia", "serving", "a100-80gb", UNSTATED_STACK, "nccl", "eager")
    assert eager.seq_step_overhead_s == 3e-4 and eager.steps_wait_on_host
    graph = fit.efficiency("nvidia", "serving", "a100-80gb", UNSTATED_STACK, "nccl", "graph")
    assert graph.seq_step_overhead_s == 0.0 and not graph.steps_wait_on_host
    trt = fit.efficiency("nvidia", "serving", "h100-sxm", "tensorrt-llm", None, "graph")
    assert trt.seq_step_overhead_s == 0.0 and not trt.steps_wait_on_host
    pts = prepared_points()
    eager_pts = [p for p in pts if p.launch == "eager"]
    assert eager_pts and all(f"seq_step.{p.stack}" in p.keys for p in eager_pts)
    trt_pts = [p for p in pts if p.serve is not None and p.stack == "tensorrt-llm"]
    assert trt_pts and not any(k.startswith("seq_step.") for p in trt_pts for k in p.keys)
