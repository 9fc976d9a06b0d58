"""Serving plans: how many model replicas, and instances, serve a request rate within latency targets.

A replica (``tensor`` ranks) runs **continuous batching**: it keeps ``B`` requests in flight,
decoding one token for each of them per step and prefilling a newly arrived prompt between steps.
Time accounting at concurrency ``B`` gives its throughput in closed form: each request costs one
prefill ``t_p`` and ``out`` decode steps of ``t_d(B)`` shared by ``B`` requests, so

    R(B) = B / (out * t_d(B) + B * t_p)     requests per second (the replica is never idle).

Prefills interrupt decoding for a share ``rho = R * t_p`` of the time, so a token arrives every
``TPOT = t_d(B) / (1 - rho)``. A prompt waits for the step in progress (half a step on average) and
for the prompts ahead of it: prompts arrive as a Poisson stream and take a fixed ``t_p``, an M/D/1
queue with mean wait ``rho * t_p / (2 (1 - rho))``, so ``TTFT = t_p + t_d(B) / 2 + wait``. Tails:
the wait of an M/D/1 queue is taken as 0 with probability ``1 - rho`` and exponential otherwise
(its heavy-traffic form), so its 99th percentile is ``wait / rho * ln(100 rho)``. A token is late by
the prefills run between two decode steps: the prompts that arrived during the step (Poisson, mean
``R * t_d``) and those arriving during their prefills (each prefill lets a Poisson(``rho``) number
in: a compound Poisson of Borel totals); a request's first gap starts inside its own burst (a
share ``1 / (out - 1)`` of gaps). ``TPOT p99 = t_d + k99 * t_p`` with ``k99`` that count's 99th
percentile.

Against a discrete-event simulation of the same replica
(``tests/integration/planning/test_serving.py``, Poisson arrivals, prefill first) at 30-85% of
capacity: mean TTFT within 3%, mean TPOT 3-21% low (the concurrency fluctuates and a busier replica
decodes slower), TTFT p99 5% low to 28% high, TPOT p99 0-45% low (the worst where the 99th
percentile sits on the edge between one prefill and two).

For a request rate the plan takes, per tensor-parallel degree, the largest ``R(B)`` that meets the
targets with ``B`` up to what fits memory (or ``max_batch``); replicas = rate / that, instances =
replicas / replicas per instance (the fewest replicas that carry the rate: slots of an instance
beyond them stay idle). ``parallelism: auto`` (the default) tries every tensor degree that divides
the instance's ranks and keeps the fewest instances, then the least accelerator activity (the
power the draw model charges); attention heads and the feed-forward split that do not divide are
padded, as Neuron's inference libraries do.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ecobench.errors import InputError
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.layout import divisors
from ecobench.parallel.serving import (
    ServeWorkload,
    decode_step_s,
    max_batch_by_memory,
    memory_gib_per_rank,
    prefill_s,
    serve_kernels,
    tp_all_reduce_s,
    weights_gib_per_rank,
)
from ecobench.parallel.step import Cluster, Efficiency
from ecobench.planning import serving_options
from ecobench.power.draw import Activity
from ecobench.scenario.model import HardwareConfig, ParallelismSpec, ServingSpec
from ecobench.units import SECONDS_PER_HOUR
from ecobench.workloads.architecture import Architecture

MAX_BATCH = 1024  # the largest concurrency searched when memory allows more
TAIL = 0.01  # p99


@dataclass
class Operating:
    """Figures of a replica at each candidate concurrency ``batch`` (arrays)."""

    batch: np.ndarray
    decode_s: np.ndarray
    prefill_s: float
    output_tokens: int
    rate_per_s: np.ndarray
    tpot_ms: np.ndarray
    ttft_ms: np.ndarray
    ttft_p99_ms: np.ndarray
    prefill_share: np.ndarray

    @functools.cached_property
    def tpot_p99_ms(self) -> np.ndarray:
        """99th percentile of the time between tokens (computed when asked: it costs the most)."""
        return tpot_p99_ms(self.decode_s, self.rate_per_s, self.prefill_s, self.output_tokens)


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
                     request_overhead_s: float = 0.0, timer: ServeTimer | None = None) -> Operating:
    """The continuous-batching figures of a replica at each concurrency (see the module docstring)."""
    b = np.asarray(batch, dtype=float)
    if timer is not None:
        return queue_figures(b, timer.decode_s(w, cl, b), timer.prefill_s(w, cl) + request_overhead_s,
                             w.output_tokens)
    t_p = float(prefill_s(w, cl, eff, 1.0)) + request_overhead_s
    return queue_figures(b, decode_step_s(w, cl, eff, b), t_p, w.output_tokens)


def queue_figures(batch: np.ndarray, decode_s: np.ndarray, prefill_s: float, output_tokens: int) -> Operating:
    """Throughput and latencies at each concurrency ``batch`` from the decode step ``decode_s`` at
    that concurrency and one prompt's prefill ``prefill_s`` (the closed form of the module docstring)."""
    b, t_d, t_p = np.asarray(batch, dtype=float), np.asarray(decode_s, dtype=float), prefill_s
    rate = b / (output_tokens * t_d + b * t_p)
    rho = rate * t_p
    wait = rho * t_p / (2 * (1 - rho))
    tail = np.where(rho > TAIL, wait / np.maximum(rho, 1e-12) * np.log(np.maximum(rho / TAIL, 1.0)), 0.0)
    return Operating(b, t_d, t_p, output_tokens, rate, 1e3 * t_d / (1 - rho), 1e3 * (t_p + t_d / 2 + wait),
                     1e3 * (t_p + t_d + tail), rho)


