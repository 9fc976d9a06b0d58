"""Transformer → kernel list (FLOPs, bytes and saved activations per sample, on one rank).

FLOPs count a multiply-add as two operations, as PyTorch's FlopCounterMode does. Bytes assume every
kernel reads its inputs from and writes its outputs to device memory, except that decoders run
attention as one fused (flash) kernel whose score matrix never leaves the chip; encoders keep the
unfused scores, softmax and context kernels they were benchmarked with.

``tensor`` > 1 gives the kernels of one tensor-parallel rank (Megatron-LM's split): the QKV and
first feed-forward projections split their output columns, the attention output and second
feed-forward projections their input rows, attention its heads (key/value heads are replicated when
there are fewer of them than ranks), the LM head its vocabulary; norms, residual adds and the
activations between them are split along the sequence (sequence parallelism).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.architecture import Architecture, Task
from ecobench.workloads.kernels import Kernel
from ecobench.workloads.moe import mla_kernels, moe_ffn_kernels
from ecobench.workloads.ops import (
    CAUSAL_EXECUTED_SHARE,
    GELU_FLOPS_PER_ELEMENT,
    LAYERNORM_FLOPS_PER_ELEMENT,
    SOFTMAX_FLOPS_PER_ELEMENT,
    SWIGLU_FLOPS_PER_ELEMENT,
    matmul,
)

Mode = Literal["inference", "training"]

# AdamW/LAMB update per parameter (moments, bias correction, update, weight decay).
OPTIMIZER_FLOPS_PER_PARAM = 12
# fp32 master weight, gradient, two moments: read and written once per step.
OPTIMIZER_BYTES_PER_PARAM = 4 * 4 * 2
# FlashAttention-2's backward runs 5 matmuls to the forward's 2 (Dao, "FlashAttention-2", 2023, §3.1.2):
# 2.5x the forward's FLOPs, where the unfused backward costs 2x.
FUSED_ATTENTION_BACKWARD_RATIO = 2.5
LOSS_BYTES_PER_LOGIT = 4  # cross-entropy keeps fp32 logits for its backward


def tensor_split(arch: Architecture, tensor: int, pad: bool = False) -> tuple[int, int]:
    """(query heads, key/value heads) one tensor-parallel rank holds. ``pad``: heads that do not
    divide among the ranks are padded up to a multiple of them (as Neuron's inference libraries run
    32-head models on 24 NeuronCores); training requires them to divide."""
    if pad:
        return -(-arch.heads // tensor), max(1, -(-arch.kv // tensor))
    if arch.heads % tensor:
        raise ValueError(f"tensor parallel degree {tensor} must divide the {arch.heads} attention heads")
    kv = arch.kv
    if kv % tensor and tensor % kv:
        raise ValueError(f"tensor parallel degree {tensor} and the {kv} key/value heads must divide "
                         "one another")
    return arch.heads // tensor, max(1, kv // tensor)


def _elementwise(name: str, elements: float, flops_per: float, dtype: str, layer: int | None,
                 reads: int = 1, saved_elements: float = 0.0) -> Kernel:
    b = BYTES_PER_DTYPE[dtype]
    return Kernel(name, "elementwise", "forward", f"{elements:g}", flops=float(elements * flops_per),
                  bytes=float((reads + 1) * elements * b), dtype=dtype, layer=layer,
                  saved_bytes=float(saved_elements * b))


def _fused_attention(arch: Architecture, s: int, heads: int, kv: int, dtype: str, layer: int) -> Kernel:
    """Flash attention of one layer: QK^T and PV for every query head, causal, on chip."""
    b = BYTES_PER_DTYPE[dtype]
    d = arch.head_dim
    flops = 4.0 * heads * s * s * d
    qkvo = (2 * heads + 2 * kv) * s * d * b
    share = CAUSAL_EXECUTED_SHARE if arch.kind == "decoder" else 1.0
    return Kernel("attention.core", "attention", "forward", f"{heads}x[{s}x{d}]@[{d}x{s}]",
                  flops=flops, bytes=float(qkvo), dtype=dtype, layer=layer, dims=(heads, s, d, s),
                  exec_flops=flops * share, saved_bytes=float(qkvo + heads * s * 4))


def layer_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str, layer: int,
                  tensor: int = 1, fused_attention: bool | None = None,
                  weight_dtype: str | None = None, pad: bool = False, expert: int = 1,
                  expert_tensor: int | None = None) -> list[Kernel]:
    """Kernels of one transformer layer's forward pass, per sample, on one tensor-parallel rank.
    ``fused_attention`` (default: decoders) runs attention as one flash kernel; otherwise the score
    matrix goes through device memory (how stacks ran before FlashAttention, 2022). Multi-head
    latent attention and the expert feed-forward of a MoE layer (``expert``: expert-parallel ranks,
    ``expert_tensor``: the ranks each expert is split over, None: ``tensor``) come from
    ``workloads/moe.py``."""
    s, h, d = seq_len, arch.hidden_size, arch.head_dim
    heads, kv = tensor_split(arch, tensor, pad)
    inter = -(-arch.intermediate_size // tensor)
    norm_elems = s * h / tensor  # sequence-parallel norms and residual adds
    sp = 1.0 / tensor  # column-parallel inputs are saved sharded along the sequence
    if arch.mla is not None:

        ks = mla_kernels(arch, s, dtype, layer, tensor)
    else:
        ks = [matmul("attention.qkv", "forward", s, h, (heads + 2 * kv) * d, batch_size, dtype, layer,
                      saved_share=sp, weight_dtype=weight_dtype)]
        if arch.kind == "decoder" if fused_attention is None else fused_attention:
            ks.append(_fused_attention(arch, s, heads, kv, dtype, layer))
        else:
            ks += [
                matmul("attention.scores", "forward", s, d, s, batch_size, dtype, layer, False, heads),
                _elementwise("attention.softmax", heads * s * s, SOFTMAX_FLOPS_PER_ELEMENT, dtype, layer),
                matmul("attention.context", "forward", s, s, d, batch_size, dtype, layer, False, heads),
            ]
        ks.append(matmul("attention.output", "forward", s, heads * d, h, batch_size, dtype, layer,
                          weight_dtype=weight_dtype))
    ks.append(_elementwise("attention.residual_norm", norm_elems, LAYERNORM_FLOPS_PER_ELEMENT + 1, dtype,
                           layer, reads=2, saved_elements=norm_elems))
    if arch.moe is not None and arch.moe.is_moe_layer(layer):

        ks += moe_ffn_kernels(arch, s, dtype, layer, tensor, expert, expert_tensor)
    elif arch.ffn == "swiglu":
        ks += [
            matmul("ffn.gate_up", "forward", s, h, 2 * inter, batch_size, dtype, layer, saved_share=sp,
                    weight_dtype=weight_dtype),
            _elementwise("ffn.swiglu", s * inter, SWIGLU_FLOPS_PER_ELEMENT, dtype, layer, reads=2,
                         saved_elements=2 * s * inter),
        ]
    else:
        ks += [
            matmul("ffn.intermediate", "forward", s, h, inter, batch_size, dtype, layer, saved_share=sp,
                    weight_dtype=weight_dtype),
            _elementwise("ffn.gelu", s * inter, GELU_FLOPS_PER_ELEMENT, dtype, layer,
                         saved_elements=s * inter),
        ]
    if arch.moe is None or not arch.moe.is_moe_layer(layer):
        ks.append(matmul("ffn.output", "forward", s, inter, h, batch_size, dtype, layer,
                          weight_dtype=weight_dtype))
    ks += [
        _elementwise("ffn.residual_norm", norm_elems, LAYERNORM_FLOPS_PER_ELEMENT + 1, dtype, layer,
                     reads=2, saved_elements=norm_elems),
    ]
    return ks


def embedding_kernels(arch: Architecture, seq_len: int, dtype: str, tensor: int = 1) -> list[Kernel]:
    """Embedding lookups (and the encoder's embedding norm), per sample."""
    s, h, b = seq_len, arch.hidden_size, BYTES_PER_DTYPE[dtype]
    lookups = 1 + (arch.position == "learned") + (arch.type_vocab_size > 0) + (6 if arch.layout_2d else 0)
    ks = [Kernel("embeddings", "gather", "forward", f"{lookups}x[{s}x{h}]",
                 flops=float((lookups - 1) * s * h), bytes=float((lookups + 1) * s * h * b), dtype=dtype)]
    if arch.kind == "encoder":
        ks.append(_elementwise("embeddings.norm", s * h / tensor, LAYERNORM_FLOPS_PER_ELEMENT, dtype, None,
                               saved_elements=s * h / tensor))
    return ks


def head_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str, mode: Mode,
                 task: Task = "pretrain", num_labels: int = 2, tensor: int = 1) -> list[Kernel]:
    """What follows the last layer: the pooler (encoders), and in training the task's head."""
    s, h, v = seq_len, arch.hidden_size, arch.vocab_size
    ks: list[Kernel] = []
    if arch.kind == "encoder":
        ks.append(matmul("pooler", "forward", 1, h, h, batch_size, dtype, None))
        if mode == "inference":
            return ks
        if task == "classification":
            return ks + [matmul("classifier", "forward", 1, h, num_labels, batch_size, dtype, None)]
        return ks + [
            matmul("mlm.transform", "forward", s, h, h, batch_size, dtype, None),
            _elementwise("mlm.gelu_norm", s * h, GELU_FLOPS_PER_ELEMENT + LAYERNORM_FLOPS_PER_ELEMENT,
                         dtype, None, saved_elements=2 * s * h),
            matmul("mlm.decoder", "forward", s, h, v // tensor, batch_size, dtype, None,
                    saved_share=1.0 / tensor),
            _loss(s * v / tensor, dtype),
            matmul("nsp.classifier", "forward", 1, h, 2, batch_size, dtype, None),
        ]
    ks.append(_elementwise("final_norm", s * h / tensor, LAYERNORM_FLOPS_PER_ELEMENT, dtype, None,
                           saved_elements=s * h / tensor))
    if mode == "training" and task == "classification":
        return ks + [matmul("score", "forward", s, h, num_labels, batch_size, dtype, None)]
    ks.append(matmul("lm_head", "forward", s, h, v // tensor, batch_size, dtype, None,
                      saved_share=1.0 / tensor))
    if mode == "training":
        ks.append(_loss(s * v / tensor, dtype))
    return ks


