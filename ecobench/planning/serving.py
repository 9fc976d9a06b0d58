"""Serving plans: how many model replicas, and instances, serve a request rate within latency targets.

A replica (``tensor`` ranks) runs the configuration's scheduler (``planning/schedulers.py``:
continuous batching with chunked prefill, the engines' default; static batches; or disaggregated
prefill and decode replicas) on the traffic of the scenario (``planning/traffic.py``: length
distributions, Poisson or bursty arrivals). The scheduler gives, at each concurrency ``B``, the
requests per second a replica carries and the TTFT and TPOT distributions; the targets may bound
any of their medians, 90th, 95th or 99th percentiles (``median_ttft_ms`` ... ``p99_tpot_ms``).

For a request rate the plan takes, per tensor-parallel degree, the largest rate that meets the
targets with ``B`` up to what fits memory (or ``max_batch``); replicas = rate / that, instances =
replicas / replicas per instance (the fewest replicas that carry the rate: slots of an instance
beyond them stay idle). Disaggregated replicas are counted per pool (prefill replicas at the load
that meets the TTFT targets, decode replicas at ``B``). ``parallelism: auto`` (the default) tries
every tensor degree that divides the instance's ranks and keeps the fewest instances, then the least
accelerator activity (the power the draw model charges); attention heads and the feed-forward split
that do not divide are padded, as Neuron's inference libraries do. Where no concurrency of any
degree meets the targets, the plan is batch 1 (the least latency) at the degree closest to them, its
``slo`` saying which it misses.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ecobench.errors import InputError
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.hardware.cluster import instance_cluster
from ecobench.hardware.lnc import lnc_of
from ecobench.parallel.layout import divisors
from ecobench.parallel.memory import memory_in_words, rank_word, serving_headroom_pct, with_headroom
from ecobench.parallel.serving import (
    WORKSPACE_GIB,
    ServeWorkload,
    compiled_graph_tokens,
    decode_step_s,
    kv_gib_per_sequence,
    max_batch_by_memory,
    memory_gib_per_rank,
    prefill_s,
    serve_kernels,
    step_host_s,
    tp_all_reduce_s,
    weights_gib_per_rank,
    with_routed_reads,
    with_stack_attention,
)
from ecobench.parallel.step import Cluster, Efficiency
from ecobench.planning import serving_options
from ecobench.planning.operating import Operating
from ecobench.planning.schedulers import (
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    SCHEDULERS,
    Steps,
    first_meeting,
    prefill_only,
    prefill_queue,
)
from ecobench.planning.traffic import Lengths, Traffic
from ecobench.planning.ttft_dist import Ttft
from ecobench.power.draw import Activity
from ecobench.scenario.model import HardwareConfig, ParallelismSpec, ServingSpec
from ecobench.units import SECONDS_PER_HOUR
from ecobench.words import counted, fmt_num
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.moe_blockwise import prefill_block_tokens
from ecobench.workloads.transformer import kv_cache_bytes_per_token, tensor_split

MAX_BATCH = 1024  # the largest concurrency searched when memory allows more
COLUMN_STATS: tuple[tuple[str, str | float], ...] = (("mean", "mean"), ("p50", 0.5), ("p99", 0.99))
STAT_LABEL = {0.5: "p50", 0.9: "p90", 0.95: "p95", 0.99: "p99"}


BATCH_EXACT = 32  # every concurrency up to this is a candidate; above, a geometric grid
BATCH_GRID_STEPS = 64  # of at most this many concurrencies up to the limit


@functools.lru_cache(maxsize=1024)
def batch_grid(limit: int) -> np.ndarray:
    """Candidate concurrencies: every one up to ``BATCH_EXACT``, then geometrically spaced (about 5% apart
    at 1024) up to ``limit``, which is always one (read-only: shared between plans)."""
    grid = np.arange(1, min(limit, BATCH_EXACT) + 1).astype(float)
    if limit > BATCH_EXACT:
        geo = np.unique(np.round(np.geomspace(BATCH_EXACT, limit, BATCH_GRID_STEPS)))
        grid = np.unique(np.concatenate([grid, geo, [limit]])).astype(float)
    grid.flags.writeable = False
    return grid


def traffic_of(spec: ServingSpec) -> Traffic:
    """The scenario's request lengths and arrivals."""
    if spec.lengths_csv is not None:
        from ecobench.io.lengths_csv import file_stamp

        li, lo = _csv_lengths(spec.lengths_csv, file_stamp(spec.lengths_csv))
    else:
        assert spec.input_tokens is not None and spec.output_tokens is not None
        li = Lengths(float(spec.input_tokens), spec.input_tokens_cv, spec.length_distribution)
        lo = Lengths(float(spec.output_tokens), spec.output_tokens_cv, spec.length_distribution)
    return Traffic(li, lo, 1.0 if spec.arrival_cv is None else spec.arrival_cv)


@functools.lru_cache(maxsize=32)
def _csv_lengths(path: str, stamp: tuple[int, int, int] | None) -> tuple[Lengths, Lengths]:
    """The file's length distributions while it is unchanged (``stamp``)."""
    from ecobench.io.lengths_csv import read_lengths_csv

    li, lo = read_lengths_csv(Path(path), "workload.serving.lengths_csv")
    return Lengths.of_samples(li), Lengths.of_samples(lo)


class ServeTimer(Protocol):
    """Times a replica's decode steps and prefills: a backend with its own serving model
    (``Capabilities.own_serving_model``) hands one to the plan; None: the analytic kernels."""

    def decode_s(self, w: ServeWorkload, cl: Cluster, batch: Any) -> np.ndarray:
        """Seconds of a decode step at each batch size."""
        ...

    def prefill_s(self, w: ServeWorkload, cl: Cluster) -> float:
        """Seconds to prefill one prompt."""
        ...


