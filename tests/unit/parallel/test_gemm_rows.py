"""A serving prefill's weight matmul of few token rows reaches less of its compute share
(``gemm_rows.<vendor>``): it slows compute-bound matmuls of few rows, is about 1 at thousands of rows,
and leaves the decode step (memory-bound, streaming kernels) and training as they were."""

import dataclasses

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import GEMM_ROWS_VENDORS, Fit, current_fit
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.serving import ServeWorkload, decode_step_s, prefill_s, serve_kernels
from ecobench.parallel.step import gemm_rows_share, kernel_time_s
from ecobench.workloads.presets import preset


def _t(rows, micro=1.0, half=128.0, weight_matmul=True, flops=1e12, act=0.0):
    return float(kernel_time_s(np.array([flops]), np.array([act]), np.array([0.0]), np.array([weight_matmul]),
                               np.array([False]), micro, 100.0, 100.0, 1000.0, False, 0.5, 1.0, 0.8, 0.0,
                               np.array([rows]), half)[0])


def test_few_rows_slow_a_compute_bound_matmul_and_many_rows_do_not():
    ideal = 1e12 / (0.5 * 100e12)
    assert _t(128.0) == pytest.approx(2 * ideal)  # half the share at M = half_rows
    assert _t(32.0, micro=4.0) == pytest.approx(4 * 2 * ideal)  # M counts rows x samples
    assert _t(1e5) == pytest.approx(ideal, rel=2e-3)  # training's micro-batch tokens: ~1
    assert _t(128.0, half=0.0) == pytest.approx(ideal)  # no parameter: no effect
    assert _t(0.0) == pytest.approx(ideal)  # a kernel without rows (not a weight matmul)
    assert gemm_rows_share(np.array([1.0, 100.0, 1e4]), 100.0) == pytest.approx([1 / 101, 0.5, 1e4 / 10100])


def test_only_a_prefills_weight_matmuls_carry_rows():
    dec, pre = serve_kernels(ServeWorkload(preset("llama2-7b"), 128, 128, "fp16", 1))
    assert dec.rows is None and pre.rows is not None  # a decode step: none
    # a prefill: the prompt's tokens (the LM head: the last token's only)
    assert set(pre.rows[pre.weight_matmul]) == {128.0, 1.0}
    assert not pre.rows[~pre.weight_matmul].any()


def test_only_the_vendors_with_evidence_get_the_factor():
    fit = Fit({"gemm_rows.nvidia": 120.0}, ())
    assert fit.efficiency("nvidia", "serving", "a100-80gb").gemm_half_rows == 120.0
    assert fit.efficiency("nvidia", "training", "a100-80gb").gemm_half_rows == 0.0
    assert "aws" not in GEMM_ROWS_VENDORS
    assert fit.efficiency("aws", "serving", "trainium").gemm_half_rows == 0.0


@pytest.fixture(scope="module")
def a100():
    cat = load_catalog()
    return instance_cluster(cat, cat.instance("p4de.24xlarge"), "fp16")


def test_decode_is_unchanged_and_short_prefills_slow(a100):
    """With the stored fit, a 7B model's decode step at batch 1-64 on an A100 is the memory-bound step
    it was without the factor; a 128-token prefill is slower; a 4096-token one nearly unchanged."""
    eff = current_fit().efficiency("nvidia", "serving", "a100-80gb", "vllm")
    none = dataclasses.replace(eff, gemm_half_rows=0.0)
    assert eff.gemm_half_rows > 0
    w = ServeWorkload(preset("llama2-7b"), 128, 128, "fp16", 1)
    b = np.array([1.0, 8.0, 64.0])
    assert decode_step_s(w, a100, eff, b) == pytest.approx(decode_step_s(w, a100, none, b), rel=1e-12)
    assert prefill_s(w, a100, eff, 1.0) > 1.2 * prefill_s(w, a100, none, 1.0)
    long = dataclasses.replace(w, input_tokens=4096)
    assert prefill_s(long, a100, eff, 1.0) == pytest.approx(prefill_s(long, a100, none, 1.0), rel=0.05)