def _loss(logits: float, dtype: str) -> Kernel:
    """Softmax cross-entropy over the vocabulary; keeps fp32 logits for the backward pass."""
    k = _elementwise("loss.softmax_xent", logits, SOFTMAX_FLOPS_PER_ELEMENT, dtype, None)
    return Kernel(k.name, k.kind, k.phase, k.shape, k.flops, k.bytes, k.dtype,
                  saved_bytes=logits * LOSS_BYTES_PER_LOGIT)


def forward_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str, mode: Mode = "inference",
                    task: Task = "pretrain", num_labels: int = 2, tensor: int = 1) -> list[Kernel]:
    """Kernels of one forward pass per sample: embeddings, every layer, and the head."""
    ks = embedding_kernels(arch, seq_len, dtype, tensor)
    for layer in range(arch.layers):
        ks += layer_kernels(arch, seq_len, batch_size, dtype, layer, tensor)
    return ks + head_kernels(arch, seq_len, batch_size, dtype, mode, task, num_labels, tensor)


def backward_of(k: Kernel) -> Kernel:
    """The backward kernel of a forward one: input and weight gradients, twice the forward work
    (a fused attention kernel recomputes its scores: 2.5x its executed forward FLOPs)."""
    ratio = FUSED_ATTENTION_BACKWARD_RATIO if k.kind == "attention" else 2.0
    return Kernel(k.name + ".grad", k.kind, "backward", k.shape, 2 * k.flops, 2 * k.bytes, k.dtype,
                  k.layer, dims=(2 * k.dims[0], *k.dims[1:]) if k.dims else None, weights=k.weights,
                  exec_flops=ratio * k.executed_flops)


