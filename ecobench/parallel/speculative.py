"""Speculative decoding on a serving replica: a cheap drafter proposes ``k`` tokens per sequence, the
target model verifies them in one forward pass over ``k + 1`` positions and keeps the accepted prefix
plus one token of its own.

With each drafted token accepted independently with probability ``a``, a target step yields on
average ``(1 - a^(k+1)) / (1 - a)`` tokens (``k + 1`` at ``a = 1``; Leviathan, Kalman and Matias,
"Fast Inference from Transformers via Speculative Decoding", ICML 2023, eq. 1,
https://arxiv.org/abs/2211.17192). A step costs ``k`` decode steps of the drafter (a smaller model
on the same ranks; nothing for n-gram lookup, which runs on the host) plus the verification: the
target's decode kernels over ``k + 1`` tokens per sequence (weights read once, FLOPs and
activations ``k + 1`` times, the key/value cache read once per sequence). The time per output token
is the step over the tokens it yields.

A draft model keeps a key/value cache of its own for every sequence, beside the target's: vLLM's
draft-model speculation gives the drafter as many cache blocks as the target and splits the memory the
target's cache alone could take between the two in proportion to their block sizes, so both caches hold
the same tokens (vllm-project/vllm, vllm/spec_decode/spec_decode_worker.py,
``SpecDecodeWorker.determine_num_available_blocks`` and ``split_num_cache_blocks_evenly``: "Since the
target and draft models allocate the same number of blocks ... the total memory usage from KV cache is
no larger than the number of blocks allocatable by the target model alone", commit a4aeba17, read
2026-11-29); the drafter's cache takes the target's cache precision (the two workers share one cache
configuration there). A sequence's cache bytes per token are then the target's plus the drafter's
(:meth:`Speculation.draft_kv_bytes_per_token`). n-gram lookup keeps none. A drafter given by its size
alone (``draft_params``) has no layers, key/value heads or head size to derive a cache from: none is
counted, so its memory check is as loose as its drafter's cache is large (an assumption).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ecobench.parallel.step import KernelArrays
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.transformer import kv_cache_bytes_per_token


@dataclass(frozen=True)
class Speculation:
    """A replica's speculative decoding: ``tokens`` drafted per step, each accepted with
    probability ``acceptance``; the drafter is a model (``draft_arch``), a size (``draft_params``:
    its step is the target's decode step scaled by the parameter ratio, both being weight-read
    bound) or host-side n-gram lookup (neither: no accelerator time)."""

    tokens: int
    acceptance: float
    draft_arch: Architecture | None = None
    draft_params: float | None = None

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a target step yields per sequence (Leviathan et al. 2023, eq. 1)."""
        return expected_tokens_per_step(self.acceptance, self.tokens)

    @property
    def draft_weight_params(self) -> float:
        """Parameters of the drafter held beside the target's weights (0 for n-gram lookup)."""
        if self.draft_arch is not None:
            return float(self.draft_arch.params)
        return float(self.draft_params or 0.0)

    def draft_kv_bytes_per_token(self, kv_dtype: str, tensor: int = 1) -> float:
        """Bytes one token adds to the drafter's own key/value cache on one of ``tensor`` ranks, in the
        target's cache type ``kv_dtype``: a draft model's (its layers, key/value heads and head size);
        0 for n-gram lookup and for a drafter given by size alone (its cache cannot be derived)."""
        if self.draft_arch is None:
            return 0.0
        return kv_cache_bytes_per_token(self.draft_arch, kv_dtype, tensor)


def expected_tokens_per_step(acceptance: float, tokens: int) -> float:
    """``(1 - a^(k+1)) / (1 - a)``: the accepted drafted tokens plus the target's own, on average."""
    a, k = float(acceptance), int(tokens)
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def verification_arrays(decode: KernelArrays, tokens: int) -> KernelArrays:
    """The target's decode kernel arrays (``KernelArrays``) over ``tokens`` positions per sequence:
    FLOPs and activations scale with the positions, weights and the cached keys and values (the
    attention kernels' bytes) are read once."""
    n = float(tokens)
    act = np.where(decode.attention, decode.act_bytes, decode.act_bytes * n)
    return dataclasses.replace(decode, flops=decode.flops * n, act_bytes=act)
