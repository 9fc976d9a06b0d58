"""Neuron prefill attention as the stacks ran it (flash kernel or score matrix in memory), and published
serving figures held out against but not fitted on (issue 22)."""

import dataclasses

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import current_fit, prepare, prepared_points
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.hardware.published import PublishedPoint, load_points
from ecobench.parallel.serving import ServeWorkload, prefill_fused_attention, prefill_s
from ecobench.workloads.presets import preset
from ecobench.workloads.transformer import prefill_kernels, totals


def test_unfused_prefill_writes_the_score_matrix_through_memory():
    arch = preset("llama3-8b")
    _, fused = totals(prefill_kernels(arch, 4096, 1, "bf16", 8))
    _, unfused = totals(prefill_kernels(arch, 4096, 1, "bf16", 8, fused_attention=False))
    heads = arch.heads // 8
    # at least the softmax's read and write of every score, on top of the fused kernel's traffic
    assert unfused - fused >= 2 * heads * 4096 * 4096 * 2 * arch.layers * 0.99


def test_unfused_attention_slows_a_long_prefill_more_than_a_short_one():
    cat = load_catalog()
    cl = instance_cluster(cat, cat.instance("inf2.48xlarge"), "fp16")
    eff = current_fit().efficiency("aws", "serving", "inferentia2", "transformers-neuronx")

    def ratio(tokens: int) -> float:
        w = ServeWorkload(preset("llama3-8b"), tokens, 128, "fp16", 24, static_cache=True)
        slow = prefill_s(dataclasses.replace(w, fused_attention=False), cl, eff)
        return float(slow / prefill_s(w, cl, eff))

    assert ratio(128) < ratio(4096)
    assert ratio(4096) > 1.05


@pytest.mark.parametrize(("stack", "lnc", "tokens", "stated", "fused"), [
    ("optimum-neuron-vllm", 2, 2048, True, True),  # Trainium2: buckets that are multiples of 1,024
    ("optimum-neuron-vllm", 2, 1536, True, False),
    ("optimum-neuron-vllm", 2, 512, True, False),
    ("optimum-neuron-vllm", 1, 2048, True, False),  # Inferentia2 / Trainium: 4,096 and up
    ("optimum-neuron-vllm", 1, 4096, True, True),
    ("nxd-inference", 1, 512, True, True),  # other stacks: what the source states
    ("transformers-neuronx", 1, 8192, False, False),
    ("optimum-neuron-vllm", 2, 2048, False, False),
])
def test_optimum_neuron_calls_the_flash_kernel_only_on_some_buckets(stack, lnc, tokens, stated, fused):
    assert prefill_fused_attention(stack, lnc, tokens, stated) is fused


def test_the_neuron_2_18_tables_prefill_unfused_and_optimum_inf2_too():
    by_source = {}
    for p in prepared_points():
        if p.serve is not None:
            by_source.setdefault(p.point.source, set()).add(p.serve.fused_attention)
    assert by_source["neuron_inf2_decoder_serving"] == {False}
    assert by_source["neuron_trn1_decoder_serving"] == {False}
    # optimum-neuron pads every prompt to its one graph, SEQUENCE_LENGTH 4096: the flash kernel at LNC=1 too
    assert by_source["optimum_neuron_vllm_inf2"] == {True}  # bucket 4096 at LNC=1
    assert by_source["optimum_neuron_vllm_trn2"] == {True}  # bucket 4096 at LNC=2
    assert by_source["neuron_nxdi_trn2_tutorials"] == {True}