def optimizer_kernel(params: float) -> Kernel:
    """One optimizer step over ``params`` parameters (fp32 master weights and moments)."""
    return Kernel("optimizer.step", "optimizer", "optimizer", f"{params:.0f} params",
                  flops=float(OPTIMIZER_FLOPS_PER_PARAM * params),
                  bytes=float(OPTIMIZER_BYTES_PER_PARAM * params), dtype="fp32", per_step=True)


def training_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str,
                     task: Task = "pretrain", num_labels: int = 2) -> list[Kernel]:
    """Forward, backward and optimizer step of the whole model on one device."""
    fwd = forward_kernels(arch, seq_len, batch_size, dtype, "training", task, num_labels)
    params = arch.params + arch.head_params(task, num_labels)
    return fwd + [backward_of(k) for k in fwd] + [optimizer_kernel(params)]


def build_kernels(arch: Architecture, seq_len: int, batch_size: int, dtype: str, mode: Mode,
                  task: Task = "pretrain", num_labels: int = 2) -> list[Kernel]:
    """Kernel list for a mode: forward for inference, forward+backward+optimizer for training."""
    if seq_len > arch.max_position_embeddings:
        raise ValueError(f"sequence length {seq_len} exceeds the model's "
                         f"max_position_embeddings {arch.max_position_embeddings}")
    if mode == "inference":
        return forward_kernels(arch, seq_len, batch_size, dtype)
    return training_kernels(arch, seq_len, batch_size, dtype, task, num_labels)


