"""Transformer encoder → kernel list (FLOPs and bytes per sample).

FLOPs count a multiply-add as two operations, as PyTorch's FlopCounterMode does. Bytes assume every
kernel reads its inputs from and writes its outputs to device memory (no fusion): an upper bound that
the backends' calibrated efficiency absorbs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.kernels import Kernel

Mode = Literal["inference", "training"]

# Elementwise FLOPs per element: softmax (max, sub, exp, sum, div), layernorm (mean, var, norm,
# scale, shift), GELU (tanh form).
SOFTMAX_FLOPS_PER_ELEMENT = 5
LAYERNORM_FLOPS_PER_ELEMENT = 8
GELU_FLOPS_PER_ELEMENT = 8
# AdamW/LAMB update per parameter (moments, bias correction, update, weight decay).
OPTIMIZER_FLOPS_PER_PARAM = 12
# fp32 master weight, gradient, two moments: read and written once per step.
OPTIMIZER_BYTES_PER_PARAM = 4 * 4 * 2


@dataclass(frozen=True)
class Architecture:
    """A BERT-style encoder: the numbers in a ``transformers`` config."""

    name: str
    layers: int
    hidden_size: int
    heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layout_2d: bool = False  # LayoutLM's x/y/h/w position embeddings
    max_2d_position_embeddings: int = 1024

    def __post_init__(self) -> None:
        if self.hidden_size % self.heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by heads {self.heads}")

    @property
    def embedding_params(self) -> int:
        """Parameters of the embedding tables and their layernorm."""
        h = self.hidden_size
        n = (self.vocab_size + self.max_position_embeddings + self.type_vocab_size) * h + 2 * h
        if self.layout_2d:
            n += 4 * self.max_2d_position_embeddings * h
        return n

    @property
    def layer_params(self) -> int:
        """Parameters of one encoder layer."""
        h, i = self.hidden_size, self.intermediate_size
        return 4 * h * h + 4 * h + 2 * h * i + h + i + 4 * h

    @property
    def params(self) -> int:
        """Encoder parameters including the pooler (as ``BertModel``)."""
        h = self.hidden_size
        return self.embedding_params + self.layers * self.layer_params + h * h + h


def _matmul(name: str, phase: str, m: int, k: int, n: int, batch: int, dtype: str,
            layer: int | None, weights: bool = True, count: int = 1) -> Kernel:
    """A [m,k]x[k,n] product per sample, ``count`` times (e.g. per head)."""
    b = BYTES_PER_DTYPE[dtype]
    act = count * (m * k + m * n) * b
    w = (k * n * b / batch) if weights else count * k * n * b
    return Kernel(name, "matmul", phase, f"{count}x[{m}x{k}]@[{k}x{n}]",  # type: ignore[arg-type]
                  flops=2.0 * count * m * k * n, bytes=float(act + w), dtype=dtype, layer=layer,
                  dims=(count, m, k, n), weights=weights)


def _elementwise(name: str, elements: int, flops_per: float, dtype: str, layer: int | None,
                 reads: int = 1) -> Kernel:
    b = BYTES_PER_DTYPE[dtype]
    return Kernel(name, "elementwise", "forward", f"{elements}", flops=float(elements * flops_per),
                  bytes=float((reads + 1) * elements * b), dtype=dtype, layer=layer)


def forward_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str,
                    heads_for_pretraining: bool = False) -> list[Kernel]:
    """Kernels of one forward pass per sample."""
    s, h, a, i = seq_len, arch.hidden_size, arch.heads, arch.intermediate_size
    d = h // a
    b = BYTES_PER_DTYPE[dtype]
    lookups = 3 + (6 if arch.layout_2d else 0)  # word, position, type (+ left, upper, right, lower, h, w)
    ks: list[Kernel] = [
        Kernel("embeddings", "gather", "forward", f"{lookups}x[{s}x{h}]",
               flops=float((lookups - 1) * s * h), bytes=float((lookups + 1) * s * h * b), dtype=dtype),
        _elementwise("embeddings.layernorm", s * h, LAYERNORM_FLOPS_PER_ELEMENT, dtype, None),
    ]
    for layer in range(arch.layers):
        ks += [
            _matmul("attention.qkv", "forward", s, h, 3 * h, batch_size, dtype, layer),
            _matmul("attention.scores", "forward", s, d, s, batch_size, dtype, layer, False, a),
            _elementwise("attention.softmax", a * s * s, SOFTMAX_FLOPS_PER_ELEMENT, dtype, layer),
            _matmul("attention.context", "forward", s, s, d, batch_size, dtype, layer, False, a),
            _matmul("attention.output", "forward", s, h, h, batch_size, dtype, layer),
            _elementwise("attention.residual_layernorm", s * h, LAYERNORM_FLOPS_PER_ELEMENT + 1,
                         dtype, layer, reads=2),
            _matmul("ffn.intermediate", "forward", s, h, i, batch_size, dtype, layer),
            _elementwise("ffn.gelu", s * i, GELU_FLOPS_PER_ELEMENT, dtype, layer),
            _matmul("ffn.output", "forward", s, i, h, batch_size, dtype, layer),
            _elementwise("ffn.residual_layernorm", s * h, LAYERNORM_FLOPS_PER_ELEMENT + 1, dtype,
                         layer, reads=2),
        ]
    ks.append(_matmul("pooler", "forward", 1, h, h, batch_size, dtype, None))
    if heads_for_pretraining:
        ks += [
            _matmul("mlm.transform", "forward", s, h, h, batch_size, dtype, None),
            _elementwise("mlm.gelu_layernorm", s * h, GELU_FLOPS_PER_ELEMENT + LAYERNORM_FLOPS_PER_ELEMENT,
                         dtype, None),
            _matmul("mlm.decoder", "forward", s, h, arch.vocab_size, batch_size, dtype, None),
            _elementwise("mlm.softmax_loss", s * arch.vocab_size, SOFTMAX_FLOPS_PER_ELEMENT, dtype, None),
            _matmul("nsp.classifier", "forward", 1, h, 2, batch_size, dtype, None),
        ]
    return ks


def training_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str) -> list[Kernel]:
    """Forward, backward (twice the forward work: input and weight gradients) and optimizer step."""
    fwd = forward_kernels(arch, seq_len, batch_size, dtype, heads_for_pretraining=True)
    bwd = [Kernel(k.name + ".grad", k.kind, "backward", k.shape, 2 * k.flops, 2 * k.bytes, k.dtype,
                  k.layer, dims=(2 * k.dims[0], *k.dims[1:]) if k.dims else None, weights=k.weights)
           for k in fwd]
    head_params = arch.hidden_size * arch.hidden_size + 2 * arch.hidden_size + arch.vocab_size \
        + 2 * arch.hidden_size + 2
    params = arch.params + head_params
    opt = Kernel("optimizer.step", "optimizer", "optimizer", f"{params} params",
                 flops=float(OPTIMIZER_FLOPS_PER_PARAM * params),
                 bytes=float(OPTIMIZER_BYTES_PER_PARAM * params), dtype="fp32", per_step=True)
    return fwd + bwd + [opt]


def build_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str,
                  mode: Mode) -> list[Kernel]:
    """Kernel list for a mode: forward for inference, forward+backward+optimizer for training."""
    if seq_len > arch.max_position_embeddings:
        raise ValueError(f"sequence length {seq_len} exceeds the model's "
                         f"max_position_embeddings {arch.max_position_embeddings}")
    if mode == "inference":
        return forward_kernels(arch, seq_len, batch_size, dtype)
    return training_kernels(arch, seq_len, batch_size, dtype)


def totals(kernels: list[Kernel], samples_per_step: float = 1.0) -> tuple[float, float]:
    """Total (FLOPs, bytes) per sample, spreading per-step kernels over ``samples_per_step``."""
    flops = sum(k.flops / (samples_per_step if k.per_step else 1.0) for k in kernels)
    nbytes = sum(k.bytes / (samples_per_step if k.per_step else 1.0) for k in kernels)
    return flops, nbytes
