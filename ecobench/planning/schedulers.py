"""How a serving replica schedules requests, and the latency distribution each scheduler gives.

Every scheduler takes the replica's step times (a decode step ``t_d(B)`` at each concurrency ``B``, a
prompt token's prefill ``t_tok``, a fixed ``t_req`` per request) and the traffic (length
distributions, arrival CV) and returns :class:`operating.Operating`: throughput and the TTFT and TPOT
distributions at each ``B``. Lengths enter through their quantile points (``planning/traffic.py``);
``O`` is the mean output, a request decodes ``O - 1`` tokens after its first.

* ``continuous`` (vLLM, SGLang, TensorRT-LLM in-flight batching): ``B`` requests decode together; a
  step carries at most ``C = max_num_batched_tokens`` tokens, its decodes plus chunks of waiting
  prompts (``chunked_prefill: false``: a prompt is prefilled alone and the decode batch waits).
  Throughput ``R = B / ((O - 1) t_d + B E[t_p])``; prefills take ``rho = R E[t_p]`` of the time, so a
  request's mean TPOT is about ``t_d / (1 - rho)`` (``t_d`` at the concurrency a request sees, wider
  for bursty arrivals: :func:`arrivals.peakedness`); its spread comes from the prefill work that arrives
  during its life (compound arrivals, the branching of work arriving during work: variance
  ``R T E[t_p^2] / (1 - rho)^3``), read at each output length as a gamma above ``t_d`` (or none,
  when no prompt arrives): a mixture, since a request of a few tokens decodes a few steps that the
  prompts arriving before its first step stretch most (:func:`_request_tpot`), and with them, under a
  token budget, the prompts queued behind it that the step finishing its prompt had no room for
  (:func:`arrivals.left_behind`). A prompt waits for the step in
  progress (uniform), then in a GI/G/1 queue of prefill work (:func:`queueing.gg1_wait`: those who wait wait
  GI/M/1's mean scaled by ``(c_a^2 + c_s^2) / (c_a^2 + 1)``; how many wait: Lindley's fixed point for
  non-Poisson arrivals, :func:`queueing._lindley_table`; both exact for Poisson arrivals), then for its own
  chunks: ``t_p(L) + t_d max(1, L / (C - B))``, and for the prompts that arrive before its step starts
  and share that step, beyond the Poisson count (bursts: :func:`arrivals.arrivals_after`).
* ``static`` (fixed batches, TensorRT-LLM's and Neuron's batch sweeps): a batch is the prompts that
  arrived during the batch before, prefilled together, then decoded until its longest output ends (the
  order statistics of the output length); batch sizes and cycles vary together (a moment recursion
  with idle spells when a cycle sees no arrival, the cycle read over the batch's spread,
  :func:`_static_batches`). A request waits out a share of the cycle it arrives in (picked by its
  length), then its own batch's prefill. TPOT is the decode step at the size of its batch. Near
  saturation, where the batches reach the slot limit, a batch's excess carries almost whole into the
  next and the sizes' tail is not two moments': those rows read a Markov chain over the requests
  waiting when a cycle starts (``planning/static_chain.py``, :func:`_static_chain`): a request that
  arrives behind ``k`` full batches waits ``k`` whole cycles of a full batch too. Below
  batch 1's rate a request that finds the replica idle starts its batch at once (``Operating.light``).
* ``disaggregated`` (DistServe, Splitwise, Dynamo): prefill replicas run prompts one at a time as an
  M/G/1 queue at load ``rho_p``; the prompt's key/value cache goes to a decode replica over the
  instance's network; decode replicas keep ``B`` requests decoding with no prefill between steps (a
  request joins at the next step: its first decode token waits out the step in progress).
  ``rho_p`` is the highest that meets the TTFT targets; a replica-equivalent serves
  ``1 / (E[t_p] / rho_p + (O - 1) t_d / B)`` requests per second. A plan reads TTFT at the load its
  prefill replicas run at (``Operating.prefill_ttft``, ``serving.prefill_pool_columns``).
* one output token (:func:`prefill_only`), under any of them: no decode, a GI/G/1 queue of prompts
  (:func:`prefill_queue`).

The parts, each in its own module: the TTFT distribution and its quantiles (``planning/ttft_dist.py``),
the TPOT distribution, its output length points and its gamma mixture's quantiles
(``planning/tpot_dist.py``), the operating points and how their latencies are read
(``planning/operating.py``), the GI/G/1 wait and the concurrency a request sees
(``planning/queueing.py``), and the arrival stream's counts (``planning/arrivals.py``); here, the
schedulers that put them together.

Against the discrete-event simulation of ``planning/simulate.py`` at 30-90% load:
``tests/unit/planning/test_schedulers.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from ecobench.planning.arrivals import (
    arrival_terms,
    arrivals_after,
    left_behind,
    life_overlap,
    no_arrival_exponent,
    peakedness,
    renewal_count,
)
from ecobench.planning.operating import Operating
from ecobench.planning.queueing import at_limit, concurrency_seen, gg1_wait, per_concurrency
from ecobench.planning.static_chain import count_cdf
from ecobench.planning.tpot_dist import Tpot, decoded_points
from ecobench.planning.traffic import Traffic, unit_quantiles
from ecobench.planning.ttft_dist import Ttft, take_rows, ttft_var

SchedulerName = Literal["continuous", "static", "disaggregated"]
# vLLM V1's default token budget of its OpenAI server on GPUs of 70 GiB or more other than A100 (2048 on
# the others): vllm/engine/arg_utils.py, _set_default_args (github.com/vllm-project/vllm, main as of
# 2025-11); taken for every instance (an inference; set max_num_batched_tokens for another engine).
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
LIGHT_CONCURRENCIES = np.geomspace(1 / 64, 1, 13)[:-1]  # concurrencies below 1 (Operating.light)
# static: lower still, since a request that arrives during a cycle waits a share of the whole cycle (seconds
# for long outputs): TTFT p99 leaves the idle replica's own prefill only below 1% load, where 1/64 of a
# request in flight (the lightest of LIGHT_CONCURRENCIES) put it at 2.2 s on g6e.xlarge at 3.6 requests/h
STATIC_LIGHT_CONCURRENCIES = np.geomspace(1 / 1024, 1, 21)[:-1]
STATIC_POINTS = (np.arange(16) + 0.5) / 16  # probabilities of the cycle a request arrives in (static)
STATIC_ROUNDS = 8  # rounds of the static batches' idle chance and variances
STATIC_MIXED_ROUNDS = 2  # the last rounds, which read the cycle over the batch's spread
# static: probability slices of the batch a request is in, its TPOT read as a mixture over them (finer
# toward the tail, where the slot limit caps the batch)
STATIC_TPOT_EDGES = np.array([0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 1.0])
STATIC_CHAIN_REACH = 1e-4  # static: rows whose batches reach the slot limit this often read the chain
STATIC_LEFT_LEAST = 1e-4  # static: shares waiting whole cycles of full batches below this are taken as none
MAX_CYCLE_GAIN = 0.98  # static: the most a batch's excess carries into the next (near saturation)
SLOT_LEAST = 1e-6  # shares of prompts waiting for a slot below this are taken as none
PRIORITY_LOADS = np.linspace(0.02, 0.98, 25)  # disaggregated: prefill loads tried
FIRST_LOADS = 4  # the highest prefill loads whose TTFT is solved first (then twice as many each time)


@dataclass(frozen=True, eq=False)
class Steps:
    """A replica's step times: ``decode_s`` at each concurrency ``batch``, a prompt token's prefill
    ``token_s``, a fixed ``request_s`` per prompt, and the seconds per prompt token of sending its
    key/value cache to another replica (``kv_token_s``, disaggregated). Hashed by identity (its
    arrays are not hashable): what is worked out from one is cached on it (:func:`_continuous_seen`)."""

    batch: np.ndarray
    decode_s: np.ndarray
    token_s: float
    request_s: float = 0.0
    kv_token_s: float = 0.0


class _RowCache:
    """A costly per-concurrency array worked out only at the rows read, each row once (a plan's search
    reads few): ``fn(rows)`` gives its values at the rows of an index."""

    def __init__(self, n: int, fn: Callable[[np.ndarray], np.ndarray]) -> None:
        self.fn, self.done = fn, np.zeros(n, dtype=bool)
        self.values: np.ndarray | None = None

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        todo = np.unique(rows[~self.done[rows]])
        if len(todo):
            new = self.fn(todo)
            if self.values is None:
                self.values = np.empty((len(self.done), *new.shape[1:]))
            self.values[todo] = new
            self.done[todo] = True
        assert self.values is not None
        return self.values[rows]


class Scheduler(Protocol):
    """A scheduler: the replica's figures at each concurrency."""

    def __call__(self, steps: Steps, traffic: Traffic, *, budget: int | None,
                 ttft_ok: Callable[[Ttft], np.ndarray] | None) -> Operating: ...