def totals(kernels: list[Kernel], samples_per_step: float = 1.0) -> tuple[float, float]:
    """Total (FLOPs, bytes) per sample, spreading per-step kernels over ``samples_per_step``."""
    flops = sum(k.flops / (samples_per_step if k.per_step else 1.0) for k in kernels)
    nbytes = sum(k.bytes / (samples_per_step if k.per_step else 1.0) for k in kernels)
    return flops, nbytes


def matmul_flops_per_token(arch: Architecture, seq_len: int, mode: Mode = "inference",
                           task: Task = "pretrain", num_labels: int = 2) -> float:
    """Matmul and attention FLOPs per token of one forward pass (what MFU counts)."""
    ks = forward_kernels(arch, seq_len, 1, "bf16", mode, task, num_labels)
    return sum(k.flops for k in ks if k.kind in ("matmul", "attention")) / seq_len


def kv_cache_bytes_per_token(arch: Architecture, kv_dtype: str, tensor: int = 1) -> float:
    """Bytes of key and value cache one token adds on one tensor-parallel rank (key/value heads
    split across the ranks, replicated when there are fewer of them than ranks)."""
    if arch.mla is not None:  # the key/value latent and the rotary key, shared by every head and rank
        return float(arch.layers * (arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim)
                     * BYTES_PER_DTYPE[kv_dtype])
    _, kv = tensor_split(arch, tensor, pad=True)
    return float(arch.layers * 2 * kv * arch.head_dim * BYTES_PER_DTYPE[kv_dtype])


def _decode_attention(arch: Architecture, context: int, heads: int, kv: int, dtype: str, kv_dtype: str,
                      layer: int) -> Kernel:
    """One new token's attention over ``context`` cached tokens: every cached key and value is read
    (MLA: the cached latents, with the up-projections absorbed into the query and output)."""
    if arch.mla is not None:
        m = arch.mla
        width = m.kv_lora_rank + m.qk_rope_head_dim
        flops = 2.0 * heads * context * (width + m.kv_lora_rank)
        nbytes = context * width * BYTES_PER_DTYPE[kv_dtype] + 2 * heads * width * BYTES_PER_DTYPE[dtype]
        return Kernel("attention.decode", "attention", "forward", f"{heads}x[1x{width}]@[{width}x{context}]",
                      flops=flops, bytes=float(nbytes), dtype=dtype, layer=layer,
                      dims=(heads, 1, width, context))
    d = arch.head_dim
    flops = 4.0 * heads * context * d
    nbytes = 2 * kv * d * context * BYTES_PER_DTYPE[kv_dtype] + 2 * heads * d * BYTES_PER_DTYPE[dtype]
    return Kernel("attention.decode", "attention", "forward", f"{heads}x[1x{d}]@[{d}x{context}]",
                  flops=flops, bytes=float(nbytes), dtype=dtype, layer=layer, dims=(heads, 1, d, context))


