"""Published throughput points: what the analytic backend's efficiency model is fitted on and what
``ecobench validate --mode holdout`` predicts out of sample.

Package data ``data/published_points.yaml``: the sources (citation, software stack), the clusters
that are not AWS instances (``systems``), and one entry per published measurement with the layout it
ran. None of these is a figure ``ecobench validate`` reproduces as a seed result, nor an AWS claim
about those experiments.
"""


import functools
from dataclasses import dataclass
from importlib import resources
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ecobench.io.yamlio import load_packaged
from ecobench.workloads.architecture import Architecture, Mla, MoE
from ecobench.workloads.presets import preset

PointKind = Literal["llm_train", "encoder_train", "encoder_infer", "llm_serve", "moe_train"]
# Kinds the efficiency model is never fitted on, only held out against: mixture-of-experts training
# (every MoE point is predicted by a fit on dense points alone, without its own source).
UNFITTED_KINDS = frozenset({"moe_train"})


def is_fitted(p: "PublishedPoint") -> bool:
    """Whether the efficiency model is fitted on ``p`` (else only held out against): not the
    :data:`UNFITTED_KINDS`, nor the serving of a mixture-of-experts model. Its decode step reads the
    routed experts its tokens pick (``1-(1-k/E)^tokens`` of them, ``parallel.serving.routed_read_share``;
    on NxD's MoE module every expert once ``tokens k / E >= 1``, else ``tokens k`` expert copies),
    but there are few such points, and their prefill carries what the step does not model (NxD
    Inference pads its blockwise expert matmuls to whole blocks): they are predicted from the dense
    ones, like MoE training, not fitted on."""
    return p.kind not in UNFITTED_KINDS and not (p.kind == "llm_serve" and p.arch.moe is not None)


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PointSource(_Row):
    """One publication (or one table of it): points from it share errors and are held out together."""

    citation: str
    url: str
    as_of: str
    stack: str = Field(description="software stack: megatron, nemo, fsdp, neuron, tensorrt, vllm, ... "
                                   "(\"unstated\" where the source does not say which engine ran)")
    group: str | None = Field(None, description="held out together with every source of the same group "
                                                "(one publication); default: the source alone")
    fused_attention: bool = Field(True, description="decoders ran flash attention (false: the stack "
                                                    "predates it and wrote the score matrix to memory)")
    fused_loss: bool = Field(True, description="training: the cross-entropy ran fused or compiled (false: "
                                               "eager PyTorch, whose backward holds two more fp32 "
                                               "copies of the logits; memory only)")
    grouped_kv_reads: bool = Field(True, description="serving: the stack's decode attention reads a "
                                                      "key/value head once for its group of query heads "
                                                      "(false: once per query head, as TensorRT-LLM before "
                                                      "its XQA kernel)")
    all_reduce: Literal["nccl", "custom"] | None = Field(
        None, description="serving: the tensor-parallel all-reduce the runs used: NCCL's, or a custom "
                          "kernel reading its peers' buffers over NVLink (TensorRT-LLM's "
                          "use_custom_all_reduce, vLLM's custom all-reduce); its latency is fitted per "
                          "implementation across stacks; default: the stack's own (collective.<stack>)")
    launch: Literal["eager", "graph"] | None = Field(
        None, description="serving: how the engine launched a step's kernels: eager (the host launches "
                          "every kernel, PyTorch eager mode: a step takes at least the launches' host "
                          "time, fitted as launch.eager) or graph (CUDA graphs); default: the stack's "
                          "own (graphs, for every stack today)")
    grouped_kv_group_sizes: tuple[int, ...] | None = Field(
        None, description="serving: the query heads per key/value head the grouped decode kernel serves; "
                          "a model with another group size reads once per query head (TensorRT-LLM's XQA "
                          "kernel: 8 or 1); default: every size")
    note: str | None = None

    def grouped_reads_for(self, heads: int, kv_heads: int) -> bool:
        """Whether decode attention of a model with ``heads`` query and ``kv_heads`` key/value heads
        reads each key/value head once for its group on this source's stack."""
        if not self.grouped_kv_reads:
            return False
        sizes = self.grouped_kv_group_sizes
        return sizes is None or heads // kv_heads in sizes


