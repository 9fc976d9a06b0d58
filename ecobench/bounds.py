"""Bounded field types for every input schema (the scenario, an imported config.json): every number
finite and inside a physical range.

Each range is wide enough for any real workload and narrow enough that no combination of extremes
divides by zero, overflows to infinity or asks the machine for years of work. ``RANGES`` is the
documented table, read from the types themselves; a test checks that README's "Input bounds"
table shows every row.

Why each range (upper bounds leave one to two orders of magnitude over the largest public figure):
- *layers* <= 1,000: the deepest published dense transformers have about 100-200 layers.
- *hidden size* <= 131,072 and *heads* <= 1,024: the widest published models are about 25k wide
  with 128-256 heads. *intermediate size* <= 1,048,576 (4-8x hidden).
- *vocabulary* <= 4,194,304 (published: up to about 260k). *positions / sequence length*
  <= 16,777,216 tokens (published contexts: up to 10M).
- *batch* <= 1,048,576 per device and *global batch* <= 16,777,216 sequences.
- *rate* 0.001-10^12 inferences/h (a large search engine serves about 4x10^8/h); a 24-hour
  *profile*'s hourly rates 0-10^12 (an hour may be quiet) or multipliers 0-1,000 of the rate; a
  scale-up *lag* 0-23 h (a day's profile repeats: 24 h of lag is no autoscaling) and a fleet
  floor of 0-100,000 instances (0: scale to zero); *horizon*
  0.001 h (3.6 s)-87,660 h (10 years); *total sequences* 1-10^15.
- *max utilisation* 0.01-1: below 1% every instance is 99% idle headroom. *Phase fraction*
  10^-6-1. *Host CPU utilisation* 0.01-1.
- *experts* 1-65,536 per MoE layer (published: up to 384), a *capacity factor* 1-64 (the busiest
  expert's load over the mean: 1 is balanced, 64 is every token of 64 experts on one); *head and
  latent widths* up to the hidden size bound.
- *instances* 1-100,000, given or planned (the largest clusters are about 100k accelerators); a
  *parallel degree* (tensor, pipeline, data, expert, context) 1-1,000,000 ranks.
- *memory headroom* 0-50% of device memory (``parallel/memory.py``: fragmentation measured at 15% on
  average, up to 33%; beyond half the device is a different device). *network* override
  0.01-10^6 Gbps per instance (the fastest instances have 3,200-6,400), *device memory* override
  0.01-100,000 GiB per accelerator (the largest parts hold about 288 GB).
- *total tokens* 1-10^18 (the largest published runs: about 4x10^13); *global batch tokens*
  1-2^34 (published: up to about 6x10^7); *labels* 2-1,000,000.
- *latency targets* 0.001 ms-10^7 ms (about 3 hours): a microsecond is below any accelerator's
  step, hours are a batch job, not a latency.
- *supplied throughput* 10^-6-10^12 samples/s per instance.
- *price* 0.0001-10,000 USD per instance-hour (the dearest AWS instance is about 400 USD/h);
  *spot discount* 0.01-99.99%; *spot interruptions* 0-100% of instances a month (the Spot Instance
  Advisor's bands end at ">20%"); *checkpoint interval* 0.001-1,000 h and *restart* 0-1,000 h (a
  checkpoint every 3.6 s or every six weeks brackets any real job).
- *PUE* 1.0-3.0 (1.0 is the physical floor; surveyed data centres average about 1.6, the
  worst about 2.5). *Grid intensity* 0.1-2,000 g/kWh (lignite, the dirtiest, is about 1,100-1,200).
- *accelerator power* idle 0-10,000 W, full 1-10,000 W (the largest boards draw about 2,700 W);
  *supplied power* per instance 0.1-100,000 W (an 8-GPU instance draws about 10 kW).
- *shares* (prefix-cache hit rate, speculative acceptance) 0-1; *speculative tokens* 1-64 per step
  (engines draft 1-10); a *drafter* 10^3-10^13 parameters.
- *Monte Carlo* draws 0-100,000 (0: no bands, else at least 20), seed 0-2^32-1.
- *measurement*: warm-up 0-3,600 s, window 0.01-3,600 s, 1-1,000,000 batches, 2-1,000
  repetitions, GEMM microbenchmark 0-600 s (a measured run stays a run, not a hang).
- *names* (scenario name, configuration ids): 1-100 characters, letters, digits, ``_ . -``, not
  starting with ``.`` or ``-`` (so ``name`` cannot be ``..``, hidden, an option, or too long for a
  file system); *description* up to 10,000 characters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Annotated, Any, NamedTuple, get_args, get_origin

from pydantic import Field


class Range(NamedTuple):
    """One documented range: what it bounds, its limits (inclusive unless noted) and unit."""

    what: str
    low: str
    high: str
    unit: str


def _f(ge: float | None = None, le: float | None = None, *, gt: float | None = None,
       lt: float | None = None) -> object:
    return Field(ge=ge, le=le, gt=gt, lt=lt, allow_inf_nan=False)


def _i(ge: int, le: int) -> object:
    return Field(ge=ge, le=le)


NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$"
NAME_ALLOWED = ("1 to 100 ASCII letters (A-Z, a-z), digits, '_', '.' or '-', the first a letter, digit or "
                "'_'")  # NAME_PATTERN

Layers = Annotated[int, _i(1, 1_000)]
HiddenSize = Annotated[int, _i(1, 131_072)]
Heads = Annotated[int, _i(1, 1_024)]
IntermediateSize = Annotated[int, _i(1, 1_048_576)]
VocabSize = Annotated[int, _i(1, 4_194_304)]
MAX_TOKENS = 16_777_216  # a sequence's tokens (sequence length, position embeddings, a request's lengths)
Tokens = Annotated[int, _i(1, MAX_TOKENS)]  # sequence length, position embeddings
BatchSize = Annotated[int, _i(1, 1_048_576)]
MAX_GLOBAL_BATCH = 16_777_216  # sequences in one step of a whole cluster
GlobalBatchSize = Annotated[int, _i(1, MAX_GLOBAL_BATCH)]
MAX_INSTANCES = 100_000  # a configuration's instances, given or planned
Instances = Annotated[int, _i(1, MAX_INSTANCES)]
MAX_DEGREE = 1_000_000  # ranks of one parallel degree (and devices of one measurement)
Degree = Annotated[int, _i(1, MAX_DEGREE)]
Experts = Annotated[int, _i(1, 65_536)]  # routed experts per MoE layer (published: up to 384)
CapacityFactor = Annotated[float, _f(1.0, 64.0)]  # busiest expert's load over the mean
HeadDim = Annotated[int, _i(1, 131_072)]  # head and latent widths (published: up to about 1,536)
MemoryHeadroomPct = Annotated[float, _f(0.0, 50.0)]
NetworkGbps = Annotated[float, _f(0.01, 1e6)]
DeviceMemoryGib = Annotated[float, _f(0.01, 100_000.0)]
TotalTokens = Annotated[float, _f(1.0, 1e18)]
GlobalBatchTokens = Annotated[int, _i(1, 2**34)]
NumLabels = Annotated[int, _i(2, 1_000_000)]
LengthCv = Annotated[float, _f(0.0, 10.0)]  # coefficient of variation of a length or of arrivals
MAX_LATENCY_MS = 1e7
LatencyMs = Annotated[float, _f(1e-3, MAX_LATENCY_MS)]
RatePerH = Annotated[float, _f(1e-3, 1e12)]
HourlyRatePerH = Annotated[float, _f(0.0, 1e12)]  # a profile's hour may be quiet (0)
RateMultiplier = Annotated[float, _f(0.0, 1_000.0)]
LagH = Annotated[int, _i(0, 23)]
MinInstances = Annotated[int, _i(0, 100_000)]
HorizonH = Annotated[float, _f(1e-3, 87_660.0)]
MAX_SEQUENCES = 1e15  # sequences (requests) of one workload, or of one bin of a lengths histogram
TotalSequences = Annotated[float, _f(1.0, MAX_SEQUENCES)]
MaxUtilization = Annotated[float, _f(0.01, 1.0)]
PhaseFraction = Annotated[float, _f(1e-6, 1.0)]
HostCpuUtilization = Annotated[float, _f(0.01, 1.0)]
MAX_THROUGHPUT_PER_S = 1e12
ThroughputPerS = Annotated[float, _f(1e-6, MAX_THROUGHPUT_PER_S)]
PriceUsdPerH = Annotated[float, _f(1e-4, 10_000.0)]
SpotDiscountPct = Annotated[float, _f(0.01, 99.99)]
InterruptionPctPerMonth = Annotated[float, _f(0.0, 100.0)]
CheckpointIntervalH = Annotated[float, _f(1e-3, 1_000.0)]
RestartH = Annotated[float, _f(0.0, 1_000.0)]
Pue = Annotated[float, _f(1.0, 3.0)]
GridGPerKwh = Annotated[float, _f(0.1, 2_000.0)]
IdlePowerW = Annotated[float, _f(0.0, 10_000.0)]
MAX_DEVICE_POWER_W = 10_000.0  # one accelerator's maximum draw (also `ecobench neuron-power --max-w`)
MaxPowerW = Annotated[float, _f(1.0, MAX_DEVICE_POWER_W)]
MAX_POWER_W = 100_000.0  # a supplied or measured draw per instance (or node)
PowerW = Annotated[float, _f(0.1, MAX_POWER_W)]
Draws = Annotated[int, _i(0, 100_000)]
MIN_BAND_DRAWS = 20  # the fewest nonzero draws: 1 in 20 lies below the band's 5th percentile
Seed = Annotated[int, _i(0, 2**32 - 1)]
WarmupS = Annotated[float, _f(0.0, 3_600.0)]
MAX_WINDOW_S = 3_600.0  # a measurement window, or its idle part
WindowS = Annotated[float, _f(0.01, MAX_WINDOW_S)]
MinBatches = Annotated[int, _i(1, 1_000_000)]
Repetitions = Annotated[int, _i(2, 1_000)]
GemmS = Annotated[float, _f(0.0, 600.0)]
Share = Annotated[float, _f(0.0, 1.0)]
SpeculativeTokens = Annotated[int, _i(1, 64)]
Params = Annotated[float, _f(1e3, 1e13)]
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
Description = Annotated[str, Field(max_length=10_000)]
SWEEP_MAX_VALUES = 10_000  # values per sweep axis
SWEEP_MAX_COMBINATIONS = 1_000_000  # configurations one sweep expands to
# A sweep's estimated cost (ecobench.scenario.sweep_size.estimate) is bounded too; the estimate assumes,
# from runs of benchmarks/bench_sweep_scale.py on a 2-core host (CPU seconds, peak RSS):
SWEEP_MAX_ESTIMATED_S = 600.0  # seconds a sweep may be estimated to take
SWEEP_MAX_ESTIMATED_GIB = 3.0  # resident memory a sweep may be estimated to need
# A group's backend evaluation and plan with a cheap backend (analytic), by workload mode. Measured with
# benchmarks/bench_sweep_group.py (2026-11-28, the 2-core host shared at load 3-5; CPU, wall a group):
# inference 2.4 ms, 5.9 ms; serving 9.7 ms, 21.7 ms (trial14: 400 serving groups in 6.4 s wall at load
# 2.7, ~16 ms a group); training (parallelism: auto) 8.5 ms, 17.3 ms. A serving group searches the
# batch and tensor degree against the latency targets, so it costs several times an inference group.
SWEEP_GROUP_S_CHEAP = {"inference": 0.002, "serving": 0.016, "training": 0.01}
SWEEP_GROUP_S = 0.05  # the same for a backend that is not cheap (emulated), any mode
SWEEP_ROW_S = 15e-6  # a row's planning, id, spill and writing (CSV, the slower format)
SWEEP_BASE_GIB = 0.6  # the process, its imports and one chunk of rows being written
SWEEP_ROW_BYTES = 600  # a row's columns kept in memory (ids, objectives, coordinates)
SWEEP_GROUP_CELL_BYTES = 500  # a cell of the largest group, evaluated at once (written in chunks)
# What a group keeps until the sweep is written, by workload mode: a serving group keeps its plan's queue
# and latency detail. Measured 2026-11-28 (peak RSS, /usr/bin/time, `ecobench run` of a llama3-8b serving
# sweep over instance_type x max_batch x scheduler x region): 400 groups x 1 region 107 MB, 400 x 15 regions
# (3,800 rows) 114 MB, 1,600 groups x 15 regions (15,200 rows) 182 MB: ~57 KB a group beyond its rows
# (the trial14 sweep of 49,990 groups, had it run, ~2.8 GB). Inference and training rows: in ROW_BYTES.
SWEEP_GROUP_BYTES = {"inference": 0, "serving": 57_000, "training": 0}


def number_text(v: float) -> str:
    """A bound for a message: ``0`` not ``0.0``, ``16,777,216``, ``10^9``, ``1e-09``."""
    return _fmt(v) if v == 0 or abs(v) >= 1e-3 else f"{v:g}"


def _fmt(v: float) -> str:
    if v >= 1e6 and math.log10(v).is_integer():
        return f"10^{int(math.log10(v))}"
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.6f}".rstrip("0")


def whole_number(text: str) -> int | None:
    """The integer that number text writes, in any form ('1000', '1e3', '1024.0'; YAML leaves 1e3 as
    text): None where it has a fraction or is not finite ('1.5e0', 'inf'); ValueError where it is no
    number. The reader of integer fields in scenarios and of the CLI's integer options."""
    number = float(text)
    return int(number) if number.is_integer() else None


