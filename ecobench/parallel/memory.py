"""What a training recipe keeps in device memory: optimizer state by optimizer and master weights,
the headroom a practitioner leaves for fragmentation, and the recipe's options as one value.

Bytes per parameter (weights, gradients, optimizer state) when training in 16 bits:

=================  ==============  ==============================================================
optimizer          state bytes     what it keeps
=================  ==============  ==============================================================
adam               12 (8 without   fp32 master weights (4) and two fp32 moments (8): Rajbhandari
                   master)         et al., "ZeRO", SC20, §3.1 ("K = 12")
adam_8bit          6 (2 without)   fp32 master weights (4) and two 8-bit block-quantised moments
                                   (2): Dettmers et al., "8-bit Optimizers via Block-wise
                                   Quantization", ICLR 2022, §2
sgd                8 (4 without)   fp32 master weights (4) and one fp32 momentum (4)
=================  ==============  ==============================================================

``master_weights: false`` drops the fp32 copy (pure 16-bit training). fp32 training has no
separate master copy: its state is the moments alone. The optimizer step streams the state, the
master weights and the fp32 gradient once, read and written (32 bytes per parameter for Adam, as
``transformer.OPTIMIZER_BYTES_PER_PARAM``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

Optimizer = Literal["adam", "adam_8bit", "sgd"]
OPTIMIZERS: tuple[Optimizer, ...] = ("adam", "adam_8bit", "sgd")
AttentionKernel = Literal["flash", "eager"]
MASTER_WEIGHT_BYTES = 4  # fp32 copy of every parameter
FP32_GRADIENT_BYTES = 4  # the optimizer reads an fp32 gradient (mixed precision upcasts it)
# Optimizer moments per parameter, bytes: Adam's two fp32 moments, 8-bit Adam's two 1-byte
# block-quantised moments (its per-block scales are under 0.1%: 2,048-element blocks), SGD momentum.
MOMENT_BYTES: dict[str, int] = {"adam": 8, "adam_8bit": 2, "sgd": 4}

# Memory headroom: the share of device memory a plan leaves free for the caching allocator's
# fragmentation, collective and cuBLAS workspaces. Default 10%: Guo et al., "GMLake: Efficient and
# Transparent GPU Memory Defragmentation for Large-scale DNN Training with Virtual Memory Stitching",
# ASPLOS 2024 (arXiv 2401.08156), measure PyTorch's caching allocator losing 15% on average (up to
# 33%) of A100-80GB memory to fragmentation over eight LLM fine-tuning setups with recomputation,
# offload and ZeRO; 10% is the lower end for plain pre-training layouts. Bounds 0-50%.
DEFAULT_MEMORY_HEADROOM_PCT = 10.0
MAX_MEMORY_HEADROOM_PCT = 50.0
# Serving: the share of device memory the engine leaves unused by default, per accelerator vendor.
# NVIDIA: vLLM's --gpu-memory-utilization defaults to 0.9 ("the fraction of GPU memory to be used for
# the model executor", https://docs.vllm.ai/en/latest/models/engine_args.html, read 2026-11-29);
# TensorRT-LLM's KV cache takes 0.9 of the memory free after the weights by default
# (free_gpu_memory_fraction), so 10% is the engines' common default. AWS Neuron: NxD Inference and
# transformers-neuronx allocate the compiled batch's caches statically at load, with no such fraction
# documented: 0. The 1 GiB serving workspace (parallel/step.py WORKSPACE_GIB) comes on top.
SERVING_HEADROOM_PCT: dict[str, float] = {"nvidia": 10.0}


@dataclass(frozen=True)
class Recipe:
    """The memory choices of a training recipe that are not the layout: optimizer, master weights,
    attention kernel (None: flash for decoders, unfused for encoders, as today)."""

    optimizer: Optimizer = "adam"
    master_weights: bool = True
    attention_kernel: AttentionKernel | None = None

    @property
    def fused_attention(self) -> bool | None:
        """The step model's ``Workload.fused_attention`` for this kernel choice."""
        return None if self.attention_kernel is None else self.attention_kernel == "flash"


DEFAULT_RECIPE = Recipe()


def state_bytes(dtype: str, optimizer: str = "adam", master_weights: bool = True) -> tuple[int, int, int]:
    """(weights, gradients, optimizer state) bytes per parameter training in ``dtype``."""
    if dtype in ("fp32", "tf32"):
        return 4, 4, MOMENT_BYTES[optimizer]
    master = MASTER_WEIGHT_BYTES if master_weights else 0
    return 2, 2, master + MOMENT_BYTES[optimizer]


def optimizer_step_bytes(optimizer_state_bytes: float) -> float:
    """Bytes the optimizer step streams per parameter: its state and the fp32 gradient, read and
    written (Adam with master weights: 2 x (12 + 4) = 32)."""
    return 2.0 * (optimizer_state_bytes + FP32_GRADIENT_BYTES)


def usable_gib(memory_gib: float, headroom_pct: float) -> float:
    """Device memory a plan may fill, leaving ``headroom_pct`` free."""
    return memory_gib * (1.0 - headroom_pct / 100.0)


class DeviceMemory(Protocol):
    """A device's memory as a plan sees it (``parallel.step.Cluster``)."""

    memory_gib: float
    memory_headroom_pct: float


M = TypeVar("M")  # a dataclass with the fields of DeviceMemory (a Cluster)


def with_headroom(cl: M, headroom_pct: float) -> M:
    """``cl`` with ``headroom_pct`` of each device's memory taken off (and recorded)."""
    return dataclasses.replace(cl, memory_gib=usable_gib(cl.memory_gib, headroom_pct),
                               memory_headroom_pct=headroom_pct)


def rank_word(holder: object) -> str:
    """What one rank's memory belongs to, in the platform's words, from anything with a
    ``ranks_per_chip`` (a cluster, an accelerator; None or without one: a GPU): a GPU ("device"), or a
    NeuronCore where a chip holds several ranks (a Neuron "device" is the whole chip: Inferentia2's 32
    GiB, of which each of its 2 NeuronCores has 16; Trainium2's logical NeuronCores at LNC=2 24 of 96)."""
    return "NeuronCore" if getattr(holder, "ranks_per_chip", 1) > 1 else "device"


def memory_in_words(cl: DeviceMemory) -> str:
    """What a rank offers, e.g. ``80.0 GiB per device, 72.0 GiB usable after 10% headroom``
    (:func:`rank_word`)."""
    h, per = cl.memory_headroom_pct, rank_word(cl)
    if not h:
        return f"{cl.memory_gib:.1f} GiB per {per}"
    total = cl.memory_gib / (1 - h / 100)
    return f"{total:.1f} GiB per {per}, {cl.memory_gib:.1f} GiB usable after {h:g}% headroom"


def serving_headroom_pct(vendor: str, given: float | None) -> float:
    """A serving configuration's memory headroom, percent of device memory: ``given``, else its
    engines' default (:data:`SERVING_HEADROOM_PCT`, 0 for a vendor without one)."""
    return SERVING_HEADROOM_PCT.get(vendor, 0.0) if given is None else given