def operating_points(w: ServeWorkload, cl: Cluster, eff: Efficiency, batch: np.ndarray,
                     request_overhead_s: float = 0.0, cfg: HardwareConfig | None = None,
                     traffic: Traffic | None = None, spec: ServingSpec | None = None,
                     timer: ServeTimer | None = None) -> Operating:
    """The replica's figures at each concurrency under ``cfg``'s scheduler (default: continuous with
    chunked prefill) for ``traffic`` (default: ``w``'s lengths, Poisson arrivals); ``timer``: a
    backend's own decode-step and prefill times (default: the analytic kernels)."""
    b = np.asarray(batch, dtype=float)
    traffic = traffic or Traffic(Lengths(w.input_tokens), Lengths(w.output_tokens))
    if w.prefill_tokens < w.input_tokens:  # a prefix cache: the schedulers see the tokens prefilled
        traffic = dataclasses.replace(traffic, input=traffic.input.scaled(w.prefill_tokens / w.input_tokens))
    if timer is None:
        steps = _analytic_steps(w, cl, eff, b, request_overhead_s)
    else:
        steps = _steps(w, cl, b, float(timer.prefill_s(w, cl)), timer.decode_s(w, cl, b), request_overhead_s)
    name = cfg.scheduler if cfg is not None else "continuous"
    budget = None
    if name == "continuous" and (cfg is None or cfg.chunked_prefill):
        budget = (cfg.max_num_batched_tokens if cfg is not None else None) or DEFAULT_MAX_NUM_BATCHED_TOKENS
    ttft_targets = [(q, v) for m, q, v, _ in (spec.targets if spec else []) if m == "ttft"]

    def ttft_ok(d: Ttft) -> np.ndarray:
        ok = np.ones(len(d.p), dtype=bool)
        solved = d.quantiles([q for q, _ in ttft_targets]) if ttft_targets else []  # solved together
        for (_, v), x in zip(ttft_targets, solved, strict=True):
            ok &= 1e3 * x <= v
        return ok

    if prefill_only(traffic):  # one output token: no decode, whatever the scheduler
        return prefill_queue(steps, traffic, name)
    return SCHEDULERS[name](steps, traffic, budget=budget, ttft_ok=ttft_ok)