def _prefill_moments(steps: Steps, traffic: Traffic) -> tuple[float, float, np.ndarray]:
    """Mean prefill of a prompt, its variance, and the prefill at the input's quantile points."""
    li = traffic.input
    mean = steps.token_s * li.mean + steps.request_s
    var = (steps.token_s * li.mean * li.cv) ** 2
    return mean, var, steps.token_s * li.mean * li.unit + steps.request_s


def _third(traffic: Traffic) -> float:
    """E[L^3] / E[L]^3 of the input length (the prefill work's third moment)."""
    return float(np.mean(traffic.input.unit ** 3))


def _request_tpot(steps: Steps, traffic: Traffic, rate: np.ndarray, rho: np.ndarray, tp_mean: float,
                  tp_var: float, first_s: np.ndarray | None = None, first_var: np.ndarray | float = 0.0,
                  chunked: bool = False) -> Tpot:
    """TPOT of a request when prefills of arriving prompts are slotted between its decode steps: the decode
    step at the concurrency it sees (:func:`queueing.concurrency_seen` at the arrivals'
    :func:`arrivals.peakedness`; near saturation the concurrency changes more slowly than a request lives, so
    its life sees the whole spread), stretched by the prefills, at each output length point (a mixture: a
    short output's TPOT is a few steps, each far from the mean). A request of ``n`` decode tokens carries the
    prompts that arrive before its first decode step, during ``first_s`` (mean; variance ``first_var``: its
    TTFT unchunked, the step that finishes its prompt chunked; under a renewal stream, the time over which the
    rate brings as many as arrive then, :func:`arrivals.renewal_count`), and during each of its steps but the
    last. Unchunked, prefills run until no prompt waits (the branching of work arriving during work: mean
    ``rho / (1 - rho)`` per second of arrivals, variance ``R X E[t_p^2] / (1 - rho)^3`` over the ``X = first_s
    + (n - 1) t_d`` they arrive in). Chunked, a step carries what arrived during the step before (``a_i = t_d
    + rho a_(i-1)`` on average, ``a_-1 = first_s``), so the branching runs for ``n`` steps only. No prompt
    arrives with chance ``exp(-kappa R X)`` (the count a negative binomial, ``kappa`` of
    :func:`arrivals.no_arrival_exponent`, at most 50 for a near-regular stream); the
    rest is a gamma of the mean and variance given some."""
    t_d, sd_b = _continuous_seen(steps, traffic)
    n, w = decoded_points(traffic)
    n = n[None, :]
    r = np.clip(rho, 0, 1 - 1e-6)[:, None]
    first = (t_d if first_s is None else first_s)[:, None]
    first_var = np.asarray(first_var, dtype=float).reshape(-1, 1)
    step, e = t_d[:, None], tp_var + traffic.arrival_cv ** 2 * tp_mean ** 2
    lam = rate[:, None]
    if chunked:  # a step: t_d and what arrived during the one before, a_i = t_d + rho a_(i-1), a_-1 = first
        typical = step / (1 - r)
        exposure = first + (n - 1) * typical + (first - typical) * r * (1 - r ** (n - 1)) / (1 - r)
        gain = (1 - r ** n) / (1 - r)  # the generations of branching a life holds
        mean = r * exposure
        var = lam * exposure * e * gain ** 2 + (r * gain) ** 2 * first_var
    else:
        exposure = first + (n - 1) * step
        mean = r / (1 - r) * exposure
        var = lam * exposure * e / (1 - r) ** 3 + (r / (1 - r)) ** 2 * first_var
    ca2 = traffic.arrival_cv ** 2
    kappa = min(no_arrival_exponent(ca2), 50.0)  # at most 50: a near-regular stream
    none = np.exp(-kappa * lam * (first + (n - 1) * step))
    return Tpot(t_d, mean / n, np.sqrt(var) / n, sd_b / (1 - r[:, 0]), none, w)


@functools.lru_cache(maxsize=256)
def _continuous_seen(steps: Steps, traffic: Traffic) -> tuple[np.ndarray, np.ndarray]:
    """(decode step, SD of the step from the concurrency's swings) at the concurrency a request sees
    under continuous batching, whose rate does not depend on the token budget: worked out once per
    replica's steps and traffic (its budgets and the unchunked scheduler share it; read-only)."""
    b = steps.batch.astype(float)
    rate = _continuous_rate(steps, traffic, _prefill_moments(steps, traffic)[0])
    seen, spread = concurrency_seen(rate, per_concurrency(b, rate), peakedness(traffic))
    t_d = np.interp(seen, b, steps.decode_s)
    slope = np.interp(seen, b, np.gradient(steps.decode_s, b) if len(b) > 1 else np.zeros_like(b))
    sd_b = slope * spread
    t_d.flags.writeable = sd_b.flags.writeable = False
    return t_d, sd_b


