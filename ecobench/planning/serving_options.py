"""A configuration's serving options as the serving model's inputs: quantization (the weights' storage
type and the peak weight matmuls run at), an 8-bit key/value cache, the prefix cache's hit rate and
speculative decoding. Every option is off unless the scenario sets it.

* ``quantization: fp8 | int8`` (W8A8): weights stored in 1 byte and the weight matmuls at the chip's
  published 8-bit peak; activations, attention and the all-reduces stay at ``precision``. A chip
  without a published peak in that type cannot run it (bad input).
* ``quantization: int4`` (W4A16): weights stored in half a byte, compute at ``precision``.
* ``kv_cache_precision: fp8``: the cache in 1 byte (half a 16-bit cache's reads and memory).
* ``workload.serving.prefix_cache_hit_rate``: that share of each prompt's tokens is not prefilled.
* ``speculative``: ``parallel/speculative.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ecobench.errors import InputError
from ecobench.hardware.catalog import Accelerator, supported_dtypes
from ecobench.parallel.serving import ServeWorkload, max_batch_by_memory, memory_advice
from ecobench.parallel.speculative import Speculation
from ecobench.parallel.step import Cluster
from ecobench.scenario.model import HardwareConfig, ServingSpec
from ecobench.units import BYTES_PER_DTYPE, DTYPES
from ecobench.workloads.presets import preset

W8A8 = ("fp8", "int8")  # quantizations whose weight matmuls run at the chip's 8-bit peak
# Accelerators no LLM serving stack runs on: Inferentia (inf1, NeuronCore-v1) runs torch-neuron's traced
# graphs; the Neuron LLM stacks target NeuronCore-v2 and later: "Transformers NeuronX for Trn1 and Inf2 ...
# LLM ... inference on second-generation Neuron hardware (See: NeuronCore-v2)" (transformers-neuronx
# developer guide, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/archive/transformers-neuronx/
# transformers-neuronx-developer-guide.html) and "vLLM with NxD Inference ... supports Inf2, Trn1, and
# Trn2 instances" (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/vllm-neuron/
# neuron-inference-overview.html); both read 2026-11-28. Its catalog entry keeps activations on chip (an
# encoder's), which would time a decoder's weight reads at zero.
NO_LLM_SERVING = {"inferentia": "Inferentia (inf1) runs no LLM serving stack: transformers-neuronx, NxD "
                                "Inference and vLLM on Neuron target Inf2, Trn1 and Trn2"}


def llm_serving_refusal(accelerator: str | None) -> str | None:
    """Why an LLM cannot be served on ``accelerator`` (a catalog key), with what is allowed; or None."""
    why = NO_LLM_SERVING.get(accelerator or "")
    return None if why is None else f"{why} (allowed: an inf2, trn1, trn2 or GPU instance)"


QUANTIZATION_WORDS = {"fp8": "FP8 W8A8", "int8": "INT8 W8A8", "int4": "INT4 weights (W4A16)"}


def weight_dtype(cfg: HardwareConfig) -> str | None:
    """How the weights are stored: the quantization's type, else ``weight_precision``."""
    return cfg.quantization or cfg.weight_precision


# What the engines store a key/value cache in: vLLM's --kv-cache-dtype is auto (the model's dtype),
# bfloat16, float16, fp8 (e4m3, e5m2) or int8 (vllm/config/cache.py CacheDType, read 2026-11-29);
# TensorRT-LLM's KV-cache quantization FP8 or INT8; SGLang's --kv-cache-dtype auto or fp8. None keeps a
# cache, nor weights, wider than the compute type: weights are cast to --dtype at load.
NARROWER_STORAGE = "one no wider than precision"