def prefill_kernels(arch: Architecture, input_len: int, batch_size: int, dtype: str, tensor: int = 1,
                    weight_dtype: str | None = None, fused_attention: bool | None = None) -> list[Kernel]:
    """A prompt's forward pass per sequence: every layer over ``input_len`` tokens, then the LM head
    on the last position only (the first generated token). ``fused_attention`` as for
    :func:`layer_kernels` (False: the stack writes the score matrix to memory)."""
    ks = embedding_kernels(arch, input_len, dtype, tensor)
    for layer in range(arch.layers):
        ks += layer_kernels(arch, input_len, batch_size, dtype, layer, tensor, fused_attention,
                            weight_dtype=weight_dtype, pad=True)
    ks.append(_elementwise("final_norm", arch.hidden_size / tensor, LAYERNORM_FLOPS_PER_ELEMENT, dtype, None))
    ks.append(matmul("lm_head", "forward", 1, arch.hidden_size, -(-arch.vocab_size // tensor), batch_size,
                      dtype, None, weight_dtype=weight_dtype))
    return ks


def decode_kernels(arch: Architecture, context: int, batch_size: int, dtype: str, tensor: int = 1,
                   weight_dtype: str | None = None, kv_dtype: str | None = None) -> list[Kernel]:
    """One decode step per sequence of a batch of ``batch_size``: every layer on the new token (the
    weights read once for the whole batch), attention over ``context`` cached tokens, the LM head."""
    heads, kv = tensor_split(arch, tensor, pad=True)
    ks = embedding_kernels(arch, 1, dtype, tensor)
    for layer in range(arch.layers):
        for k in layer_kernels(arch, 1, batch_size, dtype, layer, tensor, weight_dtype=weight_dtype,
                               pad=True):
            ks.append(_decode_attention(arch, context, heads, kv, dtype, kv_dtype or dtype, layer)
                      if k.kind == "attention" else k)
    ks.append(_elementwise("final_norm", arch.hidden_size / tensor, LAYERNORM_FLOPS_PER_ELEMENT, dtype, None))
    ks.append(matmul("lm_head", "forward", 1, arch.hidden_size, -(-arch.vocab_size // tensor), batch_size,
                      dtype, None, weight_dtype=weight_dtype))
    return ks


def scaled(k: Kernel, share: float) -> Kernel:
    """A kernel standing for ``share`` of a layer's kernel (the mean of layers that differ)."""
    dims = None if k.dims is None else (k.dims[0], k.dims[1], k.dims[2], k.dims[3] * share)
    return replace(k, flops=k.flops * share, bytes=k.bytes * share,
                   exec_flops=None if k.exec_flops is None else k.exec_flops * share,
                   saved_bytes=k.saved_bytes * share, dims=dims)  # type: ignore[arg-type]


def mean_layer_kernels(arch: Architecture, seq_len: int, dtype: str, tensor: int = 1,
                       fused_attention: bool | None = None, expert: int = 1,
                       expert_tensor: int | None = None) -> list[Kernel]:
    """One layer's kernels; where layers differ (dense and MoE), the mean layer: each kind's kernels
    at its share of the layers, so ``layers x`` these is the whole model's work."""
    if arch.moe is None:
        return layer_kernels(arch, seq_len, 1, dtype, 0, tensor, fused_attention)
    n_moe = arch.moe_layers
    kinds = []
    first_moe = next(i for i in range(arch.layers) if arch.moe.is_moe_layer(i))
    kinds.append((n_moe / arch.layers, first_moe))
    if n_moe < arch.layers:
        first_dense = next(i for i in range(arch.layers) if not arch.moe.is_moe_layer(i))
        kinds.append((1 - n_moe / arch.layers, first_dense))
    out: list[Kernel] = []
    for share, i in kinds:
        ks = layer_kernels(arch, seq_len, 1, dtype, i, tensor, fused_attention, expert=expert,
                           expert_tensor=expert_tensor)
        out += [scaled(k, share) for k in ks] if share < 1 else ks
    return out