@functools.lru_cache(maxsize=256)
def _slot_wait(steps: Steps, traffic: Traffic) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(share of prompts that wait for a free slot, mean wait of those, its gamma shape) at each row
    under continuous batching, whose requests in flight are limited to the last of ``steps.batch``
    (``c``: the engine's ``max_num_seqs``, or what memory holds). A request holds a slot from its
    prefill to its last token; when all ``c`` are held, an arriving prompt waits for one to free
    (:class:`ttft_dist.Ttft`: for it, that wait instead of the prompts' queue's).

    How often: the chance an arrival finds ``c`` or more requests in the replica
    (:func:`queueing.at_limit`): the flow-equivalent chain up to ``c`` at the local variance of the
    requests in flight, and past ``c`` the queue for slots. The requests in flight swing more than the
    arrivals' peakedness ``z`` (:func:`arrivals.peakedness`) gives: each prompt's prefill holds up every
    decode, so the prefill work's swings come with the arrivals', and the lives stretch with them; read
    as a larger peakedness, ``z_c = (z + eta rho_p^2 c_p^2) (1 - (1 - eta) rho_p) / (1 - rho_p)``
    (``rho_p``: the prefill's share of the time, ``c_p``: the prefill's CV, ``eta``:
    :func:`arrivals.life_overlap`, how much of a life the swing a request starts lasts: 1 for outputs of
    one length). Derived from the linear noise of the chain (each arrival brings itself and holds up the
    decodes by its prefill, ``1 / (1 - rho_p)`` of the time with the prefills that arrive meanwhile),
    the variance over the chain's with ``z`` as ``1 / (1 - rho_p)``; ``eta``'s share of the held-up
    decodes lasts a life (what the measurements below support, not derived). The same chain carried
    past 256 at the replica's own capacity there (the decode step's slope) against the simulation
    without a limit (100,000 requests, load 0.9 of batch 256's rate, 2026-11-29), P(N >= 256) this /
    simulated: bursts (arrival
    CV 1.5) 0.042 / 0.029 (0.021 under a token budget of 2,048), prompts of CV 1.5 0.023 / 0.047
    (0.032), fixed lengths 0.0021 / 0.0021 (0.0010), lengths of CV 1 0.0007 / 0.0000, outputs of CV 1.5
    0.0001 / 0.0000, P(N >= 200) within a factor 2 in each of those and of lengths of CV 0.5; ``z``
    alone: 4e-5 for bursts; ``eta`` taken as 1: 0.0084 for lengths of CV 1. Past ``c`` the chain falls
    as the queue for slots, a diffusion of peakedness ``(c_a^2 + c_s^2) / 2`` (its work below).

    How long: with every slot held the replica is one server that lets the waiting prompts in at its
    rate at ``c`` (``R(c)``: a slot freed, the next prompt prefilled): a GI/G/1 queue at load
    ``R / R(c)`` of work ``1 / R(c)`` (:func:`queueing.gg1_wait`'s wait of those who wait), its variance
    the slots' freeing (as the requests in them arrived, a life before: ``z / R(c)^2``) and the next
    prompt's prefill. Against the simulation with its 256 slots (400,000 requests, seeds 0, 1, 2), the
    share that finds 256 or more in the replica and their wait for a slot, this / simulated: bursts
    0.018 / 0.019, 0.021, 0.026 and 1.68 s / 1.66, 1.43, 1.49 s (under a budget 0.021, 0.024, 0.030 and
    1.54, 1.40, 1.39 s); prompts of CV 1.5 0.008 / 0.016, 0.021, 0.021 and 1.13 s / 1.42, 1.47, 1.41 s
    (long prompts stall the decodes, and the slots free in lumps: not in this). Hayward's
    approximation, a G/G/c queue of peakedness ``z`` read as M/M/(c / z) at load ``a / z`` (A. A.
    Fredericks, "Congestion in blocking systems: a simple approximation technique", Bell System
    Technical Journal 59(6), 805-827, 1980), with ``c`` servers each held a request's life (``a = R
    L``, Little's law), gives for bursts 2e-16 (Erlang C at 113 servers, load 47) and a wait of those
    who wait ``z L / (c - a)`` of 0.14 s: the slots are not ``c`` servers each held a fixed life, the
    lives stretch as the slots fill (the capacity flattens), and a freed slot waits for the whole
    replica's prefill. Checked at 256 slots; at 16 and 4 (the test's steps, fixed lengths and
    bursts, seeds 0 and 1) the TTFT p99 is +3% to +125% high at loads 0.6-0.9, and at 4 +0% to +89%
    at loads 0.3-0.9 read on a fine grid of rows (p50 up to +90%; before, p99 -53% to -99% low). At
    the last row (the rate of ``c`` in flight) the queue for slots runs at load 1: no finite wait,
    and a rate between the last two integer rows of a 4-slot grid reads it."""
    b = steps.batch.astype(float)
    tp_mean, tp_var, _ = _prefill_moments(steps, traffic)
    rate = _continuous_rate(steps, traffic, tp_mean)
    limit = int(b[-1])
    if limit < 1:
        zeros = np.zeros_like(b)
        return zeros, zeros, np.ones_like(b)
    capacity = per_concurrency(b, rate)
    full = capacity[-1]
    rho_p = np.clip(rate * tp_mean, 0.0, 1 - 1e-6)
    eta = life_overlap(traffic)
    z = peakedness(traffic)
    swings = (z + eta * rate ** 2 * tp_var) * (1 - (1 - eta) * rho_p) / (1 - rho_p)
    # past the limit: a GI/G/1 queue, the slots freed as the requests in them arrived (the arrivals'
    # peakedness) and each freed one taking the next prompt's prefill
    work_var = z / full ** 2 + tp_var
    queue = (traffic.arrival_cv ** 2 + work_var * full ** 2) / 2  # its chain's peakedness (diffusion)
    past = np.exp(np.log(np.clip(rate / full, 1e-300, 1 - 1e-9)) / queue)
    share = at_limit(rate, capacity, swings, past)
    share = np.where(share >= SLOT_LEAST, np.minimum(share, 1.0), 0.0)
    _, waited, shape = gg1_wait(rate, np.full_like(b, 1 / full), np.full_like(b, work_var),
                                traffic.arrival_cv, _third(traffic))
    for v in (share, waited, shape):
        v.flags.writeable = False
    return share, waited, shape


def _with_light(steps: Steps, concurrencies: np.ndarray = LIGHT_CONCURRENCIES) -> Steps:
    """``steps`` with the ``concurrencies`` below its first (1) before them, a decode step there as long
    as at batch 1 (whatever runs, runs as one request)."""
    light = concurrencies[concurrencies < steps.batch[0]]
    decode_s = np.concatenate([np.full(len(light), steps.decode_s[0]), steps.decode_s])
    return dataclasses.replace(steps, batch=np.concatenate([light, steps.batch]), decode_s=decode_s)


def _continuous_rate(steps: Steps, traffic: Traffic, tp_mean: float) -> np.ndarray:
    """Requests per second a replica carries at each concurrency under continuous batching:
    ``R(B) = B / ((O - 1) t_d(B) + B E[t_p])`` (whatever the token budget)."""
    b = steps.batch.astype(float)
    return b / (max(traffic.output.mean - 1, 0.0) * steps.decode_s + b * tp_mean)


def continuous(steps: Steps, traffic: Traffic, *, budget: int | None,
               ttft_ok: Callable[[Ttft], np.ndarray] | None = None) -> Operating:
    """Continuous batching; ``budget``: tokens per step (``None``: a prompt is prefilled alone)."""
    b, t_d = steps.batch.astype(float), steps.decode_s
    tp_mean, tp_var, tp_points = _prefill_moments(steps, traffic)
    rate = _continuous_rate(steps, traffic, tp_mean)
    rho = rate * tp_mean
    # Below concurrency 1 (Operating.light) a prompt finds a decode step under way, or one to share its
    # own step, only if a request is decoding: a share ``1 - exp(-R (O - 1) t_d)`` of the prompts (the
    # requests decode at rate R for (O - 1) t_d each); the others run alone (Ttft.bare).
    light = b < 1
    decoding = np.where(light, 1.0 - np.exp(-rate * max(traffic.output.mean - 1, 0.0) * t_d), 1.0)
    li = traffic.input
    if budget is None:
        work_mean, work_var = np.full_like(b, tp_mean), np.full_like(b, tp_var)
        service = np.broadcast_to(tp_points, (len(b), len(tp_points)))
        feasible = np.ones_like(b, dtype=bool)
        residual = t_d
    else:
        room = np.maximum(budget - b, 1.0)
        # A step's decodes are shared by the prompt tokens it carries: those that arrived during the
        # step before (a mean step, t_d / (1 - rho)), at least one prompt, at most the budget's room.
        carried = np.clip(rate * t_d / np.maximum(1 - rho, 1e-9) * li.mean + li.mean, 1.0, room)
        per_token = steps.token_s + t_d / carried  # a prompt token's share of the mixed steps
        work_mean = per_token * li.mean + steps.request_s
        work_var = (per_token * li.mean * li.cv) ** 2
        lengths = li.mean * li.unit
        chunks = np.maximum(1.0, lengths[None, :] / room[:, None])
        service = tp_points[None, :] + t_d[:, None] * chunks
        feasible = budget > b
        residual = t_d / np.maximum(1 - rho, 1e-9)  # the step in progress: a mean step
    p, wait, shape = gg1_wait(rate, work_mean, work_var, traffic.arrival_cv, _third(traffic))
    feasible = feasible & (rate * work_mean < 1)
    alone = np.broadcast_to(tp_points, (len(b), len(tp_points)))  # a prompt's step with no decode
    bare = (1 - decoding, alone) if light.any() else (None, None)
    alone_ttft = Ttft(np.zeros_like(b), residual, p, wait, np.asarray(service), shape, *bare)
    # and a share waits for a free slot (the prompts behind it too: none of it is in its TPOT's window)
    ttft = dataclasses.replace(alone_ttft, **dict(zip(("slot_p", "slot_wait", "slot_shape"),
                                                      _slot_wait(steps, traffic), strict=True)))
    ttft_rows = functools.partial(take_rows, ttft)
    if budget is not None and traffic.arrival_cv != 1.0:  # prompts arriving before its step starts share it
        most = (room - li.mean) / li.mean
        terms = arrival_terms(most)

        def later_s(rows: np.ndarray) -> np.ndarray:  # their prefill, beyond (or short of) Poisson's
            bursty, poisson = arrivals_after(rate[rows], traffic.arrival_cv, residual[rows], p[rows],
                                              wait[rows], most[rows], terms)
            return tp_mean * (bursty - poisson)

        ttft_rows = _with_later(ttft, _RowCache(len(b), later_s), tp_points)
    if budget is None:  # the prompts that arrive during its TTFT are prefilled before its first step
        first_s, first_var = alone_ttft.mean(), ttft_var(alone_ttft)
        since = np.zeros_like(b)
    else:  # those that arrive during the step that finishes its prompt share its first step
        first_s = t_d + carried / li.mean * tp_mean
        first_var = rate * residual * (tp_var + traffic.arrival_cv ** 2 * tp_mean ** 2) + tp_var
        since = residual / 2 + p * wait  # from its arrival to the step that finishes its prompt
    # Arrivals after a request's own: a renewal stream brings more than R t within t (bursts: a request
    # arrives in one) or fewer (a smoother stream), counted from its arrival (first_s as the time over
    # which the arrival rate brings as many).
    if traffic.arrival_cv != 1.0:
        count = renewal_count(traffic.arrival_cv)
        extra = count(rate * (since + first_s)) - count(rate * since) - rate * first_s
        first_s = np.maximum(first_s + extra / np.maximum(rate, 1e-30), 0.0)
    if budget is not None and feasible.any():  # and those queued behind it that that step had no room for
        behind = left_behind(rate[feasible], traffic.arrival_cv, residual[feasible], p[feasible],
                             wait[feasible], room[feasible] / li.mean)
        first_s[feasible] += behind / np.maximum(rate[feasible], 1e-30)
    tpot = _continuous_tpot(steps, traffic, budget is not None, np.asarray(first_s, dtype=float).tobytes(),
                            np.broadcast_to(first_var, b.shape).astype(float).tobytes())
    op = Operating("continuous", b, t_d, rate, rho, ttft_rows, tpot, feasible, prefill_s=tp_mean)
    if budget is not None:  # a step carries at most the budget's room of prompt tokens (and their prompts)
        op.tpot_most = room * steps.token_s + (room / li.mean + 1) * steps.request_s
    if b[0] >= 1:  # below batch 1's rate: the same scheduler at concurrencies under 1 (Operating.light)
        op.light_factory = lambda: continuous(_with_light(steps), traffic, budget=budget, ttft_ok=ttft_ok)
    return op


@functools.lru_cache(maxsize=256)
def _continuous_tpot(steps: Steps, traffic: Traffic, chunked: bool, first_s: bytes, first_var: bytes) -> Tpot:
    """:func:`_request_tpot` under continuous batching (``first_s`` and ``first_var`` as the bytes of
    their arrays): one per replica's steps, traffic and first step, so token budgets that give the same
    share it and its solved quantiles (read-only)."""
    tp_mean, tp_var, _ = _prefill_moments(steps, traffic)
    rate = _continuous_rate(steps, traffic, tp_mean)
    tpot = _request_tpot(steps, traffic, rate, rate * tp_mean, tp_mean, tp_var, np.frombuffer(first_s),
                         np.frombuffer(first_var), chunked)
    for v in (tpot.base, tpot.extra, tpot.sd, tpot.sd_batch, tpot.none):
        if v is not None and v.flags.owndata:
            v.flags.writeable = False
    return tpot


def _with_later(ttft: Ttft, later_s: Callable[[np.ndarray], np.ndarray],
                own_s: np.ndarray) -> Callable[[np.ndarray], Ttft]:
    """``ttft_rows`` of ``ttft`` with ``later_s(rows)`` seconds added to every point's service (fewer
    where a smoother stream than Poisson brings fewer prompts to share the step), never below the
    prompt's own prefill ``own_s`` (at each length point)."""

    def ttft_rows(rows: np.ndarray) -> Ttft:
        d = take_rows(ttft, rows)
        assert isinstance(d, Ttft)
        later = later_s(rows)[:, None]
        bare = None if d.bare_service is None else np.maximum(d.bare_service + later, own_s)
        return dataclasses.replace(d, service=np.maximum(d.service + later, own_s), bare_service=bare)

    return ttft_rows


