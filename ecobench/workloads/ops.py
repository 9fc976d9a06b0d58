"""What the dense and the mixture-of-experts layer builders share: FLOPs per element of the
elementwise operations, the share of a causal attention a fused kernel executes, and the matmul
kernel (FLOPs, bytes and saved activations per sample)."""

from __future__ import annotations

from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.kernels import Kernel

# Elementwise FLOPs per element: softmax (max, sub, exp, sum, div), layernorm (mean, var, norm,
# scale, shift), GELU (tanh form), SiLU-and-multiply (sigmoid, two multiplies).
SOFTMAX_FLOPS_PER_ELEMENT = 5
LAYERNORM_FLOPS_PER_ELEMENT = 8
GELU_FLOPS_PER_ELEMENT = 8
SWIGLU_FLOPS_PER_ELEMENT = 6
# Fused causal attention skips the blocks above the diagonal: half the score matrix.
CAUSAL_EXECUTED_SHARE = 0.5


def matmul(name: str, phase: str, m: int, k: int, n: int, batch: int, dtype: str,
           layer: int | None, weights: bool = True, count: int = 1, saved_share: float = 1.0,
           weight_dtype: str | None = None) -> Kernel:
    """A [m,k]x[k,n] product per sample, ``count`` times (e.g. per head). ``saved_share``: the share
    of its input a rank keeps for the backward pass (sequence parallelism keeps the input of a
    column-parallel matmul sharded, 1 / tensor, and gathers it again in the backward pass).
    ``weight_dtype``: how the weight is stored when it differs from the compute type (int8 weights
    with bf16 compute)."""
    b = BYTES_PER_DTYPE[dtype]
    act = count * (m * k + m * n) * b
    w = (k * n * BYTES_PER_DTYPE[weight_dtype or dtype] / batch) if weights else count * k * n * b
    saved = count * m * k * b * saved_share + (0 if weights else count * k * n * b)
    return Kernel(name, "matmul", phase, f"{count}x[{m}x{k}]@[{k}x{n}]",  # type: ignore[arg-type]
                  flops=2.0 * count * m * k * n, bytes=float(act + w), dtype=dtype, layer=layer,
                  dims=(count, m, k, n), weights=weights, saved_bytes=float(saved),
                  weight_dtype=weight_dtype if weights else None)