def tpot_p99_ms(decode_s: np.ndarray | float, rate_per_s: np.ndarray | float, prefill_s: float,
                output_tokens: int) -> np.ndarray:
    """A decode step plus the 99th percentile of the prefills run before it (module docstring)."""
    t_d, rate = np.atleast_1d(decode_s).astype(float), np.atleast_1d(rate_per_s).astype(float)
    late = prefills_between_steps(rate * t_d, rate * prefill_s, output_tokens, 1 - TAIL)
    return 1e3 * (t_d + late * prefill_s)


PREFILLS_MAX = 64  # beyond this many prefills between two steps a replica is overloaded anyway


def prefills_between_steps(arrivals: np.ndarray, rho: np.ndarray, output_tokens: int, q: float) -> np.ndarray:
    """The ``q``-quantile of prompts prefilled between two decode steps: ``arrivals`` (mean, Poisson)
    start a burst in which each prefill lets a Poisson(``rho``) number more in, so the count is a
    compound Poisson of Borel totals (Panjer's recursion); a share ``1 / (output_tokens - 1)`` of
    gaps, a request's first, start inside its own burst (Poisson(``rho``) start)."""
    r = np.clip(np.asarray(rho, dtype=float), 1e-12, 1 - 1e-9)[:, None]
    j = np.arange(1, PREFILLS_MAX + 1, dtype=float)[None, :]
    log_fact = np.cumsum(np.log(j[0]))
    borel = np.exp(-r * j + (j - 1) * np.log(r * j) - log_fact[None, :])  # P(a burst's total = j)

    def cdf(mean: np.ndarray) -> np.ndarray:
        m = np.asarray(mean, dtype=float)[:, None]
        p = np.zeros((m.shape[0], PREFILLS_MAX + 1))
        p[:, 0] = np.exp(-m[:, 0])
        for k in range(1, PREFILLS_MAX + 1):
            jj = np.arange(1, k + 1)
            p[:, k] = m[:, 0] / k * (jj * borel[:, :k] * p[:, k - jj]).sum(axis=1)
        return np.cumsum(p, axis=1)

    first = 1.0 / max(1, output_tokens - 1)
    c = (1 - first) * cdf(arrivals) + first * cdf(r[:, 0])
    reached = c >= q
    return np.where(reached.any(axis=1), reached.argmax(axis=1), PREFILLS_MAX).astype(float)


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
    ttft_ms: float
    ttft_p99_ms: float
    tpot_ms: float
    tpot_p99_ms: float
    memory_per_device_gib: float
    prefill_share: float
    choice: str
    workload: ServeWorkload
    accelerator_activity: float  # busy x (compute + memory-bound share): what the tie-break compares
    activity: Activity  # of a busy replica
    busy: float  # share of time the instances' accelerators work (idle slots and idle time excluded)
    operating: Operating | None = None  # the chosen tensor degree's operating points (the Monte Carlo's)
    pipeline: int = 1  # stages per replica (more than one instance where tensor x pipeline exceeds its ranks)