def static(steps: Steps, traffic: Traffic, *, budget: int | None = None,
           ttft_ok: Callable[[Ttft], np.ndarray] | None = None) -> Operating:
    """Fixed batches: prefilled together, decoded until the longest output ends (the longest of ``B``
    outputs, :func:`longest_output`); row ``B`` runs at ``R = B / c(B)``, ``c(B)`` the mean cycle of a
    batch of ``B`` (prefill and decode), its variance ``V_c(B)`` (the prompts' lengths, the longest
    output's). Batch sizes, cycles and idle spells at that rate: :func:`_static_batches`. A request
    arrives in a cycle picked by its length (a gamma of one more shape than the cycle's), or ends an
    idle spell (then no wait); it waits out a uniform share of that cycle, then its own batch's prefill:
    the prompts that arrived during that cycle and its own. TPOT is the decode step at the size of the
    request's batch (picked by its size too). Rows below 1 (:func:`_with_light`, ``Operating.light``)
    run at ``R = B / c(1)``, a replica idle between requests: a batch is at least the one request that
    ends an idle spell, and that request starts it at once (the simulation's ``_static``, and an engine's
    static batcher that runs whatever waits when it is free); the share that ends one runs alone
    (``Ttft.bare``: its own prefill, at its prompt's length), the rest wait out the cycle they arrive
    in. Rows whose batches reach the slot limit (:func:`_chain_rows`) read the chain of batch sizes
    instead (:func:`_static_chain`): the cycle a request arrives in, the share that waits whole cycles
    of full batches after it (the queue ahead of it a full batch or more) and how many (the wait of those
    who wait: a gamma of that many full cycles' mean and variance, and a full batch's prefill; they
    arrived late in their cycle, so its rest is its first share for them, ``Ttft.wait_rest``), and TPOT
    as the decode step at the batch a request is in (``Operating.tpot_rows``)."""
    from scipy.special import gammaincinv

    rows_b, t_d_rows = steps.batch.astype(float), steps.decode_s
    light = rows_b < 1
    b, t_d = rows_b[~light], t_d_rows[~light]  # the batch sizes a cycle can have
    li, ca2 = traffic.input, traffic.arrival_cv ** 2
    tp_mean, _, _ = _prefill_moments(steps, traffic)
    longest, longest_var = longest_output(traffic, b)
    prefill = b * steps.token_s * li.mean + steps.request_s
    cycle = prefill + np.maximum(longest - 1, 0.0) * t_d
    rate = rows_b / np.concatenate([np.full(int(light.sum()), cycle[0]), cycle])
    cond_var = b * (steps.token_s * li.mean * li.cv) ** 2 + longest_var * t_d ** 2
    mean_b, idle, batch_var, _, k, theta = _static_batches(b, cycle, cond_var, ca2, rate,
                                                           np.maximum(rows_b, 1.0), light)
    idle_share = idle / mean_b  # of requests: the one that ends an idle spell starts its batch at once
    # above 1 the points of the cycle a request arrives in take the idle share first; below, that share
    # is the mixture's bare part (Ttft.bare), the points spread over the rest
    u = np.clip((STATIC_POINTS[None, :] - idle_share[:, None]) / np.maximum(1 - idle_share[:, None], 1e-12),
                0.0, 1.0)
    u[light] = STATIC_POINTS

    def cycle_seen(rows: np.ndarray) -> np.ndarray:  # (rows, STATIC_POINTS): the cycle a request arrives in
        at = u[rows]
        return np.where(at > 0, theta[rows, None] * gammaincinv(k[rows, None] + 1, np.maximum(at, 1e-12)),
                        0.0)

    seen_cycle = _RowCache(len(rows_b), cycle_seen)
    zeros = np.zeros_like(rows_b)
    own = steps.request_s + steps.token_s * li.mean  # a request's own prompt; the others' arrive with it
    bare = np.where(light, idle_share, 0.0)
    # who runs alone is prefilled alone: its own prompt's length at STATIC_POINTS' probabilities
    own_spread = steps.token_s * li.mean * (unit_quantiles(li, STATIC_POINTS) - 1)
    chain_rows = _chain_rows(b, light, mean_b, idle, batch_var)
    chained = (_static_chain(b, t_d, prefill, cycle, cond_var, traffic, rate, len(rows_b))
               if chain_rows.any() else None)
    # a full batch's cycle (its mean and the variance of its longest): those ahead of a request wait them out
    full_s, full_var = float(cycle[-1]), float(cond_var[-1])

    def ttft_rows(rows: np.ndarray) -> Ttft:
        cycle = seen_cycle(rows)
        others = rate[rows, None] * steps.token_s * li.mean * cycle  # prompts that arrived during the cycle
        alone = (bare[rows], np.broadcast_to(own_spread, others.shape)) if light.any() else (None, None)
        on = chain_rows[rows]
        if chained is None or not on.any():
            return Ttft(np.full(len(rows), own), cycle, zeros[rows], zeros[rows], others, None, *alone)
        got = chained(rows[on])
        p = len(STATIC_POINTS)
        ahead, waited = zeros[rows].copy(), zeros[rows].copy()
        shape, late = np.ones(len(rows)), np.ones(len(rows))
        cycle[on] = got[:, :p]
        others[on] = np.minimum(rate[rows[on], None] * cycle[on], b[-1] - 1) * steps.token_s * li.mean
        # K whole cycles of full batches, then its own full batch's prefill (beyond the others' above)
        k_mean, k_var = got[:, p + 1], got[:, p + 2]
        full_prefill = np.maximum((b[-1] - 1) * steps.token_s * li.mean - others[on].mean(axis=1), 0.0)
        ahead[on] = np.where(got[:, p] >= STATIC_LEFT_LEAST, got[:, p], 0.0)
        waited[on] = k_mean * full_s + full_prefill
        spread = k_mean * full_var + k_var * full_s ** 2
        shape[on] = np.minimum(waited[on] ** 2 / np.maximum(spread, 1e-30), 1e6)
        late[on] = got[:, p + 3]  # those who wait arrived late in their cycle: the first of its rest
        return Ttft(np.full(len(rows), own), cycle, ahead, waited, others, shape, *alone, wait_rest=late)

    seen = mean_b + batch_var / mean_b  # the batch a request is in, picked by its size
    seen_sd = np.sqrt(batch_var + (batch_var / mean_b) ** 2)
    step_slope = np.gradient(t_d, b) if len(b) > 1 else np.zeros_like(b)
    tpot = Tpot(np.interp(seen, b, t_d, right=t_d[-1] + step_slope[-1] * (seen[-1] - b[-1])), zeros, zeros,
                np.interp(seen, b, step_slope) * seen_sd)
    prefill_share = rate / mean_b * (mean_b * steps.token_s * li.mean + steps.request_s)
    op = Operating("static", rows_b, t_d_rows, rate, prefill_share, ttft_rows, tpot,
                   np.ones_like(rows_b, dtype=bool), prefill_s=tp_mean, exact_rows=int(light.sum()))
    if chained is not None:
        op.tpot_rows = functools.partial(_chained_tpot, tpot, chain_rows, chained)
    if not light.any():  # below batch 1's rate: the same batcher idle between requests (Operating.light)
        op.light_factory = lambda: static(_with_light(steps, STATIC_LIGHT_CONCURRENCIES), traffic,
                                          budget=budget, ttft_ok=ttft_ok)
    return op


