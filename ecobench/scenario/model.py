"""Scenario schema (pydantic v2): every field, its bounds and the checks within one mapping.

Reading a file is :mod:`ecobench.scenario.load`; the checks against the catalog and the presets are
:mod:`ecobench.scenario.checks`; pydantic's errors become one-line messages in
:mod:`ecobench.scenario.messages`, which this schema tells its field names (:data:`MESSAGE_SCHEMA`).
"""


import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from ecobench import bounds as b
from ecobench.bounds import SWEEP_MAX_COMBINATIONS, SWEEP_MAX_VALUES
from ecobench.hardware.catalog import LOCAL_INSTANCE
from ecobench.measure.defaults import DEFAULT_REPETITIONS
from ecobench.scenario.base import SchemaModel
from ecobench.scenario.messages import Schema, did_you_mean, error_lines
from ecobench.scenario.profile import AutoscaleSpec, ProfileSpec
from ecobench.units import (
    CCF_AWS_PUE,
    DEFAULT_CHECKPOINT_INTERVAL_H,
    DEFAULT_INTERRUPTION_PCT_PER_MONTH,
    DEFAULT_RESTART_H,
    DTYPES,
)
from ecobench.workloads.architecture import Architecture, Mla, MoE, Task
from ecobench.workloads.hf_config import load_hf_config
from ecobench.workloads.presets import PRESETS, preset

if TYPE_CHECKING:
    from ecobench.hardware.backends.base import Capabilities

SCHEMA_VERSION = 2
SCHEMA_VERSIONS = (1, 2)  # version-1 files read unchanged: version 2 only added fields
Dtype = Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
TRAINING_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")  # parallel.step.STATE_BYTES: optimizer state known
BackendName = Literal["analytic", "emulated", "reference"]
# Unbounded fallbacks, kept finite; new numeric fields take a documented range from ecobench.bounds.
DEFAULT_ENCODER_BATCH = 65536  # NVIDIA's BERT phase-1 recipe (sequences per step)
DEFAULT_ENCODER_MICROBATCH = 32
DEFAULT_DECODER_BATCH_TOKENS = 4 * 1024 * 1024  # Llama 2's 4M-token batch (Touvron et al. 2023, §2.2)

__all__ = ["SCHEMA_VERSION", "Scenario", "describe_fields"]


_Model = SchemaModel  # unknown fields refused, frozen, no boolean where a number goes


class MoESpec(_Model):
    """A mixture-of-experts feed-forward (decoders with ``ffn: swiglu``)."""

    experts: b.Experts = Field(description="routed experts per MoE layer")
    experts_per_token: b.Experts = Field(description="routed experts each token uses (at most experts)")
    expert_intermediate_size: b.HeadDim = Field(description="feed-forward inner size of one expert")
    shared_experts: int = Field(0, ge=0, le=65_536, description="experts every token uses, each as wide "
                                                               "as a routed one (DeepSeek)")
    first_dense_layers: int = Field(0, ge=0, le=1_000, description="leading layers with a dense "
                                                                  "feed-forward (DeepSeek's first_k_dense)")
    layer_freq: int = Field(1, ge=1, le=1_000, description="every n-th layer (after the dense ones) is "
                                                          "MoE (moe_layer_freq)")
    capacity_factor: b.CapacityFactor = Field(
        1.0, description="load imbalance: the busiest expert's tokens over the mean (1.0: balanced, as "
                         "force-balanced benchmarks run; token-dropping runs: their capacity factor)")

    @model_validator(mode="after")
    def _k_within(self) -> Self:
        if self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token {self.experts_per_token} is above experts {self.experts}: "
                             f"allowed 1 to {self.experts}; nearest valid value: {self.experts}")
        return self

    def build(self) -> MoE:
        return MoE(self.experts, self.experts_per_token, self.expert_intermediate_size, self.shared_experts,
                   self.first_dense_layers, self.layer_freq, self.capacity_factor)


class MlaSpec(_Model):
    """Multi-head latent attention (DeepSeek-V2/V3), as its ``transformers`` config names it."""

    kv_lora_rank: b.HeadDim = Field(description="key/value latent width (what the cache keeps)")
    q_lora_rank: b.HeadDim | None = Field(None, description="query latent width (none: direct queries)")
    qk_rope_head_dim: b.HeadDim = Field(description="rotary part of each query/key head")
    qk_nope_head_dim: b.HeadDim = Field(description="non-rotary part of each query/key head")
    v_head_dim: b.HeadDim = Field(description="width of each value head")

    def build(self) -> Mla:
        return Mla(self.kv_lora_rank, self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim,
                   self.q_lora_rank)