def _serve_workload(arch: Architecture, spec: ServingSpec, cfg: HardwareConfig, tensor: int,
                    static_cache: bool, pipeline: int = 1) -> ServeWorkload:
    return ServeWorkload(arch, spec.input_tokens, spec.output_tokens, cfg.precision, tensor,
                         serving_options.weight_dtype(cfg), cfg.kv_cache_precision, static_cache,
                         pipeline=pipeline, **serving_options.workload_options(spec, cfg))


MAX_SPAN_INSTANCES = 16  # the most instances one replica's pipeline stages are searched over


def _can_span(cl: Cluster) -> bool:
    """Whether ``auto`` lets a replica span instances of this kind: instances of several devices
    joined by a device link (the multi-accelerator instances built for multi-node work)."""
    return cl.ranks_per_node > 1 and not math.isnan(cl.intra_gb_per_s)


def _given_layout(tensor: int, pipeline: int, rpn: int, inst: str, arch: Architecture) -> tuple[int, int]:
    """A given (tensor, pipeline) split of a replica, or bad input: each degree and the replica's ranks
    divide the instance's ranks or are whole instances (a replica spanning instances)."""
    valid = divisors(rpn)

    def ok(n: int) -> bool:
        return n in valid or n % rpn == 0

    if not ok(tensor):
        raise InputError(f"{tensor} must divide the {rpn} ranks of {inst} or be a multiple of them "
                         f"(a replica over several instances); valid: {', '.join(map(str, valid))}, "
                         f"{2 * rpn}, ...").in_config("parallelism.tensor")
    if pipeline > arch.layers:
        raise InputError(f"{pipeline} stages exceed the {arch.layers} layers of {arch.name}; allowed: "
                         f"1-{arch.layers}").in_config("parallelism.pipeline")
    if not ok(tensor * pipeline):
        raise InputError(f"tensor x pipeline = {tensor * pipeline} ranks must divide the {rpn} ranks of "
                         f"{inst} or fill whole instances (a multiple of {rpn})"
                         ).in_config("parallelism.pipeline")
    return tensor, pipeline


def _feasible(op: Operating, spec: ServingSpec) -> np.ndarray:
    ok = (op.prefill_share < 1) & (op.tpot_ms <= spec.tpot_ms) & (op.ttft_ms <= spec.ttft_ms)
    if spec.tpot_p99_ms is not None:
        ok &= op.tpot_p99_ms <= spec.tpot_p99_ms
    if spec.ttft_p99_ms is not None:
        ok &= op.ttft_p99_ms <= spec.ttft_p99_ms
    return ok


def serving_activity(w: ServeWorkload, cl: Cluster, eff: Efficiency, batch: float,
                     prefill_share: float) -> Activity:
    """What a busy replica's accelerators do: decode steps at ``batch`` for ``1 - prefill_share`` of
    the time and prefills the rest, each split into compute-bound kernels, memory-bound kernels and
    stalls (per-kernel overhead, tensor-parallel all-reduces), as the draw model needs."""
    from ecobench.hardware.backends.activity import kernel_regimes_s

    decode, prefill = serve_kernels(w)
    parts = []
    for ks, micro, share in ((decode, batch, 1.0 - prefill_share), (prefill, 1.0, prefill_share)):
        c, m, o = kernel_regimes_s(ks, micro, cl, eff)
        tokens = micro * (1 if ks is decode else w.prefill_tokens)
        tp = float(tp_all_reduce_s(w, cl, eff, np.array([tokens]))[0])
        total = c + m + o + tp
        parts.append([share * x / total for x in (c, m, o + tp)] if total > 0 else [0.0, 0.0, share])
    c, m, st = (sum(x) for x in zip(*parts, strict=True))
    return Activity(c, m, st, "serving model: decode steps and prefills (compute-bound, memory-bound, "
                              "per-kernel overhead and all-reduces)")


