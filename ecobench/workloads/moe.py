"""Kernels of a mixture-of-experts feed-forward and of multi-head latent attention, per sample on one
rank.

Expert parallelism (``expert`` ranks, carved out of the data-parallel ranks as Megatron-Core does)
gives each rank ``experts / expert`` of the routed experts; tokens are sent to the ranks of their
experts and back (the all-to-alls are timed in ``parallel/step.py``). With balanced routing a rank's
experts process as many token-expert pairs as its own tokens choose, ``seq_len x experts_per_token``
per sample, so the FLOPs per rank are the active experts' only; the weights a rank reads are its
local experts'. Expert feed-forwards are split over ``expert_tensor`` ranks: by default the
tensor-parallel ranks, as the dense one is; with Megatron-Core's parallel folding
(``expert_tensor_parallel_size`` 1, as NVIDIA's MoE recipes run) each expert is whole on its rank and
the rank runs the token copies of its own sequence-parallel share of the tokens (``s / tensor``).
The capacity factor (the busiest expert's load over the mean) multiplies the work the slowest rank
executes and the tokens it exchanges; the model FLOPs (MFU) count the active experts only.
"""

from __future__ import annotations

from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.kernels import Kernel
from ecobench.workloads.ops import (
    CAUSAL_EXECUTED_SHARE,
    GELU_FLOPS_PER_ELEMENT,
    SWIGLU_FLOPS_PER_ELEMENT,
    matmul,
)


def _expert_matmul(name: str, m: float, k: int, n: int, copies: float, cf: float, dtype: str,
                   layer: int | None) -> Kernel:
    """``copies`` weights of [k x n] (the rank's experts, grouped GEMM) applied to ``m`` token rows in
    all; the busiest expert's ``cf`` share more rows is what executes."""
    b = BYTES_PER_DTYPE[dtype]
    act = (m * k + m * n) * b
    w = copies * k * n * b
    flops = 2.0 * m * k * n
    # dims carry the weight the rank reads (every local expert), as step.py counts weight bytes
    return Kernel(name, "matmul", "forward", f"{copies:g}x[{k}x{n}] over {m:g} rows", flops=flops,
                  bytes=float(act * cf + w), dtype=dtype, layer=layer, dims=(1, int(m), k, int(copies * n)),
                  weights=True, exec_flops=flops * cf, saved_bytes=float(m * k * b * cf))


def moe_ffn_kernels(arch: Architecture, seq_len: int, dtype: str, layer: int | None, tensor: int = 1,
                    expert: int = 1, expert_tensor: int | None = None) -> list[Kernel]:
    """The expert feed-forward of one MoE layer: router, dispatch, routed experts, combine, shared."""
    m = arch.moe
    assert m is not None
    s, h, b = seq_len, arch.hidden_size, BYTES_PER_DTYPE[dtype]
    et = tensor if expert_tensor is None else expert_tensor
    f = -(-m.expert_intermediate_size // et)
    cf = m.capacity_factor
    pairs = s * m.experts_per_token
    # token copies one rank's experts run: its tensor group's copies, split over the expert's ranks
    rows = pairs * et / tensor
    local = m.experts / expert
    glu = arch.ffn == "swiglu"
    act_flops = SWIGLU_FLOPS_PER_ELEMENT if glu else GELU_FLOPS_PER_ELEMENT
    width = 2 * f if glu else f
    e = m.experts
    act_fl = float(rows * f * act_flops)
    ks = [
        Kernel("moe.router", "matmul", "forward", f"[{s}x{h}]@[{h}x{e}]", flops=2.0 * s * h * e,
               bytes=float((s * h + s * e + h * e) * b), dtype=dtype, layer=layer,
               dims=(1, s, h, e), weights=True, saved_bytes=float(s * h * b / tensor)),
        # permute the tokens into expert order before the dispatch, and back after the combine
        Kernel("moe.permute", "elementwise", "forward", f"{pairs}x{h}", flops=0.0,
               bytes=float(4 * pairs * h * b * cf / tensor), dtype=dtype, layer=layer),
        _expert_matmul("moe.experts.up", rows, h, width, local, cf, dtype, layer),
        Kernel("moe.experts.act", "elementwise", "forward", f"{rows:g}x{f}", flops=act_fl,
               bytes=float(3 * rows * f * b), dtype=dtype, layer=layer, exec_flops=act_fl * cf,
               saved_bytes=float(2 * rows * f * b * cf)),
        _expert_matmul("moe.experts.down", rows, f, h, local, cf, dtype, layer),
    ]
    if m.shared_experts:
        fs = -(-m.shared_experts * m.expert_intermediate_size // tensor)
        ws = 2 * fs if glu else fs
        ks += [_expert_matmul("moe.shared.up", s, h, ws, 1, 1.0, dtype, layer),
               Kernel("moe.shared.act", "elementwise", "forward", f"{s}x{fs}",
                      flops=float(s * fs * act_flops), bytes=float(3 * s * fs * b), dtype=dtype,
                      layer=layer, saved_bytes=float(2 * s * fs * b)),
               _expert_matmul("moe.shared.down", s, fs, h, 1, 1.0, dtype, layer)]
    return ks


def mla_kernels(arch: Architecture, seq_len: int, dtype: str, layer: int, tensor: int = 1) -> list[Kernel]:
    """Multi-head latent attention of one layer on one tensor-parallel rank: the down-projections to
    the query and key/value latents (every rank computes them), the up-projections of its heads, the
    fused causal attention (query/key width ``qk_nope + qk_rope``, value width ``v``), the output
    projection of its heads."""
    a = arch.mla
    assert a is not None
    s, h, b = seq_len, arch.hidden_size, BYTES_PER_DTYPE[dtype]
    n = arch.heads // tensor
    dqk, dv = a.qk_head_dim, a.v_head_dim
    sp = 1.0 / tensor
    ks = []
    if a.q_lora_rank:
        ks += [matmul("attention.q_down", "forward", s, h, a.q_lora_rank, 1, dtype, layer, saved_share=sp),
               matmul("attention.q_up", "forward", s, a.q_lora_rank, n * dqk, 1, dtype, layer)]
    else:
        ks.append(matmul("attention.q", "forward", s, h, n * dqk, 1, dtype, layer, saved_share=sp))
    ks += [matmul("attention.kv_down", "forward", s, h, a.kv_lora_rank + a.qk_rope_head_dim, 1, dtype, layer,
                   saved_share=sp),
           matmul("attention.kv_up", "forward", s, a.kv_lora_rank, n * (a.qk_nope_head_dim + dv), 1, dtype,
                   layer)]
    flops = 2.0 * n * s * s * (dqk + dv)
    qkvo = (2 * n * dqk + 2 * n * dv) * s * b
    ks.append(Kernel("attention.core", "attention", "forward", f"{n}x[{s}x{dqk}]@[{dqk}x{s}]", flops=flops,
                     bytes=float(qkvo), dtype=dtype, layer=layer, dims=(n, s, dqk, s),
                     exec_flops=flops * CAUSAL_EXECUTED_SHARE, saved_bytes=float(qkvo + n * s * 4)))
    ks.append(matmul("attention.output", "forward", s, n * dv, h, 1, dtype, layer))
    return ks