class ArchitectureSpec(_Model):
    """An inline model: the numbers of a ``transformers`` config, or a local config.json to read.

    Decoders with ``ffn: swiglu`` are Llama-style (RMSNorm, rotary positions, no biases); decoders
    with ``ffn: gelu`` GPT-style (LayerNorm, learned positions, biases).
    """

    from_hf_config: str | None = Field(
        None, description="path to a local Hugging Face config.json (relative to the scenario file); "
                          "excludes the other fields")
    kind: Literal["encoder", "decoder"] = Field("encoder", description="encoder (bidirectional) or decoder "
                                                                        "(causal)")
    layers: b.Layers | None = Field(None, description="transformer layers")
    hidden_size: b.HiddenSize | None = Field(None, description="hidden size")
    heads: b.Heads | None = Field(None, description="attention heads (must divide hidden_size)")
    kv_heads: b.Heads | None = Field(None, description="key/value heads for grouped-query attention "
                                                        "(must divide heads; default: heads)")
    intermediate_size: b.IntermediateSize | None = Field(None, description="feed-forward inner size")
    ffn: Literal["gelu", "swiglu"] = Field("gelu", description="feed-forward: gelu or swiglu")
    tied_embeddings: bool = Field(True, description="decoder: LM head shares the token embeddings")
    vocab_size: b.VocabSize = Field(30522, description="vocabulary size")
    max_position_embeddings: b.Tokens = Field(512, description="longest sequence")
    layout_2d: bool = Field(False, description="LayoutLM-style 2-D position embeddings")
    head_dim: b.HeadDim | None = Field(None, description="width of one attention head (default: "
                                                         "hidden_size / heads)")
    moe: MoESpec | None = Field(None, description="mixture-of-experts feed-forward (decoders; default: "
                                                  "dense)")
    mla: MlaSpec | None = Field(None, description="multi-head latent attention (decoders; default: "
                                                  "multi-/grouped-query attention)")

    @model_validator(mode="after")
    def _complete(self) -> Self:
        numbers = ("layers", "hidden_size", "heads", "intermediate_size")
        if self.from_hf_config is not None:
            given = [f for f in self.model_fields_set if f != "from_hf_config"]
            if given:
                raise ValueError("from_hf_config reads every figure from the file; remove "
                                 + ", ".join(sorted(given)))
            return self
        missing = [f for f in numbers if getattr(self, f) is None]
        if missing:
            raise ValueError(f"missing {', '.join(missing)} (or give from_hf_config)")
        assert self.hidden_size is not None and self.heads is not None
        if self.head_dim is None and self.mla is None and self.hidden_size % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide hidden_size ({self.hidden_size})")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"kv_heads ({self.kv_heads}) must divide heads ({self.heads}); "
                             f"divisors of {self.heads}: {', '.join(str(d) for d in _divisors(self.heads))}")
        if self.kind == "encoder" and (self.kv_heads is not None or self.ffn == "swiglu"):
            raise ValueError("kv_heads and ffn: swiglu describe decoders: set kind: decoder")
        if self.kind == "encoder" and (self.moe is not None or self.mla is not None):
            raise ValueError("moe and mla describe decoders: set kind: decoder")
        if self.moe is not None and self.ffn != "swiglu":
            raise ValueError("moe: ecobench models SwiGLU experts (Mixtral, DeepSeek, Qwen): set ffn: swiglu")
        if self.kind == "decoder" and self.layout_2d:
            raise ValueError("layout_2d is LayoutLM's (an encoder)")
        return self

    @model_serializer(mode="wrap")
    def _omit_unset_variants(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The resolved scenario leaves out the opt-in parts a dense model does not use, so a dense
        scenario's results read as they did before they existed."""
        out: dict[str, Any] = handler(self)
        return {k: v for k, v in out.items() if not (k in ("head_dim", "moe", "mla") and v is None)}

    def build(self, name: str) -> Architecture:
        """The architecture these numbers describe (not for ``from_hf_config``)."""
        assert self.layers and self.hidden_size and self.heads and self.intermediate_size
        common = dict(name=name, layers=self.layers, hidden_size=self.hidden_size, heads=self.heads,
                      intermediate_size=self.intermediate_size, vocab_size=self.vocab_size,
                      max_position_embeddings=self.max_position_embeddings)
        if self.kind == "encoder":
            return Architecture(**common, layout_2d=self.layout_2d,  # type: ignore[arg-type]
                                head_dim_override=self.head_dim)
        llama = self.ffn == "swiglu"
        return Architecture(**common, kind="decoder", kv_heads=self.kv_heads, ffn=self.ffn,  # type: ignore[arg-type]
                            tied_embeddings=self.tied_embeddings, norm="rmsnorm" if llama else "layernorm",
                            position="rotary" if llama else "learned", bias=not llama, type_vocab_size=0,
                            head_dim_override=self.head_dim, moe=self.moe.build() if self.moe else None,
                            mla=self.mla.build() if self.mla else None)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


class InferenceSpec(_Model):
    """Serve a rate of inferences for a horizon."""

    rate_per_h: b.RatePerH = Field(description="target inferences per hour (the SLA)")
    horizon_h: b.HorizonH = Field(1.0, description="hours the service runs")
    seq_len: b.Tokens = Field(description="tokens per inference")
    batch_size: b.BatchSize = Field(1, description="inferences per batch")
    max_utilization: b.MaxUtilization = Field(1.0, description="highest load per instance (headroom)")
    latency_ms_p99: b.LatencyMs | None = Field(
        None, description="real-time target: 99th-percentile latency per request, queueing included; "
                          "instances are planned for it instead of for full load")
    profile: ProfileSpec | None = Field(
        None, description="24-hour load profile: static, autoscaled and batch fleets over the day")


SLO_STATISTICS = {"median": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}  # as vLLM's benchmarks name them
SLO_METRICS = ("ttft", "tpot")
# Deprecated names, still read: the median and the 99th percentile.
SLO_ALIASES = {"ttft_ms": "median_ttft_ms", "tpot_ms": "median_tpot_ms", "ttft_p99_ms": "p99_ttft_ms",
               "tpot_p99_ms": "p99_tpot_ms"}
_PERCENTILE_KEY = re.compile(r"^(median|mean|p\d+(?:\.\d+)?)(?:_(\w+?))?(?:_ms)?$")
# a target named metric first (ttft, tpot_p99, ttft_p99_s): not a deprecated name, not a field
_METRIC_FIRST_KEY = re.compile(r"^(ttft|tpot)(?:_(median|p50|p90|p95|p99))?(?:_(ms|s|sec))?$")


class ServingSpec(_Model):
    """Serve LLM requests token by token within latency targets at any percentile."""

    requests_per_h: b.RatePerH = Field(description="requests per hour")
    input_tokens: b.Tokens | None = Field(None, description="prompt tokens per request (mean; from "
                                                            "lengths_csv when it is given)")
    output_tokens: b.Tokens | None = Field(None, description="generated tokens per request (mean; from "
                                                             "lengths_csv when it is given)")
    input_tokens_cv: b.LengthCv = Field(0.0, description="coefficient of variation of the prompt length "
                                                         "(0: every prompt input_tokens long)")
    output_tokens_cv: b.LengthCv = Field(0.0, description="coefficient of variation of the output length")
    length_distribution: Literal["gamma", "lognormal"] = Field(
        "gamma", description="shape of the length distributions given by mean and CV")
    lengths_csv: str | None = Field(None, description="CSV of request lengths: columns input_tokens, "
                                                      "output_tokens (and count for a histogram); "
                                                      "relative to the scenario file")
    arrival_cv: b.LengthCv | None = Field(None, description="coefficient of variation of the time between "
                                                            "requests: none or 1 for Poisson arrivals, "
                                                            "more for bursty (gamma) arrivals (the whole "
                                                            "stream's: requests are dispatched at random "
                                                            "over the replicas)")
    median_ttft_ms: b.LatencyMs | None = Field(None, description="time to first token, median target (ms)")
    p90_ttft_ms: b.LatencyMs | None = Field(None, description="time to first token, 90th-percentile target")
    p95_ttft_ms: b.LatencyMs | None = Field(None, description="time to first token, 95th-percentile target")
    p99_ttft_ms: b.LatencyMs | None = Field(None, description="time to first token, 99th-percentile target")
    median_tpot_ms: b.LatencyMs | None = Field(
        None, description="time per output token after the first (per request, as vLLM's benchmark "
                          "computes it), median target (ms)")
    p90_tpot_ms: b.LatencyMs | None = Field(None, description="time per output token, 90th-percentile target")
    p95_tpot_ms: b.LatencyMs | None = Field(None, description="time per output token, 95th-percentile target")
    p99_tpot_ms: b.LatencyMs | None = Field(None, description="time per output token, 99th-percentile target")
    horizon_h: b.HorizonH = Field(1.0, description="hours the service runs")
    profile: ProfileSpec | None = Field(
        None, description="24-hour load profile: static, autoscaled and batch fleets over the day")
    prefix_cache_hit_rate: b.Share | None = Field(
        None, description="share (0-1) of each prompt's tokens found in the prefix cache: they skip "
                          "the prefill's compute (default: no prefix caching)")

    _old_names: tuple[str, ...] = PrivateAttr(())  # the deprecated target names the scenario gave

    @property
    def deprecated_names(self) -> list[str]:
        """One line per deprecated target name given: it and the name to use instead."""
        return [f"workload.serving.{old} is deprecated (read as {SLO_ALIASES[old]}, the "
                f"{'median' if SLO_ALIASES[old].startswith('median') else '99th percentile'}); "
                f"rename it {SLO_ALIASES[old]}" for old in self._old_names]

    @model_validator(mode="wrap")
    @classmethod
    def _note_old_names(cls, data: Any, handler: Any) -> Any:
        """Remember which deprecated names were given (:attr:`deprecated_names`)."""
        old = tuple(k for k in SLO_ALIASES if isinstance(data, dict) and k in data)
        spec = handler(data)
        if isinstance(spec, ServingSpec):
            spec._old_names = old
        return spec

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        """Read the deprecated target names (``ttft_ms``, ``tpot_ms``: medians; ``ttft_p99_ms``,
        ``tpot_p99_ms``) and refuse a percentile that does not say which statistic it bounds."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in SLO_ALIASES.items():
            if old in data:
                value = data.pop(old)
                if data.get(new) is not None and value is not None and data[new] != value:
                    raise ValueError(f"{old} (deprecated name of {new}) is {value} but {new} is {data[new]}: "
                                     f"give {new} only")
                data.setdefault(new, value)
        allowed = [f"{s}_{m}_ms" for s in SLO_STATISTICS for m in SLO_METRICS]
        for key in data:
            first = _METRIC_FIRST_KEY.match(str(key))
            if first is not None and key not in cls.model_fields:
                metric, stat, unit = first.groups()
                named = "median" if stat in (None, "median", "p50") else stat
                said = "" if stat else f" (no statistic: the median; or p90_{metric}_ms ... p99_{metric}_ms)"
                said += " (1 s = 1000 ms)" if unit in ("s", "sec") else ""
                raise ValueError(f"{key}: a target is named statistic first, in milliseconds: write "
                                 f"{named}_{metric}_ms{said}; allowed: {', '.join(allowed)}")
            m = _PERCENTILE_KEY.match(str(key))
            if key in cls.model_fields or m is None:
                continue
            stat, rest = m.group(1), m.group(2) or ""
            metric = rest.split("_")[0]
            # the statistic as a target names it: the 50th percentile is the median
            named = "median" if stat in ("median", "p50") else stat if stat in SLO_STATISTICS else None
            if metric in SLO_METRICS and named is not None and not str(key).endswith("_ms"):
                unit = rest.partition("_")[2]
                raise ValueError(f"{key}: latency targets are in milliseconds, named with _ms: write "
                                 f"{named}_{metric}_ms" + (" (1 s = 1000 ms)" if unit in ("s", "sec") else "")
                                 + f"; allowed: {', '.join(allowed)}")
            if metric in SLO_METRICS and stat == "p50":
                raise ValueError(f"{key}: the 50th-percentile target is named median: write "
                                 f"median_{metric}_ms; allowed: {', '.join(allowed)}")
            if metric in SLO_METRICS:
                raise ValueError(f"{key}: no target for that statistic; allowed: {', '.join(allowed)}")
            if metric and metric != "ms":
                raise ValueError(f"{key}: {metric} is not a latency ecobench plans for; targets bound "
                                 f"ttft or tpot; allowed: {', '.join(allowed)}")
            raise ValueError(f"{key}: a percentile target must name its statistic (ttft or tpot), e.g. "
                             f"{stat if stat in SLO_STATISTICS else 'p99'}_ttft_ms or "
                             f"{stat if stat in SLO_STATISTICS else 'p99'}_tpot_ms; allowed: "
                             f"{', '.join(allowed)}")
        return data

    @model_validator(mode="after")
    def _lengths(self) -> Self:
        if self.lengths_csv is None and (self.input_tokens is None or self.output_tokens is None):
            raise ValueError("give input_tokens and output_tokens (means), or lengths_csv")
        if self.lengths_csv is not None and (self.input_tokens_cv or self.output_tokens_cv):
            raise ValueError("lengths_csv gives the length distributions: drop input_tokens_cv and "
                             "output_tokens_cv")
        return self

    @property
    def targets(self) -> list[tuple[str, float, float, str]]:
        """(metric, probability, milliseconds, field name) of every latency target given."""
        out = []
        for stat, q in SLO_STATISTICS.items():
            for metric in SLO_METRICS:
                name = f"{stat}_{metric}_ms"
                value = getattr(self, name)
                if value is not None:
                    out.append((metric, q, float(value), name))
        return out

    def without_targets(self) -> Self:
        """The same traffic with no latency target (a batch job)."""
        return self.model_copy(update={f"{s}_{m}_ms": None for s in SLO_STATISTICS for m in SLO_METRICS})


class Phase(_Model):
    seq_len: b.Tokens = Field(description="sequence length of this phase")
    fraction: b.PhaseFraction = Field(
        description="share of total_tokens (or total_sequences) processed in this phase")


class TrainingSpec(_Model):
    """Process a number of tokens (or sequences) on a cluster, or find the cluster for a deadline."""

    total_tokens: b.TotalTokens | None = Field(None, description="tokens processed in the whole run")
    total_sequences: b.TotalSequences | None = Field(None, description="sequences processed in the whole run "
                                                                       "(instead of total_tokens)")
    phases: list[Phase] = Field(min_length=1, max_length=1_000, description="sequence-length phases")
    batch_size: b.BatchSize | None = Field(
        None, description="micro-batch per rank when a configuration's parallelism does not set one "
                          "(default: 32 for encoders, 1 for decoders)")
    global_batch_size: b.GlobalBatchSize | None = Field(
        None, description="sequences per optimizer step (default: 65536 for encoders)")
    global_batch_tokens: b.GlobalBatchTokens | None = Field(
        None, description="tokens per optimizer step, instead of global_batch_size (default for "
                          "decoders: 4194304, Llama 2's 4M tokens)")
    task: Literal["pretrain", "classification"] = Field(
        "pretrain", description="pretrain (MLM+NSP heads for encoders, LM head for decoders) or "
                                "classification (fine-tuning with a sequence-classification head)")
    num_labels: b.NumLabels = Field(2, description="classification: number of labels")
    deadline_h: b.HorizonH | None = Field(
        None, description="finish within this many hours: configurations without 'instances' get the "
                          "fewest instances that do")
    max_instances: b.Instances = Field(2048, description="largest cluster the deadline search considers")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if (self.total_tokens is None) == (self.total_sequences is None):
            raise ValueError("give exactly one of total_tokens or total_sequences")
        if self.global_batch_size is not None and self.global_batch_tokens is not None:
            raise ValueError("give at most one of global_batch_size (sequences) or global_batch_tokens")
        default_labels = type(self).model_fields["num_labels"].default  # a resolved scenario.yaml repeats it
        if self.task != "classification" and self.num_labels != default_labels:
            raise ValueError(f"num_labels {self.num_labels} counts only for task classification (the task is "
                             f"{self.task}); allowed: task: classification, or no num_labels")
        total = sum(p.fraction for p in self.phases)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"phase fractions must add up to 1 (they add up to {total:g})")
        for p in self.phases:
            if self.global_batch_tokens is not None and self.global_batch_tokens < p.seq_len:
                raise ValueError(f"global_batch_tokens {self.global_batch_tokens} is smaller than one "
                                 f"sequence of the {p.seq_len}-token phase")
        return self

    def phase_sequences(self, phase: Phase) -> float:
        """Sequences a phase processes."""
        if self.total_sequences is not None:
            return self.total_sequences * phase.fraction
        assert self.total_tokens is not None
        return self.total_tokens * phase.fraction / phase.seq_len

    def global_batch(self, phase: Phase, decoder: bool) -> int:
        """Sequences per optimizer step in a phase."""
        if self.global_batch_size is not None:
            return self.global_batch_size
        if self.global_batch_tokens is not None:
            return max(1, self.global_batch_tokens // phase.seq_len)
        return max(1, DEFAULT_DECODER_BATCH_TOKENS // phase.seq_len) if decoder else DEFAULT_ENCODER_BATCH

    def microbatch(self, decoder: bool) -> int:
        """Default micro-batch per rank."""
        return self.batch_size or (1 if decoder else DEFAULT_ENCODER_MICROBATCH)


class WorkloadSpec(_Model):
    """The model and what is done with it."""

    model: str | None = Field(None, description="preset: " + ", ".join(PRESETS))
    architecture: ArchitectureSpec | None = Field(None, description="inline architecture")
    inference: InferenceSpec | None = None
    training: TrainingSpec | None = None
    serving: ServingSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_mode(cls, data: Any) -> Any:
        """Two modes refused before either is read: an incomplete second block said only what it
        lacked (``workload.inference.seq_len: missing``), not that one block too many was given."""
        modes = ("inference", "training", "serving")
        given = [k for k in modes if isinstance(data, dict) and data.get(k) is not None]
        if len(given) > 1:
            raise ValueError(f"give exactly one of 'inference', 'training' or 'serving'; this workload gives "
                             f"{' and '.join(given)}")
        return data

    @model_validator(mode="after")
    def _one_of_each(self) -> Self:
        if (self.model is None) == (self.architecture is None):
            raise ValueError("give exactly one of 'model' (a preset) or 'architecture'")
        if sum(x is not None for x in (self.inference, self.training, self.serving)) != 1:
            raise ValueError("give exactly one of 'inference', 'training' or 'serving'")
        return self

    @property
    def mode(self) -> Literal["inference", "training", "serving"]:
        return "inference" if self.inference else ("training" if self.training else "serving")

    def arch(self) -> Architecture:
        """The model: a preset, the inline numbers, or the local config.json they point to."""
        if self.model is not None:
            return preset(self.model)
        a = self.architecture
        assert a is not None
        if a.from_hf_config is not None:
            return load_hf_config(Path(a.from_hf_config), "workload.architecture.from_hf_config")
        return a.build(f"custom-{a.kind}-{a.layers}x{a.hidden_size}")

    def head(self) -> tuple[Task, int]:
        """The head the model is trained with, and its labels: the training task (a classifier when
        fine-tuning one), else the pre-training heads."""
        tr = self.training
        return (tr.task, tr.num_labels) if tr else ("pretrain", 2)


class PowerOverride(_Model):
    idle_w: b.IdlePowerW
    max_w: b.MaxPowerW

    @model_validator(mode="after")
    def _idle_below_max(self) -> Self:
        if self.idle_w > self.max_w:
            raise ValueError(f"idle_w ({self.idle_w:g}) must not exceed max_w ({self.max_w:g})")
        return self


class Overrides(_Model):
    """Replace catalog figures for this scenario (each use is recorded in the results)."""

    grid_g_per_kwh: dict[str, b.GridGPerKwh] = Field(
        default_factory=dict, description="region -> grid intensity gCO2e/kWh")
    accelerator_power_w: dict[str, PowerOverride] = Field(
        default_factory=dict, description="accelerator -> {idle_w, max_w}")


class Pricing(_Model):
    model: Literal["on_demand", "spot"] = Field("on_demand", description="on_demand or spot")
    spot_discount_pct: b.SpotDiscountPct | None = Field(
        None, description="spot discount off on-demand, percent (default: the spot snapshot's price for the "
                          "instance and region)")
    spot_interruption_pct_per_month: b.InterruptionPctPerMonth = Field(
        DEFAULT_INTERRUPTION_PCT_PER_MONTH, description="spot: share of instances interrupted a month (the "
        "Spot Instance Advisor's band; default: its all-region average, <5%, at 5)")
    checkpoint_interval_h: b.CheckpointIntervalH = Field(
        DEFAULT_CHECKPOINT_INTERVAL_H, description="spot training: hours between checkpoints (half is lost "
                                                   "per interruption)")
    restart_h: b.RestartH = Field(DEFAULT_RESTART_H, description="spot training: hours to replace an "
                                                                 "interrupted instance and reload")


class MeasurementSpec(_Model):
    """How the reference backend measures (defaults sized for a 2-core machine)."""

    warmup_s: b.WarmupS = Field(3.0, description="warm-up before measuring")
    min_window_s: b.WindowS = Field(2.0, description="shortest measured window per repetition")
    min_batches: b.MinBatches = Field(2, description="fewest batches per window")
    repetitions: b.Repetitions = Field(DEFAULT_REPETITIONS, description="measured windows")
    track_energy: bool = Field(True, description="measure energy with codecarbon (the `torch` extra)")
    gemm_s: b.GemmS = Field(1.0, description="GEMM peak microbenchmark time (0: skip)")


Schedule = Literal["1f1b", "interleaved", "zero-bubble"]  # as parallel.layout.SCHEDULES


class ParallelismSpec(_Model):
    """How a training job is split over ranks (GPUs, or NeuronCores)."""

    tensor: b.Degree = Field(1, description="tensor-parallel degree (inside one instance)")
    pipeline: b.Degree = Field(1, description="pipeline stages (at most the layers; stages that do not "
                                              "divide them hold one layer more or less)")
    data: b.Degree | None = Field(None, description="data-parallel degree (default: the ranks left over; "
                                                    "ranks beyond tensor x pipeline x data stay idle)")
    schedule: Schedule = Field("1f1b", description="pipeline schedule: 1f1b, interleaved (with "
                                                   "virtual_stages) or zero-bubble (ZB-H1)")
    virtual_stages: b.Degree = Field(1, description="interleaved schedule: model chunks per pipeline rank "
                                                    "(pipeline x virtual_stages must divide the layers)")
    zero: Literal[0, 1, 2, 3] = Field(0, description="ZeRO stage: 1 shards optimizer state, 2 also "
                                                     "gradients, 3 also parameters")
    recompute: Literal["none", "selective", "full", "selective_op"] = Field(
        "none", description="activation recomputation: none, selective (attention internals, Megatron's), "
                            "full (each layer from its input) or selective_op (PyTorch per-op selective "
                            "checkpointing as torchtitan's 'op' option: keeps the layer input, attention "
                            "outputs and every other matmul output; NVIDIA GPUs)")
    microbatch: b.BatchSize | None = Field(None, description="sequences per rank per micro-batch "
                                                             "(default: training.batch_size)")
    expert: b.Degree = Field(1, description="expert-parallel degree (mixture-of-experts): must divide the "
                                            "experts and the data-parallel degree")
    expert_tensor: b.Degree | None = Field(
        None, description="ranks each expert is split over (must divide tensor; default: tensor). 1: "
                          "Megatron-Core's parallel folding (expert_tensor_parallel_size 1, as NVIDIA's "
                          "MoE recipes run): whole experts, and an expert-parallel group of up to 8 "
                          "stays in one instance")
    expert_dispatch: Literal["all_to_all", "deduplicated"] = Field(
        "all_to_all", description="how routed tokens cross instances: all_to_all (every token copy, "
                                  "Megatron-Core's alltoall dispatcher) or deduplicated (once per "
                                  "instance, forwarded over the instance link: DeepEP, HybridEP, "
                                  "DeepSeek-V3)")
    expert_overlap: bool = Field(False, description="the expert all-to-alls overlap another micro-batch's "
                                                    "compute (Megatron-Core overlap_moe_expert_parallel_"
                                                    "comm, DeepSeek's DualPipe)")
    context: b.Degree = Field(1, description="context-parallel degree: ranks that split each sequence "
                                             "(must divide every phase's seq_len)")
    context_comm: Literal["ring", "all_to_all"] = Field(
        "ring", description="context parallelism's attention traffic: ring (key/value passing, "
                            "Megatron-Core p2p) or all_to_all (DeepSpeed-Ulysses head exchange)")
    offload: Literal["none", "cpu", "nvme"] = Field(
        "none", description="ZeRO offload of the optimizer state: none, cpu (ZeRO-Offload, zero >= 1) "
                            "or nvme (ZeRO-Infinity, zero 3); its PCIe transfers and host step are timed")

    @model_serializer(mode="wrap")
    def _omit_no_experts(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A layout without expert parallelism reads as it did before the field existed."""
        out: dict[str, Any] = handler(self)
        for field, default in (("expert", 1), ("expert_tensor", None), ("expert_dispatch", "all_to_all"),
                               ("expert_overlap", False)):
            if field in out and out[field] == default:
                out.pop(field)
        return out

    @model_validator(mode="after")
    def _schedule(self) -> Self:
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual_stages {self.virtual_stages} needs schedule: interleaved (got "
                             f"{self.schedule}); allowed: virtual_stages 1 with 1f1b or zero-bubble")
        if self.schedule == "interleaved" and self.virtual_stages < 2:
            raise ValueError("schedule: interleaved needs virtual_stages >= 2 (nearest valid: 2); "
                             "with 1 virtual stage it is 1f1b")
        if self.schedule != "1f1b" and self.pipeline < 2:
            raise ValueError(f"schedule: {self.schedule} needs pipeline >= 2 (nearest valid: 2)")
        if self.expert_tensor is not None and self.tensor % self.expert_tensor:
            ok = [d for d in range(1, self.tensor + 1) if self.tensor % d == 0]
            near = min(ok, key=lambda d: (abs(d - self.expert_tensor), d))  # type: ignore[operator]
            raise ValueError(f"expert_tensor {self.expert_tensor} must divide tensor {self.tensor}; allowed: "
                             f"{', '.join(map(str, ok))}; nearest valid value: {near}")
        return self


class SpeculativeSpec(_Model):
    """Speculative decoding: a drafter proposes tokens the target verifies in one step."""

    method: Literal["draft", "ngram"] = Field(
        description="draft (a smaller model on the same accelerators) or ngram (prompt lookup on the host)")
    draft_model: str | None = Field(None, description="draft: a model preset, as workload.model names them")
    draft_params: b.Params | None = Field(None, description="draft: the drafter's parameter count, "
                                                            "instead of draft_model")
    num_speculative_tokens: b.SpeculativeTokens = Field(description="tokens drafted per step")
    acceptance_rate: b.Share = Field(description="probability (0-1) that the target accepts a drafted token")

    @model_validator(mode="after")
    def _drafter(self) -> Self:
        given = (self.draft_model is not None) + (self.draft_params is not None)
        if self.method == "draft" and given != 1:
            raise ValueError("speculative method draft needs exactly one of draft_model or draft_params")
        if self.method == "ngram" and given:
            raise ValueError("speculative method ngram drafts on the host: remove draft_model/draft_params")
        if self.draft_model is not None and self.draft_model not in PRESETS:
            raise ValueError(f"speculative.draft_model {self.draft_model!r} is not a model preset "
                             f"(presets: {', '.join(sorted(PRESETS))})")
        return self


Quantization = Literal["fp8", "int8", "int4"]
QUANTIZATIONS: tuple[str, ...] = ("fp8", "int8", "int4")

TRAINING_ONLY = ("attention_kernel", "optimizer", "master_weights")
SPOT_TERMS = ("spot_discount_pct", "spot_interruption_pct_per_month", "checkpoint_interval_h", "restart_h")
REFERENCE_ONLY = ("device", "layers")  # read by the backend that measures on this host alone
SERVING_ONLY = ("max_batch", "weight_precision", "kv_cache_precision", "scheduler", "max_num_batched_tokens",
                "chunked_prefill")
# what the serving model plans from, beside the request stream: a configuration planned from its own
# benchmark (measured_serving) takes none of them
MODELLED_SERVING = ("quantization", *SERVING_ONLY, "speculative", "parallelism", "memory_headroom_pct", "lnc")
PowerBasis = Literal["modelled", "tdp", "measured"]
POWER_BASES: tuple[str, ...] = ("modelled", "tdp", "measured")


class HardwareConfig(_Model):
    """One candidate configuration."""

    id: b.Name = Field(description="name used in results")
    instance_type: str = Field(description="catalog instance type (see `ecobench catalog`), or "
                                           "'local' for this host (backend: reference)")
    backend: BackendName = Field("analytic", description="analytic, emulated or reference")
    precision: Dtype = Field("fp32", description=f"compute data type: {', '.join(DTYPES)}")
    instances: b.Instances | None = Field(
        None, description="cluster size (training; omit with training.deadline_h to have it found)")
    parallelism: Literal["auto"] | ParallelismSpec | None = Field(
        None, description="training layout: 'auto' (fastest that fits memory) or {tensor, pipeline, data, "
                          "zero, recompute, microbatch, ...}; default: data parallel only. Serving: "
                          "{tensor, pipeline}, ranks per model replica; default: every tensor degree "
                          "that divides the instance's ranks is tried")
    batch_size: b.BatchSize | None = Field(None, description="overrides the workload's batch size")
    max_utilization: b.MaxUtilization | None = Field(
        None, description="inference: overrides the workload's max_utilization (headroom)")
    max_batch: b.BatchSize | Literal["auto"] = Field(
        "auto", description="serving: most requests a replica keeps in flight ('auto': what fits memory)")
    weight_precision: Dtype | None = Field(
        None, description="serving: how weights are stored when it differs from precision (e.g. int8)")
    kv_cache_precision: Dtype | None = Field(None, description="serving: key/value cache data type "
                                                              "(default: precision; fp8 halves a 16-bit "
                                                              "cache)")
    scheduler: Literal["continuous", "static", "disaggregated"] = Field(
        "continuous", description="serving: continuous (continuous batching with chunked prefill, vLLM's, "
                                  "SGLang's and TensorRT-LLM's default), static (fixed batches: a batch "
                                  "sweep) or disaggregated (prefill and decode on separate replicas, the "
                                  "key/value cache sent between them)")
    max_num_batched_tokens: b.Tokens | None = Field(
        None, description="serving, continuous: tokens one step may carry (decodes plus prefill chunks; "
                          "default 8192, vLLM's server default on GPUs of 70 GiB or more)")
    chunked_prefill: bool = Field(
        True, description="serving, continuous: split prompts into chunks that share steps with decodes "
                          "(false: each prompt is prefilled alone and stalls the decode batch)")
    quantization: Quantization | None = Field(
        None, description="serving: fp8 or int8 (W8A8: weight matmuls at the chip's 8-bit peak, weights "
                          "1 byte) or int4 (W4A16: 4-bit weights, compute at precision); default none")
    speculative: SpeculativeSpec | None = Field(None, description="serving: speculative decoding")
    measured_serving: str | None = Field(
        None, description="serving: a `vllm bench serve` result JSON measured on one instance of "
                          "instance_type (relative to the scenario file): its throughput and latencies "
                          "replace the serving model's")
    stack: b.Name | None = Field(
        None, description="analytic: the software stack whose fitted efficiency applies (e.g. vllm, "
                          "tensorrt-llm, transformers-neuronx, megatron, nemo; an unknown name lists the "
                          "fitted ones; vllm is priced as its V0-era published runs of 2024, with a host "
                          "cost per sequence of every step; vllm-v1 as vLLM 0.8 and later, whose V1 engine "
                          "overlaps that host work); default: the vendor's typical")
    measured_throughput_per_s: b.ThroughputPerS | None = Field(
        None, description="supplied throughput per instance; skips the backend")
    host_cpu_utilization: b.HostCpuUtilization | None = Field(
        None, description="host CPU load at full accelerator load (default 1.0)")
    device: Literal["cpu", "cuda", "auto"] = Field("auto", description="reference backend device")
    layers: b.Layers | None = Field(
        None, description="reference: measure this many layers and extrapolate to full depth (a "
                          "layer's share of a step timed from alternated steps of 1 and of this many "
                          "layers, or of 2 when this is 1)")
    region: str | None = Field(None, description="overrides the scenario's region")
    price_usd_per_h: b.PriceUsdPerH | None = Field(
        None, description="explicit price per instance-hour (the local host has no other: without it, "
        "its cost columns are empty)")
    pricing: Literal["on_demand", "spot"] | None = Field(
        None, description="on_demand or spot for this configuration (default: pricing.model)")
    measured_power_w: b.PowerW | None = Field(
        None, description="supplied average draw (W) per instance of measured_power_scope, e.g. from a "
                          "published footprint; replaces the modelled draw of that scope")
    measured_power_scope: Literal["accelerator", "instance"] | None = Field(
        None, description="what measured_power_w covers: accelerator (the instance's accelerators "
                          "together) or instance (the whole instance, before the facility's PUE)")
    power_basis: PowerBasis | None = Field(
        None, description="overrides the scenario's power_basis for this configuration: modelled, tdp or "
                          "measured")
    memory_headroom_pct: b.MemoryHeadroomPct | None = Field(
        None, description="training: share of device memory a layout must leave free for allocator "
                          "fragmentation and workspaces, 0-50 (default 10: see parallel/memory.py); "
                          "serving: share the engine leaves unused (default 10 on NVIDIA GPUs, vLLM's "
                          "--gpu-memory-utilization 0.9; 0 on Neuron)")
    attention_kernel: Literal["flash", "eager"] | None = Field(
        None, description="training: flash (fused, scores stay on chip) or eager (stores the s x s "
                          "attention scores); default flash for decoders, eager for encoders")
    optimizer: Literal["adam", "adam_8bit", "sgd"] = Field(
        "adam", description="training: adam (two fp32 moments), adam_8bit (two 8-bit moments) or sgd "
                            "(one fp32 momentum)")
    master_weights: bool = Field(True, description="training in 16 bits: keep fp32 master weights")
    network_gbps: b.NetworkGbps | None = Field(
        None, description="overrides the catalog's network bandwidth per instance (Gbps), for a "
                          "cluster the catalog does not describe")
    device_memory_gib: b.DeviceMemoryGib | None = Field(
        None, description="overrides the catalog's memory per accelerator (GiB)")
    lnc: Literal[1, 2] | None = Field(
        None, description="Trainium2 (trn2) only: logical NeuronCore setting (NEURON_LOGICAL_NC_CONFIG), "
                          "physical NeuronCores per rank: 2 (the default: 4 ranks a chip) or 1 (8 ranks a "
                          "chip, each with half a logical core's compute, memory and bandwidth); sets the "
                          "tensor degrees and replicas planned and the serving stacks' prefill attention "
                          "kernel")

    @model_validator(mode="after")
    def _power_has_scope(self) -> Self:
        if self.measured_power_w is not None and self.measured_power_scope is None:
            raise ValueError("measured_power_w needs measured_power_scope: accelerator or instance")
        if self.measured_power_scope is not None and self.measured_power_w is None:
            raise ValueError("measured_power_scope is set but measured_power_w is not: give the watts")
        return self


class UncertaintySpec(_Model):
    """The Monte Carlo behind every figure's 90% band."""

    draws: b.Draws = Field(
        1000, description="Monte Carlo draws for the 90% bands (0: no bands; else at least 20)")
    seed: b.Seed = Field(
        0, description="random seed: the same seed gives the same bands")

    @model_validator(mode="after")
    def _enough_for_a_band(self) -> Self:
        # 1 draw in 20 lies below a 5th percentile: fewer draws cannot place it (1 draw made a
        # "90% band" of the central value and that draw)
        if 0 < self.draws < b.MIN_BAND_DRAWS:
            raise ValueError(f"draws {self.draws} cannot give a 90% band (its ends are the 5th and 95th "
                             f"percentiles of the draws); allowed: 0 (no bands) or {b.MIN_BAND_DRAWS} to "
                             "100,000")
        return self


class Scenario(_Model):
    """A workload, candidate hardware and the assumptions to judge them by."""

    schema_version: Literal[1, 2] = Field(
        description=f"scenario schema version ({SCHEMA_VERSION}; 1 is still read)")
    name: b.Name = Field(description="scenario name (results folder)")
    description: b.Description = Field("", description="free text")
    workload: WorkloadSpec
    configs: list[HardwareConfig] = Field(min_length=1, max_length=1_000,
                                          description="candidate configurations")
    baseline: str = Field(description="id of the configuration others are compared with")
    region: str = Field("us-east-1", description="AWS region")
    pricing: Pricing = Field(Pricing(), description="on-demand (default) or spot")
    pue: b.Pue = Field(CCF_AWS_PUE, description="power usage effectiveness")
    overrides: Overrides = Field(default_factory=Overrides)
    measurement: MeasurementSpec = Field(MeasurementSpec(), description="reference backend measurement")
    headline_scope: Literal["accelerator", "it", "facility"] = Field(
        "facility", description="energy and CO2 scope the summary and report lead with: accelerator, it "
                                "(the instance: accelerators, CPU, memory, network) or facility (it x PUE)")
    power_basis: PowerBasis = Field(
        "modelled", description="how draw becomes energy: modelled (the draw model at the work done; a "
                                "configuration's measured_power_w replays where given), tdp (the footprint "
                                "convention of model cards: accelerator device-hours x datasheet TDP x PUE, "
                                "no host) or measured (measured_power_w, required)")
    power_points: str | None = Field(
        None, description="a measured-power points file (the format of `ecobench calibrate`; relative to "
                          "the scenario file): the power model's fitted draws and host scale are refitted "
                          "with its points for this run (each with its leave-one-group-out range), and the "
                          "summary says so, with the held-out error with and without them")
    uncertainty: UncertaintySpec = Field(UncertaintySpec(), description="Monte Carlo for the 90% bands")
    sweep: dict[str, list[Any]] | None = Field(
        None, description="configuration field -> list of values: every combination becomes a configuration "
                          "(the baseline's fields, these values), evaluated besides configs; combinations "
                          "that cannot run are skipped and counted")

    @model_validator(mode="after")
    def _cross_checks(self) -> Self:
        ids = [c.id for c in self.configs]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"configuration ids must be unique; repeated: {', '.join(dupes)}")
        if self.baseline not in ids:
            raise ValueError(f"baseline {self.baseline!r} is not a configuration id"
                             f"{did_you_mean(self.baseline, ids)} (ids: {', '.join(ids)})")
        for c in self.configs:
            self._check_config(c, f"configuration {c.id!r}")
        if self.measurement != MeasurementSpec() and not any(
                backend_capabilities(c.backend).measures_host for c in self.configs):
            raise ValueError("measurement: applies to configurations with backend: reference (none here); "
                             "remove it")
        if self.sweep is not None:
            check_sweep(self)
        self._check_spot_terms()
        return self

    def _check_spot_terms(self) -> None:
        """The spot terms given (not their defaults, which a resolved scenario.yaml repeats) apply to a
        configuration on spot; the checkpoint ones to training only."""
        given = _given(self.pricing, SPOT_TERMS)
        on_spot = (self.pricing.model == "spot" or any(c.pricing == "spot" for c in self.configs)
                   or "spot" in (self.sweep or {}).get("pricing", []))
        if given and not on_spot:
            raise ValueError(f"pricing.{given[0]}: applies to spot pricing, and no configuration here is on "
                             "spot; allowed: pricing.model: spot (or a configuration's pricing: spot), or "
                             "remove it")
        checkpoint = [f for f in given if f in ("checkpoint_interval_h", "restart_h")]
        if checkpoint and not self.workload.training:
            raise ValueError(f"pricing.{checkpoint[0]}: applies to spot training (a training job loses the "
                             f"work since its last checkpoint); this scenario is {self.workload.mode}; "
                             "remove it")

    def _check_config(self, c: HardwareConfig, what: str) -> None:
        """What a configuration must satisfy given the workload (also run on every sweep value)."""
        caps = backend_capabilities(c.backend)
        if c.instance_type == LOCAL_INSTANCE and not caps.measures_host:
            raise ValueError(f"{what}: instance_type 'local' is measured: "
                             "use backend: reference")
        if not caps.measures_host and (given := _given(c, REFERENCE_ONLY)):
            raise ValueError(_only_for(what, given, "the reference backend (backend: reference, which "
                                                    "measures on this host)"))
        tr = self.workload.training
        if tr and c.precision not in TRAINING_DTYPES:
            raise ValueError(f"{what}: precision {c.precision!r} is not a training data type (no "
                             "optimizer state is modelled for it); allowed for training: "
                             f"{', '.join(TRAINING_DTYPES)}; int8 is for serving weights (weight_precision)")
        if tr and c.instances is None and tr.deadline_h is None:
            raise ValueError(f"{what}: training needs 'instances' (cluster size), "
                             "or training.deadline_h to find it")
        if self.workload.inference and c.instances is not None:
            raise ValueError(f"{what}: 'instances' is computed for inference; "
                             "remove it")
        if not self.workload.inference and c.max_utilization is not None:
            raise ValueError(f"{what}: 'max_utilization' applies to inference (serving is sized by its "
                             "latency targets, training runs at full load)")
        if self.workload.inference and c.parallelism is not None:
            raise ValueError(f"{what}: 'parallelism' applies to training and serving")
        if self.workload.inference and c.memory_headroom_pct is not None:
            raise ValueError(f"{what}: 'memory_headroom_pct' applies to training and serving")
        for only, mode in ((TRAINING_ONLY, "training"), (SERVING_ONLY, "serving (workload.serving)")):
            if not getattr(self.workload, mode.split()[0]) and (given := _given(c, only)):
                raise ValueError(_only_for(what, given, mode))
        if self.workload.serving:
            if c.instances is not None:
                raise ValueError(f"{what}: 'instances' is computed for serving; "
                                 "remove it")
            if isinstance(c.parallelism, ParallelismSpec):
                extra = sorted(f for f in c.parallelism.model_fields_set if f not in ("tensor", "pipeline"))
                if extra:
                    raise ValueError(f"{what}: serving splits a replica with "
                                     f"parallelism.tensor and pipeline only; remove {', '.join(extra)}")
            if c.measured_throughput_per_s is not None or "serving" not in caps.modes:
                raise ValueError(f"{what}: serving is planned with the analytic backend or the emulated "
                                 "NeuronCore (backend: analytic or emulated, no measured_throughput_per_s; "
                                 "a measured benchmark goes in measured_serving); schedulers: continuous, "
                                 "static, disaggregated")
            if c.measured_serving is not None and (given := _given(c, MODELLED_SERVING)):
                one = len(given) == 1
                raise ValueError(f"{what}: {', '.join(given)} {'is an input' if one else 'are inputs'} of "
                                 "the serving model, which measured_serving replaces (its figures are the "
                                 "benchmark's, run with whatever settings it was run with); allowed: "
                                 f"remove {'it' if one else 'them'}, or remove measured_serving to plan with "
                                 "the model")
            if c.quantization is not None and c.weight_precision is not None:
                raise ValueError(f"{what}: give quantization or weight_precision, not both "
                                 "(quantization sets how weights are stored)")
        else:
            for f in ("quantization", "speculative", "measured_serving"):
                if getattr(c, f) is not None:
                    raise ValueError(f"{what}: '{f}' applies to serving (workload.serving)")


    def config(self, config_id: str) -> HardwareConfig:
        return next(c for c in self.configs if c.id == config_id)