def at_rate(op: Operating, rate: Any, speed: Any = 1.0) -> dict[str, Any]:
    """The replica's concurrency, TTFT, TPOT, TTFT p99 and prefill share at the request rate ``rate``
    (interpolated between the concurrencies of ``op``; a rate below batch 1's capacity: batch 1,
    partly idle), for arrays of rates too. ``speed`` runs every step ``speed`` times faster: the
    closed form (:func:`queue_figures`) is homogeneous in time (step times over ``speed``: the rate at
    each concurrency times ``speed``, ``rho`` unchanged, latencies over ``speed``), so the Monte Carlo
    gets a throughput draw's latencies from ``op`` without re-timing the kernels."""
    r = op.rate_per_s
    rate_1 = np.asarray(rate, dtype=float) / speed  # the same concurrency at speed 1
    x = np.where(rate_1 >= r[0], np.interp(rate_1, r, op.batch), 1.0)
    get = lambda a: np.interp(x, op.batch, a)  # noqa: E731
    return {"batch": x, "ttft_ms": get(op.ttft_ms) / speed, "ttft_p99_ms": get(op.ttft_p99_ms) / speed,
            "tpot_ms": get(op.tpot_ms) / speed, "prefill_share": get(op.prefill_share)}


def _at_rate(op: Operating, rate: float) -> dict[str, float]:
    """:func:`at_rate` at one rate, with the TPOT p99 there."""
    at = {k: float(v) for k, v in at_rate(op, rate).items()}
    return at | {"tpot_p99_ms": float(tpot_p99_ms(np.interp(at["batch"], op.batch, op.decode_s), rate,
                                                  op.prefill_s, op.output_tokens)[0])}


def replicas_for(rate_per_s: Any, capacity_per_replica_per_s: Any) -> Any:
    """Fewest replicas (at least one) that carry the rate, elementwise."""
    return np.maximum(1.0, np.ceil(np.asarray(rate_per_s / capacity_per_replica_per_s, dtype=float) - 1e-9))


def latency_at(op: Operating, rate_per_s: float, capacity_per_replica_per_s: float,
               speed: Any = 1.0) -> dict[str, Any]:
    """Mean TTFT and TPOT of the fleet serving ``rate_per_s`` when its replicas run ``speed`` times
    the planned speed (arrays: the Monte Carlo's throughput draws): the replicas for the rate at that
    capacity, each at its share of the rate (:func:`at_rate`)."""
    per_replica = rate_per_s / replicas_for(rate_per_s, capacity_per_replica_per_s * speed)
    at = at_rate(op, per_replica, speed)
    return {"ttft_ms": at["ttft_ms"], "tpot_ms": at["tpot_ms"]}


def _binding(spec: ServingSpec, op: Operating, inst: Instance, tensor: int) -> str:
    """Why not even one request at a time meets the targets."""
    on = f"on {inst.name} (tensor {tensor})"
    if op.tpot_ms[0] > spec.tpot_ms:
        return (f"tpot_ms {spec.tpot_ms:g} is below the {op.tpot_ms[0]:.1f} ms a single decode "
                f"step takes {on}")
    if op.ttft_ms[0] > spec.ttft_ms:
        return (f"ttft_ms {spec.ttft_ms:g} is below the {op.ttft_ms[0]:.1f} ms the prefill of "
                f"{spec.input_tokens} tokens takes {on}")
    if spec.tpot_p99_ms is not None and op.tpot_p99_ms[0] > spec.tpot_p99_ms:
        return (f"tpot_p99_ms {spec.tpot_p99_ms:g} is below the {op.tpot_p99_ms[0]:.1f} ms of a "
                f"decode step a prefill joins {on}")
    assert spec.ttft_p99_ms is not None
    return (f"ttft_p99_ms {spec.ttft_p99_ms:g} is below the {op.ttft_p99_ms[0]:.1f} ms reachable "
            f"{on}")


