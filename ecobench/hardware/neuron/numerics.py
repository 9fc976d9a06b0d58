"""NeuronCore numerics emulated with ml_dtypes and NumPy.

Data types: BF16 with round-to-nearest-even (RNE) or stochastic rounding (SR, as Trainium offers in
hardware), FP16, TF32 (matmul inputs only: FP32's exponent, 10 mantissa bits, RNE; the v2 matmult
engine's type, neuronx-cc mixed-precision guide), FP8 (E4M3, E5M2) with a per-tensor scale, INT8 with
a calibrated symmetric scale. Matmul inputs are rounded to the data type and products are accumulated
in FP32, as PSUM does.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
FP8 = {"fp8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn), "fp8_e5m2": np.dtype(ml_dtypes.float8_e5m2)}
FORMATS = ("fp32", "tf32", "bf16", "bf16_sr", "fp16", "fp8_e4m3", "fp8_e5m2", "int8")
_LOW16 = np.uint32(0xFFFF0000)
_TF32_DROP = 13  # FP32's 23 mantissa bits less TF32's 10
FP32_STORED = ("fp32", "tf32", "int8")  # formats whose activations stay FP32 between kernels


def round_bf16_rne(x: np.ndarray) -> np.ndarray:
    """Round FP32 to BF16, round-to-nearest-even (ml_dtypes' cast); returned as FP32 values."""
    return np.asarray(x, np.float32).astype(BF16).astype(np.float32)


def round_bf16_sr(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Stochastic rounding to BF16: add uniform random bits below BF16's last mantissa bit to the
    FP32 pattern and truncate. A value rounds up with probability equal to its distance from the
    lower neighbour in ulps, so the rounding is unbiased; it only ever lands on the two neighbours.
    Infinities and canonical NaNs pass through; values beyond BF16's range overflow to infinity.
    Returned as FP32 values (exactly representable in BF16)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    out = bits + rng.integers(0, 1 << 16, size=bits.shape, dtype=np.uint16)
    np.bitwise_and(out, _LOW16, out=out)
    return out.view(np.float32)


def round_tf32(x: np.ndarray) -> np.ndarray:
    """Round FP32 to TF32 (8-bit exponent, 10-bit mantissa), round-to-nearest-even on the bit
    pattern; infinities and NaNs pass through. Returned as FP32 values."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    lsb = (bits >> np.uint32(_TF32_DROP)) & np.uint32(1)
    half = np.uint32((1 << (_TF32_DROP - 1)) - 1)
    out = (bits + half + lsb) & np.uint32(~((1 << _TF32_DROP) - 1) & 0xFFFFFFFF)
    finite = np.isfinite(np.asarray(x, np.float32))
    return np.where(finite, out, bits).view(np.float32)


def round_fp16(x: np.ndarray) -> np.ndarray:
    """Round to IEEE FP16 (RNE)."""
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


def round_fp8(x: np.ndarray, fmt: str) -> np.ndarray:
    """Scale the tensor so its largest magnitude maps to the format's maximum, round (RNE), and
    scale back: FP8 as used with per-tensor scaling."""
    dt = FP8[fmt]
    x = np.asarray(x, np.float32)
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    if amax == 0.0:
        return x.copy()
    scale = float(ml_dtypes.finfo(dt).max) / amax
    return ((x * scale).astype(dt).astype(np.float32) / scale).astype(np.float32)


def int8_scale(x: np.ndarray) -> float:
    """Calibrated symmetric per-tensor scale: max |x| maps to 127."""
    amax = float(np.max(np.abs(x)))
    return amax / 127.0 if amax > 0 else 1.0


def quantize_int8(x: np.ndarray, scale: float) -> np.ndarray:
    """Round to nearest and clip to [-127, 127]."""
    return np.clip(np.rint(np.asarray(x, np.float32) / scale), -127, 127).astype(np.int8)


def rounder(fmt: str, rng: np.random.Generator | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """A function rounding FP32 arrays to ``fmt`` (values returned as FP32)."""
    if fmt == "fp32":
        return lambda x: np.asarray(x, np.float32)
    if fmt == "bf16":
        return round_bf16_rne
    if fmt == "bf16_sr":
        gen = rng or np.random.default_rng(0)
        return lambda x: round_bf16_sr(x, gen)
    if fmt == "fp16":
        return round_fp16
    if fmt == "tf32":
        return round_tf32
    if fmt in FP8:
        return lambda x: round_fp8(x, fmt)
    if fmt == "int8":
        return lambda x: quantize_int8(x, s := int8_scale(x)).astype(np.float32) * s
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def matmul(a: np.ndarray, b: np.ndarray, fmt: str, rng: np.random.Generator | None = None,
           round_output: bool = True) -> np.ndarray:
    """a @ b on the TensorEngine: inputs in ``fmt``, products accumulated in FP32 (PSUM); INT8
    accumulates exactly in INT32. The output is rounded back to ``fmt`` when it is written to SBUF
    (``round_output``), except for INT8, whose output is dequantized to FP32."""
    if fmt == "int8":
        sa, sb = int8_scale(a), int8_scale(b)
        # INT32 accumulation, computed in float64: exact while |sum| < 2**53 (K < 5e11 at 127**2)
        qa = quantize_int8(a, sa).astype(np.float64)
        qb = quantize_int8(b, sb).astype(np.float64)
        return (qa @ qb).astype(np.float32) * np.float32(sa * sb)
    r = rounder(fmt, rng)
    round_output = round_output and fmt != "tf32"  # TF32 rounds the inputs; PSUM's FP32 is written out
    # The sum in float64, then rounded once to FP32: the FP32 result does not depend on the order
    # in which the BLAS (and its thread count) adds the products, so numeric_error is reproducible
    # on any host (an FP32 sum's last bits move with the order; the PSUM's own order is not known).
    out = np.matmul(r(a).astype(np.float64), r(b).astype(np.float64)).astype(np.float32)
    return r(out) if round_output else out


def relative_error(y: np.ndarray, ref: np.ndarray) -> float:
    """||y - ref|| / ||ref|| (Frobenius), in float64."""
    y64, ref64 = y.astype(np.float64), ref.astype(np.float64)
    return float(np.linalg.norm(y64 - ref64) / np.linalg.norm(ref64))


# The scalar and vector engines' FP32 functions (normalisations, softmax, activations) are worked out in
# float64 and rounded once to FP32, as matmul's sums are: numpy's FP32 exp, tanh and reductions take
# SIMD paths whose last bits differ between CPUs and numpy versions (numeric_error moved by 7e-8 of
# itself between two fresh installs, 2026-11-27), a correctly rounded FP32 result does not.
def _fp32(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``fn`` on float64 copies of its arrays, its result rounded to FP32."""
    return lambda *xs: fn(*(x.astype(np.float64) for x in xs)).astype(np.float32)


@_fp32
def _layernorm(x: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-12)


@_fp32
def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


@_fp32
def _softmax(x: np.ndarray) -> np.ndarray:
    p = np.exp(x - x.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


@_fp32
def _swiglu(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    return gate / (1 + np.exp(-gate)) * up


def encoder_layer(x: np.ndarray, w: dict[str, np.ndarray], heads: int, fmt: str,
                  rng: np.random.Generator | None = None, attention_fmt: str | None = None) -> np.ndarray:
    """One BERT encoder layer: matmuls in ``fmt`` with FP32 accumulation (attention's scores and
    context in ``attention_fmt`` where given: FP8 training keeps them in BF16); softmax, GELU and
    layernorm in FP32 on the scalar/vector engines, their outputs stored back in ``fmt``."""
    af = attention_fmt or fmt
    store = rounder("bf16_sr" if fmt == "bf16_sr" else ("fp32" if fmt in FP32_STORED else fmt), rng)
    if fmt in FP8:
        store = round_bf16_rne  # FP8 matmul inputs; activations kept in BF16 between kernels
    s, h = x.shape
    d = h // heads
    qkv = matmul(x, w["qkv"], fmt, rng) + w["qkv_b"]
    q, k, v = (qkv[:, i * h:(i + 1) * h].reshape(s, heads, d).transpose(1, 0, 2) for i in range(3))
    scores = np.stack([matmul(q[i], k[i].T, af, rng, round_output=False) for i in range(heads)])
    scores /= np.float32(np.sqrt(d))
    p = store(_softmax(scores))
    ctx = np.stack([matmul(p[i], v[i], af, rng) for i in range(heads)]).transpose(1, 0, 2).reshape(s, h)
    attn = store(_layernorm(x + matmul(ctx, w["out"], fmt, rng) + w["out_b"]))
    inter = store(_gelu(matmul(attn, w["ffn1"], fmt, rng) + w["ffn1_b"]))
    return store(_layernorm(attn + matmul(inter, w["ffn2"], fmt, rng) + w["ffn2_b"]))


def random_layer(hidden: int, intermediate: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random encoder-layer weights (BERT's N(0, 0.02) init), fixed seed."""
    g = np.random.default_rng(seed)

    def n(*shape: int) -> np.ndarray:
        return g.normal(0, 0.02, shape).astype(np.float32)

    return {"qkv": n(hidden, 3 * hidden), "qkv_b": n(3 * hidden), "out": n(hidden, hidden),
            "out_b": n(hidden), "ffn1": n(hidden, intermediate), "ffn1_b": n(intermediate),
            "ffn2": n(intermediate, hidden), "ffn2_b": n(hidden)}


def layer_error(hidden: int, heads: int, intermediate: int, seq_len: int, fmt: str,
                seed: int = 0, attention_fmt: str | None = None) -> float:
    """Relative error against FP32 of one encoder layer at full width and sequence length."""
    w = random_layer(hidden, intermediate, seed)
    x = _layernorm(np.random.default_rng(seed + 1).normal(0, 1, (seq_len, hidden)).astype(np.float32))
    ref = encoder_layer(x, w, heads, "fp32")
    got = encoder_layer(x, w, heads, fmt, np.random.default_rng(seed + 2), attention_fmt)
    return relative_error(got, ref)


@_fp32
def _rmsnorm(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-6)


def decoder_layer(x: np.ndarray, w: dict[str, np.ndarray], heads: int, kv_heads: int, fmt: str,
                  rng: np.random.Generator | None = None, attention_fmt: str | None = None) -> np.ndarray:
    """One Llama-style decoder layer (RMSNorm, causal grouped-query attention, SwiGLU, no biases):
    matmuls in ``fmt`` with FP32 accumulation, softmax, SiLU and RMSNorm in FP32, their outputs
    stored back in ``fmt`` (as :func:`encoder_layer`, and its ``attention_fmt``)."""
    af = attention_fmt or fmt
    store = rounder("bf16_sr" if fmt == "bf16_sr" else ("fp32" if fmt in FP32_STORED else fmt), rng)
    if fmt in FP8:
        store = round_bf16_rne
    s, h = x.shape
    d = h // heads
    group = heads // kv_heads
    a = store(_rmsnorm(x))
    q = matmul(a, w["q"], fmt, rng).reshape(s, heads, d).transpose(1, 0, 2)
    k = matmul(a, w["k"], fmt, rng).reshape(s, kv_heads, d).transpose(1, 0, 2)
    v = matmul(a, w["v"], fmt, rng).reshape(s, kv_heads, d).transpose(1, 0, 2)
    mask = np.triu(np.full((s, s), -np.inf, np.float32), 1)
    ctx = []
    for i in range(heads):
        sc = matmul(q[i], k[i // group].T, af, rng, round_output=False) / np.float32(np.sqrt(d)) + mask
        ctx.append(matmul(store(_softmax(sc)), v[i // group], af, rng))
    x = store(x + matmul(np.stack(ctx).transpose(1, 0, 2).reshape(s, h), w["o"], fmt, rng))
    b = store(_rmsnorm(x))
    gate, up = matmul(b, w["gate"], fmt, rng), matmul(b, w["up"], fmt, rng)
    return store(x + matmul(store(_swiglu(gate, up)), w["down"], fmt, rng))


def random_decoder_layer(hidden: int, kv_width: int, intermediate: int,
                         seed: int = 0) -> dict[str, np.ndarray]:
    """Random decoder-layer weights, N(0, 0.02), fixed seed."""
    g = np.random.default_rng(seed)

    def n(*shape: int) -> np.ndarray:
        return g.normal(0, 0.02, shape).astype(np.float32)

    return {"q": n(hidden, hidden), "k": n(hidden, kv_width), "v": n(hidden, kv_width),
            "o": n(hidden, hidden), "gate": n(hidden, intermediate), "up": n(hidden, intermediate),
            "down": n(intermediate, hidden)}


def decoder_layer_error(hidden: int, heads: int, kv_heads: int, intermediate: int, seq_len: int, fmt: str,
                        seed: int = 0, attention_fmt: str | None = None) -> float:
    """Relative error against FP32 of one decoder layer."""
    w = random_decoder_layer(hidden, hidden // heads * kv_heads, intermediate, seed)
    x = np.random.default_rng(seed + 1).normal(0, 1, (seq_len, hidden)).astype(np.float32)
    ref = decoder_layer(x, w, heads, kv_heads, "fp32")
    got = decoder_layer(x, w, heads, kv_heads, fmt, np.random.default_rng(seed + 2), attention_fmt)
    return relative_error(got, ref)