def backend_capabilities(name: str) -> "Capabilities":
    """What the registered backend ``name`` can do (``hardware/backends``; a backend registered on first
    use is not imported)."""
    from ecobench.hardware.backends import BACKENDS

    if name not in BACKENDS:
        raise ValueError(f"backend {name!r} is not registered (registered: {', '.join(sorted(BACKENDS))})")
    return BACKENDS[name].capabilities


def describe_fields(model: type[BaseModel] = Scenario, prefix: str = "") -> list[tuple[str, str, str]]:
    """(path, default, description) for every scenario field, nested, for docs and ``--help``."""
    rows: list[tuple[str, str, str]] = []
    for name, f in model.model_fields.items():
        text = str(f.annotation)
        sub = next((m for m in (ArchitectureSpec, MoESpec, MlaSpec, InferenceSpec, ServingSpec, TrainingSpec,
                                WorkloadSpec,
                                Overrides, Pricing, HardwareConfig, Phase, MeasurementSpec, ParallelismSpec,
                                UncertaintySpec, ProfileSpec, AutoscaleSpec, SpeculativeSpec)
                    if m.__name__ in text), None)
        path = prefix + name + ("[]" if sub in (HardwareConfig, Phase) else "")
        default = "required" if f.is_required() else (
            "" if sub else repr(f.get_default(call_default_factory=True)))
        rows.append((path, default, f.description or ""))
        if sub is not None:
            rows += describe_fields(sub, path + ".")
    return rows