class System(_Row):
    """A cluster that is not an AWS instance type: its accelerator and fabrics."""

    accelerator: str
    ranks_per_node: int = Field(gt=0)
    intra_gb_per_s: float = Field(gt=0, description="device link, per device, one direction")
    network_gbps: float = Field(gt=0, description="per node")
    memory_gib: float | None = Field(None, gt=0, description="device memory, where the system's parts "
                                                             "differ from the catalog accelerator")
    peer_link: bool = Field(True, description="a device link (NVLink) over which a custom all-reduce "
                                              "reads its peers' buffers; false on PCIe-only boards, "
                                              "where the engines all-reduce through NCCL")
    source: str
    as_of: str
    note: str | None = None


class PointLayout(_Row):
    tensor: int = 1
    pipeline: int = 1
    data: int | None = None  # derived from the ranks when absent
    zero: int = 0
    recompute: Literal["none", "selective", "full", "selective_op"] = "none"
    microbatch: int = 1
    virtual: int = 1
    expert: int = 1
    expert_tensor: int | None = None  # None: tensor (Megatron's default); 1: parallel folding
    expert_dispatch: Literal["all_to_all", "deduplicated"] = "all_to_all"
    expert_overlap: bool = False


class PublishedPoint(_Row):
    """A published throughput measurement and everything needed to predict it."""

    id: str = Field(pattern=r"^[a-z0-9_.]+$")
    source: str
    kind: PointKind
    stack: str | None = Field(None, description="overrides the source's stack for this point")
    model: str | None = None
    architecture: dict[str, object] | None = None
    instance_type: str | None = None
    system: str | None = None
    nodes: int = Field(1, gt=0)
    accelerators: int | None = Field(None, description="inference: chips used (default: all)")
    precision: str
    seq_len: int = Field(gt=0)
    batch_size: int | None = Field(None, description="inference: batch per rank")
    global_batch_size: int | None = Field(None, description="training: sequences per step")
    layout: PointLayout | None = None
    sequences_per_s: float | None = Field(None, gt=0, description="whole run (inference: per instance)")
    tokens_per_s: float | None = Field(None, gt=0, description="whole run")
    # serving (llm_serve): one replica of `tensor` ranks decoding `batch_size` sequences together
    tensor: int | None = Field(None, gt=0)
    input_tokens: int | None = Field(None, gt=0)
    output_tokens: int | None = Field(None, gt=0)
    context_bucket_tokens: int | None = Field(
        None, gt=0, description="serving on static shapes (Neuron): the compiled context-encoding bucket a "
        "prompt is padded to, where the source states its buckets (default: the automatic power-of-two one)")
    decode_batch_size: int | None = Field(
        None, gt=0, description="serving on static shapes (Neuron): rows every decode step runs, the batch "
        "the token-generation graph was compiled for, when it exceeds the sequences in flight (batch_size)")
    weight_precision: str | None = None
    kv_cache_precision: str | None = None
    ttft_ms: float | None = Field(None, gt=0, description="time to first token, median")
    tpot_ms: float | None = Field(None, gt=0, description="time per output token, median")
    output_tokens_per_s: float | None = Field(None, gt=0,
                                              description="output tokens per second, all sequences")
    unfitted_figures: tuple[Literal["tpot_ms", "ttft_ms", "output_tokens_per_s"], ...] = Field(
        (), description="serving: published figures the efficiency model is held out against but not "
        "fitted on, where the row contradicts itself (its note says how)")
    derivation: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> Self:
        if (self.model is None) == (self.architecture is None):
            raise ValueError(f"{self.id}: give exactly one of model or architecture")
        if (self.instance_type is None) == (self.system is None):
            raise ValueError(f"{self.id}: give exactly one of instance_type or system")
        if self.kind == "llm_serve":
            if None in (self.tensor, self.batch_size, self.input_tokens, self.output_tokens):
                raise ValueError(f"{self.id}: a serving point needs tensor, batch_size, input_tokens and "
                                 "output_tokens")
            bucket = self.context_bucket_tokens
            if bucket is not None and bucket < (self.input_tokens or 0):
                raise ValueError(f"{self.id}: context_bucket_tokens is below input_tokens")
            if self.decode_batch_size is not None and self.decode_batch_size < (self.batch_size or 1):
                raise ValueError(f"{self.id}: decode_batch_size is below batch_size")
            if not (self.tpot_ms or self.ttft_ms or self.output_tokens_per_s):
                raise ValueError(f"{self.id}: a serving point needs tpot_ms, ttft_ms or output_tokens_per_s")
            if any(getattr(self, f) is None for f in self.unfitted_figures):
                raise ValueError(f"{self.id}: unfitted_figures names a figure the point does not publish")
            return self
        if (self.sequences_per_s is None) == (self.tokens_per_s is None):
            raise ValueError(f"{self.id}: give exactly one of sequences_per_s or tokens_per_s")
        if self.kind == "encoder_infer":
            if self.batch_size is None:
                raise ValueError(f"{self.id}: an inference point needs batch_size")
        elif self.global_batch_size is None or self.layout is None:
            raise ValueError(f"{self.id}: a training point needs global_batch_size and layout")
        return self

    def prefill_bucket_tokens(self, static_shapes: bool = True) -> int:
        """Tokens a serving point's prefill computes on static shapes (Neuron): the context-encoding
        bucket the source states, else the automatic one below its compiled length ``seq_len``
        (``parallel.serving.context_bucket``); 0 where the stack pads nothing (``static_shapes``
        False). What the efficiency fit and the emulated NeuronCore's serving points both take."""
        from ecobench.parallel.serving import context_bucket

        if not static_shapes or self.kind != "llm_serve" or not self.input_tokens:
            return 0
        return self.context_bucket_tokens or context_bucket(self.input_tokens, self.seq_len)

    @property
    def decode_batch(self) -> int:
        """Rows a decode step runs: the compiled batch on static shapes, else the sequences in flight."""
        return self.decode_batch_size or self.batch_size or 1

    @property
    def mode(self) -> Literal["inference", "training", "serving"]:
        return {"encoder_infer": "inference", "llm_serve": "serving"}.get(self.kind, "training")  # type: ignore[return-value]

    @property
    def arch(self) -> Architecture:
        if self.model is not None:
            return preset(self.model)
        a = dict(self.architecture)  # type: ignore[arg-type]
        moe, mla = a.pop("moe", None), a.pop("mla", None)
        return Architecture(name=self.id, **a, moe=MoE(**moe) if moe else None,  # type: ignore[arg-type]
                            mla=Mla(**mla) if mla else None)

    @property
    def throughput_per_s(self) -> float:
        """Sequences per second (the whole run; per instance for inference)."""
        if self.kind == "llm_serve":
            raise ValueError(f"{self.id}: a serving point has latencies, not a sequence throughput")
        if self.sequences_per_s is not None:
            return self.sequences_per_s
        assert self.tokens_per_s is not None
        return self.tokens_per_s / self.seq_len


class PublishedPoints(_Row):
    sources: dict[str, PointSource]
    systems: dict[str, System]
    points: list[PublishedPoint]

    @model_validator(mode="after")
    def _references(self) -> Self:
        ids = [p.id for p in self.points]
        if len(ids) != len(set(ids)):
            raise ValueError("point ids must be unique")
        for p in self.points:
            if p.source not in self.sources:
                raise ValueError(f"{p.id}: unknown source {p.source!r}")
            if p.system is not None and p.system not in self.systems:
                raise ValueError(f"{p.id}: unknown system {p.system!r}")
        return self


@functools.cache
def load_points() -> PublishedPoints:
    """The packaged published points, validated (cached)."""
    text = resources.files("ecobench.hardware").joinpath("data/published_points.yaml").read_text("utf-8")
    return PublishedPoints.model_validate(load_packaged(text))


@dataclass(frozen=True)
class HoldoutRow:
    """A published point predicted by a fit made without its source (analytic or emulated holdout)."""

    point: PublishedPoint
    source: str  # the group held out
    published: float
    predicted: float
    fitted_on: int
    figure: str = "sequences_per_s"

    @property
    def error_pct(self) -> float:
        return (self.predicted / self.published - 1.0) * 100.0
