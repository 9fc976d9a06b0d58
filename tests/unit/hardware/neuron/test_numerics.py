import ml_dtypes
import numpy as np
import pytest

from ecobench.hardware.neuron.numerics import (
    FORMATS,
    int8_scale,
    layer_error,
    matmul,
    quantize_int8,
    round_bf16_rne,
    round_bf16_sr,
    round_fp8,
)


def _hard_values(n=200_000, seed=0):
    g = np.random.default_rng(seed)
    x = (g.normal(0, 1, n) * 10.0 ** g.integers(-30, 30, n)).astype(np.float32)
    ties = (np.arange(1, 1000, dtype=np.uint32) << 16 | 0x8000).view(np.float32)  # exact halfway
    return np.concatenate([x, ties, -ties, np.float32([0.0, -0.0, 1.0, 65504.0])])


def test_rne_bit_exact_against_ml_dtypes():
    x = _hard_values()
    ours = round_bf16_rne(x).view(np.uint32)
    ref = x.astype(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
    assert np.array_equal(ours, ref)


def test_sr_only_rounds_to_the_two_neighbours():
    x = _hard_values(50_000)
    x = x[np.isfinite(x) & (np.abs(x) < 1e38)]
    y = round_bf16_sr(x, np.random.default_rng(1))
    bits = x.view(np.uint32)
    down = (bits & np.uint32(0xFFFF0000)).view(np.float32)
    up = ((bits & np.uint32(0xFFFF0000)) + np.uint32(0x10000)).view(np.float32)
    exact = (bits & np.uint32(0xFFFF)) == 0
    assert np.all((y == down) | ((y == up) & ~exact))
    assert np.array_equal(y.astype(ml_dtypes.bfloat16).astype(np.float32), y)  # representable


@pytest.mark.parametrize("value", [1.0 + 2**-9, 3.14159, -0.3, 1e-5 * 1.2345])
def test_sr_is_unbiased(value):
    n = 200_000
    x = np.full(n, value, np.float32)
    y = round_bf16_sr(x, np.random.default_rng(2)).astype(np.float64)
    ulp = 2.0 ** (np.floor(np.log2(abs(value))) - 7)  # BF16 keeps 7 explicit mantissa bits
    # mean of n Bernoulli roundings: standard error <= ulp / (2 sqrt(n)); allow 5 standard errors
    assert abs(y.mean() - float(np.float32(value))) <= 5 * ulp / (2 * np.sqrt(n))


def test_int8_round_trip_within_half_a_step():
    x = np.random.default_rng(3).normal(0, 2, 10_000).astype(np.float32)
    s = int8_scale(x)
    back = quantize_int8(x, s).astype(np.float32) * s
    assert np.max(np.abs(back - x)) <= s / 2 + 1e-7
    assert np.max(np.abs(quantize_int8(x, s))) == 127


def test_fp8_keeps_the_largest_value_and_relative_precision():
    x = np.random.default_rng(4).normal(0, 1, 10_000).astype(np.float32)
    y = round_fp8(x, "fp8_e4m3")
    assert np.max(np.abs(y)) == pytest.approx(np.max(np.abs(x)), rel=1e-6)
    big = np.abs(x) > 0.1
    assert np.max(np.abs(y[big] - x[big]) / np.abs(x[big])) <= 2**-4 + 1e-6  # 3 mantissa bits


def test_matmul_accumulates_in_fp32_not_in_bf16():
    k = 4096
    a = np.full((1, k), 1.0, np.float32)
    b = np.full((k, 1), 2**-9, np.float32)  # each product is below half a bf16 ulp of the sum
    out = matmul(a, b, "bf16", round_output=False)
    assert out[0, 0] == pytest.approx(k * 2**-9)


def test_layer_error_orders_the_formats():
    errs = {f: layer_error(256, 4, 1024, 64, f) for f in FORMATS}
    assert errs["fp32"] == 0.0
    assert errs["fp16"] < errs["bf16"] < errs["fp8_e4m3"] < errs["fp8_e5m2"]
    assert 1e-4 < errs["bf16"] < 1e-2 and errs["int8"] < 0.05


def test_decoder_layer_error_grows_with_coarser_formats():
    from ecobench.hardware.neuron.numerics import decoder_layer_error

    args = (256, 2, 1, 512, 32)  # hidden, heads, kv heads (grouped-query), intermediate, tokens
    assert decoder_layer_error(*args, "fp32") == 0.0
    bf16 = decoder_layer_error(*args, "bf16")
    assert 1e-4 < bf16 < decoder_layer_error(*args, "fp8_e4m3") < 0.1


def test_tf32_rounds_to_ten_mantissa_bits_and_errs_between_fp32_and_fp16():
    """emu24: TF32 (Neuron v2/v3's matmult engine type, 8-bit exponent, 10-bit mantissa) was emulated
    as FP32, so a TF32 configuration reported a layer error of exactly 0 while being timed at BF16's
    rate."""
    from ecobench.hardware.neuron.numerics import decoder_layer_error, round_tf32

    g = np.random.default_rng(3)
    x = (g.normal(0, 1, 100_000) * 10.0 ** g.integers(-20, 20, 100_000)).astype(np.float32)
    ties = ((np.arange(1, 1000, dtype=np.uint32) << 13) | 0x3F800000 | 0x1000).view(np.float32)
    x = np.concatenate([x, ties, -ties])
    m, e = np.frexp(x.astype(np.float64))
    ref = (np.round(m * 2**11) / 2**11 * 2.0**e).astype(np.float32)  # numpy rounds halves to even
    assert np.array_equal(round_tf32(x).view(np.uint32), ref.view(np.uint32))
    assert "tf32" in FORMATS
    errs = {f: layer_error(256, 4, 1024, 64, f) for f in ("tf32", "fp16")}
    assert 0.0 < errs["tf32"] < errs["fp16"]
    args = (256, 2, 1, 512, 32)
    assert 0.0 < decoder_layer_error(*args, "tf32") < decoder_layer_error(*args, "bf16")