# What the messages read of this schema: its field paths, and its classes by name (a union branch).
MESSAGE_SCHEMA = Schema(describe_fields, globals())


def _given(m: BaseModel, fields: tuple[str, ...]) -> list[str]:
    """The ``fields`` of ``m`` set to a value other than their default (a resolved scenario.yaml repeats
    the defaults, so a default is never an error)."""
    return [f for f in fields if getattr(m, f) != type(m).model_fields[f].get_default()]


def _only_for(what: str, given: list[str], where: str) -> str:
    """The message for ``given`` fields of ``what`` that apply to ``where`` only."""
    one = len(given) == 1
    return (f"{what}: {', '.join(given)} appl{'ies' if one else 'y'} to {where}; "
            f"remove {'it' if one else 'them'}")


def check_sweep(s: Scenario) -> None:
    """Every axis names a configuration field and every value makes a valid configuration with the
    baseline's other fields; the product stays within the bound (raises ValueError)."""
    import json

    from pydantic import ValidationError


    assert s.sweep is not None
    allowed = [f for f in HardwareConfig.model_fields if f != "id"]
    base = s.config(s.baseline).model_dump(exclude_unset=True)
    if not s.sweep:  # trial: `sweep: {}` ran as a scenario without a sweep, silently
        raise ValueError("sweep: no axis; a sweep needs at least one axis, a configuration field with a list "
                         f"of values (allowed: {', '.join(allowed)}), or leave sweep out")
    total, repeat = 1, None
    for key, values in s.sweep.items():
        if key == "id":  # a field, but not one to sweep
            raise ValueError("sweep.id: a combination's id is made of its swept values "
                             f"(inf2.xlarge_bf16_eu-north-1), not swept; allowed: {', '.join(allowed)}")
        if key not in allowed:
            raise ValueError(f"sweep.{key}: not a configuration field{did_you_mean(str(key), allowed)} "
                             f"(allowed: {', '.join(allowed)})")
        if not values or len(values) > SWEEP_MAX_VALUES:
            raise ValueError(f"sweep.{key}: give 1 to {SWEEP_MAX_VALUES:,} values, got {len(values)}")
        if key == "region" and None in values:
            raise ValueError(f"sweep.region[{values.index(None)}]: null is not a region: list region names "
                             f"(the scenario's region is {s.region})")
        total *= len(values)
        seen: dict[str, int] = {}
        for i, v in enumerate(values):
            # null is a value where the field takes one (price_usd_per_h: null, the catalog's price);
            # elsewhere the validation below refuses it
            try:
                c = HardwareConfig.model_validate(base | {key: v})
            except ValidationError as exc:
                lines = [m.removeprefix(f"{key}: ") for m in error_lines(exc.errors(), MESSAGE_SCHEMA)]  # type: ignore[arg-type]
                raise ValueError(f"sweep.{key}[{i}]: " + "; ".join(lines)) from None
            s._check_config(c, f"sweep.{key}[{i}]")
            # compared as validated, so 1000 and "1e3" are one value
            text = json.dumps(c.model_dump(mode="json", include={key}).get(key), sort_keys=True, default=str)
            first = seen.setdefault(text, i)
            if first != i and repeat is None:  # every combination of it would run twice, ids suffixed -7
                repeat = f"sweep.{key}[{i}]: {v!r} is also sweep.{key}[{first}]; allowed: each value once"
            if not backend_capabilities(c.backend).sweepable:
                raise ValueError(f"sweep.{key}[{i}]: the reference backend measures on this host, one "
                                 "configuration at a time: list measured configurations in configs")
    if total > SWEEP_MAX_COMBINATIONS:
        raise ValueError(f"sweep: {total:,} combinations; at most {SWEEP_MAX_COMBINATIONS:,} (split the "
                         "sweep into scenarios, or see docs/architecture.md on sweeps across machines)")
    if repeat is not None:
        raise ValueError(repeat)
    check_sweep_cost(s)