def _chain_rows(b: np.ndarray, light: np.ndarray, mean_b: np.ndarray, idle: np.ndarray,
                batch_var: np.ndarray) -> np.ndarray:
    """The rows whose latencies are read from the chain of batch sizes (:mod:`static_chain`): where the
    moment recursion's own batches reach the slot limit (the last of ``b``) at least
    ``STATIC_CHAIN_REACH`` of the time (a negative binomial count of its mean and variance), on a grid of
    whole batches from 1."""
    if len(b) < 2 or b[0] != 1 or np.any(b != np.round(b)):
        return np.zeros_like(light)
    below = np.full((len(light), 1), np.floor((b[-2] + b[-1]) / 2))  # the last cell of _batch_mass
    return ~light & (1 - count_cdf(mean_b - idle, batch_var, below)[:, 0] >= STATIC_CHAIN_REACH)


def _static_chain(b: np.ndarray, t_d: np.ndarray, prefill: np.ndarray, cycle: np.ndarray,
                  cond_var: np.ndarray, traffic: Traffic, rate: np.ndarray, n_rows: int) -> _RowCache:
    """At the rows read: the chain of batch sizes (:func:`static_chain.solve_chain`) read as the cycle a
    request arrives in at ``STATIC_POINTS`` (those that find the replica idle first), the share that
    waits whole cycles of full batches after it, the mean and variance of how many and the share of its
    cycle's rest those wait out (twice its mean: ``static_chain._late``), and the decode
    step of the batch a request is in (mean and SD within each slice of ``STATIC_TPOT_EDGES``): columns
    of one array. Each row has its own states past the limit (:func:`static_chain.left_grid`)."""
    from ecobench.planning.static_chain import (
        STATES_MOST,
        chain_states,
        cycle_cells,
        cycle_seen,
        left_grid,
        slices,
        solve_chain,
    )

    sb = chain_states(int(b[-1]))
    cycle_s, var_s, t_d_s = (np.interp(sb, b, v) for v in (cycle, cond_var, t_d))
    ca2 = traffic.arrival_cv ** 2

    @functools.cache
    def cells() -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # worked out when a chain row is first read
        out = traffic.output
        edges, tokens = (np.array([0.0, 1.0]), np.array([out.mean])) if out.cv == 0 else out.bins
        return cycle_cells(sb, np.interp(sb, b, prefill), t_d_s, edges, tokens)

    def grid(row: int) -> np.ndarray:  # a row's states past the limit (its queue's reach)
        r = float(rate[row])
        full = r * float(cycle_s[-1])
        return left_grid(int(b[-1]), full, ca2 * full + r * r * float(var_s[-1]), STATES_MOST - len(sb))

    def read(rows: np.ndarray) -> np.ndarray:
        chain = solve_chain(sb, cycle_s, var_s, ca2, rate[rows], np.stack([grid(int(r)) for r in rows]))
        mean_b = (chain.batch_mass * sb).sum(axis=1)  # row by row: the same bits however many are read
        share = (chain.idle / mean_b)[:, None]
        u = np.clip((STATIC_POINTS[None, :] - share) / np.maximum(1 - share, 1e-12), 0.0, 1.0)
        step, step_sd = slices(chain.batch_mass * sb, t_d_s, STATIC_TPOT_EDGES)
        ahead = np.stack([chain.ahead_p * (1 - share[:, 0]), chain.ahead_mean, chain.ahead_var,
                          chain.ahead_rest], axis=1)
        return np.concatenate([cycle_seen(chain.batch_mass, cells(), u), ahead, step, step_sd], axis=1)

    return _RowCache(n_rows, read)


