"""The routed experts of a MoE layer's prefill as NxD Inference runs them on Neuron: blockwise.

Neuron compiles static shapes, so NeuronX Distributed's ``ExpertMLPsV2`` (the MoE module of NxD
Inference, vLLM Neuron and optimum-neuron) cannot give each expert its own number of tokens. For a
context encoding (``seq_len > 1``) of ``T`` tokens, each choosing ``k`` of ``E`` local experts, with
full capacity (``capacity_factor=None``, dropless: every model here) its ``forward`` picks
(aws-neuron/neuronx-distributed, Neuron SDK 2.26.0 = NxD 0.15, commit fecfe75,
src/neuronx_distributed/modules/moe/expert_mlps_v2.py, ``ExpertMLPsV2.forward``; optimum-neuron
pins neuronx_distributed 0.15.22404 in pyproject.toml, l.91-99, of its 2025-10 benchmark commits
b0a576eb and 5996de0f):

* ``T k / E < 1`` (``DEFAULT_SELECTIVE_LOADING_THRESHOLD`` 1.0): *selective loading*, the experts
  its token copies chose, each run on its own token (as ``workloads/moe.py`` counts any MoE layer);
* else ``T k < block_size``: *all experts*, every expert over every token (``forward_all_experts``:
  "(1, T, H) @ (E, H, I) -> (E, T, I)"), every expert's weights read once;
* else *blockwise* (``forward_blockwise``): the token copies are laid out in ``N`` blocks of
  ``block_size`` tokens (``DEFAULT_BLOCK_SIZE`` 512, model_utils.py), each block assigned to one
  expert and padded with a dummy token (index ``T``), where
  ``N = min(ceil((T k - (E - 1)) / block_size) + E - 1, T k)`` -- enough for the worst routing
  (E - 1 experts with one token each, the rest on one expert). Every one of the ``N`` blocks is
  computed: the NKI kernel the default configuration calls on Trn2 (LNC=2, ``blockwise_mm_baseline_
  shard_hidden``, aws-neuron/nki-library d2ad3a57, src/nkilib_src/nkilib/experimental/moe/forward/
  bwmm_shard_on_H.py) loops ``for block_idx in nl.sequential_range(N)``: it gathers the block's
  ``block_size`` token rows of the hidden states, loads the block's expert's gate/up and down
  weights, runs the three projections over all ``block_size`` rows, reads the block's rows of the
  output and writes them back with the block's result added. Skipping padded tokens, repeated
  weights or empty blocks (``skip_dma``, the dynamic-while kernels) are options the default
  ``BlockwiseMatmulConfig`` leaves off (``DEFAULT_SKIP_MODE = (False, False)``), and neither
  optimum-neuron nor the GPT-OSS tutorial sets them.

The NxD Inference deep dive describes the same provisioning ("N = ceil(tokens x top_k / block_size)
+ (num_experts - 1) blocks ... Regular execution: Compute all 10 blocks";
aws-neuron-sdk 81ce03ae, libraries/nxd-inference/developer_guides/moe-arch-deep-dive.rst, 2025-12-01).

So a prefill's routed experts run ``N x block_size`` token rows (not ``T k``), read ``N`` experts'
weights (one per block), and move ``3 x N x block_size`` hidden-state rows (gather, read and write
of the output); with tensor parallelism each rank holds ``1 / tensor`` of every expert's
intermediate dimension and runs every block over all ``hidden`` columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.kernels import Kernel
from ecobench.workloads.moe import _expert_matmul
from ecobench.workloads.ops import GELU_FLOPS_PER_ELEMENT, SWIGLU_FLOPS_PER_ELEMENT

NXD_BLOCK_TOKENS = 512  # DEFAULT_BLOCK_SIZE, neuronx_distributed/modules/moe/model_utils.py (fecfe75)
SELECTIVE_LOADING_THRESHOLD = 1.0  # DEFAULT_SELECTIVE_LOADING_THRESHOLD, same file
# Serving stacks whose MoE layers are NeuronX Distributed's ExpertMLPs(V2): NxD Inference itself,
# vLLM Neuron (on NxD Inference) and optimum-neuron (optimum/neuron/models/inference/backend/modules/
# moe.py and moe_v2.py build neuronx_distributed's ExpertMLPs / ExpertMLPsV2).
NXD_MOE_STACKS = ("nxd-inference", "vllm-neuron", "optimum-neuron-vllm", "optimum-neuron-tgi",
                  "optimum-neuron")
NXD_DEFAULT_STACK = "nxd-inference"  # a static-shape (Neuron) replica with no stack named runs NxD Inference


def prefill_block_tokens(static_cache: bool, stack: str | None) -> int:
    """Tokens per block of a replica's blockwise MoE prefill (``ServeWorkload.moe_block_tokens``):
    NxD's block size on a static-shape (Neuron) replica whose stack runs NxD's MoE module, else 0
    (routed copies only). The one rule the serving planner, serve-point and the efficiency fit share."""
    return NXD_BLOCK_TOKENS if static_cache and (stack or NXD_DEFAULT_STACK) in NXD_MOE_STACKS else 0


BLOCKWISE_KERNELS = ("moe.permute", "moe.experts.up", "moe.experts.act", "moe.experts.down")

Path = Literal["selective", "all_experts", "blockwise"]


def expert_path(tokens: int, experts: int, top_k: int, block_tokens: int = NXD_BLOCK_TOKENS) -> Path:
    """Which of ``ExpertMLPsV2.forward``'s context-encoding paths runs ``tokens`` tokens."""
    pairs = tokens * top_k
    if pairs / experts < SELECTIVE_LOADING_THRESHOLD:
        return "selective"
    if pairs < block_tokens:
        return "all_experts"
    return "blockwise"