def check_sweep_cost(s: Scenario) -> None:
    """The sweep's estimated time and memory stay within the bounds (raises ValueError naming both)."""
    from ecobench.bounds import (
        SWEEP_GROUP_S,
        SWEEP_GROUP_S_CHEAP,
        SWEEP_MAX_ESTIMATED_GIB,
        SWEEP_MAX_ESTIMATED_S,
    )
    from ecobench.scenario.sweep_size import GRID_AXES, estimate, group_count

    assert s.sweep is not None
    backends = {s.config(s.baseline).backend, *(s.sweep.get("backend") or [])}
    cheap = all(backend_capabilities(str(name)).cheap for name in backends)
    mode = s.workload.mode
    est = estimate(s.sweep, cheap, mode)
    group_ms = 1e3 * (SWEEP_GROUP_S_CHEAP[mode] if cheap else SWEEP_GROUP_S)
    where = (f"{group_count(s.sweep):,} backend evaluations ({mode}, about {group_ms:g} ms each; one per "
             f"combination of {', '.join(k for k in s.sweep if k not in GRID_AXES) or 'no axis'}; region, "
             "price_usd_per_h and max_utilization are evaluated together as arrays)")
    if est.seconds > SWEEP_MAX_ESTIMATED_S:
        raise ValueError(f"sweep: estimated {est.seconds:,.0f} s for {where}; at most "
                         f"{SWEEP_MAX_ESTIMATED_S:,.0f} s: sweep fewer values of those fields, or split the "
                         "sweep into scenarios")
    if est.memory_gib > SWEEP_MAX_ESTIMATED_GIB:
        raise ValueError(f"sweep: estimated {est.memory_gib:.1f} GiB of memory; at most "
                         f"{SWEEP_MAX_ESTIMATED_GIB:g} GiB (a group of region x price_usd_per_h x "
                         "max_utilization is evaluated at once): sweep fewer values, or split the sweep into "
                         "scenarios")