def _chained_tpot(tpot: Tpot, chain_rows: np.ndarray, chained: _RowCache, rows: np.ndarray) -> Tpot:
    """TPOT at ``rows``: the moment recursion's normal (``tpot``), or at ``chain_rows`` the decode step
    of the batch a request is in, a mixture over its slices (:func:`_static_chain`)."""
    on = chain_rows[rows]
    if not on.any():
        t = take_rows(tpot, rows)
        assert isinstance(t, Tpot)
        return t
    k = len(STATIC_TPOT_EDGES) - 1
    base, sd_batch = tpot.base[rows].copy(), tpot.sd_batch[rows].copy()
    extra, sd = np.zeros((len(rows), k)), np.zeros((len(rows), k))
    got = chained(rows[on])
    base[on], sd_batch[on] = 0.0, 0.0
    extra[on], sd[on] = got[:, -2 * k:-k], got[:, -k:]
    return Tpot(base, extra, sd, sd_batch, None, np.diff(STATIC_TPOT_EDGES))


def _static_batches(b: np.ndarray, cycle: np.ndarray, cond_var: np.ndarray, ca2: float,
                    rate: np.ndarray | None = None, start: np.ndarray | None = None,
                    light: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """(mean batch, chance a cycle sees no arrival, batch variance, mean cycle, its gamma shape and
    scale) of static batches at the rate ``R = b / c(b)`` of each row (``c``: the mean cycle of a batch
    of ``b``, ``V_c`` its variance given the batch). The next batch is the arrivals during a cycle (a
    count of mean ``R C`` and variance ``c_a^2 R C + R^2 Var(C)``), or one request after an idle spell
    when none came (chance ``P0 = E[exp(-R C kappa)]``, ``kappa = ln(c_a^2) / (c_a^2 - 1)``, 1 for
    Poisson arrivals: a negative binomial count with the renewal stream's variance,
    :func:`arrivals.no_arrival_exponent`). So the mean batch
    is ``B = R c(B) + P0`` (``b`` when no cycle goes without an arrival), a cycle's variance
    ``V_c + c'^2 Var(B)`` (read as a gamma), and the batch's ``(c_a^2 R c + R^2 V_c) / (1 - g^2) +
    P0 (1 - P0) - 2 R c P0`` with ``g = R c'`` the share of a batch's excess that carries to the next.
    Solved in rounds from ``B = b``. Where ``c`` is not linear in the batch (outputs that vary: the
    longest of ``B`` is concave in ``B``), the last ``STATIC_MIXED_ROUNDS`` read ``c``, ``V_c`` and
    ``c'`` over the batch's distribution (:func:`_batch_mass`) rather than at its mean: a concave cycle
    is shorter on average, and more cycles see no arrival. ``rate`` and ``start`` (given together): rows
    at other rates than the grid's (below batch 1's: a replica idle between requests), solved from the
    batch ``start``; the cycle is still read on the grid ``b``. At the rows of ``light`` (a replica idle
    between requests) a cycle started by the request that ended an idle spell sees no arrival with the
    chance that the gap after that request outlasts it, ``P_g = E[P(G > C)]`` (the stream's gap, a gamma
    of CV ``c_a``: under bursts the next request comes soon after more often than the stationary count
    says), the others with ``P_s`` as above: the share of cycles that end an idle spell is the chain's
    ``f = P_s / (1 - P_g + P_s)``, and the arrivals during a cycle ``f M(R C) + (1 - f) R c``, ``M`` the
    renewal count after an arrival (:func:`arrivals.renewal_count`; both as before for Poisson
    arrivals)."""
    kappa = no_arrival_exponent(ca2)
    if rate is None or start is None:
        rate, start = b / cycle, b
    grad = np.gradient(cycle, b) if len(b) > 1 else cycle / b
    curved = len(b) > 2 and bool(np.any(np.abs(np.diff(grad)) > 1e-9 * np.abs(grad[1:])))
    mean_b, batch_var = start.copy(), start.copy()
    count, count_var = start.copy(), start.copy()  # the arrivals during a cycle
    for i in range(STATIC_ROUNDS):
        c = np.interp(mean_b, b, cycle, right=cycle[-1]) + grad[-1] * np.maximum(mean_b - b[-1], 0.0)
        slope, v_c = np.interp(mean_b, b, grad), np.interp(mean_b, b, cond_var)
        if curved and i >= STATIC_ROUNDS - STATIC_MIXED_ROUNDS:  # the cycle over the batch's spread
            jensen, bent, slope = _over_batches(b, cycle, cond_var, _batch_mass(b, count, count_var))
            c, v_c = c + jensen, v_c + bent
        cycle_var = np.maximum(v_c + slope ** 2 * batch_var, 1e-12 * c ** 2)
        k = np.minimum(c ** 2 / cycle_var, 1e6)
        theta = c / k  # (cycle_var / c, but where k is capped the gamma keeps the mean cycle)
        idle = np.zeros_like(rate) if math.isinf(kappa) else (1 + rate * theta * kappa) ** -k
        m = rate * c
        if light is not None and light.any() and ca2 != 1.0 and not math.isinf(kappa):
            idle, m = _after_idle(idle, m, rate, k, theta, ca2, light)
        gain = np.clip(rate * slope, 0.0, MAX_CYCLE_GAIN)
        count, count_var = m, (ca2 * m + rate ** 2 * v_c) / (1 - gain ** 2)
        batch_var = np.maximum(count_var + idle * (1 - idle) - 2 * m * idle, 1e-9)
        mean_b = m + idle
    return mean_b, idle, batch_var, c, k, theta


def _after_idle(idle: np.ndarray, m: np.ndarray, rate: np.ndarray, k: np.ndarray, theta: np.ndarray,
                ca2: float, light: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_static_batches`'s chance a cycle sees no arrival and mean arrivals during a cycle at the
    rows of ``light``: ``f = P_s / (1 - P_g + P_s)`` and ``f M(R C) + (1 - f) m``, ``P_g`` the chance a
    gap of the stream (a gamma of squared CV ``ca2``) outlasts a cycle (a gamma of shape ``k``, scale
    ``theta``; over its ``STATIC_POINTS`` quantiles) and ``M`` the renewal count after an arrival."""
    from scipy.special import gammaincc, gammaincinv

    shape = 1 / ca2
    cyc = theta[light, None] * gammaincinv(k[light, None], STATIC_POINTS[None, :])
    p_g = gammaincc(shape, rate[light, None] * shape * cyc).mean(axis=1)
    after = renewal_count(math.sqrt(ca2))(rate[light, None] * cyc).mean(axis=1)
    idle, m = idle.copy(), m.copy()
    f = idle[light] / np.maximum(1 - p_g + idle[light], 1e-300)
    idle[light], m[light] = f, f * after + (1 - f) * m[light]
    return idle, m


def _batch_mass(b: np.ndarray, count: np.ndarray, count_var: np.ndarray) -> np.ndarray:
    """(rows, len(b)): the chance a batch is of each size of ``b`` (the nearest, read between the
    midpoints) when the arrivals during a cycle are a negative binomial count of mean ``count`` and
    variance ``count_var`` (a Poisson one where that is under the mean), none taken as a batch of one
    (after the idle spell): the count's CDF at the midpoints (``static_chain.count_cdf``: exact up to
    its ``EXACT_COUNT`` arrivals, where a batch's few requests are whole; beyond, a gamma's CDF)."""
    edges = np.floor((b[:-1] + b[1:]) / 2)  # P(count <= edge) at each
    cdf = count_cdf(count, count_var, np.broadcast_to(edges, (len(count), len(edges))))
    rows = np.ones((len(count), 1))
    return np.diff(np.concatenate([0.0 * rows, cdf, rows], axis=1), axis=1)


def _over_batches(b: np.ndarray, cycle: np.ndarray, cond_var: np.ndarray, mass: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over batches of the sizes ``b`` at chances ``mass`` (rows): the mean cycle less the cycle at the
    mean batch (a cycle concave in the batch, as the longest of a long-tailed output is, is shorter on
    average than at the average batch), the cycle's variance less the line's (the conditional
    variance at the mean batch, and the batch's variance times the slope of the cycle on it), and that
    slope (the regression's)."""
    mean_b = mass @ b
    var_b = np.maximum(mass @ (b * b) - mean_b ** 2, 1e-12)
    mean_c = mass @ cycle
    slope = (mass @ (b * cycle) - mean_b * mean_c) / var_b
    at_mean = np.interp(mean_b, b, cycle)
    bent = (mass @ cond_var - np.interp(mean_b, b, cond_var)) + (mass @ (cycle * cycle) - mean_c ** 2
                                                                  - slope ** 2 * var_b)
    return mean_c - at_mean, bent, slope


def longest_output(traffic: Traffic, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the longest output among ``batch`` requests: the largest of ``B`` draws
    falls in the output's probability bin ``(u_j, u_j+1]`` with chance ``u_j+1^B - u_j^B`` (bins that
    narrow toward the tail, :attr:`Lengths.bins`; a CSV's lengths through their empirical quantiles)."""
    out = traffic.output
    batch = np.asarray(batch, dtype=float)
    if out.cv == 0:
        return np.full_like(batch, out.mean), np.zeros_like(batch)
    edges, x = out.bins
    cdf = edges[None, :] ** np.maximum(batch, 1.0)[:, None]
    w = np.diff(cdf, axis=1)
    mean = w @ x
    return mean, np.maximum(w @ (x * x) - mean ** 2, 0.0)


def disaggregated(steps: Steps, traffic: Traffic, *, budget: int | None = None,
                  ttft_ok: Callable[[Ttft], np.ndarray] | None = None) -> Operating:
    """Prefill replicas (M/G/1 at the highest load that meets the TTFT targets) and decode replicas."""
    b, t_d = steps.batch.astype(float), steps.decode_s
    o = max(traffic.output.mean - 1, 0.0)
    tp_mean, tp_var, tp_points = _prefill_moments(steps, traffic)
    loads = PRIORITY_LOADS
    cand = prefill_pool_ttft(steps, traffic, loads)
    p, wait, kv = cand.p, cand.wait, steps.kv_token_s * traffic.input.mean * traffic.input.unit
    shape = cand.shape if cand.shape is not None else np.ones_like(p)
    i, meets = _highest_load(cand, ttft_ok)
    rho_p = float(loads[i])
    n = len(b)
    ttft = Ttft(np.zeros(n), np.zeros(n), np.full(n, p[i]), np.full(n, wait[i]),
                np.broadcast_to(tp_points + kv, (n, len(kv))), np.full(n, shape[i]))
    per_request = tp_mean / rho_p + o * t_d / b
    return Operating("disaggregated", b, t_d, 1 / per_request, tp_mean / rho_p / per_request,
                     functools.partial(take_rows, ttft),
                     _decode_pool_tpot(steps, o, traffic), np.full(n, meets), prefill_load=rho_p,
                     prefill_s=tp_mean, prefill_ttft=functools.partial(prefill_pool_ttft, steps, traffic))


def _highest_load(cand: Ttft, ttft_ok: Callable[[Ttft], np.ndarray] | None) -> tuple[int, bool]:
    """The highest load (index) of the prefill pool's ``cand`` whose TTFT meets the targets, and whether
    one does (the lowest load when none does): loads tried from the highest, ``FIRST_LOADS`` first,
    then twice as many each time (TTFT quantile solves cost most; the highest loads usually decide)."""
    n = len(cand.p)
    if ttft_ok is None:
        return n - 1, True
    i = first_meeting(np.arange(n)[::-1], lambda rows: ttft_ok(take_rows(cand, rows)), np.arange(1, n + 1),
                      FIRST_LOADS)
    return (0, False) if i is None else (i, True)


def first_meeting(order: np.ndarray, meets: Callable[[np.ndarray], np.ndarray], cost: np.ndarray,
                  first: float) -> int | None:
    """The first of ``order`` that ``meets`` (a mask of a block of ``order``) holds for, None where none
    does: read in blocks from the front, the first as far as the cumulative ``cost`` of reading up to
    each (rising) reaches ``first``, each next one twice as far (a block at least one; the front
    usually decides, and a block's costly solves run together)."""
    start, budget, spent = 0, first, 0.0
    while start < len(order):
        end = max(int(np.searchsorted(cost, spent + budget, side="right")), start + 1)
        ok = meets(order[start:end])
        if ok.any():
            return int(order[start + int(np.argmax(ok))])
        start, budget, spent = end, 2 * budget, float(cost[end - 1])
    return None


def _decode_pool_tpot(steps: Steps, decode_tokens: float, traffic: Traffic) -> Tpot:
    """TPOT on decode replicas (no prefill between steps): the step at the concurrency a request sees
    (:func:`queueing.concurrency_seen` of the decode replica alone) and its spread, and a request's first
    decode token waits out the rest of the step in progress when its cache arrives (it joins at the next
    step): a uniform share of a step over its ``n`` decode tokens, at each output length point (a mixture,
    read as gammas of that mean and SD)."""
    b = steps.batch.astype(float)
    capacity = b / (max(decode_tokens, 1.0) * steps.decode_s)
    seen, spread = concurrency_seen(capacity, per_concurrency(b, capacity))
    slope = np.interp(seen, b, np.gradient(steps.decode_s, b) if len(b) > 1 else np.zeros_like(b))
    t_d = np.interp(seen, b, steps.decode_s)
    n, w = decoded_points(traffic)
    joined = t_d[:, None] / n[None, :]
    return Tpot(t_d, joined / 2, joined / math.sqrt(12), slope * spread, None, w)


def prefill_pool_ttft(steps: Steps, traffic: Traffic, loads: np.ndarray) -> Ttft:
    """TTFT of prefill replicas run at each load in ``loads`` (M/G/1, then the key/value transfer)."""
    tp_mean, tp_var, tp_points = _prefill_moments(steps, traffic)
    kv = steps.kv_token_s * traffic.input.mean * traffic.input.unit
    loads = np.asarray(loads, dtype=float)
    p, wait, shape = gg1_wait(loads / tp_mean, np.full_like(loads, tp_mean), np.full_like(loads, tp_var),
                               traffic.arrival_cv, _third(traffic))
    zeros = np.zeros_like(loads)
    return Ttft(zeros, zeros, p, wait, np.broadcast_to(tp_points + kv, (len(loads), len(kv))), shape)


PREFILL_ONLY_LOADS = np.linspace(0.01, 0.99, 99)  # one output token: loads a replica's queue is read at


def prefill_only(traffic: Traffic) -> bool:
    """Whether every request has one output token: no decode step, a request is its prefill."""
    return traffic.output.mean <= 1.0


def prefill_queue(steps: Steps, traffic: Traffic, name: str) -> Operating:
    """A replica serving requests of one output token (:func:`prefill_only`) under any scheduler: the
    first token comes out of the prefill, no request decodes, so the replica is a GI/G/1 queue of
    prompts (the prefill pool's model, :func:`prefill_pool_ttft`, with no key/value transfer; static
    batches of the prompts waiting are the same prefill work, read in arrival order). Row ``B`` is the
    load at which a replica holds ``B`` requests on average (Little's law: ``R E[TTFT]``; loads above
    the last of ``PREFILL_ONLY_LOADS`` are capped there); ``prefill_share`` is the load (the rest
    idle). TPOT is 0: no second token (``vllm bench serve`` reports a mean TPOT of 0 then)."""
    b = steps.batch.astype(float)
    alone = dataclasses.replace(steps, kv_token_s=0.0)
    tp_mean = _prefill_moments(steps, traffic)[0]
    held = PREFILL_ONLY_LOADS / tp_mean * prefill_pool_ttft(alone, traffic, PREFILL_ONLY_LOADS).mean()
    rho = np.interp(b, held, PREFILL_ONLY_LOADS)
    zeros = np.zeros_like(b)
    return Operating(name, b, steps.decode_s, rho / tp_mean, rho,
                     functools.partial(take_rows, prefill_pool_ttft(alone, traffic, rho)),
                     Tpot(zeros, zeros, zeros, zeros), np.ones_like(b, dtype=bool), prefill_s=tp_mean)


SCHEDULERS: dict[str, Scheduler] = {"continuous": continuous, "static": static,
                                    "disaggregated": disaggregated}


@functools.cache
def scheduler_names() -> tuple[str, ...]:
    return tuple(SCHEDULERS)