def test_unfitted_figures_are_not_fitted_on_but_still_published():
    pts, cat = load_points(), load_catalog()
    p = next(p for p in pts.points if p.id == "neuron_trn1_llama_2_13b_b1_in8192_out8192")
    assert set(p.unfitted_figures) == {"ttft_ms", "output_tokens_per_s"}
    assert [f for f, _, _ in prepare(p, pts, cat).targets] == ["tpot_ms"]
    plain = p.model_copy(update={"unfitted_figures": ()})
    assert {f for f, _, _ in prepare(plain, pts, cat).targets} == {"tpot_ms", "ttft_ms"}
    held = [r for r in current_holdout_rows() if r["point"] == p.id]
    assert {r["figure"] for r in held} == {"tpot_ms", "ttft_ms", "output_tokens_per_s"}


def current_holdout_rows() -> list[dict]:
    """The stored held-out predictions of the Neuron 2.18 trn1 table (what validate reports)."""
    from ecobench.hardware.backends.residuals import held_out

    return [{"point": r.point.id, "figure": r.figure} for r in held_out("analytic")
            if r.point.source == "neuron_trn1_decoder_serving"]


def test_a_point_cannot_leave_out_a_figure_it_does_not_publish():
    p = next(p for p in load_points().points if p.id == "neuron_trn1_llama_2_13b_b1_in8192_out8192")
    doc = p.model_dump(exclude_none=True) | {"unfitted_figures": ["ttft_ms"]}
    doc.pop("ttft_ms")
    with pytest.raises(ValueError, match="does not publish"):
        PublishedPoint.model_validate(doc)


def test_every_unfitted_row_contradicts_its_own_figures():
    """The rows left out of the fit are exactly those whose tokens/s is off what their own TTFT and TPOT
    give for one static batch by more than a third (every other long-prompt row agrees within 5%)."""
    for p in load_points().points:
        if not (p.kind == "llm_serve" and p.ttft_ms and p.tpot_ms and p.output_tokens_per_s
                and p.source.endswith("_decoder_serving")):
            continue
        o = p.output_tokens
        implied = p.batch_size * o / (p.ttft_ms / 1e3 + (o - 1) * p.tpot_ms / 1e3)
        off = abs(np.log(p.output_tokens_per_s / implied))
        assert bool(p.unfitted_figures) == (off > np.log(1.35)), p.id


@pytest.mark.parametrize(("instance", "fused"), [("inf2.48xlarge", False), ("trn2.48xlarge", True)])
def test_the_planners_prefill_optimum_neuron_as_the_fit_does(instance, fused):
    from ecobench.hardware.neuron.arch import logical_core_size
    from ecobench.planning.serve_point import serve_point
    from ecobench.planning.serving import _serve_workload, traffic_of
    from ecobench.scenario.model import HardwareConfig, ServingSpec

    cat = load_catalog()
    inst = cat.instance(instance)
    spec = ServingSpec(requests_per_h=3600, input_tokens=1000, output_tokens=1048, ttft_ms=5000, tpot_ms=100)
    cfg = HardwareConfig(id="a", instance_type=instance, precision="bf16", stack="optimum-neuron-vllm")
    planned = _serve_workload(preset("llama3-8b"), traffic_of(spec), spec, cfg, 8, True,
                              lnc=logical_core_size(inst.spec.accelerator))
    # compiled for 2,048 tokens in one graph (no buckets): the 1,000-token prompt runs all 2,048
    assert planned.prefill_compute_tokens == 2048 and planned.fused_attention is fused
    assert planned.context == 2048
    # serve-point times the same prefill
    acc = cat.accelerator_of(inst)
    fit = current_fit()
    eff = fit.efficiency(acc.vendor, "serving", inst.spec.accelerator, "optimum-neuron-vllm")
    cl = instance_cluster(cat, inst, "bf16")
    planner_ms = 1e3 * (float(prefill_s(planned, cl, eff, 1.0))
                        + fit.request_overhead_s(acc.vendor, "optimum-neuron-vllm") + eff.step_overhead_s)
    point = serve_point("llama3-8b", instance, "bf16", 1, 1000, 1048, tensor=8,
                        stack="optimum-neuron-vllm")
    assert point.figures["ttft_ms"][0] == pytest.approx(planner_ms, rel=1e-9)