def _steps(w: ServeWorkload, cl: Cluster, b: np.ndarray, t_p: float, decode: np.ndarray,
           request_overhead_s: float) -> Steps:
    """The replica's :class:`Steps` from a prompt's prefill ``t_p`` and the decode steps at ``b``."""
    kv_bytes = kv_cache_bytes_per_token(w.arch, w.kv_dtype or w.dtype, w.tensor) * w.tensor
    replicas = max(1, cl.ranks_per_node // w.tensor)
    # per prompt token prefilled: with a prefix cache the schedulers count a prompt's uncached tokens
    # (:func:`operating_points`), as a step's token budget does (vLLM schedules a request's
    # num_tokens - num_computed_tokens, its cached prefix computed), while its whole cache is sent on
    cached = w.input_tokens / w.prefill_tokens
    return Steps(b, decode, t_p / w.prefill_tokens, request_overhead_s,
                 cached * kv_bytes / (cl.inter_gb_per_s * 1e9 / replicas))


STEPS_CACHED = 256  # replicas whose analytic step times are kept
_analytic_cache: dict[tuple[Any, ...], Steps] = {}


def _analytic_steps(w: ServeWorkload, cl: Cluster, eff: Efficiency, b: np.ndarray,
                    request_overhead_s: float) -> Steps:
    """:func:`_steps` from the analytic kernels, worked out once per replica: the configurations of
    an instance that differ in their scheduler only share it (the same object, read-only, so the
    schedulers' own caches keyed on it are shared too). Keyed by value, the cluster by its repr (its
    NaN fields never compare equal)."""
    key = (w, repr(cl), eff, b.tobytes(), request_overhead_s)
    steps = _analytic_cache.get(key)
    if steps is None:
        decode = decode_step_s(w, cl, eff, b)
        steps = _steps(w, cl, np.array(b), float(prefill_s(w, cl, eff, 1.0)), decode, request_overhead_s)
        steps.batch.flags.writeable = steps.decode_s.flags.writeable = False
        if len(_analytic_cache) >= STEPS_CACHED:
            _analytic_cache.clear()
        _analytic_cache[key] = steps
    return steps


@dataclass(frozen=True)
class ServingPlan:
    """What a configuration runs to serve the rate, and its figures at the planned load."""

    tensor: int
    replicas: int
    replicas_per_instance: float  # below 1 where a replica spans instances
    instances: int
    capacity_per_replica_per_s: float
    batch: float  # concurrency per replica at the planned load
    max_batch: int
    latency: dict[str, float]  # ttft_ms_mean, ttft_ms_p50, ttft_ms_p99, tpot_ms_... and targeted ones
    slo: str  # each target, its planned value and meets / misses
    memory_per_device_gib: float
    prefill_share: float
    choice: str
    workload: ServeWorkload
    accelerator_activity: float  # busy x (compute + memory-bound share): what the tie-break compares
    activity: Activity  # of a busy replica
    busy: float  # share of time the instances' accelerators work (idle slots and idle time excluded)
    operating: Operating | None = None  # the chosen tensor degree's operating points (the Monte Carlo's)
    scheduler: str = "continuous"
    prefill_replicas: int | None = None  # disaggregated: replicas in the prefill pool
    decode_replicas: int | None = None
    pipeline: int = 1  # stages per replica (more than one instance where tensor x pipeline exceeds its ranks)
    unmet: str = ""  # why no concurrency meets the targets (then planned at batch 1); empty: they are met


def _serve_workload(arch: Architecture, traffic: Traffic, spec: ServingSpec, cfg: HardwareConfig, tensor: int,
                    static_cache: bool, pipeline: int = 1, lnc: int = 1) -> ServeWorkload:
    w = ServeWorkload(arch, max(1, round(traffic.input.mean)), max(1, round(traffic.output.mean)),
                      cfg.precision, tensor, serving_options.weight_dtype(cfg), cfg.kv_cache_precision,
                      static_cache, pipeline=pipeline,
                      moe_block_tokens=prefill_block_tokens(static_cache, cfg.stack),
                      **serving_options.workload_options(spec, cfg))
    # optimum-neuron compiles one graph at the compiled length: here the prompt plus output
    w = dataclasses.replace(w, graph_tokens=compiled_graph_tokens(static_cache, cfg.stack, w.max_context))
    return with_stack_attention(w, cfg.stack, lnc)


MAX_SPAN_INSTANCES = 16  # the most instances one replica's pipeline stages are searched over


def _can_span(cl: Cluster) -> bool:
    """Whether ``auto`` lets a replica span instances of this kind: instances of several devices
    joined by a device link (the multi-accelerator instances built for multi-node work)."""
    return cl.ranks_per_node > 1 and not math.isnan(cl.intra_gb_per_s)


def _given_layout(tensor: int, pipeline: int, rpn: int, inst: str, arch: Architecture,
                  can_span: bool = True) -> tuple[int, int]:
    """A given (tensor, pipeline) split of a replica, or bad input: each degree and the replica's ranks
    divide the instance's ranks or, where the instance can span (:func:`_can_span`: several devices
    joined by a device link, as ``auto`` requires), are whole instances (a replica spanning instances).
    ``tensor: 3`` on a one-GPU instance is refused, as ``serve-point --tensor 3`` is, not planned over
    three instances joined by their network."""
    valid = divisors(rpn)

    def ok(n: int) -> bool:
        return n in valid or (can_span and n % rpn == 0)

    if not ok(tensor):
        if not can_span:
            raise InputError(f"{tensor} must divide the {counted(rpn, 'rank')} of {inst}; allowed: "
                             f"{', '.join(map(str, valid))} (a replica spans instances only on instances of "
                             "several accelerators joined by a device link, such as p5.48xlarge)"
                             ).in_config("parallelism.tensor")
        raise InputError(f"{tensor} must divide the {rpn} ranks of {inst} or be a multiple of them "
                         f"(a replica over several instances); valid: {', '.join(map(str, valid))}, "
                         f"{2 * rpn}, ...").in_config("parallelism.tensor")
    if pipeline > arch.layers:
        raise InputError(f"{pipeline} stages exceed the {arch.layers} layers of {arch.name}; allowed: "
                         f"1-{arch.layers}").in_config("parallelism.pipeline")
    if not ok(tensor * pipeline):
        raise InputError(f"tensor x pipeline = {tensor * pipeline} ranks must divide the {rpn} ranks of "
                         f"{inst}" + (f" or fill whole instances (a multiple of {rpn})" if can_span else
                                      " (a replica spans instances only on instances of several "
                                      "accelerators joined by a device link)")
                         ).in_config("parallelism.pipeline")
    return tensor, pipeline


# GPU serving engines split the attention heads evenly over the tensor ranks: vLLM refuses otherwise
# ("Total number of attention heads (128) must be divisible by tensor parallel size (24)", vllm/config
# verify_with_parallel_config; key/value heads are split or replicated, so they and the degree divide one
# another), as SGLang and TensorRT-LLM do; only Neuron's inference libraries pad heads (tensor_split).
HEAD_PADDING_VENDORS = ("aws",)


def _engine_tensor_refusal(arch: Architecture, tensor: int, pads_heads: bool) -> str | None:
    """Why no serving engine of the hardware runs ``arch`` at tensor degree ``tensor`` (None: one
    does): where the engines do not pad heads (:data:`HEAD_PADDING_VENDORS`), the degree must divide
    the attention heads, and it and the key/value heads must divide one another."""
    if pads_heads or tensor == 1:
        return None
    try:
        tensor_split(arch, tensor)
    except ValueError as e:
        return str(e)
    return None


TTFT_FIRST_GRID = 2  # grid concurrencies _top_row solves TTFT at first (then twice as many each time)


def _top_row(op: Operating, spec: ServingSpec) -> int | None:
    """The concurrency (index) of the highest rate that meets every target, the first of equal rates
    (None: none does). The concurrencies are read in falling rate order; TTFT quantiles (the costly
    solves) are solved at the grid concurrencies the rows read are interpolated between, in blocks of
    rows whose grid concurrencies number ``TTFT_FIRST_GRID``, then twice as many each time (the top
    rates, at the largest concurrencies, usually decide)."""
    ok = op.feasible & (op.prefill_share < 1) & (op.rate_per_s > 0)
    tpot = [(q, value) for metric, q, value, _ in spec.targets if metric == "tpot"]
    for (_, value), got in zip(tpot, op.latencies_ms("tpot", [q for q, _ in tpot]), strict=True):
        ok &= got <= value  # closed form: read at every concurrency
    tried = np.flatnonzero(ok)
    tried = tried[np.argsort(-op.rate_per_s[tried], kind="stable")]
    ttft = [(q, value) for metric, q, value, _ in spec.targets if metric == "ttft"]
    qs = [q for q, _ in ttft]
    grid = op.grid_rows()
    below = np.searchsorted(grid, tried, side="right") - 1  # each row's grid concurrency at or below it
    above = np.where(grid[below] == tried, below, np.minimum(below + 1, len(grid) - 1))  # (itself on it)
    read = np.zeros((len(tried), len(grid)), dtype=bool)
    read[np.arange(len(tried)), below] = read[np.arange(len(tried)), above] = True
    solves = np.logical_or.accumulate(read, axis=0).sum(axis=1)  # grid rows solved to read up to each row

    def meets(rows: np.ndarray) -> np.ndarray:
        out = np.ones(len(rows), dtype=bool)
        for (_, value), got in zip(ttft, op.latencies_ms("ttft", qs, rows), strict=True):
            out &= got <= value
        return out

    return first_meeting(tried, meets, solves, TTFT_FIRST_GRID)


def latency_stats(spec: ServingSpec) -> list[tuple[str, str | float]]:
    """(label, statistic) of the latency columns: mean, p50, p99 and every targeted percentile."""
    out = list(COLUMN_STATS)
    for _, q, _, _ in spec.targets:
        label = STAT_LABEL[q]
        if (label, q) not in out:
            out.append((label, q))
    return out


def serving_activity(w: ServeWorkload, cl: Cluster, eff: Efficiency, batch: float,
                     prefill_share: float) -> Activity:
    """What a busy replica's accelerators do: decode steps at ``batch`` for ``1 - prefill_share`` of
    the time and prefills the rest, each split into compute-bound kernels and memory-bound kernels,
    as the draw model needs; decode attention's KV-cache reads draw like compute-bound kernels
    (``power/draw.py`` ``decode_draw_shares``, the rule the power corpus's serving points are fitted
    with). Per-kernel overhead and tensor-parallel all-reduces count as memory-bound
    time: the chip is launching and running kernels with its clocks up, as the draw model's fit takes
    a service's time beyond the roofline (power/fit.py ``split_rest``). Stalls (host-side gaps) are the
    host's share of each step where the engine's step loop runs on the host between device steps
    (``Efficiency.steps_wait_on_host``: vLLM V0, whose measured draw the power fit takes the same way,
    ``HOST_BOUND_ENGINE``), and what a slower supplied throughput adds (``Activity.scaled``)."""
    from ecobench.hardware.backends.activity import kernel_regime_arrays
    from ecobench.power.draw import decode_draw_shares

    kernels, prefill = serve_kernels(w)
    decode = with_routed_reads(kernels, w.arch, batch, w.nxd_moe)
    parts = []
    for ks, micro, share in ((decode, batch, 1.0 - prefill_share), (prefill, 1.0, prefill_share)):
        c_k, m_k, o_k = kernel_regime_arrays(ks, micro, cl, eff)
        c, m, o = float(c_k.sum()), float(m_k.sum()), float(o_k.sum())
        # decode attention's memory-bound time: its KV-cache reads (the prefill reads no cache)
        kv = float(m_k[ks.attention].sum()) if ks is decode else 0.0
        # the prefill's all-reduces run over the tokens its kernels do (prefill_s): a static-shape
        # prompt's bucket, not only its uncached tokens
        tokens = micro * (1 if ks is decode else w.prefill_compute_tokens)
        tp = float(tp_all_reduce_s(w, cl, eff, np.array([tokens]))[0])
        host = float(step_host_s(eff, micro)) if eff.steps_wait_on_host else 0.0
        total = c + m + o + tp + host
        split = decode_draw_shares(c, m - kv, kv, o + tp)
        parts.append([share * x / total for x in (*split, host)] if total > 0 else [0.0, share, 0.0])
    c, m, stall = (sum(x) for x in zip(*parts, strict=True))
    return Activity(c, m, stall, "serving model: decode steps and prefills (compute-bound and decode "
                                 "attention's KV-cache reads; memory-bound weight reads, per-kernel overhead "
                                 "and all-reduces; power/draw.py decode_draw_shares"
                                 + ("; stalls: the engine's step loop on the host)" if stall else ")"))


def at_rate(op: Operating, rate: Any, speed: Any = 1.0,
            stats: list[tuple[str, str | float]] | None = None) -> dict[str, Any]:
    """The replica's concurrency, prefill share and latency columns (``ttft_ms_p50`` ...) at the
    request rate ``rate`` (interpolated between the concurrencies of ``op``; a rate below batch 1's
    capacity: batch 1, partly idle), for arrays of rates too. ``speed`` runs every step ``speed``
    times faster: the queue models are homogeneous in time (the rate at each concurrency times
    ``speed``, the loads unchanged, latencies over ``speed``), so the Monte Carlo gets a throughput
    draw's latencies from ``op`` without re-timing the kernels."""
    r = np.asarray(rate, dtype=float) / speed  # the same concurrency at speed 1
    out = load_at(op, r)
    stats = stats or list(COLUMN_STATS)
    latency = _latency_columns(op, out["batch"], stats)
    below = r < op.rate_per_s[0]
    light = op.light() if np.any(below) else None
    if light is not None:  # a replica idle between requests: the queue at its own rate
        at_light = _latency_columns(light, np.interp(r, light.rate_per_s, light.batch), stats)
        latency = {k: np.where(below, at_light[k], v) for k, v in latency.items()}
    for k, v in latency.items():
        out[k] = v / speed
    return out


def _latency_columns(op: Operating, x: Any, stats: list[tuple[str, str | float]]) -> dict[str, Any]:
    """The latency columns (ms, speed 1) at the concurrencies ``x``, interpolated between the
    concurrencies of ``op`` around them (solved there only)."""
    i = np.searchsorted(op.batch, np.ravel(x))
    near = np.unique(np.clip(np.concatenate([i - 1, i]), 0, len(op.batch) - 1))
    solved = {metric: op.latencies_at(metric, [stat for _, stat in stats], near)  # around the rates
              for metric in ("ttft", "tpot")}
    return {f"{metric}_ms_{label}": np.interp(x, op.batch[near], solved[metric][i])
            for i, (label, _) in enumerate(stats) for metric in ("ttft", "tpot")}


def load_at(op: Operating, rate: Any) -> dict[str, Any]:
    """The replica's concurrency ``batch`` and ``prefill_share`` at the request rate ``rate`` (arrays
    too): :func:`at_rate` without the latency columns, which cost a quantile solve each."""
    x = np.where(rate >= op.rate_per_s[0], np.interp(rate, op.rate_per_s, op.batch), op.batch[0])
    # below concurrency 1 (a plan on Operating.light) a replica is idle between requests: its busy
    # time is prefilled as at batch 1 (one request's work at a time)
    return {"batch": x, "prefill_share": np.interp(np.maximum(x, 1.0), op.batch, op.prefill_share)}


def latency_columns(op: Operating, rate: float, stats: list[tuple[str, str | float]]) -> dict[str, float]:
    """The latency columns (``ttft_ms_p50`` ...) of a replica at the request rate ``rate``."""
    at = at_rate(op, rate, 1.0, stats)
    return {k: float(v) for k, v in at.items() if k.startswith(("ttft_ms", "tpot_ms"))}


def prefill_pool_columns(op: Operating, load: float, stats: list[tuple[str, str | float]]
                         ) -> dict[str, float]:
    """The TTFT columns (``ttft_ms_p50`` ...) of a disaggregated plan whose prefill replicas run at
    ``load`` (each replica's share of the rate times a prompt's prefill): the pool's queue at that load,
    not at the highest load that meets the targets (``Operating.prefill_load``), which rounding the
    pool up to whole replicas puts them below; ``{}`` for other schedulers."""
    if op.prefill_ttft is None:
        return {}
    d = op.prefill_ttft(np.array([min(load, 1 - 1e-9)]))
    qs = [float(stat) for _, stat in stats if stat != "mean"]
    solved = dict(zip(qs, d.quantiles(qs)[:, 0], strict=True)) if qs else {}
    return {f"ttft_ms_{label}": 1e3 * float(d.mean()[0] if stat == "mean" else solved[float(stat)])
            for label, stat in stats}


def replicas_for(rate_per_s: Any, capacity_per_replica_per_s: Any) -> Any:
    """Fewest replicas (at least one) that carry the rate, elementwise."""
    return np.maximum(1.0, np.ceil(np.asarray(rate_per_s / capacity_per_replica_per_s, dtype=float) - 1e-9))


def latency_at(op: Operating, rate_per_s: float, capacity_per_replica_per_s: float,
               speed: Any = 1.0, prefill_replicas: int | None = None) -> dict[str, Any]:
    """Median TTFT and TPOT of the fleet serving ``rate_per_s`` when its replicas run ``speed`` times
    the planned speed (arrays: the Monte Carlo's throughput draws): the replicas for the rate at that
    capacity, each at its share of the rate (:func:`at_rate`); disaggregated, TTFT that of the
    prefill pool (``prefill_replicas`` planned) at its own load (:func:`pool_ttft_ms_p50`)."""
    per_replica = rate_per_s / replicas_for(rate_per_s, capacity_per_replica_per_s * speed)
    at = at_rate(op, per_replica, speed, [("p50", 0.5)])
    out = {"ttft_ms_p50": at["ttft_ms_p50"], "tpot_ms_p50": at["tpot_ms_p50"]}
    if op.prefill_ttft is not None and prefill_replicas:
        out["ttft_ms_p50"] = pool_ttft_ms_p50(op, rate_per_s, prefill_replicas, speed)
    return out


POOL_LOAD_POINTS = 33  # loads a Monte Carlo's prefill pool TTFT is solved at (interpolated between)


def pool_ttft_ms_p50(op: Operating, rate_per_s: float, planned: int, speed: Any) -> np.ndarray:
    """Median TTFT of a disaggregated plan's prefill pool when prefills run ``speed`` times the planned
    speed (an array: the Monte Carlo's draws), the pool sized as the plan sizes it at that speed (the
    fewest replicas at or below ``Operating.prefill_load``; the plan's ``planned`` where a floor on
    replicas set it) and read at the load it then runs at, as :func:`prefill_pool_columns` reads the
    plan's. The queue is homogeneous in time: at a load, every time over ``speed``. Solved at
    :data:`POOL_LOAD_POINTS` loads over the draws' range, interpolated between."""
    assert op.prefill_ttft is not None and op.prefill_load is not None
    s = np.asarray(speed, dtype=float)
    work = rate_per_s * op.prefill_s / s  # busy prefill replicas at the draw's speed
    floor = planned if planned > math.ceil(rate_per_s * op.prefill_s / op.prefill_load - 1e-9) else 1
    load = np.minimum(work / np.maximum(floor, np.ceil(work / op.prefill_load - 1e-9)), 1 - 1e-9)
    grid = np.unique(np.linspace(float(np.min(load)), float(np.max(load)), POOL_LOAD_POINTS))
    median = op.prefill_ttft(grid).quantiles([0.5])[0]
    return 1e3 * np.interp(load, grid, median) / s


def slo_verdicts(spec: ServingSpec, latency: dict[str, float]) -> str:
    """Each target with the planned value and whether it is met: ``p99_ttft_ms 1000: 812 meets``."""
    parts = []
    for metric, q, value, name in spec.targets:
        got = latency[f"{metric}_ms_{STAT_LABEL[q]}"]
        parts.append(f"{name} {value:g}: {got:.4g} {'meets' if got <= value * (1 + 1e-9) else 'misses'}")
    return "; ".join(parts) if parts else "no latency target"


def slo_misses(slo: str | None) -> list[tuple[str, str]]:
    """(target, planned value) of each target that ``slo`` (:func:`slo_verdicts`) says is missed:
    ``[("median_tpot_ms 5", "10.5")]``."""
    out = []
    for part in (slo or "").split("; "):
        target, _, verdict = part.rpartition(": ")
        if verdict.endswith(" misses"):
            out.append((target, verdict.removesuffix(" misses")))
    return out


LEAST_REACHABLE = "the least reachable, with each replica idle between requests: "
# max_batch 1 under continuous batching: batch 1 holds the slot always, its queue unbounded
ONE_SLOT = ("one slot per replica (max_batch 1) is always held at batch 1, and the queue for it grows "
            "without bound")


def _least_reachable(spec: ServingSpec, light: Operating | None, row: int | None, rate: float, span: int,
                     per_instance: int) -> str:
    """Where no concurrency meets the targets, the targeted values at the concurrency below 1 (each
    replica idle between requests) that comes nearest them, and the instances the rate needs there:
    ``'the least reachable, ...: p99_ttft_ms 5,920 at 0.0156 requests in flight per replica (1,183
    instances)'``, ``row`` that concurrency (:func:`_nearest_light_row`); '' where that is not modelled
    (``light`` None) or none serves."""
    if light is None or row is None:
        return ""
    instances = _instances_for(int(replicas_for(rate, float(light.rate_per_s[row]))), span, per_instance)
    values = ", ".join(f"{name} {fmt_num(float(light.latency_ms(metric, q, np.array([row]))[0]))}"
                       for metric, q, _, name in spec.targets)
    return (f"{LEAST_REACHABLE}{values} at {fmt_num(float(light.batch[row]))} requests in flight per "
            f"replica ({instances:,} instances)")


def _nearest_light_row(spec: ServingSpec, light: Operating | None) -> int | None:
    """The row below concurrency 1 (each replica idle between requests) whose targeted values come
    nearest the targets (the least largest ratio of value to target); None where there is none."""
    if light is None or not spec.targets:
        return None
    rows = np.flatnonzero(light.feasible & (light.prefill_share < 1) & (light.rate_per_s > 0)
                          & (light.batch < 1))
    if not len(rows):
        return None
    got = [light.latency_ms(metric, q, rows) / value for metric, q, value, _ in spec.targets]
    return int(rows[int(np.argmin(np.max(got, axis=0)))])


def _instances_for(replicas: int, span: int, per_instance: float) -> int:
    """Instances ``replicas`` replicas take: ``span`` instances each where a replica spans several, else
    ``per_instance`` replicas share one."""
    return replicas * span if span > 1 else math.ceil(replicas / per_instance)


def least_reachable(choice: str | None) -> str:
    """The least reachable latencies a plan's ``layout_choice`` states (:func:`_least_reachable`), ''
    where it states none: ``'p99_ttft_ms 5,920 at 0.0156 requests in flight per replica (1,183
    instances)'``."""
    _, found, rest = str(choice or "").partition(LEAST_REACHABLE)
    return rest.split(": no batch meets", 1)[0] if found else ""


def _runs_alone(op: Operating) -> bool:
    """Whether the scheduler serves one request at a time (batch 1) at all (the disaggregated
    scheduler's rows are infeasible only where no load of its prefill pool meets the TTFT targets: it
    runs, at its lowest load, missing them)."""
    return bool((op.feasible[0] or op.prefill_load is not None) and op.prefill_share[0] < 1
                and op.rate_per_s[0] > 0)


def _shortfall(spec: ServingSpec, op: Operating) -> float:
    """How far batch 1 is from the targets: the largest ratio of a target's value there to the target."""
    return max((float(op.latency_ms(metric, q, np.array([0]))[0]) / value
                for metric, q, value, _ in spec.targets), default=0.0)


def _weights_fit(w: ServeWorkload, cl: Cluster) -> bool:
    return weights_gib_per_rank(w) + WORKSPACE_GIB <= cl.memory_gib


def _what_overflows(name: str, w: ServeWorkload, cl: Cluster, cfg: HardwareConfig) -> str:
    """What a replica that holds not one request needs on a rank: its weights, or where they fit, its
    weights and one request's KV cache at its longest (a speculative drafter's weights and cache
    included)."""
    drafter = cfg.speculative is not None and cfg.speculative.method == "draft"
    weights = f"{weights_gib_per_rank(w):.1f} GiB of weights"
    if _weights_fit(w, cl):
        weights += (f" and {kv_gib_per_sequence(w):.2f} GiB of KV cache for one request of "
                    f"{w.max_context:,} tokens" + (" (the drafter's cache included)" if drafter else ""))
    return f"{name}{' and its drafter need' if drafter else ' needs'} {weights}"


def _cache_advice(w: ServeWorkload, cl: Cluster) -> str:
    """Where the weights fit but one request's cache does not: shorter requests, or an 8-bit cache
    where that would hold one."""
    if not _weights_fit(w, cl):
        return ""
    eight = (w.kv_dtype or w.dtype) not in ("fp8", "int8") and \
        max_batch_by_memory(dataclasses.replace(w, kv_dtype="fp8"), cl) >= 1
    return ("fewer tokens per request (input_tokens + output_tokens)"
            + (", an 8-bit KV cache (kv_cache_precision: fp8)" if eight else "") + ", ")


def _planned_at(op: Operating, rate: float | None) -> tuple[Operating, float]:
    """The operating points and the concurrency at which a replica carrying ``rate`` requests a second
    is read, as :func:`at_rate` reads its latency columns (below batch 1's rate: the scheduler idle
    between requests, where modelled); batch 1 where ``rate`` is None."""
    if rate is None:
        return op, float(op.batch[0])
    light = op.light() if rate < op.rate_per_s[0] else None
    if light is not None:
        return light, float(np.interp(rate, light.rate_per_s, light.batch))
    return op, float(load_at(op, rate)["batch"])


def _binding(spec: ServingSpec, op: Operating, inst: Instance, tensor: int, rate: float | None = None) -> str:
    """Why not even one request at a time meets the targets, with the latencies of a replica carrying
    ``rate`` requests a second (the row's, which the fewest replicas for the rate put at or just below
    batch 1's load; None: at batch 1's)."""
    on = f"on {inst.name} (tensor {tensor}, {op.scheduler} scheduler)"
    if not _runs_alone(op):
        return (f"the {op.scheduler} scheduler cannot keep up with one request at a time {on}: "
                "raise max_num_batched_tokens or use another scheduler")
    at, x = _planned_at(op, rate)
    for metric, q, value, name in spec.targets:
        best = float(_latency_columns(at, x, [("v", q)])[f"{metric}_ms_v"])
        if best > value:
            if metric == "tpot":
                return (f"{name} {value:g} is below the {best:.1f} ms a decode step and the prefills "
                        f"between steps take at batch 1 {on}")
            return (f"{name} {value:g} is below the {best:.1f} ms a request waits and is prefilled at "
                    f"batch 1 {on}; {_ttft_parts(at, x)}")
    return f"no concurrency meets every target {on}"


def _ttft_parts(op: Operating, x: float) -> str:
    """What the mean TTFT at concurrency ``x`` is made of, in the scheduler's terms,
    each part interpolated between the concurrencies of ``op`` around ``x`` as the latency columns are
    (a percentile's value is not the sum of its parts' percentiles: the means are given)."""
    i = np.searchsorted(op.batch, [x])
    near = np.unique(np.clip(np.concatenate([i - 1, i]), 0, len(op.batch) - 1))
    d = op.ttft_rows(near)
    rest = d.residual.mean(axis=1) if d.residual.ndim == 2 else d.residual
    alone, alone_s = (0.0, 0.0) if d.bare is None or d.bare_service is None else \
        (d.bare, d.bare_service.mean(axis=1))  # prompts that find no step in progress (Ttft.mean)
    slot_p, slot_wait, _ = d.slot or (0.0, 0.0, None)

    def at_x(v: np.ndarray) -> float:
        return 1e3 * float(np.interp(x, op.batch[near], v))

    residual = at_x((1 - alone) * rest / 2)  # a uniform share of the step or cycle in progress
    queued = at_x((1 - slot_p) * d.p * d.wait + slot_p * slot_wait)
    own = at_x(d.fixed + (1 - alone) * d.service.mean(axis=1) + alone * alone_s)
    total = residual + queued + own
    if op.scheduler == "static":
        parts = (f"{residual + queued:.1f} ms waiting for the batch in flight to finish (its prefill and "
                 f"decode), {own:.1f} ms prefilling its own batch")
    elif op.scheduler == "disaggregated":
        parts = (f"{queued:.1f} ms queued behind other prompts at the prefill replicas' lowest load "
                 f"({op.prefill_load or 0:.0%}), {own:.1f} ms its prefill and key/value transfer")
    else:
        parts = (f"{residual:.1f} ms waiting for the step in progress, {queued:.1f} ms queued behind other "
                 f"prompts' prefill, {own:.1f} ms its own prefill (chunks between decode steps)")
    return f"its mean, {total:.1f} ms, is {parts}"


def dispatched_cv(arrival_cv: float, replicas: int) -> float:
    """The CV of the gaps between requests one of ``replicas`` replicas sees when a renewal stream of
    gap CV ``arrival_cv`` is dispatched at random (each request to any replica alike, as a load
    balancer that does not look at the replicas' queues does): a replica's gap is the sum of a
    geometric number (mean ``replicas``) of the stream's gaps, of squared CV ``1 + (c^2 - 1) / R``
    (Bernoulli thinning of a renewal process; e.g. Cox and Isham, Point Processes, 1980, sec. 4.3).
    Bursts spread over the replicas; a smooth stream tends to Poisson."""
    return math.sqrt(1.0 + (arrival_cv ** 2 - 1.0) / max(replicas, 1))


def _dispatched_to(p: ServingPlan) -> int:
    """The replicas a plan's requests are dispatched over: the prefill pool where prompts queue apart
    (disaggregated), else every replica."""
    return p.prefill_replicas or p.replicas


def plan(spec: ServingSpec, arch: Architecture, cfg: HardwareConfig, inst: Instance, cat: Catalog,
         eff: Efficiency, request_overhead_s: float = 0.0, timer: ServeTimer | None = None) -> ServingPlan:
    """The fewest replicas that serve the scenario when its requests are dispatched at random over
    them (:func:`dispatched_cv`): each replica sees gaps of the CV that its count implies, so the
    count is the smallest ``R`` whose replicas, each at that CV, need no more than ``R``
    (:func:`plan_at`; for Poisson arrivals one plan). Bursts need more replicas than Poisson
    arrivals and fewer than if every replica saw the whole stream's gaps; a smoother stream the
    other way round."""
    c = traffic_of(spec).arrival_cv
    args = (spec, arch, cfg, inst, cat, eff, request_overhead_s, timer)
    if c == 1.0:
        return plan_at(*args)
    poisson = plan_at(*args, arrival_cv=1.0)  # what many replicas come to
    # at the layout chosen for Poisson arrivals: every layout at every count took the planner 1.6 times
    # as long again (benchmarks/bench_serving_plan.py, 2026-11-27)
    layout, seen = (poisson.tensor, poisson.pipeline), {}

    def need(r: int) -> int:
        seen[r] = plan_at(*args, arrival_cv=dispatched_cv(c, r), layout=layout)
        return _dispatched_to(seen[r])

    first = _dispatched_to(poisson)
    lo, hi = (first, first) if (n := need(first)) == first else (first + 1 if c > 1 else 1, n)
    while lo < hi:  # the smallest R with need(R) <= R (need falls with R for bursts, rises if smooth)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if need(mid) <= mid else (mid + 1, hi)
    # R replicas at the CV R implies (need(R) fewer would each see burstier gaps than planned for)
    chosen = seen[lo] if lo in seen and _dispatched_to(seen[lo]) == lo else \
        plan_at(*args, arrival_cv=dispatched_cv(c, lo), min_replicas=lo, layout=layout)
    if _dispatched_to(chosen) <= 1:  # one replica sees the whole stream
        return chosen
    note = (f"; requests dispatched at random over {_dispatched_to(chosen)} replicas, each seeing gaps of "
            f"CV {dispatched_cv(c, lo):.2f} (the stream's {c:g})")
    return dataclasses.replace(chosen, choice=chosen.choice + note)


def plan_at(spec: ServingSpec, arch: Architecture, cfg: HardwareConfig, inst: Instance, cat: Catalog,
            eff: Efficiency, request_overhead_s: float = 0.0, timer: ServeTimer | None = None,
            arrival_cv: float | None = None, min_replicas: int = 1,
            layout: tuple[int, int] | None = None) -> ServingPlan:
    """The fewest instances that serve ``spec.requests_per_h`` within the targets, each replica seeing
    gaps of ``arrival_cv`` (None: the scenario's), with at least ``min_replicas`` replicas (prefill
    replicas, disaggregated) over which requests are dispatched, at ``layout`` (tensor, pipeline) only
    where given (``timer``: a
    backend's own decode and prefill times). Where no concurrency of any layout meets them, the plan
    closest to them: batch 1 at the layout whose batch-1 latencies come nearest the targets (the least
    largest ratio of value to target), with the replicas the rate needs there; ``unmet`` says why and
    ``slo`` which targets it misses. Its errors (nothing fits memory, a scheduler that cannot serve one
    request at a time) are about the configuration (``EcobenchError.in_config``)."""
    if timer is not None and (cfg.speculative is not None or (
            isinstance(cfg.parallelism, ParallelismSpec) and cfg.parallelism.pipeline > 1)):
        raise InputError("speculative decoding and pipeline stages are modelled by the analytic serving "
                         "model only; use backend: analytic for them").in_config("backend")
    cl = instance_cluster(cat, inst, cfg.precision)
    acc = cat.accelerator_of(inst)
    if acc is not None:
        cl = serving_options.quantized_cluster(cl, acc, cfg.quantization)
        # what the serving engine leaves unused
        cl = with_headroom(cl, serving_headroom_pct(acc.vendor, cfg.memory_headroom_pct))
    rpn = cl.ranks_per_node
    given = cfg.parallelism if isinstance(cfg.parallelism, ParallelismSpec) else None
    pads = acc is None or acc.vendor in HEAD_PADDING_VENDORS

    def runs(t: int) -> bool:
        return _engine_tensor_refusal(arch, t, pads) is None

    if given is not None:
        layouts = [_given_layout(given.tensor, given.pipeline, rpn, inst.name, arch, _can_span(cl))]
        why = _engine_tensor_refusal(arch, given.tensor, pads)
        if why is not None:
            spans = [rpn * k for k in range(2, MAX_SPAN_INSTANCES + 1)] if _can_span(cl) else []
            allowed = [t for t in [*divisors(rpn), *spans] if runs(t)]
            raise InputError(f"{why}: GPU serving engines (vLLM, SGLang, TensorRT-LLM) split the heads "
                             f"evenly over the ranks (only Neuron's libraries pad them); allowed on "
                             f"{inst.name}: {', '.join(map(str, allowed))}, with pipeline stages for more "
                             "instances").in_config("parallelism.tensor")
    else:  # Neuron pads heads that do not divide (see tensor_split); GPU engines need them to divide
        layouts = [(t, 1) for t in divisors(rpn) if runs(t)]
    if layout is not None:
        layouts = [layout]
    rate = spec.requests_per_h / SECONDS_PER_HOUR
    traffic = traffic_of(spec)
    if arrival_cv is not None:  # the gaps one replica sees (plan)
        traffic = dataclasses.replace(traffic, arrival_cv=arrival_cv)
    stats = latency_stats(spec)
    best: ServingPlan | None = None
    best_key: tuple[Any, ...] = ()
    failure = ""
    fits = False
    memory_failure = ""
    static = cat.accelerators[inst.spec.accelerator or ""].static_kv_cache
    i = 0
    while i < len(layouts):
        t, pp = layouts[i]
        i += 1
        w = _serve_workload(arch, traffic, spec, cfg, t, static, pp, lnc_of(cat, inst.spec.accelerator))
        widest = w  # the last layout tried spreads the weights widest
        cap = max_batch_by_memory(w, cl)
        if cap < 1:
            failure = failure or (f"{_what_overflows(arch.name, w, cl, cfg)} per {rank_word(cl)} at "
                                  f"tensor {t} on "
                                  f"{inst.name}, which has {memory_in_words(cl)}; "
                                  + ("use a larger tensor degree" if given else "no tensor degree fits"))
            if given is None and i == len(layouts) and not fits and pp == 1 and timer is None \
                    and _can_span(cl):
                # nothing fits one instance: pipeline stages over several (tensor = the instance's
                # ranks), or a tensor degree over several (its all-reduces hierarchical)
                memory_failure = failure
                layouts += [(t_k, p_k) for k in range(2, min(MAX_SPAN_INSTANCES, arch.layers) + 1)
                            for t_k, p_k in ((rpn, k), (rpn * k, 1)) if runs(t_k)]
            continue
        fits = True
        limit = min(cap, cfg.max_batch if isinstance(cfg.max_batch, int) else MAX_BATCH)
        op = operating_points(w, cl, eff, batch_grid(limit), request_overhead_s, cfg, traffic, spec, timer)
        top = _top_row(op, spec)
        unmet = ""
        light = op.light() if top is None else None
        if light is not None and (low := _top_row(light, spec)) is not None:
            op, top = light, low  # met below concurrency 1: more replicas, each idle between requests
        if top is None:
            # the row's latencies: the fewest replicas for the rate at batch 1 each carry a share of
            # it at or just below batch 1's rate (disaggregated: the prefill pool's load, not modelled)
            planned = None if op.prefill_load is not None or not _runs_alone(op) else \
                rate / max(int(replicas_for(rate, float(op.rate_per_s[0]))), min_replicas)
            failure = _binding(spec, op, inst, t, planned)
            if memory_failure:
                failure = f"{memory_failure} (one instance); over {t * pp // rpn} instances: {failure}"
            if not _runs_alone(op):
                continue
            # batch 1: kept where no layout meets the targets; below it (replicas idle between
            # requests) the latency falls further, at more instances: said, not planned
            near = _nearest_light_row(spec, light)
            least = _least_reachable(spec, light, near, rate, max(1, t * pp // rpn), rpn // (t * pp) or 1)
            top, unmet = 0, failure + (f"; {least}" if least else "")
            if light is not None and near is not None and limit == 1 and op.scheduler == "continuous":
                # one slot: batch 1 keeps it always held, the queue for it unbounded; planned where
                # each replica idles between requests, nearest the targets
                op, top = light, near
                unmet = f"{ONE_SLOT} on {inst.name} (tensor {t})" + (f"; {least}" if least else "")
        capacity = float(op.rate_per_s[top])
        replicas = max(int(replicas_for(rate, capacity)), min_replicas)
        pools: tuple[int | None, int | None] = (None, None)
        if op.prefill_load is not None:  # disaggregated: each pool rounded up on its own
            b_top = float(op.batch[top])
            decode_rate = b_top / (max(traffic.output.mean - 1, 0.0) * float(np.interp(b_top, op.batch,
                                                                                           op.decode_s)))
            pools = (max(1, min_replicas, math.ceil(rate * op.prefill_s / op.prefill_load - 1e-9)),
                     max(1, math.ceil(rate / decode_rate - 1e-9)))
            replicas = pools[0] + pools[1]
        span = max(1, t * pp // rpn)  # instances one replica occupies
        per_instance = rpn // (t * pp) if span == 1 else 1 / span
        instances = _instances_for(replicas, span, per_instance)
        per_replica = rate / replicas
        at = {k: float(v) for k, v in load_at(op, per_replica).items()}
        busy = min(1.0, per_replica / float(np.interp(1.0, op.batch, op.rate_per_s)))
        share = at["prefill_share"]
        if prefill_only(traffic):  # a queue of prompts: busy at its load, prefilling only
            busy, share = min(1.0, per_replica * op.prefill_s), 1.0
        used = replicas / (instances * per_instance)  # replica slots in use (the rest idle)
        act = serving_activity(w, cl, eff, max(1.0, at["batch"]), share)
        candidate = ServingPlan(  # latency columns: the chosen layout's only, below
            t, replicas, per_instance, instances, capacity, at["batch"], limit, {},
            "", float(memory_gib_per_rank(w, math.ceil(at["batch"]))),
            at["prefill_share"], "", w,
            used * busy * (act.compute + act.memory), act, used * busy, op, op.scheduler, *pools, pp, unmet)
        key = (bool(unmet), _shortfall(spec, op) if unmet else 0.0,  # a layout that meets the targets first
               candidate.instances, round(candidate.accelerator_activity, 6), candidate.tensor)
        if best is None or key < best_key:
            best, best_key = candidate, key
    if best is None:
        if not fits and given is None:  # the weights fit no layout: what would
            failure += "; allowed: " + _cache_advice(widest, cl) + serving_options.weights_advice(
                widest, cl, "int4" in (cfg.quantization, cfg.weight_precision), "quantization:")
        raise InputError(failure).in_config()
    lay = f"tensor {best.tensor}" + (f" x pipeline {best.pipeline}" if best.pipeline > 1 else "")
    spans = best.tensor * best.pipeline // rpn
    if spans > 1:
        lay += f" ({spans} instances per replica)"
    single = [t for t in divisors(rpn) if runs(t)]
    spanned = max((t * pp // rpn for t, pp in layouts[len(single):]), default=1)  # those over instances
    rule = ("closest to the targets at batch 1 (least largest ratio of latency to target), then fewest "
            "instances" if best.unmet else "fewest instances, then least accelerator activity")
    how = (f"{lay} given" if given
           else f"auto: {rule}, over tensor "
                f"{', '.join(map(str, single))}"
                + (f" and tensor or pipeline over 2-{spanned} instances: {lay}" if spanned > 1 else ""))
    if best.unmet:
        where = (f"{fmt_num(best.batch)} requests in flight per replica" if best.unmet.startswith(ONE_SLOT)
                 else "batch 1")
        how = f"{best.unmet}: no batch meets the targets, so planned at {where}; {how}"
    limit_how = "max_batch" if isinstance(cfg.max_batch, int) else "device memory"
    assert best.operating is not None
    latency = latency_columns(best.operating, rate / best.replicas, stats)
    load = None
    if best.operating.prefill_load is not None and best.prefill_replicas:  # the pool at its own load
        load = rate * best.operating.prefill_s / best.prefill_replicas
        latency.update(prefill_pool_columns(best.operating, load, stats))
    sched = best.scheduler + (f" (prefill replicas at {load:.0%} load)" if load is not None and load >= 0.01
                              else f" (prefill replicas at {load:.2%} load)" if load is not None else "")
    if prefill_only(traffic):
        sched += " (one output token: no decode, each replica a queue of prompts)"
    return ServingPlan(**{**best.__dict__, "latency": latency, "slo": slo_verdicts(spec, latency),
                          "choice": f"{how}; batch up to {best.max_batch} ({limit_how}); {sched}"})
