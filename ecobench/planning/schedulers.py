"""How a serving replica schedules requests, and the latency distribution each scheduler gives.

Every scheduler takes the replica's step times (a decode step ``t_d(B)`` at each concurrency ``B``, a
prompt token's prefill ``t_tok``, a fixed ``t_req`` per request) and the traffic (length
distributions, arrival CV) and returns :class:`Operating`: throughput and the TTFT and TPOT
distributions at each ``B``. Lengths enter through their quantile points (``planning/traffic.py``);
``O`` is the mean output, a request decodes ``O - 1`` tokens after its first.

* ``continuous`` (vLLM, SGLang, TensorRT-LLM in-flight batching): ``B`` requests decode together; a
  step carries at most ``C = max_num_batched_tokens`` tokens, its decodes plus chunks of waiting
  prompts (``chunked_prefill: false``: a prompt is prefilled alone and the decode batch waits).
  Throughput ``R = B / ((O - 1) t_d + B E[t_p])``; prefills take ``rho = R E[t_p]`` of the time, so a
  request's mean TPOT is ``t_d / (1 - rho)``; its spread comes from the prefill work that arrives
  during its life (compound arrivals, the branching of work arriving during work: variance
  ``R T E[t_p^2] / (1 - rho)^3``), read as a gamma above ``t_d``. A prompt waits for the step in
  progress (uniform), then in a G/G/1 queue of prefill work (Kingman's mean wait, exact for Poisson
  arrivals; waiting with probability ``rho_w`` and exponential when it does), then for its own chunks:
  ``t_p(L) + t_d max(1, L / (C - B))``.
* ``static`` (fixed batches, TensorRT-LLM's and Neuron's batch sweeps): a batch of ``B`` prompts is
  prefilled together, then decodes until its longest output ends (the mean of the longest of ``B``
  outputs); a request waits for the batch in progress (uniform over a cycle). TPOT is the decode step.
* ``disaggregated`` (DistServe, Splitwise, Dynamo): prefill replicas run prompts one at a time as an
  M/G/1 queue at load ``rho_p``; the prompt's key/value cache goes to a decode replica over the
  instance's network; decode replicas keep ``B`` requests decoding with no prefill between steps.
  ``rho_p`` is the highest that meets the TTFT targets; a replica-equivalent serves
  ``1 / (E[t_p] / rho_p + (O - 1) t_d / B)`` requests per second.

Against the discrete-event simulation of ``planning/simulate.py`` at 30-90% load:
``tests/unit/planning/test_schedulers.py``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from ecobench.planning.traffic import Traffic

SchedulerName = Literal["continuous", "static", "disaggregated"]
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192  # vLLM V1's default for its server on >= 70 GiB GPUs; SGLang's
# chunked_prefill_size; TensorRT-LLM's max_num_tokens (engine docs, 2025)
QUANTILE_GRID = 48  # concurrencies at which the quantiles are solved (interpolated in between)
PRIORITY_LOADS = np.linspace(0.02, 0.98, 49)  # disaggregated: prefill loads tried


@dataclass(frozen=True)
class Steps:
    """A replica's step times: ``decode_s`` at each concurrency ``batch``, a prompt token's prefill
    ``token_s``, a fixed ``request_s`` per prompt, and the seconds per prompt token of sending its
    key/value cache to another replica (``kv_token_s``, disaggregated)."""

    batch: np.ndarray
    decode_s: np.ndarray
    token_s: float
    request_s: float = 0.0
    kv_token_s: float = 0.0


@dataclass(frozen=True)
class Ttft:
    """TTFT = ``fixed`` + Uniform(0, ``residual``) + [waits with probability ``p``] Exp(``wait``) +
    ``service`` at the input length's quantile points (a row per concurrency)."""

    fixed: np.ndarray
    residual: np.ndarray
    p: np.ndarray
    wait: np.ndarray
    service: np.ndarray  # (concurrencies, points)

    def mean(self) -> np.ndarray:
        return self.fixed + self.residual / 2 + self.p * self.wait + self.service.mean(axis=1)

    def cdf(self, t: np.ndarray) -> np.ndarray:
        """P(TTFT <= t) for a ``t`` per concurrency."""
        y = (t - self.fixed)[:, None] - self.service  # what is left for the waits
        r, p, m = self.residual[:, None], self.p[:, None], np.maximum(self.wait, 1e-30)[:, None]

        def g(x: np.ndarray) -> np.ndarray:  # integral of the wait's CDF from 0 to x
            x = np.maximum(x, 0.0)
            return x - p * m * -np.expm1(-x / m)

        with np.errstate(over="ignore", invalid="ignore"):
            uniform = (g(y) - g(y - r)) / np.maximum(r, 1e-30)
            point = np.where(y >= 0, 1 - p * np.exp(-np.maximum(y, 0) / m), 0.0)
        return np.where(r > 1e-12, uniform, point).mean(axis=1)

    def quantile(self, q: float) -> np.ndarray:
        lo = self.fixed + self.service.min(axis=1)
        hi = (self.fixed + self.residual + self.service.max(axis=1)
              + self.wait * max(0.0, math.log(1 / (1 - q))) + 1e-9)
        for _ in range(40):
            mid = (lo + hi) / 2
            below = self.cdf(mid) < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return (lo + hi) / 2


