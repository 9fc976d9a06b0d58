"""Time and memory of LLM serving on one model replica (``tensor`` ranks), vectorised over batches.

* **Prefill** of a prompt: every layer over the input tokens, then the LM head on the last position
  (compute-bound), plus two tensor-parallel all-reduces per layer of the prompt's activations. On
  Neuron, NxD's MoE layers run the prompt's routed experts blockwise (``moe_block_tokens``,
  ``workloads/moe_blockwise.py``): every provisioned block of tokens, padded, with its expert's weights.
* **Decode step** for a batch of ``B`` sequences: every layer on one new token per sequence, the
  weights read once for the whole batch, each sequence's key/value cache read for attention
  (memory-bound at small batches), plus two all-reduces per layer of ``B`` tokens' activations
  (latency-bound). The cache read is the prompt plus half the output on average, or the whole
  compiled length where the stack compiles static shapes (Neuron: see :attr:`ServeWorkload.context`).
  A MoE layer's decode reads the routed experts its tokens pick (:func:`routed_read_share`); NxD's MoE
  module reads every expert once ``B k / E >= 1`` (:func:`nxd_decode_all_experts`).
* **Memory per rank**: the weights (in their storage type) split over the ranks, the key/value
  cache of ``B`` sequences at their longest (prompt plus output), and the workspace. A speculative
  draft model adds its weights and its own cache per sequence (``parallel/speculative.py``).

Options (each off by default): a share of each prompt found in the prefix cache
(``cached_input_tokens``) is not prefilled: the prefill runs over the uncached tokens only (their
attention to the cached prefix is not counted: a few percent of a short prompt's prefill);
speculative decoding (``speculation``, ``parallel/speculative.py``) replaces a decode step by a
drafted-and-verified step over the tokens it yields; weights quantized to 8 or 4 bits
(``weight_dtype``) and an 8-bit cache (``kv_dtype``) change the bytes read and held.

Older decode-attention kernels of grouped-query models read each key/value head once for every query
head of its group (``grouped_kv_reads=False``: TensorRT-LLM before its XQA kernel of 2024-01, "XQA kernel
provides optimization for MQA and GQA during generation phase ... reducing data loading",
https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/XQA-kernel.md): the ``g - 1``
repeated reads of a group of ``g`` query heads reach memory in the share ``Efficiency.kv_reread``
(fitted; the rest hit the on-chip cache).

A replica may span instances (a model too large for one): ``pipeline`` stages of ``tensor`` ranks
each (vLLM's multi-node recipe: tensor parallel inside an instance, pipeline parallel across
instances, https://docs.vllm.ai/en/latest/serving/distributed_serving.html, read 2026-11-25), or a
tensor degree larger than an instance's ranks (its all-reduces then run hierarchically over the
instance network). With ``p`` stages a replica keeps ``p`` micro-batches of ``B / p`` sequences in
flight: each stage holds ``1 / p`` of the layers, weights and cache; a round in which every
sequence gains a token takes the whole model's step at ``B / p`` (each stage runs its layers once
per micro-batch) plus ``p - 1`` activation transfers between stages on the micro-batch's path; a
prefill passes every stage in turn with the same transfers. Stages on other instances transfer over
the instance network, stages inside one over the device link.

Kernels take ``max(FLOPs / (compute x peak), bytes / (memory x bandwidth)) + overhead`` at the
serving efficiencies fitted on published serving points (``hardware/backends/efficiency.py``).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from ecobench.parallel.collectives import all_reduce_s, hierarchical_all_reduce_s, send_s
from ecobench.parallel.speculative import Speculation, verification_arrays
from ecobench.parallel.step import WORKSPACE_GIB, Cluster, Efficiency, KernelArrays
from ecobench.units import BYTES_PER_DTYPE, GIB
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.moe_blockwise import SELECTIVE_LOADING_THRESHOLD, nxd_prefill_kernels
from ecobench.workloads.transformer import (
    decode_kernels,
    kv_cache_bytes_per_token,
    prefill_kernels,
    tensor_split,
)

TP_ALL_REDUCES_PER_LAYER = 2  # after attention and after the feed-forward block (Megatron-style)
MIN_BUCKET = 128  # NxD Inference's smallest automatic bucket (feature-guide.rst, 'Automatic Bucketing')


OPTIMUM_NEURON_STACK = "optimum-neuron-vllm"
# optimum-neuron's NxD backend behind vLLM, behind Text Generation Inference, or in a generate() loop:
# one backend (its compiled graphs and attention kernels below), three servers (their own fitted costs)
OPTIMUM_NEURON_STACKS = (OPTIMUM_NEURON_STACK, "optimum-neuron-tgi", "optimum-neuron")


def prefill_fused_attention(stack: str | None, lnc: int, tokens: int, stated: bool = True) -> bool:
    """Whether a prefill of ``tokens`` (its padded bucket) runs attention as one flash kernel:
    ``stated`` (what the source says of its stack), except on optimum-neuron, whose context encoding
    calls the flash kernel only at a logical NeuronCore of ``lnc`` > 1 (Trainium2's LNC=2) on buckets
    that are multiples of 1,024, and at LNC=1 (Inferentia2, Trainium) on buckets of 4,096 or more;
    otherwise it writes the score matrix to memory (huggingface/optimum-neuron b0a576eb, 2025-10-17,
    optimum/neuron/models/inference/backend/modules/attention/attention_base.py,
    ``get_flash_attention_strategy``: "For LNC2, use the sharded kernel if sequence length is
    divisible by 1024. Otherwise, use no kernel"; "If seq_len is at least 4096, enable flash attn")."""
    if not stated or stack not in OPTIMUM_NEURON_STACKS:
        return stated
    if lnc > 1:
        return tokens >= 1024 and tokens % 1024 == 0
    return tokens >= 4096


def compiled_graph_tokens(static_cache: bool, stack: str | None, compiled: int) -> int:
    """The one length a static-shape replica's stack compiles its context-encoding and token-generation
    graphs at where it compiles no buckets (``ServeWorkload.graph_tokens``), else 0 (buckets).

    optimum-neuron compiles one graph of each at its ``sequence_length`` (a published point's
    ``seq_len``; a planned replica's prompt plus output, the least that serves the request): bucketing
    is off (huggingface/optimum-neuron b0a576eb, 2025-10-16, optimum/neuron/models/inference/backend/
    config.py l.71 ``enable_bucketing: bool | None = False``, l.96 ``self.max_context_length =
    sequence_length``; modules/decoder/modeling_decoder.py l.371-374 and l.397
    ``generate_buckets(max_context_length, max_context_length)`` and ``generate_buckets(sequence_length,
    sequence_length)``), and ``decoder_wrapper.py`` ``pad_to_max_compiled_seq`` (l.215-229) pads every
    prompt to ``max_context_length`` and every token-generation attention mask to ``sequence_length``.
    Its benchmark README says so: "The smaller prefill graph (1024 tokens vs 4096)"
    (benchmark/vllm/chunked-prefill/README.md, 8e9d1e9a, 2026-03-03). So every prompt runs the whole
    compiled length and every decode step attends over the whole compiled cache."""
    return int(compiled) if static_cache and stack in OPTIMUM_NEURON_STACKS else 0


def with_stack_attention(w: ServeWorkload, stack: str | None, lnc: int) -> ServeWorkload:
    """``w`` with the prefill attention ``stack`` runs on its padded bucket at a logical NeuronCore of
    ``lnc`` (:func:`prefill_fused_attention`)."""
    fused = prefill_fused_attention(stack, lnc, w.prefill_compute_tokens, w.fused_attention)
    return w if fused == w.fused_attention else dataclasses.replace(w, fused_attention=fused)


def context_bucket(tokens: int, max_len: int) -> int:
    """Tokens a context-encoding (prefill) graph computes for a prompt of ``tokens``: Neuron compiles
    static shapes, and NxD Inference's automatic buckets are the powers of two from
    :data:`MIN_BUCKET` up to the compiled maximum context length ``max_len``, which is the last one
    (feature-guide.rst, 'Automatic Bucketing'); a prompt is padded to the smallest bucket that holds
    it."""
    bucket = max(MIN_BUCKET, 1 << max(0, int(tokens) - 1).bit_length())
    return max(int(tokens), min(bucket, int(max_len)))


@dataclass(frozen=True)
class ServeWorkload:
    """What a replica serves: the model, the request shape and the data types."""

    arch: Architecture
    input_tokens: int
    output_tokens: int
    dtype: str  # compute
    tensor: int = 1
    weight_dtype: str | None = None  # storage, when it differs (int8 weights with bf16 compute)
    kv_dtype: str | None = None
    static_cache: bool = False  # the stack reads the whole compiled cache every step (static shapes)
    cached_input_tokens: int = 0  # prompt tokens found in the prefix cache: not prefilled
    speculation: Speculation | None = None  # speculative decoding (parallel/speculative.py)
    pipeline: int = 1  # stages a replica is split into (each ``tensor`` ranks), possibly on other instances
    grouped_kv_reads: bool = True  # decode attention reads a key/value head once for its query group
    # static shapes: the context-encoding graph's padded length where it is known (a published point's
    # stated bucket; 0: none); None: decided here, from static_cache and the compiled length
    prefill_bucket_tokens: int | None = None
    moe_block_tokens: int = 0  # NxD's blockwise prefill experts: tokens per block (0: routed copies only)
    # static shapes without buckets (optimum-neuron): the compiled length every prompt is padded to and
    # every decode step's cache spans (:func:`compiled_graph_tokens`; 0: buckets)
    graph_tokens: int = 0
    # the prefill's attention runs as one flash kernel (False: the stack writes each layer's score
    # matrix to device memory and reads it back for the softmax and the context, as
    # transformers-neuronx did before Neuron 2.19; see published_points.yaml, its 2.18 tables)
    fused_attention: bool = True

    @property
    def prefill_tokens(self) -> int:
        """Prompt tokens a prefill computes: those not found in the prefix cache (at least one)."""
        return max(1, self.input_tokens - self.cached_input_tokens)

    @property
    def prefill_compute_tokens(self) -> int:
        """Tokens the prefill's kernels run over: the prompt's, or the bucket it is padded to where the
        stack compiles static shapes (Neuron's context-encoding buckets: the given one, else the
        automatic bucket of :func:`context_bucket` with the compiled length taken as prompt plus
        output, the least a replica serving the request compiles). The one place every path (the
        serving planner, serve-point, the efficiency fit, the emulated NeuronCore) takes it from."""
        if self.prefill_bucket_tokens is not None:
            return max(self.prefill_tokens, int(self.prefill_bucket_tokens))
        if self.graph_tokens:
            return max(self.prefill_tokens, self.graph_tokens)
        if self.static_cache:
            return context_bucket(self.prefill_tokens, self.max_context)
        return self.prefill_tokens

    @property
    def context(self) -> int:
        """Tokens of cache a decode step reads: on average half-way through the output with a paged
        cache (vLLM, TensorRT-LLM); the whole compiled length with static shapes (Neuron's
        transformers-neuronx compiles the cache for prompt plus output and reads all of it;
        optimum-neuron's one token-generation graph spans its ``graph_tokens``)."""
        if self.graph_tokens:
            return max(self.graph_tokens, self.max_context)
        if self.static_cache:
            return self.max_context
        return self.input_tokens + (self.output_tokens + 1) // 2

    @property
    def nxd_moe(self) -> bool:
        """Whether NeuronX Distributed's MoE module runs the MoE layers (a static-shape replica whose
        stack builds ``ExpertMLPsV2``: set with its block size, ``moe_block_tokens``)."""
        return self.moe_block_tokens > 0

    @property
    def max_context(self) -> int:
        """Tokens in the cache at a request's last step."""
        return self.input_tokens + self.output_tokens


@functools.lru_cache(maxsize=256)
def serve_kernels(w: ServeWorkload) -> tuple[KernelArrays, KernelArrays]:
    """(decode step, prefill) kernel arrays per sequence, built with batch 1."""
    a = w.arch
    decode = decode_kernels(a, w.context, 1, w.dtype, w.tensor, w.weight_dtype, w.kv_dtype)
    prefill = prefill_kernels(a, w.prefill_compute_tokens, 1, w.dtype, w.tensor, w.weight_dtype,
                              None if w.fused_attention else False)
    if w.moe_block_tokens:  # NxD on Neuron: every provisioned block of the routed experts is computed
        prefill = nxd_prefill_kernels(prefill, a, w.prefill_compute_tokens, w.dtype, w.tensor,
                                      w.moe_block_tokens)
    # a decode step's matmuls stream the weights through kernels built for few rows (split-K, GEMV-like):
    # memory-bound, so no rows for the gemm_rows factor (Efficiency.gemm_half_rows); a prefill's are tiled
    return dataclasses.replace(KernelArrays.of(decode), rows=None), KernelArrays.of(prefill)


def tp_ring_gb_per_s(cl: Cluster) -> float:
    """Link bandwidth (GB/s, one direction) a tensor-parallel ring all-reduce gets per rank: the
    whole chip's link where several ranks share a chip (NeuronCores). A ring crosses each chip
    boundary once per step with one rank's chunk (the chip's other ranks pass theirs through its
    memory), and the Neuron runtime runs "multiple cycles with mutually exclusive wires in parallel
    for full wire bandwidth" (aws-neuron-sdk neuron-runtime/explore/intranode-collective-comm.rst,
    'Ring Algorithm'; KangaRing pairs the ranks of a chip likewise), so the chip's link is not
    divided among its ranks. One rank per chip (GPUs): the rank's link."""
    return cl.intra_gb_per_s * max(int(cl.ranks_per_chip), 1)


def tp_all_reduce_s(w: ServeWorkload, cl: Cluster, eff: Efficiency, tokens: np.ndarray) -> np.ndarray:
    """Tensor-parallel all-reduces of ``tokens`` tokens' activations through every layer (over the
    instance network too where the tensor degree spans instances), rings at :func:`tp_ring_gb_per_s`."""
    nbytes = tokens * w.arch.hidden_size * BYTES_PER_DTYPE[w.dtype]
    latency = cl.intra_latency_s if eff.collective_latency_s is None else eff.collective_latency_s
    link = tp_ring_gb_per_s(cl)
    if w.tensor > cl.ranks_per_node:
        one = hierarchical_all_reduce_s(nbytes, w.tensor, cl.ranks_per_node, link * eff.network,
                                        latency, cl.inter_gb_per_s / cl.ranks_per_node * eff.network,
                                        cl.inter_latency_s)
    else:
        one = all_reduce_s(nbytes, w.tensor, link * eff.network, latency)
    return w.arch.layers * TP_ALL_REDUCES_PER_LAYER * one


def stage_transfers_s(w: ServeWorkload, cl: Cluster, tokens: np.ndarray | float) -> np.ndarray:
    """The ``pipeline - 1`` activation transfers of ``tokens`` tokens between a replica's stages:
    over the instance network where the stages are on different instances, else the device link."""
    if w.pipeline <= 1:
        return np.zeros_like(np.asarray(tokens, dtype=float))
    nbytes = np.asarray(tokens, dtype=float) * w.arch.hidden_size * BYTES_PER_DTYPE[w.dtype]
    if w.tensor * w.pipeline > cl.ranks_per_node:
        one = send_s(nbytes, cl.inter_gb_per_s, cl.inter_latency_s)
    else:
        one = send_s(nbytes, cl.intra_gb_per_s * w.tensor, cl.intra_latency_s)
    return (w.pipeline - 1) * one


def kv_reread_bytes(w: ServeWorkload) -> float:
    """Bytes per sequence and decode step one rank reads again when its decode attention reads each
    key/value head once per query head of its group (0 with a grouped kernel, MLA or no grouping)."""
    if w.grouped_kv_reads or w.arch.mla is not None:
        return 0.0
    heads, kv = tensor_split(w.arch, w.tensor, pad=True)
    per_token = kv_cache_bytes_per_token(w.arch, w.kv_dtype or w.dtype, w.tensor) / w.pipeline
    return max(heads / kv - 1.0, 0.0) * per_token * w.context


def nxd_decode_all_experts(arch: Architecture, tokens: np.ndarray | float) -> np.ndarray:
    """Where NxD's MoE module runs a decode step of ``tokens`` tokens over every expert: its token
    generation (``seq_len == 1``) takes ``forward_all_experts`` once ``T k / E`` reaches
    ``DEFAULT_SELECTIVE_LOADING_THRESHOLD`` (1.0), else ``forward_selective_loading``
    (aws-neuron/neuronx-distributed, Neuron SDK 2.26.0 fecfe75, src/neuronx_distributed/modules/moe/
    expert_mlps_v2.py l.1120-1133, ``ExpertMLPsV2.forward``; the same at 2.29, fbac349, l.1471-1483)."""
    t = np.maximum(np.asarray(tokens, dtype=float), 1.0)
    m = arch.moe
    if m is None:
        return np.zeros_like(t, dtype=bool)
    return t * m.experts_per_token / m.experts >= SELECTIVE_LOADING_THRESHOLD


def routed_read_share(arch: Architecture, tokens: np.ndarray | float, nxd: bool = False) -> np.ndarray:
    """Share of a MoE layer's routed experts that a decode step of ``tokens`` tokens reads: each token
    picks ``k`` of the ``E`` experts, so with balanced (uniform) routing an expert is left unread with
    probability ``(1 - k / E) ** tokens``; an unread expert's weights stay in memory. One token reads
    its ``k`` experts only; a large batch reads nearly all of them (every share is 1 for a dense model).
    NxD's MoE module (``nxd``) reads every expert once ``T k / E >= 1`` (``forward_all_experts``,
    :func:`nxd_decode_all_experts`), and below that each token's ``k`` experts' weights on their own,
    ``T k`` expert copies (``forward_selective_loading``, expert_mlps_v2.py fecfe75 l.544-574: "(1, 1,
    H) @ (top_k, H, I)" per token): ``T k / E`` of the experts' bytes."""
    t = np.asarray(tokens, dtype=float)
    m = arch.moe
    if m is None:
        return np.ones_like(t)
    if nxd:
        return np.minimum(np.maximum(t, 1.0) * m.experts_per_token / m.experts, 1.0)
    return 1.0 - (1.0 - m.experts_per_token / m.experts) ** np.maximum(t, 1.0)


def with_routed_reads(ks: KernelArrays, arch: Architecture, tokens: np.ndarray | float,
                      nxd: bool = False) -> KernelArrays:
    """Decode kernel arrays whose routed-expert weights are read in :func:`routed_read_share` at
    ``tokens`` tokens a step (the weight bytes gain a leading axis when ``tokens`` is an array). Where
    NxD runs the step over every expert (``nxd`` and :func:`nxd_decode_all_experts`), each token also
    runs through all ``E`` experts, not its ``k``: "(1, T, H) @ (E, H, I) -> (E, T, I)"
    (``forward_all_experts``, expert_mlps_v2.py fecfe75 l.323-326), ``E / k`` times the routed
    matmuls' FLOPs and activation rows. A speculative verification (``seq_len > 1``) takes the same
    rule: NxD's context-encoding path also runs selective loading below ``T k / E = 1`` and all experts
    above it while ``T k`` is under a block (512 pairs; blockwise beyond, not modelled here)."""
    if ks.routed is None or arch.moe is None:
        return ks
    share = routed_read_share(arch, tokens, nxd)[..., None]
    out = dataclasses.replace(ks, weight_bytes=np.where(ks.routed, ks.weight_bytes * share, ks.weight_bytes))
    if not nxd:
        return out
    m = arch.moe
    scale = np.where(nxd_decode_all_experts(arch, tokens), m.experts / m.experts_per_token, 1.0)[..., None]
    return dataclasses.replace(out, flops=np.where(ks.routed, ks.flops * scale, ks.flops),
                               act_bytes=np.where(ks.routed, ks.act_bytes * scale, ks.act_bytes))


def memory_advice(int4: bool, quantization: str) -> str:
    """What a model whose weights alone overflow the accelerators can do: 4-bit weights (unless already;
    ``quantization``: how the caller's input names the setting), or more accelerator memory."""
    more = "an instance with more accelerator memory"
    return more if int4 else f"4-bit weights ({quantization} int4), or {more}"


def step_host_s(eff: Efficiency, sequences: np.ndarray | float) -> np.ndarray:
    """The engine's host seconds around one step that carries ``sequences`` sequences: a fixed cost per
    step plus one per sequence (scheduling, sampling, the step's input metadata)."""
    return eff.step_overhead_s + eff.seq_step_overhead_s * np.asarray(sequences, dtype=float)


# How sharply an eager step turns from device-bound to launch-bound (the order of the p-norm in
# :func:`overlap_s`): at most 2^(1/16) = 4.4% above the longer of the two where they are equal, under
# 0.01% once one is 1.5 times the other. A numerical choice, not a measured one: with the exact maximum
# the fit's least-squares solver (numerical derivatives) stopped early at the kink, leaving unrelated
# parameters short of their optimum (held out, the BERT training source's median error 3.8% -> 8.4%).
LAUNCH_OVERLAP_ORDER = 16.0


def overlap_s(device_s: np.ndarray, host_s: np.ndarray) -> np.ndarray:
    """Seconds of a step whose host work (launching its kernels) overlaps its device work: about the
    longer of the two, a little more where they are close (a host that launches about as fast as the
    device runs leaves it some bubbles); exactly ``device_s`` where ``host_s`` is 0."""
    d, h = np.asarray(device_s, dtype=float), np.asarray(host_s, dtype=float)
    longer = np.maximum(d, h)
    scale = np.where(longer > 0, longer, 1.0)
    p = LAUNCH_OVERLAP_ORDER
    return longer * ((d / scale) ** p + (h / scale) ** p) ** (1 / p)


def step_launches(w: ServeWorkload, kernels: KernelArrays) -> float:
    """Kernels one rank launches for a step through ``kernels``: each modelled kernel that computes,
    plus its tensor-parallel all-reduces (each a NCCL or custom launch of its own)."""
    all_reduces = w.arch.layers * TP_ALL_REDUCES_PER_LAYER if w.tensor > 1 else 0
    return float(np.count_nonzero(kernels.flops > 0) + all_reduces)


def launch_bound_s(device_s: np.ndarray, w: ServeWorkload, kernels: KernelArrays,
                   eff: Efficiency) -> np.ndarray:
    """A step's device seconds, or the host's seconds launching its kernels where longer: an eager engine
    (``eff.launch_s`` > 0, no CUDA graph) launches every kernel from the host while the device runs the
    earlier ones, so the step takes the longer of the two (:func:`overlap_s`); every rank launches the
    same kernels, so the launches' time does not shrink with tensor parallelism. With CUDA graphs (0)
    the device's."""
    if eff.launch_s <= 0:
        return device_s
    return overlap_s(device_s, eff.launch_s * step_launches(w, kernels))


def decode_step_s(w: ServeWorkload, cl: Cluster, eff: Efficiency, batch: np.ndarray) -> np.ndarray:
    """Seconds of one decode step at each batch size (one token for every sequence); with
    speculative decoding, a drafted-and-verified step over the tokens it yields per sequence."""
    b = np.asarray(batch, dtype=float)
    if w.pipeline > 1:  # a round: the whole model at B / p per micro-batch, plus its transfers
        micro = b / w.pipeline
        whole = decode_step_s(dataclasses.replace(w, pipeline=1), cl, eff, micro)
        return whole + stage_transfers_s(w, cl, micro)
    kernels, _ = serve_kernels(w)
    decode = with_routed_reads(kernels, w.arch, b, w.nxd_moe)
    device = decode.time_s(b, cl, eff) + tp_all_reduce_s(w, cl, eff, b)
    if not w.grouped_kv_reads:
        device = device + eff.kv_reread * b * kv_reread_bytes(w) / (eff.memory * cl.memory_gb_per_s * 1e9)
    plain = launch_bound_s(device, w, kernels, eff) + step_host_s(eff, b)
    sp = w.speculation
    if sp is None:
        return plain
    n = sp.tokens + 1
    verify_device = (verification_arrays(with_routed_reads(kernels, w.arch, b * n, w.nxd_moe), n)
                     .time_s(b, cl, eff) + tp_all_reduce_s(w, cl, eff, b * n))
    verify = launch_bound_s(verify_device, w, kernels, eff) + step_host_s(eff, b)
    if sp.draft_arch is not None:
        draft = ServeWorkload(sp.draft_arch, w.input_tokens, w.output_tokens, w.dtype, w.tensor,
                              w.weight_dtype, w.kv_dtype, w.static_cache, graph_tokens=w.graph_tokens)
        draft_s = decode_step_s(draft, cl, eff, b)
    else:
        draft_s = plain * (sp.draft_params or 0.0) / w.arch.params
    return (sp.tokens * draft_s + verify) / sp.tokens_per_step


def prefill_s(w: ServeWorkload, cl: Cluster, eff: Efficiency,
              prompts: np.ndarray | float = 1.0) -> np.ndarray:
    """Seconds to prefill ``prompts`` prompts together (their first token)."""
    p = np.asarray(prompts, dtype=float)
    _, prefill = serve_kernels(w)
    tokens = p * w.prefill_compute_tokens
    device = prefill.time_s(p, cl, eff) + tp_all_reduce_s(w, cl, eff, tokens)
    return launch_bound_s(device, w, prefill, eff) + stage_transfers_s(w, cl, tokens)


def weights_gib_per_rank(w: ServeWorkload) -> float:
    """The model's weights on one rank, in their storage type (and a speculative drafter's)."""
    params = w.arch.params + (w.speculation.draft_weight_params if w.speculation else 0.0)
    return params * BYTES_PER_DTYPE[w.weight_dtype or w.dtype] / (w.tensor * w.pipeline) / GIB


def kv_bytes_per_token(w: ServeWorkload) -> float:
    """Key/value cache bytes one token of a sequence holds on one rank: the target's and, with a
    speculative draft model, the drafter's own in the same cache type (both split over the ranks and
    stages as their weights are; n-gram lookup and a drafter given by size alone add none:
    :meth:`Speculation.draft_kv_bytes_per_token`)."""
    kv_dtype = w.kv_dtype or w.dtype
    per_token = kv_cache_bytes_per_token(w.arch, kv_dtype, w.tensor)
    if w.speculation is not None:
        per_token += w.speculation.draft_kv_bytes_per_token(kv_dtype, w.tensor)
    return per_token / w.pipeline


def kv_gib_per_sequence(w: ServeWorkload) -> float:
    """One sequence's key/value cache on one rank at its longest (:func:`kv_bytes_per_token`)."""
    return w.max_context * kv_bytes_per_token(w) / GIB


def memory_gib_per_rank(w: ServeWorkload, batch: np.ndarray | float) -> np.ndarray:
    """Weights, the cache of ``batch`` sequences and the workspace, on one rank."""
    return weights_gib_per_rank(w) + np.asarray(batch, dtype=float) * kv_gib_per_sequence(w) + WORKSPACE_GIB


def max_batch_by_memory(w: ServeWorkload, cl: Cluster) -> int:
    """The most sequences whose caches fit beside the weights (0: the weights alone do not fit)."""
    free = cl.memory_gib - weights_gib_per_rank(w) - WORKSPACE_GIB
    return max(0, int(free // kv_gib_per_sequence(w)))
