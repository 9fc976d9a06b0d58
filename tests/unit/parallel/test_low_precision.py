"""A served 8-bit model's weight matmuls reach ``lowp.<vendor>.serving`` of their compute share of the 8-bit
peak: the factor slows only an 8-bit job's weight matmuls (not its 16-bit attention, not a 16-bit job),
and only the 8-bit points of the fit depend on it."""

import dataclasses

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import Fit, lowp_key, prepared_points
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.serving import ServeWorkload, decode_step_s, prefill_s
from ecobench.parallel.step import is_8bit, matmul_peak_tflops
from ecobench.workloads.presets import preset


@pytest.fixture(scope="module")
def h100():
    cat = load_catalog()
    inst = cat.instance("p5.48xlarge")
    return instance_cluster(cat, inst, "fp8"), instance_cluster(cat, inst, "bf16")


def test_only_an_8bit_jobs_matmul_peak_takes_the_factor(h100):
    fp8, bf16 = h100
    eff = dataclasses.replace(Fit({}, ()).efficiency("nvidia", "serving", "h100-sxm"), low_precision=0.8)
    assert is_8bit(fp8) and not is_8bit(bf16)
    assert matmul_peak_tflops(fp8, eff) == pytest.approx(0.8 * fp8.peak_tflops)
    assert matmul_peak_tflops(bf16, eff) == bf16.peak_tflops


def test_the_factor_slows_an_8bit_prefill_and_leaves_a_16bit_one(h100):
    fp8, bf16 = h100
    base = Fit({}, ()).efficiency("nvidia", "serving", "h100-sxm")
    slow = dataclasses.replace(base, low_precision=0.5)
    w8 = ServeWorkload(preset("llama2-7b"), 2048, 128, "fp8", 1)
    w16 = ServeWorkload(preset("llama2-7b"), 2048, 128, "bf16", 1)
    assert prefill_s(w8, fp8, slow, 1.0) > 1.5 * prefill_s(w8, fp8, base, 1.0)  # mostly weight matmuls
    assert prefill_s(w16, bf16, slow, 1.0) == pytest.approx(prefill_s(w16, bf16, base, 1.0), rel=1e-12)
    b = np.array([1.0])  # a batch-1 decode streams its weights: memory-bound either way
    assert decode_step_s(w8, fp8, slow, b) == pytest.approx(decode_step_s(w8, fp8, base, b), rel=1e-3)


def test_the_fit_reads_the_factor_per_vendor_and_mode_and_only_8bit_points_carry_it():
    fit = Fit({lowp_key("nvidia", "serving"): 0.8}, ())
    assert fit.efficiency("nvidia", "serving", "h100-sxm").low_precision == 0.8
    trained = Fit({lowp_key("nvidia", "training"): 0.5}, ())
    assert trained.efficiency("nvidia", "training", "h100-sxm").low_precision == 1.0  # serving only
    prepared = prepared_points()
    carry = [p for p in prepared if lowp_key(p.vendor, p.point.mode) in p.keys]
    assert carry and all(p.point.precision in ("fp8", "int8") and p.point.mode == "serving" for p in carry)
    assert any(p.point.precision == "fp8" and p.point.mode == "training" for p in prepared)
    assert all(lowp_key(p.vendor, p.point.mode) not in p.keys for p in prepared
               if p.point.precision in ("bf16", "fp16", "fp32"))


def test_the_fits_vectorised_path_slows_only_the_8bit_serving_points():
    """The fit's Batch applies the factor as the planner does: an FP8 serving point's TTFT rises with a
    lower factor, a 16-bit one's is untouched."""
    from ecobench.hardware.backends.efficiency import PRIORS, Batch, _kind, _names

    prepared = prepared_points()
    p8 = next(p for p in prepared if p.serve is not None and p.point.precision == "fp8")
    p16 = next(p for p in prepared if p.serve is not None and p.point.precision == "bf16"
               and p.vendor == p8.vendor)
    names = _names([p8, p16])
    batch = Batch([p8, p16], names)
    z = np.log([PRIORS[_kind(n)][0] for n in names])
    slow = z.copy()
    slow[names.index(lowp_key(p8.vendor, "serving"))] = np.log(0.5)
    base, low = batch.figures(z)["ttft_ms"], batch.figures(slow)["ttft_ms"]
    assert low[0] > 1.05 * base[0] and low[1] == pytest.approx(base[1], rel=1e-12)