@dataclass(frozen=True)
class Tpot:
    """A request's time per output token: ``base`` plus a gamma of mean ``extra`` and SD ``sd`` (the
    prefills slotted between its steps) plus a normal of SD ``sd_batch`` (the concurrency it decodes
    at fluctuates); their deviations from the mean add in quadrature."""

    base: np.ndarray
    extra: np.ndarray
    sd: np.ndarray
    sd_batch: np.ndarray

    def mean(self) -> np.ndarray:
        return self.base + self.extra

    def quantile(self, q: float) -> np.ndarray:
        from scipy.special import gammaincinv, ndtri

        m, s = np.maximum(self.extra, 1e-30), np.maximum(self.sd, 1e-30)
        k = np.clip((m / s) ** 2, 1e-3, 1e6)
        dev_g = np.where(self.sd > 1e-12, gammaincinv(k, q) * m / k - m, 0.0)
        dev_n = float(ndtri(q)) * self.sd_batch
        dev = dev_g + dev_n
        return self.base + self.extra + np.sign(dev) * np.sqrt(dev_g ** 2 + dev_n ** 2)


@dataclass
class Operating:
    """A replica under a scheduler at each candidate concurrency ``batch`` (arrays)."""

    scheduler: str
    batch: np.ndarray
    decode_s: np.ndarray
    rate_per_s: np.ndarray  # requests per second a replica (or replica-equivalent) carries
    prefill_share: np.ndarray  # share of the replica's time prefilling
    ttft: Ttft
    tpot: Tpot
    feasible: np.ndarray  # the scheduler can run at this concurrency (prefill keeps up, budget left)
    prefill_load: float | None = None  # disaggregated: load of the prefill replicas
    prefill_s: float = 0.0  # a mean prompt's prefill (seconds)
    _cache: dict[tuple[str, str], np.ndarray] = field(default_factory=dict, repr=False)

    def latency_ms(self, metric: str, stat: str | float) -> np.ndarray:
        """``ttft`` or ``tpot`` in ms at every concurrency: ``stat`` ``"mean"`` or a probability (the
        quantiles are solved at ``QUANTILE_GRID`` concurrencies and interpolated between them)."""
        key = (metric, str(stat))
        if key not in self._cache:
            d = self.ttft if metric == "ttft" else self.tpot
            if stat == "mean":
                v = d.mean()
            else:
                n = len(self.batch)
                idx = np.unique(np.round(np.geomspace(1, n, min(n, QUANTILE_GRID))).astype(int) - 1)
                sub = _rows(d, idx)
                v = np.interp(np.arange(n), idx, sub.quantile(float(stat)))
            self._cache[key] = 1e3 * np.asarray(v, dtype=float)
        return self._cache[key]


def _rows(d: Ttft | Tpot, idx: np.ndarray) -> Ttft | Tpot:
    """The distribution at the concurrencies ``idx`` only."""
    return type(d)(**{k: np.asarray(getattr(d, k))[idx] for k in d.__dataclass_fields__})  # type: ignore[arg-type]


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