def limits_text(lo: float | None, hi: float | None, open_lo: bool = False, open_hi: bool = False) -> str:
    """' from 1 to 16,777,216' (' of at least 0', ' of at most 1', '' unbounded; an exclusive bound
    ``open_lo``/``open_hi``: ' more than 0', ' more than 0 and at most 1'): a range in a message."""
    low = None if lo is None else f"{'more than' if open_lo else 'at least'} {_fmt(lo)}"
    high = None if hi is None else f"{'less than' if open_hi else 'at most'} {_fmt(hi)}"
    if open_lo or open_hi:
        return " " + " and ".join(b for b in (low, high) if b)
    if lo is not None and hi is not None:
        return f" from {_fmt(lo)} to {_fmt(hi)}"
    if low or high:
        return f" of {low or high}"
    return ""


def _constraints(t: Any, metadata: Iterable[Any]) -> list[Any]:
    """The pydantic constraints on the number in type ``t`` and ``metadata`` (annotated_types' Ge, Gt...)."""
    found = list(metadata)
    todo = [t]
    while todo:  # Annotated[float, Field(ge=...)] inside Optional[...] or list[...]
        a = todo.pop()
        if get_origin(a) is Annotated:
            found += [c for m in a.__metadata__ for c in getattr(m, "metadata", [])]
        todo += get_args(a)
    return found