def storage_refusal(precision: str, weight_precision: str | None,
                    kv_cache_precision: str | None) -> tuple[str, str] | None:
    """(field, why) where weights or the key/value cache would be stored wider than ``precision``
    computes (an fp32 cache under bf16 compute: twice the cache's reads and memory for no engine's
    setting), or in tf32, a matmul mode rather than a storage type; None otherwise."""
    width = BYTES_PER_DTYPE[precision]
    for field, value, what in (("weight_precision", weight_precision, "weights"),
                               ("kv_cache_precision", kv_cache_precision, "key/value cache")):
        if value is None or value == precision:
            continue
        narrower = [d for d in DTYPES if d != "tf32" and BYTES_PER_DTYPE[d] < width]
        allowed = f"{precision} (the default), " + (", ".join(narrower) if narrower else "none narrower")
        if value == "tf32":
            return field, (f"tf32 is a matmul mode (fp32 storage, 10-bit mantissa products), not a type "
                           f"{what} are stored in; allowed: {allowed}")
        if BYTES_PER_DTYPE[value] > width:
            return field, (f"{value} {what} under {precision} compute: no serving engine stores {what} "
                           f"wider than it computes (vLLM casts weights to --dtype at load; its "
                           f"--kv-cache-dtype is auto, bfloat16, fp8 or int8), so the model would charge "
                           f"{BYTES_PER_DTYPE[value] / width:g}x the bytes read and held; allowed: {allowed}")
    return None


def quantization_refusal(acc: Accelerator, q: str | None) -> None:
    """Bad input where W8A8 quantization ``q`` needs a published peak in it that the chip lacks."""
    if q not in W8A8 or acc.peak_tflops.get(q or ""):
        return
    others = [d for d in W8A8 if acc.peak_tflops.get(d)]
    allowed = ", ".join([*others, "int4"]) if others else "int4 (weight-only)"
    raise InputError(f"{acc.name} has no published {q} peak, so it cannot run {q} (W8A8) "
                     f"matmuls (its published types: {supported_dtypes(acc)}); allowed: "
                     f"{allowed}, or none").in_config("quantization")


def quantized_cluster(cl: Cluster, acc: Accelerator, q: str | None) -> Cluster:
    """The cluster with the weight matmuls at the chip's 8-bit peak for W8A8 quantization ``q`` (the
    rest of the kernels at ``precision``'s); unchanged otherwise. Bad input where the chip has no
    published peak in it."""
    if q not in W8A8:
        return cl
    quantization_refusal(acc, q)
    peak = acc.peak_tflops[q or ""]
    return dataclasses.replace(cl, peak_tflops=peak / acc.ranks_per_chip,
                               peak_16bit_tflops=cl.peak_16bit_tflops or cl.peak_tflops)


def workload_options(spec: ServingSpec, cfg: HardwareConfig) -> dict[str, Any]:
    """``ServeWorkload`` fields the options set (empty when none is set: the model as before)."""
    out: dict[str, Any] = {}
    hit = spec.prefix_cache_hit_rate
    if hit:
        out["cached_input_tokens"] = min(spec.input_tokens - 1, int(round(hit * spec.input_tokens)))
    sp = cfg.speculative
    if sp is not None:
        arch = preset(sp.draft_model) if sp.draft_model else None
        out["speculation"] = Speculation(sp.num_speculative_tokens, sp.acceptance_rate, arch,
                                         sp.draft_params)
    return out


def describe(spec: ServingSpec, cfg: HardwareConfig) -> str:
    """The options in words, for the plan's method ('' when none is set)."""
    parts = []
    if cfg.quantization:
        parts.append(QUANTIZATION_WORDS[cfg.quantization])
    if cfg.kv_cache_precision and cfg.kv_cache_precision != cfg.precision:
        parts.append(f"{cfg.kv_cache_precision} KV cache")
    if spec.prefix_cache_hit_rate:
        parts.append(f"prefix cache {spec.prefix_cache_hit_rate:.0%} of prompt tokens")
    sp = cfg.speculative
    if sp is not None:
        e = Speculation(sp.num_speculative_tokens, sp.acceptance_rate).tokens_per_step
        drafter = sp.draft_model or (f"{sp.draft_params:.3g}-parameter drafter" if sp.draft_params
                                     else "n-gram")
        parts.append(f"speculative ({drafter}, {sp.num_speculative_tokens} tokens, acceptance "
                     f"{sp.acceptance_rate:g}: {e:.2f} tokens per target step)")
    return "; ".join(parts)


def weights_advice(widest: ServeWorkload, cl: Cluster, int4_given: bool, quantization: str) -> str:
    """What a model whose weights fit no layout tried can do (:func:`parallel.serving.memory_advice`):
    4-bit weights are offered only where not given already and where they would fit ``widest``, the
    layout tried that spreads the weights widest; ``quantization``: how the caller's input names it."""
    return memory_advice(int4_given or max_batch_by_memory(
        dataclasses.replace(widest, weight_dtype="int4"), cl) < 1, quantization)