def _kingman_wait(rate: np.ndarray, work_mean: np.ndarray, work_var: np.ndarray, arrival_cv: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(probability of waiting, mean wait of those who wait) in a G/G/1 queue of work."""
    rho = np.clip(rate * work_mean, 0.0, 1 - 1e-9)
    cs2 = work_var / np.maximum(work_mean, 1e-30) ** 2
    mean_wait = rho / (1 - rho) * (arrival_cv ** 2 + cs2) / 2 * work_mean
    return rho, mean_wait / np.maximum(rho, 1e-12)


def _batch_spread(steps: Steps) -> tuple[np.ndarray, np.ndarray]:
    """(decode step a request sees, SD of the mean step over its life) at each time-average
    concurrency ``B``: a request sees ``B`` others plus itself (Poisson arrivals), and the average of
    a Poisson-like occupancy over a life has variance about ``2/3 B``."""
    b, t_d = steps.batch.astype(float), steps.decode_s
    slope = np.gradient(t_d, b) if len(b) > 1 else np.zeros_like(b)
    seen = np.interp(b + 1, b, t_d, right=t_d[-1] + slope[-1] * (b[-1] + 1 - b[-1]) if len(b) else 0.0)
    return seen, slope * np.sqrt(2.0 / 3.0 * b)


def _request_tpot(steps: Steps, traffic: Traffic, rate: np.ndarray, rho: np.ndarray, tp_mean: float,
                  tp_var: float) -> Tpot:
    """TPOT of a request when prefills of arriving prompts are slotted between its decode steps."""
    t_d, sd_b = _batch_spread(steps)
    o = max(traffic.output.mean - 1, 1.0)
    r = np.clip(rho, 0, 1 - 1e-6)
    life = o * t_d  # the decode steps alone
    var = rate * life * (tp_var + traffic.arrival_cv ** 2 * tp_mean ** 2) / (1 - r) ** 3
    # A short output sees fewer arrivals: the spread of the per-token share grows as 1 / sqrt(tokens).
    short = float(np.mean(1 / np.sqrt(np.maximum(traffic.output.mean * traffic.output.unit - 1, 1.0))))
    return Tpot(t_d, t_d * r / (1 - r), np.sqrt(var) / o * short * math.sqrt(o), sd_b / (1 - r))


def continuous(steps: Steps, traffic: Traffic, *, budget: int | None,
               ttft_ok: Callable[[Ttft], np.ndarray] | None = None) -> Operating:
    """Continuous batching; ``budget``: tokens per step (``None``: a prompt is prefilled alone)."""
    b, t_d = steps.batch.astype(float), steps.decode_s
    o = max(traffic.output.mean - 1, 0.0)
    tp_mean, tp_var, tp_points = _prefill_moments(steps, traffic)
    rate = b / (o * t_d + b * tp_mean)
    rho = rate * tp_mean
    li = traffic.input
    if budget is None:
        work_mean, work_var = np.full_like(b, tp_mean), np.full_like(b, tp_var)
        service = np.broadcast_to(tp_points, (len(b), len(tp_points)))
        feasible = np.ones_like(b, dtype=bool)
        residual = t_d
    else:
        room = np.maximum(budget - b, 1.0)
        per_token = steps.token_s + t_d / room  # a prompt token's share of the mixed steps
        work_mean = per_token * li.mean + steps.request_s
        work_var = (per_token * li.mean * li.cv) ** 2
        lengths = li.mean * li.unit
        step = (t_d / np.maximum(1 - rho, 1e-9))[:, None]  # a mean step: decodes and others' chunks
        service = tp_points[None, :] + step * np.maximum(1.0, lengths[None, :] / room[:, None])
        feasible = budget > b
        residual = t_d / np.maximum(1 - rho, 1e-9)  # the step in progress: a mean step
    p, wait = _kingman_wait(rate, work_mean, work_var, traffic.arrival_cv)
    feasible = feasible & (rate * work_mean < 1)
    ttft = Ttft(np.zeros_like(b), residual, p, wait, np.asarray(service))
    return Operating("continuous", b, t_d, rate, rho, ttft, _request_tpot(steps, traffic, rate, rho, tp_mean,
                                                                          tp_var), feasible,
                     prefill_s=tp_mean)


def static(steps: Steps, traffic: Traffic, *, budget: int | None = None,
           ttft_ok: Callable[[Ttft], np.ndarray] | None = None) -> Operating:
    """Fixed batches of ``B``: prefilled together, decoded until the longest output ends."""
    b, t_d = steps.batch.astype(float), steps.decode_s
    tp_mean, _, _ = _prefill_moments(steps, traffic)
    longest = expected_longest(traffic, b)
    prefill = b * steps.token_s * traffic.input.mean + steps.request_s
    cycle = prefill + np.maximum(longest - 1, 0.0) * t_d
    rate = b / cycle
    zeros = np.zeros_like(b)
    ttft = Ttft(prefill, cycle, zeros, zeros, np.zeros((len(b), 1)))
    seen, sd_b = _batch_spread(steps)
    return Operating("static", b, t_d, rate, prefill / cycle, ttft, Tpot(seen, zeros, zeros, sd_b * 1.5 ** 0.5),
                     np.ones_like(b, dtype=bool), prefill_s=tp_mean)


def expected_longest(traffic: Traffic, batch: np.ndarray) -> np.ndarray:
    """Mean of the longest output among ``batch`` requests (the output's quantile at B / (B + 1))."""
    if traffic.output.cv == 0:
        return np.full_like(batch, traffic.output.mean, dtype=float)
    return traffic.output.quantile(batch / (batch + 1.0))


def disaggregated(steps: Steps, traffic: Traffic, *, budget: int | None = None,
                  ttft_ok: Callable[[Ttft], np.ndarray] | None = None) -> Operating:
    """Prefill replicas (M/G/1 at the highest load that meets the TTFT targets) and decode replicas."""
    b, t_d = steps.batch.astype(float), steps.decode_s
    o = max(traffic.output.mean - 1, 0.0)
    tp_mean, tp_var, tp_points = _prefill_moments(steps, traffic)
    loads = PRIORITY_LOADS
    cand = prefill_pool_ttft(steps, traffic, loads)
    p, wait, kv = cand.p, cand.wait, steps.kv_token_s * traffic.input.mean * traffic.input.unit
    ok = ttft_ok(cand) if ttft_ok is not None else np.ones_like(loads, dtype=bool)
    i = int(np.flatnonzero(ok)[-1]) if ok.any() else 0
    rho_p = float(loads[i])
    n = len(b)
    ttft = Ttft(np.zeros(n), np.zeros(n), np.full(n, p[i]), np.full(n, wait[i]),
                np.broadcast_to(tp_points + kv, (n, len(kv))))
    per_request = tp_mean / rho_p + o * t_d / b
    zeros_b = np.zeros(n)
    return Operating("disaggregated", b, t_d, 1 / per_request, tp_mean / rho_p / per_request, ttft,
                     Tpot(*_batch_spread(steps)[:1], zeros_b, zeros_b, _batch_spread(steps)[1]), np.full(n, bool(ok[i])), prefill_load=rho_p,
                     prefill_s=tp_mean)


def prefill_pool_ttft(steps: Steps, traffic: Traffic, loads: np.ndarray) -> Ttft:
    """TTFT of prefill replicas run at each load in ``loads`` (M/G/1, then the key/value transfer)."""
    tp_mean, tp_var, tp_points = _prefill_moments(steps, traffic)
    kv = steps.kv_token_s * traffic.input.mean * traffic.input.unit
    loads = np.asarray(loads, dtype=float)
    p, wait = _kingman_wait(loads / tp_mean, np.full_like(loads, tp_mean), np.full_like(loads, tp_var),
                            traffic.arrival_cv)
    zeros = np.zeros_like(loads)
    return Ttft(zeros, zeros, p, wait, np.broadcast_to(tp_points + kv, (len(loads), len(kv))))


SCHEDULERS: dict[str, Scheduler] = {"continuous": continuous, "static": static,
                                    "disaggregated": disaggregated}


@functools.cache
def scheduler_names() -> tuple[str, ...]:
    return tuple(SCHEDULERS)