def blockwise_blocks(tokens: int, experts: int, top_k: int, block_tokens: int = NXD_BLOCK_TOKENS) -> int:
    """Blocks ``forward_blockwise`` provisions (and the kernel computes) for ``tokens`` tokens."""
    pairs = tokens * top_k
    n = math.ceil((pairs - (experts - 1)) / block_tokens) + experts - 1
    return max(1, min(n, pairs))


@dataclass(frozen=True)
class ExpertWork:
    """What one rank's routed experts run in a prefill: token rows through the expert projections,
    expert weights read (in experts), hidden-state rows moved to and from the blocks."""

    path: Path
    rows: int
    weight_copies: int
    moved_rows: int  # gathered into blocks, and the output's rows read and written back

    @property
    def blocks(self) -> int:
        return self.weight_copies if self.path == "blockwise" else 0


def expert_work(tokens: int, experts: int, top_k: int, block_tokens: int = NXD_BLOCK_TOKENS) -> ExpertWork:
    """Token rows, expert weights and moved rows of one MoE layer's routed experts for ``tokens``
    tokens (see the module docstring)."""
    pairs = tokens * top_k
    path = expert_path(tokens, experts, top_k, block_tokens)
    if path == "selective":
        return ExpertWork(path, pairs, min(pairs, experts), 2 * pairs)
    if path == "all_experts":
        return ExpertWork(path, experts * tokens, experts, experts * tokens)  # the (E, T, H) outputs combined
    n = blockwise_blocks(tokens, experts, top_k, block_tokens)
    return ExpertWork(path, n * block_tokens, n, 3 * n * block_tokens)


def nxd_prefill_kernels(ks: list[Kernel], arch: Architecture, tokens: int, dtype: str, tensor: int = 1,
                        block_tokens: int = NXD_BLOCK_TOKENS) -> list[Kernel]:
    """A prefill's kernels (``transformer.prefill_kernels`` over ``tokens`` tokens, one prompt) with
    every MoE layer's routed experts as NxD runs them: the token permutation and the routed
    projections replaced by :func:`expert_work`'s rows, weights and moved rows."""
    m = arch.moe
    if m is None or block_tokens <= 0:
        return ks
    work = expert_work(tokens, m.experts, m.experts_per_token, block_tokens)
    if work.path == "selective":  # the routed token copies only, as the generic kernels count them
        return ks
    h, b = arch.hidden_size, BYTES_PER_DTYPE[dtype]
    f = -(-m.expert_intermediate_size // tensor)
    glu = arch.ffn == "swiglu"
    width = 2 * f if glu else f
    act_flops = SWIGLU_FLOPS_PER_ELEMENT if glu else GELU_FLOPS_PER_ELEMENT
    rows, copies = work.rows, work.weight_copies
    out: list[Kernel] = []
    for k in ks:
        if k.name not in BLOCKWISE_KERNELS:
            out.append(k)
        elif k.name == "moe.permute":
            out.append(Kernel("moe.permute", "elementwise", "forward", f"{work.moved_rows}x{h}", flops=0.0,
                              bytes=float(work.moved_rows * h * b), dtype=dtype, layer=k.layer))
        elif k.name == "moe.experts.up":
            out.append(_expert_matmul("moe.experts.up", rows, h, width, copies, 1.0, dtype, k.layer))
        elif k.name == "moe.experts.act":
            fl = float(rows * f * act_flops)
            out.append(Kernel("moe.experts.act", "elementwise", "forward", f"{rows}x{f}", flops=fl,
                              bytes=float(3 * rows * f * b), dtype=dtype, layer=k.layer))
        else:
            out.append(_expert_matmul("moe.experts.down", rows, f, h, copies, 1.0, dtype, k.layer))
    return out