def type_limits(t: Any, metadata: Iterable[Any] = ()) -> tuple[float | None, float | None]:
    """(lowest, highest) of the number in type ``t``, read from its pydantic metadata (its items' for a
    list, inside Optional too; ``metadata``: a field's own constraints); None where unbounded."""
    lo = hi = None
    for c in _constraints(t, metadata):  # annotated_types.Ge, Le, Gt, Lt
        lo = getattr(c, "ge", getattr(c, "gt", lo))
        hi = getattr(c, "le", getattr(c, "lt", hi))
    return lo, hi


def open_limits(t: Any, metadata: Iterable[Any] = ()) -> tuple[bool, bool]:
    """Whether :func:`type_limits`' lowest and highest are exclusive (``gt``, ``lt``)."""
    found = _constraints(t, metadata)
    return any(hasattr(c, "gt") for c in found), any(hasattr(c, "lt") for c in found)


def _row(what: str, t: object, unit: str = "") -> Range:
    lo, hi = type_limits(t)
    return Range(what, _fmt(math.nan if lo is None else lo), _fmt(math.nan if hi is None else hi), unit)


RANGES = [
    _row("workload.architecture.layers, configs[].layers", Layers, "layers"),
    _row("workload.architecture.hidden_size", HiddenSize),
    _row("workload.architecture.heads", Heads),
    _row("workload.architecture.intermediate_size", IntermediateSize),
    _row("workload.architecture.vocab_size", VocabSize, "tokens"),
    _row("workload.architecture.max_position_embeddings, seq_len", Tokens, "tokens"),
    _row("batch_size (workload.inference, workload.training, configs[]), parallelism.microbatch, "
         "configs[].max_batch", BatchSize, "sequences"),
    _row("workload.training.global_batch_size", GlobalBatchSize, "sequences"),
    _row("workload.inference.rate_per_h, workload.serving.requests_per_h", RatePerH, "per hour"),
    _row("profile.rates_per_h[] (inference, serving)", HourlyRatePerH, "per hour"),
    _row("profile.multipliers[] (inference, serving)", RateMultiplier, "x rate_per_h / requests_per_h"),
    _row("profile.autoscale.lag_h", LagH, "h"),
    _row("profile.autoscale.min_instances", MinInstances, "instances"),
    _row("horizon_h (inference, serving), workload.training.deadline_h", HorizonH, "h (10 years)"),
    _row("latency targets: inference.latency_ms_p99, serving.median_ttft_ms, p90/p95/p99_ttft_ms and the "
         "same for tpot", LatencyMs, "ms"),
    _row("workload.serving.input_tokens, output_tokens, configs[].max_num_batched_tokens", Tokens, "tokens"),
    _row("workload.serving.input_tokens_cv, output_tokens_cv, arrival_cv", LengthCv),
    _row("workload.serving.prefix_cache_hit_rate, configs[].speculative.acceptance_rate", Share, "share"),
    _row("configs[].speculative.num_speculative_tokens", SpeculativeTokens, "tokens"),
    _row("configs[].speculative.draft_params", Params, "parameters"),
    _row("workload.training.total_tokens", TotalTokens, "tokens"),
    _row("workload.training.global_batch_tokens", GlobalBatchTokens, "tokens"),
    _row("workload.training.num_labels", NumLabels, "labels"),
    _row("configs[].parallelism.tensor, pipeline, data, expert, context", Degree, "ranks"),
    _row("workload.architecture.moe.experts, experts_per_token, shared_experts", Experts, "experts"),
    _row("workload.architecture.moe.capacity_factor", CapacityFactor, "x mean load"),
    _row("workload.architecture.head_dim, moe.expert_intermediate_size, mla.*", HeadDim),
    _row("configs[].memory_headroom_pct", MemoryHeadroomPct, "% of device memory"),
    _row("configs[].network_gbps", NetworkGbps, "Gbps per instance"),
    _row("configs[].device_memory_gib", DeviceMemoryGib, "GiB per accelerator"),
    _row("workload.inference.max_utilization, configs[].max_utilization", MaxUtilization),
    _row("workload.training.total_sequences", TotalSequences, "sequences"),
    _row("workload.training.phases[].fraction", PhaseFraction),
    _row("configs[].instances, workload.training.max_instances", Instances, "instances"),
    _row("configs[].measured_throughput_per_s", ThroughputPerS, "samples/s"),
    _row("configs[].host_cpu_utilization", HostCpuUtilization),
    _row("configs[].price_usd_per_h", PriceUsdPerH, "USD/h"),
    _row("pricing.spot_discount_pct", SpotDiscountPct, "%"),
    _row("pricing.spot_interruption_pct_per_month", InterruptionPctPerMonth, "% of instances a month"),
    _row("pricing.checkpoint_interval_h", CheckpointIntervalH, "h"),
    _row("pricing.restart_h", RestartH, "h"),
    _row("pue", Pue),
    _row("overrides.grid_g_per_kwh.*", GridGPerKwh, "gCO2e/kWh"),
    _row("overrides.accelerator_power_w.*.idle_w", IdlePowerW, "W (idle <= max)"),
    _row("overrides.accelerator_power_w.*.max_w", MaxPowerW, "W"),
    _row("configs[].measured_power_w", PowerW, "W per instance"),
    _row("uncertainty.draws", Draws, f"draws (0: no bands, else {MIN_BAND_DRAWS} or more)"),
    _row("uncertainty.seed", Seed, ""),
    _row("measurement.warmup_s", WarmupS, "s"),
    _row("measurement.min_window_s", WindowS, "s"),
    _row("measurement.min_batches", MinBatches, "batches"),
    _row("measurement.repetitions", Repetitions, "windows"),
    _row("measurement.gemm_s", GemmS, "s"),
    Range("name, configs[].id, configs[].stack", "1", "100",
          "characters: letters, digits, _ . - (not first: . -)"),
    Range("description", "0", "10,000", "characters"),
    Range("sweep.* (values per axis)", "1", _fmt(SWEEP_MAX_VALUES), "values"),
    Range("sweep (all axes multiplied)", "1", _fmt(SWEEP_MAX_COMBINATIONS), "configurations"),
    Range("sweep (estimated time)", "0", _fmt(SWEEP_MAX_ESTIMATED_S), "s"),
    Range("sweep (estimated memory)", "0", _fmt(SWEEP_MAX_ESTIMATED_GIB), "GiB"),
]