def plan(spec: ServingSpec, arch: Architecture, cfg: HardwareConfig, inst: Instance, cat: Catalog,
         eff: Efficiency, request_overhead_s: float = 0.0, timer: ServeTimer | None = None) -> ServingPlan:
    """The fewest instances that serve ``spec.requests_per_h`` within the targets (``timer``: a
    backend's own decode and prefill times). Its errors are about the configuration
    (``EcobenchError.in_config``)."""
    if timer is not None and (cfg.speculative is not None or (
            isinstance(cfg.parallelism, ParallelismSpec) and cfg.parallelism.pipeline > 1)):
        raise InputError("speculative decoding and pipeline stages are modelled by the analytic serving "
                         "model only; use backend: analytic for them").in_config("backend")
    cl = instance_cluster(cat, inst, cfg.precision)
    acc = cat.accelerator_of(inst)
    if acc is not None:
        cl = serving_options.quantized_cluster(cl, acc, cfg)
    rpn = cl.ranks_per_node
    given = cfg.parallelism if isinstance(cfg.parallelism, ParallelismSpec) else None
    if given is not None:
        layouts = [_given_layout(given.tensor, given.pipeline, rpn, inst.name, arch)]
    else:  # heads that do not divide are padded (see tensor_split)
        layouts = [(t, 1) for t in divisors(rpn)]
    rate = spec.requests_per_h / SECONDS_PER_HOUR
    best: ServingPlan | None = None
    failure = ""
    fits = False
    memory_failure = ""
    static = cat.accelerators[inst.spec.accelerator or ""].static_kv_cache
    i = 0
    while i < len(layouts):
        t, pp = layouts[i]
        i += 1
        w = _serve_workload(arch, spec, cfg, t, static, pp)
        cap = max_batch_by_memory(w, cl)
        if cap < 1:
            failure = failure or (f"{arch.name} needs {weights_gib_per_rank(w):.1f} GiB of weights "
                                  f"per device at tensor {t} on {inst.name}, which has "
                                  f"{cl.memory_gib:.1f} GiB; "
                                  + ("use a larger tensor degree" if given else "no tensor degree fits"))
            if given is None and i == len(layouts) and not fits and pp == 1 and timer is None \
                    and _can_span(cl):
                # nothing fits one instance: pipeline stages over several (tensor = the instance's
                # ranks), or a tensor degree over several (its all-reduces hierarchical)
                memory_failure = failure
                layouts += [lay for k in range(2, min(MAX_SPAN_INSTANCES, arch.layers) + 1)
                            for lay in ((rpn, k), (rpn * k, 1))]
            continue
        fits = True
        limit = min(cap, cfg.max_batch if isinstance(cfg.max_batch, int) else MAX_BATCH)
        op = operating_points(w, cl, eff, np.arange(1, limit + 1), request_overhead_s, timer)
        ok = _feasible(op, spec)
        if not ok.any():
            failure = _binding(spec, op, inst, t)
            if memory_failure:
                failure = f"{memory_failure} (one instance); over {t * pp // rpn} instances: {failure}"
            continue
        capacity = float(op.rate_per_s[ok].max())
        replicas = int(replicas_for(rate, capacity))
        span = max(1, t * pp // rpn)  # instances one replica occupies
        per_instance = rpn // (t * pp) if span == 1 else 1 / span
        instances = math.ceil(replicas / per_instance) if span == 1 else replicas * span
        per_replica = rate / replicas
        at = _at_rate(op, per_replica)
        busy = min(1.0, per_replica / float(op.rate_per_s[0]))
        used = replicas / (instances * per_instance)  # replica slots in use (the rest idle)
        act = serving_activity(w, cl, eff, at["batch"], at["prefill_share"])
        candidate = ServingPlan(
            t, replicas, per_instance, instances, capacity, at["batch"], limit, at["ttft_ms"],
            at["ttft_p99_ms"], at["tpot_ms"], at["tpot_p99_ms"],
            float(memory_gib_per_rank(w, math.ceil(at["batch"]))),
            at["prefill_share"], "", w,
            used * busy * (act.compute + act.memory), act, used * busy, op, pp)
        key = (candidate.instances, round(candidate.accelerator_activity, 6), candidate.tensor)
        if best is None or key < (best.instances, round(best.accelerator_activity, 6), best.tensor):
            best = candidate
    if best is None:
        raise InputError(failure).in_config()
    lay = f"tensor {best.tensor}" + (f" x pipeline {best.pipeline}" if best.pipeline > 1 else "")
    spans = best.tensor * best.pipeline // rpn
    if spans > 1:
        lay += f" ({spans} instances per replica)"
    single = divisors(rpn)
    spanned = (len(layouts) - len(single)) // 2 + 1
    how = (f"{lay} given" if given
           else f"auto: fewest instances, then least accelerator activity, over tensor "
                f"{', '.join(map(str, single))}"
                + (f" and tensor or pipeline over 2-{spanned} instances: {lay}" if spanned > 1 else ""))
    limit_how = "max_batch" if isinstance(cfg.max_batch, int) else "device memory"
    return ServingPlan(**{**best.__dict__, "choice": f"{how}; batch up to {best.max_batch} ({limit_how})"})
