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
  request's mean TPOT is about ``t_d / (1 - rho)`` (``t_d`` at the concurrency a request sees, wider
  for bursty arrivals: :func:`peakedness`); its spread comes from the prefill work that arrives
  during its life (compound arrivals, the branching of work arriving during work: variance
  ``R T E[t_p^2] / (1 - rho)^3``), read at each output length as a gamma above ``t_d`` (or none,
  when no prompt arrives): a mixture, since a request of a few tokens decodes a few steps that the
  prompts arriving before its first step stretch most (:func:`_request_tpot`). A prompt waits for the step in
  progress (uniform), then in a GI/G/1 queue of prefill work (:func:`_gg1_wait`: those who wait wait
  GI/M/1's mean scaled by ``(c_a^2 + c_s^2) / (c_a^2 + 1)``; how many wait: Lindley's fixed point for
  non-Poisson arrivals, :func:`_lindley_table`; both exact for Poisson arrivals), then for its own
  chunks: ``t_p(L) + t_d max(1, L / (C - B))``, and for the prompts that arrive before its step starts
  and share that step, beyond the Poisson count (bursts: :func:`_arrivals_after`).
* ``static`` (fixed batches, TensorRT-LLM's and Neuron's batch sweeps): a batch is the prompts that
  arrived during the batch before, prefilled together, then decoded until its longest output ends (the
  order statistics of the output length); batch sizes and cycles vary together (a moment recursion
  with idle spells when a cycle sees no arrival, the cycle read over the batch's spread,
  :func:`_static_batches`). A request waits out a share of the cycle it arrives in (picked by its
  length), then its own batch's prefill. TPOT is the decode step at the size of its batch.
* ``disaggregated`` (DistServe, Splitwise, Dynamo): prefill replicas run prompts one at a time as an
  M/G/1 queue at load ``rho_p``; the prompt's key/value cache goes to a decode replica over the
  instance's network; decode replicas keep ``B`` requests decoding with no prefill between steps (a
  request joins at the next step: its first decode token waits out the step in progress).
  ``rho_p`` is the highest that meets the TTFT targets; a replica-equivalent serves
  ``1 / (E[t_p] / rho_p + (O - 1) t_d / B)`` requests per second.
* one output token (:func:`prefill_only`), under any of them: no decode, a GI/G/1 queue of prompts
  (:func:`prefill_queue`).

Against the discrete-event simulation of ``planning/simulate.py`` at 30-90% load:
``tests/unit/planning/test_schedulers.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from ecobench.planning.traffic import UNIT_QUANTILES, Traffic

SchedulerName = Literal["continuous", "static", "disaggregated"]
# vLLM V1's default token budget of its OpenAI server on GPUs of 70 GiB or more other than A100 (2048 on
# the others): vllm/engine/arg_utils.py, _set_default_args (github.com/vllm-project/vllm, main as of
# 2025-11); taken for every instance (an inference; set max_num_batched_tokens for another engine).
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
QUANTILE_GRID = 16  # concurrencies at which whole quantile curves are solved (interpolated in between)
SOLVE_POINTS = 8  # groups of length quantile points a TTFT quantile is solved over (one point each,
SOLVE_TAIL_STEP = 2  # but every second of the last group's: the longest prompts)
LIGHT_CONCURRENCIES = np.geomspace(1 / 64, 1, 13)[:-1]  # concurrencies below 1 (Operating.light)
SOLVE_GRID = 16  # times per round a TTFT quantile is bracketed with
SOLVE_ROUNDS = 3  # rounds: the bracket shrinks SOLVE_GRID - 1 times each
DELAY_BISECTIONS = 32  # halvings of the delay probability's bracket (to 2e-10)
CARRIED_POINTS = 4  # points of the step in progress the prompts carried with a prompt are counted at
# The delay probability of non-Poisson arrivals (_lindley_table): solved once per arrival CV at these loads
# and work CV^2s (read bilinearly in between), in fixed-point rounds, the wait of those who wait read at
# LINDLEY_U and the work at the middles of LINDLEY_EDGES' bins (even ones, then ones that narrow
# geometrically into the tail: an arrival stream smoother than the work waits only when a work
# outlasts the gap to the next arrival, a tail the even bins alone do not reach).
LINDLEY_LOADS = np.concatenate([[1e-4], np.linspace(0.04, 0.88, 22), 1 - np.geomspace(0.09, 1e-3, 8)])
LINDLEY_CS2 = np.array([0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 10.0])
LINDLEY_ROUNDS = 10
LINDLEY_U = (np.arange(16) + 0.5) / 16
LINDLEY_EDGES = np.concatenate([np.linspace(0.0, 0.75, 7), 1 - np.geomspace(1 / 8, 1e-7, 16), [1.0]])
STATIC_POINTS = (np.arange(16) + 0.5) / 16  # probabilities of the cycle a request arrives in (static)
STATIC_ROUNDS = 8  # rounds of the static batches' idle chance and variances
STATIC_MIXED_ROUNDS = 2  # the last rounds, which read the cycle over the batch's spread
STATIC_EXACT_COUNT = 24  # static: arrivals per cycle counted one by one (beyond, a gamma's CDF)
MAX_CYCLE_GAIN = 0.98  # static: the most a batch's excess carries into the next (near saturation)
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


@dataclass(frozen=True)
class Ttft:
    """TTFT = ``fixed`` + Uniform(0, ``residual``) + [waits with probability ``p``] a gamma wait of
    mean ``wait`` and shape ``shape`` + ``service`` at the input length's quantile points (a row per
    concurrency). A ``residual`` given per point too (rows, points) makes TTFT a mixture of equally
    likely points each with its own ``residual`` and ``service`` (static: the cycle a request arrives in).
    With ``bare`` (a probability per concurrency), TTFT is a mixture: with that probability a prompt
    finds no step in progress and none to share its own (no residual, ``bare_service``), else as above
    (continuous batching below concurrency 1, where a prompt often runs alone)."""

    fixed: np.ndarray
    residual: np.ndarray  # (concurrencies,) or (concurrencies, points)
    p: np.ndarray
    wait: np.ndarray
    service: np.ndarray  # (concurrencies, points)
    shape: np.ndarray | None = None  # of the wait of those who wait (None: 1, exponential)
    bare: np.ndarray | None = None  # (concurrencies,): the share of prompts that run alone
    bare_service: np.ndarray | None = None  # (concurrencies, points): their service

    def mean(self) -> np.ndarray:
        rest = self.residual.mean(axis=1) if self.residual.ndim == 2 else self.residual
        busy = rest / 2 + self.service.mean(axis=1)
        if self.bare is not None and self.bare_service is not None:
            busy = (1 - self.bare) * busy + self.bare * self.bare_service.mean(axis=1)
        return self.fixed + self.p * self.wait + busy

    def _parts(self) -> tuple[Ttft, Ttft | None]:
        """The mixture's two components (the busy one, the bare one; None without ``bare``)."""
        if self.bare is None or self.bare_service is None:
            return self, None
        busy = dataclasses.replace(self, bare=None, bare_service=None)
        return busy, dataclasses.replace(busy, residual=np.zeros_like(self.residual),
                                         service=self.bare_service)

    def same_rows(self) -> bool:
        """Whether every concurrency has the same distribution (disaggregated: TTFT is the prefill
        pool's)."""
        fields = (self.residual, self.service, self.p, self.wait, self.fixed, self.shape,  # likeliest first
                  self.bare, self.bare_service)
        return all(v is None or bool(np.all(v == v[:1])) for v in fields)

    def cdf(self, t: np.ndarray) -> np.ndarray:
        """P(TTFT <= t) for a ``t`` per concurrency."""
        return _cdf_of(self)(np.asarray(t, dtype=float)[:, None])[:, 0]

    def quantile(self, q: float) -> np.ndarray:
        """Solved on a grid of times between bounds, then on a finer grid inside the bracket found."""
        return self.quantiles([q])[0]

    def quantiles(self, qs: Sequence[float]) -> np.ndarray:
        """:meth:`quantile` at each probability of ``qs`` (a row each), solved together: one grid
        search over every (probability, concurrency) pair."""
        n = len(self.p)
        if n > 1 and self.same_rows():  # one solved for all
            return np.repeat(_rows(self, np.zeros(1, dtype=int)).quantiles(qs), n, axis=1)
        d = _rows(self, np.tile(np.arange(n), len(qs)))
        assert isinstance(d, Ttft)
        q = np.repeat(np.asarray(qs, dtype=float), n)
        tail = np.repeat([3 + math.log(1 / (1 - x)) for x in qs], n)  # how far past the mean wait
        lo = d.fixed + (d.service if d.bare_service is None else d.bare_service).min(axis=1)
        k = np.ones_like(d.p) if d.shape is None else d.shape
        spread = d.wait * (1 + tail / np.sqrt(np.minimum(k, 1.0)) * 3)
        rest = (d.residual if d.residual.ndim == 2 else d.residual[:, None]) + d.service
        hi = d.fixed + rest.max(axis=1) + spread + 1e-9
        cdf = _cdf_of(d)
        for _ in range(SOLVE_ROUNDS):
            width = hi - lo
            j = _first_at_or_past(cdf, lo, width, q)
            lo, hi = lo + width * SOLVE_U[j - 1], lo + width * SOLVE_U[j]  # the bracket's grid points
        return ((lo + hi) / 2).reshape(len(qs), n)


SOLVE_U = np.linspace(0.0, 1.0, SOLVE_GRID)  # a round's grid over its bracket
# A round's grid searched in two steps (the CDF rises with the time): every fourth point, then the
# three between the last below the quantile and the next.
SOLVE_STEP = 4
SOLVE_COARSE = np.arange(SOLVE_STEP, SOLVE_GRID - 1, SOLVE_STEP)
SOLVE_FINE = np.arange(1, SOLVE_STEP)


def _first_at_or_past(cdf: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, width: np.ndarray,
                      q: np.ndarray) -> np.ndarray:
    """Per row of the grid ``lo + width * SOLVE_U``: the first inner point whose CDF is at or past the
    row's ``q`` (1 when the first inner point is, the last point when none is) -- what counting the
    grid's points below ``q`` gives for a CDF that rises with the time, from 6 points a row instead of
    16 (only those are worked out)."""
    q = q[:, None]
    coarse = lo[:, None] + width[:, None] * SOLVE_U[SOLVE_COARSE]
    below = (cdf(coarse) < q).sum(axis=1)  # coarse points below q: all before them are too
    fine = SOLVE_STEP * below[:, None] + SOLVE_FINE
    inner = fine < SOLVE_GRID - 1  # the grid's last point only bounds the bracket
    c = cdf(lo[:, None] + width[:, None] * SOLVE_U[np.minimum(fine, SOLVE_GRID - 1)])
    return 1 + SOLVE_STEP * below + ((c < q) & inner).sum(axis=1)


def _cdf_of(d: Ttft) -> Callable[[np.ndarray], np.ndarray]:
    """The CDF of ``d`` at a matrix of times: :class:`_TtftCdf`, or the mixture of its components'."""
    busy, bare = d._parts()
    if bare is None:
        return _TtftCdf(d)
    assert d.bare is not None
    f, g, w = _TtftCdf(busy), _TtftCdf(bare), d.bare[:, None]
    return lambda t: (1 - w) * f(t) + w * g(t)


class _TtftCdf:
    """P(TTFT <= t) of a :class:`Ttft` at a matrix of times (a row per concurrency), with what does not
    depend on the time worked out once."""

    weights: np.ndarray | None = None  # of the length points (None: equally likely)

    def __init__(self, d: Ttft) -> None:
        from scipy.special import gammainc, gammaln

        self.gammainc = gammainc  # imported once per CDF, not at each of its calls
        service = d.service
        self.r = d.residual[:, None, :] if d.residual.ndim == 2 else d.residual[:, None, None]
        if d.residual.ndim == 2:  # a mixture over cycles: every point counts
            pass
        elif service.shape[1] > 1 and np.all(service[:, :1] == service):  # lengths that do not vary
            service = service[:, :1]
        elif service.shape[1] > SOLVE_POINTS:  # every few length points (the quantile moves little),
            # the last few each: a tail quantile of TTFT where few wait is the longest prompts' prefill
            n = service.shape[1]
            service, self.weights = service[:, _solve_points(n)], _solve_weights(n)
        self.fixed, self.service = d.fixed[:, None, None], service[:, None, :]
        self.p = d.p[:, None, None]
        self.k = (np.ones_like(d.p) if d.shape is None else d.shape)[:, None, None]
        self.theta = np.maximum(d.wait, 1e-30)[:, None, None] / self.k
        self.log_gamma, self.k_theta, self.no_wait = gammaln(self.k + 1), self.k * self.theta, 1 - self.p
        self.r_floor = np.maximum(self.r, 1e-30)
        self.any_wait = bool(d.p.any())
        self.has_rest = self.r > 1e-12
        self.rest = "none" if not self.has_rest.any() else "all" if self.has_rest.all() else "some"

    def f(self, x: np.ndarray) -> np.ndarray:
        """The wait's CDF."""
        waited = self.gammainc(self.k, np.maximum(x, 0) / self.theta)
        return np.where(x >= 0, 1 - self.p + self.p * waited, 0.0)

    def g(self, x: np.ndarray) -> np.ndarray:
        """The wait's CDF integrated from 0 to ``x``; P(k + 1, z) = P(k, z) - z^k e^-z / Gamma(k + 1):
        one incomplete gamma instead of two."""
        x = np.maximum(x, 0.0)
        z = x / self.theta
        pk = self.gammainc(self.k, z)
        term = np.log(z)  # in place: the same operations, fewer large temporaries
        term *= self.k
        term -= z
        term -= self.log_gamma
        np.exp(term, out=term)
        np.subtract(pk, term, out=term)
        term *= self.k_theta
        pk *= x
        pk -= term
        pk *= self.p
        out = self.no_wait * x
        out += pk
        return out

    def _mean(self, a: np.ndarray) -> np.ndarray:
        """Over the length (or cycle) points, each at its weight."""
        return _point_mean(a) if self.weights is None else a @ self.weights

    def __call__(self, t: np.ndarray) -> np.ndarray:
        """The CDF at the times ``t`` (rows, m): a mean over the length (or cycle) points."""
        r = self.r
        y = (t[:, :, None] - self.fixed) - self.service  # what is left for the waits
        if not self.any_wait:  # no wait but the uniform one: its CDF in closed form
            return self._mean(np.where(self.has_rest, np.clip(y / self.r_floor, 0.0, 1.0), y >= 0))
        if self.rest == "none":
            return self._mean(self.f(y))
        both = np.empty((2, *y.shape))  # g at y and at y - r, in one call (np.stack's copy costs more)
        both[0] = y
        np.subtract(y, r, out=both[1])
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # log(0): no wait yet
            both = self.g(both)
            uniform = (both[0] - both[1]) / self.r_floor
        if self.rest == "all":
            return self._mean(uniform)
        return self._mean(np.where(np.broadcast_to(self.has_rest, y.shape), uniform, self.f(y)))


@functools.lru_cache(maxsize=8)
def _solve_points(n: int) -> np.ndarray:
    """Which of ``n`` equally likely length points a TTFT quantile is solved over: the middle one of
    each of ``SOLVE_POINTS`` groups, but in the last group every ``SOLVE_TAIL_STEP``-th to its last."""
    step = n // SOLVE_POINTS
    tail = np.arange(n - step + SOLVE_TAIL_STEP - 1, n, SOLVE_TAIL_STEP)
    points = np.concatenate([np.arange(step // 2, n - step, step), tail])
    points.flags.writeable = False
    return points


@functools.lru_cache(maxsize=8)
def _solve_weights(n: int) -> np.ndarray:
    """The share of the ``n`` points each of :func:`_solve_points` stands for."""
    step = n // SOLVE_POINTS
    w = np.concatenate([np.full(SOLVE_POINTS - 1, step / n),
                        np.full(step // SOLVE_TAIL_STEP, SOLVE_TAIL_STEP / n)])
    w.flags.writeable = False
    return w


def _point_mean(a: np.ndarray) -> np.ndarray:
    """``a.mean(axis=2)`` (the same sum and division) without ``np.mean``'s Python-level overhead,
    which the CDF's many small calls feel."""
    return np.add.reduce(a, axis=2) / a.shape[2]


@dataclass(frozen=True)
class Tpot:
    """A request's time per output token: ``base`` plus a gamma of mean ``extra`` and SD ``sd`` (the
    prefills slotted between its steps) plus a normal of SD ``sd_batch`` (the concurrency it decodes
    at fluctuates); their deviations from the mean add up (both rise with the same arrivals). With
    ``extra`` and ``sd`` given per point (rows, points), the gamma is a mixture of equally likely ones,
    a point per output length (a short output's TPOT is a few steps, each far from the mean)."""

    base: np.ndarray
    extra: np.ndarray
    sd: np.ndarray
    sd_batch: np.ndarray
    none: np.ndarray | None = None  # (rows, points): the chance of no prefill at all (then no extra)
    weights: np.ndarray | None = None  # (points,): each point's share (shared by every row)
    # quantiles in seconds at each row, NaN where not solved yet: kept with the distribution, so the
    # operating points that share it (continuous batching's token budgets) solve each once
    solved: dict[float, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def mean(self) -> np.ndarray:
        return self.base + (self.extra @ self.weights if self.extra.ndim == 2 else self.extra)

    def quantile(self, q: float) -> np.ndarray:
        return self.quantiles([q])[0]

    def quantiles(self, qs: Sequence[float]) -> np.ndarray:
        """The quantiles at each probability of ``qs`` (a row each)."""
        from scipy.special import gammaincinv, ndtri

        q = np.asarray(qs, dtype=float)[:, None]
        dev_n = ndtri(q) * self.sd_batch
        if self.extra.ndim == 2 and self.weights is not None:
            return self.base + _gamma_mixture_quantiles(self.extra, self.sd, q[:, 0], self.none,
                                                        self.weights) + dev_n
        m, s = np.maximum(self.extra, 1e-30), np.maximum(self.sd, 1e-30)
        k = np.clip((m / s) ** 2, 1e-3, 1e6)
        dev_g = np.where(self.sd > 1e-12, gammaincinv(k, q) * m / k - m, 0.0)
        return self.base + self.extra + dev_g + dev_n


MIXTURE_FIRST = 4.0 ** -np.arange(4)[::-1]  # a gamma mixture's quantile: a first grid, by quarters below a
MIXTURE_STEPS = 7  # bound, then Newton steps (bisections where one leaves the bracket)


def _gamma_mixture_quantiles(mean: np.ndarray, sd: np.ndarray, qs: np.ndarray, none: np.ndarray | None,
                             weights: np.ndarray) -> np.ndarray:
    """The quantiles ``qs`` (a row each) of a mixture (a row each: a mean and SD per point, ``weights``
    the points' shares) of gammas, each 0 with chance ``none`` (then a gamma of the mean and variance
    given some). The mixture's CDF on a grid of quarters below the highest of the points' Cantelli
    bounds ``m + s sqrt(q / (1 - q))`` (of the given moments; where that holds less than ``q``, of the
    gamma each is read as too) brackets it; Newton's method narrows the bracket (a step that leaves it
    bisects it), from the Wilson-Hilferty quantile of one gamma of the mixture's mean and variance where
    the bracket holds that, else from the log-linear point between the bracket's CDFs.
    Within 0.1% of a bisection's quantile (with the TPOT's base; worst 0.02%, measured 2026-11-27 on the
    test's traffic: output CVs 0.5 and 1.5, arrival CVs 0.01-1.5, every concurrency, quantiles 0.5, 0.9
    and 0.99; 6 steps: 0.9%)."""
    from scipy.special import gammainc, gammaln, ndtri

    p0 = np.zeros_like(mean) if none is None else np.minimum(none, 1 - 1e-9)
    m = np.maximum(mean / (1 - p0), 1e-30)
    s2 = np.maximum((sd * sd + mean * mean) / (1 - p0) - m * m, 1e-60)
    k = np.clip(m * m / s2, 1e-3, 1e6)
    per_theta = k / m
    w = ((1 - p0) * weights)[..., None]  # (rows, points, 1): each gamma's share
    log_norm = np.log(per_theta) - gammaln(k)
    at_zero = p0 @ weights
    q = qs[:, None]
    z = np.sqrt(q[..., None] / (1 - q[..., None]))

    def on_grid(bound: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # (qs, rows, grid): times, CDF
        grid = (bound + 1e-12)[..., None] * MIXTURE_FIRST
        return grid, at_zero[:, None] + (gammainc(k[:, None, :], grid[..., None] * per_theta[:, None, :])
                                         @ w)[..., 0]

    grid, c = on_grid((mean + sd * z).max(axis=2))
    # Where a point's given variance is below what its chance of no prefill implies (sd^2 < mean^2 p0 /
    # (1 - p0), at a rate so low that a prompt seldom arrives), the gamma it is read as is a spike beyond
    # that bound, which then holds less than q and brackets nothing: there, the gammas' own Cantelli
    # bounds too (each gamma holds at least q below its own, so the mixture does).
    if (short := c[..., -1] < q).any():
        wide = on_grid(np.maximum(mean + sd * z, m + m / np.sqrt(k) * z).max(axis=2))
        grid, c = (np.where(short[..., None], new, old) for new, old in zip(wide, (grid, c), strict=True))
    j = np.add.reduce(c < q[..., None], axis=2)[..., None]  # the first at or past q (none below: 0)
    hi, c_hi = np.take_along_axis(grid, j, 2)[..., 0], np.take_along_axis(c, j, 2)[..., 0]
    first = j[..., 0] == 0
    below = np.maximum(j - 1, 0)
    lo = np.where(first, 0.0, np.take_along_axis(grid, below, 2)[..., 0])
    c_lo = np.where(first, at_zero, np.take_along_axis(c, below, 2)[..., 0])
    share = np.clip((q - c_lo) / np.maximum(c_hi - c_lo, 1e-300), 0.0, 1.0)
    x = np.where(first, hi * share, lo * (hi / np.maximum(lo, 1e-300)) ** share)
    m_all = mean @ weights
    var_all = np.maximum((sd * sd + mean * mean) @ weights - m_all * m_all, 0.0)
    a = var_all / (9 * np.maximum(m_all, 1e-30) ** 2)  # 1 / (9 k) of one gamma of the mixture's moments
    one = m_all * np.maximum(1 - a + ndtri(q) * np.sqrt(a), 0.0) ** 3
    x = np.where((one > lo) & (one < hi), one, x)
    k1 = k - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(MIXTURE_STEPS):
            z = x[..., None] * per_theta
            c = at_zero + (gammainc(k, z)[..., None, :] @ w)[..., 0, 0]
            d = (np.exp(k1 * np.log(z) - z + log_norm)[..., None, :] @ w)[..., 0, 0]
            under = c < q
            lo, hi = np.where(under, x, lo), np.where(under, hi, x)
            step = x + (q - c) / d
            x = np.where((step >= lo) & (step <= hi), step, (lo + hi) / 2)
    return x


@dataclass
class Operating:
    """A replica under a scheduler at each candidate concurrency ``batch`` (arrays)."""

    scheduler: str
    batch: np.ndarray
    decode_s: np.ndarray
    rate_per_s: np.ndarray  # requests per second a replica (or replica-equivalent) carries
    prefill_share: np.ndarray  # share of the replica's time prefilling
    ttft_rows: Callable[[np.ndarray], Ttft]  # TTFT at the concurrencies of an index (worked out there only)
    tpot: Tpot
    feasible: np.ndarray  # the scheduler can run at this concurrency (prefill keeps up, budget left)
    prefill_load: float | None = None  # disaggregated: load of the prefill replicas
    prefill_s: float = 0.0  # a mean prompt's prefill (seconds)
    # the most the prefills add to a TPOT (s, per concurrency): under a token budget a step carries at
    # most its room of prompt tokens, so every output length's extra, and the mixture's quantile, is
    # at most that (applied to the shared Tpot's quantiles as they are read: None, no bound)
    tpot_most: np.ndarray | None = None
    # quantiles in seconds at each concurrency, NaN where not solved yet (solved once each)
    _solved: dict[tuple[str, float], np.ndarray] = field(default_factory=dict, repr=False)
    # The same scheduler with concurrencies below 1 too (a replica idle between requests), built when
    # first asked for (:meth:`light`): where the rate is below batch 1's, its latencies are those of
    # that rate, not of batch 1's (a replica at the load of one request always in flight).
    light_factory: Callable[[], Operating] | None = field(default=None, repr=False)  # set by continuous
    _light: Operating | None = field(default=None, repr=False)

    def light(self) -> Operating | None:
        """This scheduler at concurrencies from ``LIGHT_CONCURRENCIES`` up (None: not modelled)."""
        if self._light is None and self.light_factory is not None:
            self._light = self.light_factory()
        return self._light

    @property
    def ttft(self) -> Ttft:
        """TTFT at every concurrency."""
        return self.ttft_rows(np.arange(len(self.batch)))

    def _at(self, metric: str, idx: np.ndarray) -> Ttft | Tpot:
        """``ttft`` or ``tpot`` at the concurrencies of index ``idx``."""
        return self.ttft_rows(idx) if metric == "ttft" else _rows(self.tpot, idx)

    def solve(self, metric: str, qs: Sequence[float], idx: np.ndarray) -> list[np.ndarray]:
        """The quantiles ``qs`` of ``metric`` (seconds) at every concurrency, solved together at those
        of index ``idx`` where any is not solved yet (a concurrency's quantile does not depend on the
        others solved with it); NaN where not solved."""
        store = self.tpot.solved if metric == "tpot" else self._solved
        solved = [store.setdefault(q if metric == "tpot" else (metric, q), np.full(len(self.batch), np.nan))
                  for q in qs]
        todo = np.unique(idx[np.any([np.isnan(v[idx]) for v in solved], axis=0)]) if qs else idx[:0]
        if len(todo):
            for v, new in zip(solved, self._at(metric, todo).quantiles(qs), strict=True):
                v[todo] = np.where(np.isnan(v[todo]), new, v[todo])
        if metric == "tpot" and self.tpot_most is not None:  # TPOT = base + extra + a normal's deviation
            from scipy.special import ndtri

            t = self.tpot
            return [np.minimum(v, t.base + self.tpot_most + ndtri(q) * t.sd_batch) for q, v in zip(qs, solved,
                                                                                               strict=True)]
        return solved

    def latency_at(self, metric: str, stat: str | float, idx: np.ndarray) -> np.ndarray:
        """``ttft`` or ``tpot`` in ms at the concurrencies of index ``idx`` only (solved there)."""
        return self.latencies_at(metric, [stat], idx)[0]

    def latencies_at(self, metric: str, stats: Sequence[str | float], idx: np.ndarray) -> list[np.ndarray]:
        """:meth:`latency_at` of each statistic of ``stats``, the quantiles solved together."""
        idx = np.atleast_1d(np.asarray(idx, dtype=int))
        qs = [float(s) for s in dict.fromkeys(stats) if s != "mean"]
        solved = dict(zip(qs, self.solve(metric, qs, idx), strict=True))
        mean = self._at(metric, idx).mean() if "mean" in stats else None
        return [1e3 * np.asarray(mean if s == "mean" else solved[float(s)][idx], dtype=float) for s in stats]

    def latency_ms(self, metric: str, stat: str | float, rows: np.ndarray | None = None) -> np.ndarray:
        """``ttft`` or ``tpot`` in ms at every concurrency (or at those of index ``rows``): ``stat``
        ``"mean"`` or a probability (the quantiles are solved at ``QUANTILE_GRID`` concurrencies and
        interpolated between them)."""
        return self.latencies_ms(metric, [stat], rows)[0]

    def grid_rows(self) -> np.ndarray:
        """The concurrencies (indices) at which quantile curves are solved: ``QUANTILE_GRID`` of them."""
        n = len(self.batch)
        return geometric_rows(n, min(n, QUANTILE_GRID))

    def latencies_ms(self, metric: str, stats: Sequence[str | float],
                     rows: np.ndarray | None = None) -> list[np.ndarray]:
        """:meth:`latency_ms` of each statistic of ``stats``; the quantiles not solved before are solved
        together, at the grid concurrencies that ``rows`` are interpolated between only."""
        x = np.arange(len(self.batch)) if rows is None else np.atleast_1d(np.asarray(rows, dtype=int))
        grid = self.grid_rows()
        qs = [float(s) for s in dict.fromkeys(stats) if s != "mean"]
        around = grid if rows is None else _around(grid, x)  # the grid rows read
        solved = dict(zip(qs, self.solve(metric, qs, around), strict=True))
        mean = self._at(metric, x).mean() if "mean" in stats else None
        return [1e3 * np.asarray(mean if s == "mean" else np.interp(x, grid, solved[float(s)][grid]),
                                 dtype=float) for s in stats]


def _around(grid: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rows of ``grid`` (ascending, from the first row to the last) that interpolating at ``rows``
    reads: a row's neighbours on the grid, or the row itself where it is on the grid."""
    j = np.searchsorted(grid, rows, side="right") - 1
    on = grid[j] == rows
    return np.unique(np.concatenate([grid[j], grid[np.minimum(j + 1, len(grid) - 1)][~on]]))


@functools.lru_cache(maxsize=1024)
def geometric_rows(n: int, points: int) -> np.ndarray:
    """Indices of ``points`` rows of ``n``, geometrically spaced from the first to the last (fewer where
    they round to the same row), at which a curve is solved and interpolated between (read-only:
    shared between calls)."""
    idx = np.unique(np.round(np.geomspace(1, n, points)).astype(int) - 1)
    idx.flags.writeable = False
    return idx


def _rows(d: Ttft | Tpot, idx: np.ndarray) -> Ttft | Tpot:
    """The distribution at the concurrencies ``idx`` only."""
    return type(d)(**{k: getattr(d, k) if getattr(d, k) is None or k == "weights"  # type: ignore[arg-type]
                      else np.asarray(getattr(d, k))[idx] for k in d.__dataclass_fields__ if k != "solved"})


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


def _delay_probability(rho: np.ndarray, arrival_cv: float) -> np.ndarray:
    """Probability that an arrival waits in a GI/G/1 queue at load ``rho``, read as in GI/M/1: the
    root ``sigma`` in (0, 1) of ``sigma = A*((1 - sigma) / E[S])`` (``A*``: the Laplace transform of the
    gamma inter-arrival time of CV ``arrival_cv``; ``rho`` for Poisson arrivals), by bisection."""
    rho = np.clip(np.asarray(rho, dtype=float), 1e-12, 1 - 1e-9)
    if arrival_cv == 1.0:
        return rho
    k = 1.0 / arrival_cv ** 2 if arrival_cv > 0 else math.inf
    # The bracket's middle and half-width: both dyadic (exact), so stepping the middle by the half-width
    # gives the bisection's brackets exactly, with fewer array operations than keeping both ends.
    mid, step = np.full_like(rho, 0.5), 0.25
    for _ in range(DELAY_BISECTIONS):
        s = (1 - mid) / rho  # the transform's argument over the arrival rate
        a = np.exp(-s) if math.isinf(k) else np.exp(-k * np.log1p(s / k))
        mid += np.where(mid < a, step, -step)  # the root is above the middle, or not
        step /= 2
    return mid


def _gg1_wait(rate: np.ndarray, work_mean: np.ndarray, work_var: np.ndarray, arrival_cv: float,
              third: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(probability of waiting, mean wait of those who wait, gamma shape of that wait) in a GI/G/1
    queue of work with gamma inter-arrival times. Those who wait wait ``(c_a^2 + c_s^2) / (c_a^2 + 1)
    E[S] / (1 - sigma_M)`` on average, GI/M/1's (exact for exponential work: ``E[S] / (1 - sigma_M)``)
    scaled by the two moments, with GI/M/1's delay probability ``sigma_M`` (:func:`_delay_probability`;
    with ``sigma_M = rho`` Pollaczek-Khinchine's for M/G/1). They are ``rho`` of the arrivals for Poisson
    arrivals (exact for M/G/1), otherwise ``sigma_M`` corrected for the work's spread
    (:func:`_lindley_delay`); the mean wait is their share times their wait, so it follows the corrected
    delay probability (as ``c_a -> 0`` and the corrected one goes to none, the wait does too: a D/G/1
    queue at load ``rho < 1`` whose work rarely outlasts a gap between arrivals). Against a GI/G/1
    Lindley recursion (400,000 arrivals, gamma work; measured 2026-11-27), the wait of those who wait
    in mean works, this / simulated: arrival CV 0.01, work CV^2 0.25, loads 0.3, 0.6, 0.9: 0.26 / 0.29,
    0.37 / 0.42, 1.29 / 1.31; CV 0.5, work CV^2 0: 0.22 / 0.24, 0.35 / 0.36, 1.28 / 1.26; CV 1.5, work
    CV^2 0: 1.39 / 1.39, 2.63 / 2.66, 11.1 / 10.6. The shape of the wait of those who wait is the M/G/1
    queue's at the delay probability (:func:`_wait_shape`)."""
    rho = np.clip(rate * work_mean, 0.0, 1 - 1e-9)
    cs2 = work_var / np.maximum(work_mean, 1e-30) ** 2
    sigma_m = _delay_probability(rho, arrival_cv)
    waited = _waited_wait(sigma_m, cs2, arrival_cv) * work_mean
    sigma = sigma_m
    if arrival_cv != 1.0:
        sigma = np.clip(sigma + _lindley_delay(rho, cs2, arrival_cv), 1e-12, 1 - 1e-9)
    return sigma, waited, _wait_shape(sigma, cs2, third)


def _waited_wait(sigma_m: np.ndarray, cs2: np.ndarray, arrival_cv: float) -> np.ndarray:
    """The mean wait of those who wait in a GI/G/1 queue, in mean works: GI/M/1's ``1 / (1 - sigma_M)``
    scaled by ``(c_a^2 + c_s^2) / (c_a^2 + 1)`` (:func:`_gg1_wait`)."""
    ca2 = arrival_cv ** 2
    return (ca2 + cs2) / (ca2 + 1) / (1 - sigma_m)


def _wait_shape(sigma: np.ndarray, cs2: np.ndarray, third: float | np.ndarray) -> np.ndarray:
    """The gamma shape of the wait of those who wait, from the M/G/1 queue at load ``sigma`` (its
    second moment ``E[W^2] = 2 E[W]^2 + R E[S^3] / (3 (1 - rho))``; ``third``: E[S^3] / E[S]^3)."""
    m_wait = sigma / (1 - sigma) * (1 + cs2) / 2
    second = 2 * m_wait ** 2 + sigma * third / (3 * (1 - sigma))
    cond = m_wait / np.maximum(sigma, 1e-12)
    cv2 = second / np.maximum(sigma, 1e-12) / np.maximum(cond, 1e-30) ** 2 - 1
    return 1 / np.clip(cv2, 0.05, 20.0)


def _lindley_delay(rho: np.ndarray, cs2: np.ndarray, arrival_cv: float) -> np.ndarray:
    """How much more often than in GI/M/1 an arrival waits in a GI/G/1 queue of work of squared CV
    ``cs2`` (:func:`_lindley_table`, read bilinearly at the load ``rho`` and ``cs2``)."""
    table = _lindley_table(float(arrival_cv))
    x = np.interp(rho, LINDLEY_LOADS, np.arange(len(LINDLEY_LOADS), dtype=float))
    y = np.interp(cs2, LINDLEY_CS2, np.arange(len(LINDLEY_CS2), dtype=float))
    x0 = np.minimum(np.floor(x).astype(int), len(LINDLEY_LOADS) - 2)
    y0 = np.minimum(np.floor(y).astype(int), len(LINDLEY_CS2) - 2)
    fx, fy = x - x0, y - y0
    lo = (1 - fx) * table[y0, x0] + fx * table[y0, x0 + 1]
    hi = (1 - fx) * table[y0 + 1, x0] + fx * table[y0 + 1, x0 + 1]
    return (1 - fy) * lo + fy * hi


@functools.lru_cache(maxsize=64)
def _lindley_table(arrival_cv: float) -> np.ndarray:
    """The delay probability of a GI/G/1 queue of gamma inter-arrival times ``A`` less GI/M/1's, at each
    work CV^2 of ``LINDLEY_CS2`` (rows) and load of ``LINDLEY_LOADS`` (columns), from Lindley's recursion
    (D. V. Lindley, "The theory of queues with a single server", Proc. Cambridge Philos. Soc. 48(2),
    277-289, 1952: ``W' = max(0, W + S - A)``, so an arrival waits with chance ``P(A < W + S)``, the one
    before it waiting ``W`` and bringing ``S``) solved as a fixed point, ``W`` read as :func:`_gg1_wait`'s
    wait (none with chance ``1 - sigma``, else a gamma of the mean wait of those who wait) and ``S`` as a
    gamma of the work's CV at the middles of ``LINDLEY_EDGES``' bins. Bursty arrivals (CV > 1): ``W`` at
    ``LINDLEY_U`` points, ``A``'s CDF whole. Smoother ones (CV < 1) wait only when the work (and wait)
    before outlasts a gap, a tail of ``S`` and ``W``: the gaps at ``LINDLEY_U`` points (all one gap at CV
    0), ``W``'s and ``S``'s survival whole. With exponential work (the wait of those who wait then
    exponential) this is near GI/M/1's equation ``sigma = A*((1 - sigma) / E[S])``, which it starts
    from. Against a simulated GI/D/1 queue (work of one length; measured 2026-11-26, 200,000-400,000
    arrivals; this column 2026-11-27), this / GI/M/1's / simulated delay probability: arrival CV 1.5,
    loads 0.3, 0.6, 0.9: 0.525 / 0.500 / 0.527, 0.752 / 0.737 / 0.756, 0.939 / 0.938 / 0.941; CV 0.5:
    0.035 / 0.108 / 0.036, 0.269 / 0.422 / 0.272, 0.776 / 0.843 / 0.774; CV 2: 0.668 / 0.647 / 0.672,
    0.834 / 0.823 / 0.836, 0.961 / 0.959 / 0.962. Against a GI/G/1 Lindley recursion with gamma work
    (400,000 arrivals, 2026-11-27): arrival CV 0.01, work CV^2 1, loads 0.3, 0.6, 0.9: 0.041 / 0.041 /
    0.041, 0.327 / 0.324 / 0.326, 0.808 / 0.807 / 0.811 (1e-12 at load 0.3 with the work at eight even
    points and ``A``'s CDF: no point reached the gap); work CV^2 0.25: 0.0003 / 0.041 / 0.0008, 0.121 /
    0.324 / 0.127, 0.701 / 0.807 / 0.693."""
    from scipy.special import gammainc, gammaincc, gammaincinv

    rho = np.tile(LINDLEY_LOADS, len(LINDLEY_CS2))
    cs2 = np.repeat(LINDLEY_CS2, len(LINDLEY_LOADS))
    k_s = 1 / np.maximum(cs2, 1e-3)
    mids, weights = (LINDLEY_EDGES[:-1] + LINDLEY_EDGES[1:]) / 2, np.diff(LINDLEY_EDGES)
    units = np.where(cs2[:, None] > 0, gammaincinv(k_s[:, None], mids[None, :]) / k_s[:, None], 1.0)
    units /= (units * weights).sum(axis=1, keepdims=True)
    third = (1 + cs2) * (1 + 2 * cs2)  # E[S^3] / E[S]^3 of the gamma
    k_a = 1.0 / arrival_cv ** 2 if arrival_cv > 0 else math.inf
    lam = rho[:, None, None]  # arrivals per mean work

    def arrived_by(v: np.ndarray) -> np.ndarray:  # P(A <= v), v in mean works
        return (v >= 1 / lam).astype(float) if math.isinf(k_a) else gammainc(k_a, v * lam * k_a)

    sigma_m = _delay_probability(rho, arrival_cv)
    waited_wait = _waited_wait(sigma_m, cs2, arrival_cv)
    smooth = arrival_cv < 1
    gaps = (gammaincinv(k_a, LINDLEY_U) / k_a if k_a < 1e8 else np.ones_like(LINDLEY_U)) / lam[:, :, 0]
    if smooth:  # the one before did not wait: its work outlasts the gap
        no_wait = np.where(cs2 > 0, gammaincc(k_s[:, None], gaps * k_s[:, None]).mean(axis=1),
                           arrived_by(np.ones_like(lam))[:, 0, 0])
    else:
        no_wait = (arrived_by(units[:, None, :]) * weights).sum(axis=2)[:, 0]
    sigma = sigma_m
    for _ in range(LINDLEY_ROUNDS):
        shape = _wait_shape(sigma, cs2, third)
        if smooth:  # its wait outlasts the gap less its work
            scale = shape / np.maximum(waited_wait, 1e-30)  # of the gamma wait of those who wait
            left = np.maximum(gaps[:, :, None] - units[:, None, :], 0.0) * scale[:, None, None]
            waited = (gammaincc(shape[:, None, None], left) * weights).sum(axis=2).mean(axis=1)
        else:
            w = gammaincinv(shape[:, None], LINDLEY_U[None, :]) * (waited_wait / shape)[:, None]
            waited = (arrived_by(w[:, :, None] + units[:, None, :]) * weights).sum(axis=2).mean(axis=1)
        sigma = np.clip((1 - sigma) * no_wait + sigma * waited, 1e-12, 1 - 1e-9)
    table = (sigma - sigma_m).reshape(len(LINDLEY_CS2), len(LINDLEY_LOADS))
    table.flags.writeable = False
    return table


def _arrival_terms(most: np.ndarray) -> int:
    """The arrivals :func:`_arrivals_after` counts per row: as many as the most any row counts (rows
    worked out apart sum the same terms, so the same floating-point sum, as all rows together)."""
    return int(np.ceil(most.max())) if most.max() > 0 else 0


def _arrivals_after(rate: np.ndarray, arrival_cv: float, residual: np.ndarray, p: np.ndarray,
                    wait: np.ndarray, most: np.ndarray, terms: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean number of prompts that arrive after a prompt and before its chunked step starts (they are
    carried in the same step, so its first token waits for their prefill too), at most ``most``, for
    gamma inter-arrival times of CV ``arrival_cv`` and for Poisson arrivals (CV 1), on the same grid:
    the renewal count ``E[min(N(s), m)] = sum_{n <= m} P(S_n <= s)`` (``S_n``: the n-th arrival after
    it, a gamma of shape ``n k``), averaged over the start ``s`` = the rest of the step in progress
    (uniform) plus, with probability ``p``, the mean queue wait. Bursty arrivals (``k < 1``) come in
    clusters, so this is far above ``rate * s``."""
    from scipy.special import gammainc

    k = np.array([1.0 / arrival_cv ** 2 if arrival_cv > 0 else 1e6, 1.0])  # bursty, Poisson
    u = (np.arange(CARRIED_POINTS) + 0.5) / CARRIED_POINTS
    s = residual[:, None] * u[None, :]  # (rows, points): the rest of the step in progress
    m = np.maximum(most, 0.0)
    n = np.arange(1, terms + 1, dtype=float)  # the arrivals counted (:func:`_arrival_terms`)
    # the n-th arrival counts fully up to the whole prompts that fit, a fraction for the chunk after
    weight = np.clip(m[:, None] - (n[None, :] - 1), 0.0, 1.0)[:, None, :]  # (rows, 1, n)
    shape = n[None, :] * k[:, None]  # (2, n)
    theta = 1.0 / (np.maximum(rate, 1e-30)[None, :] * k[:, None])  # (2, rows)

    def count(t: np.ndarray) -> np.ndarray:  # (2, rows, points)
        return (weight * gammainc(shape[:, None, None, :], t[None, :, :, None] / theta[:, :, None, None])
                ).sum(axis=3)

    both = (1 - p) * count(s).mean(axis=2) + p * count(s + wait[:, None]).mean(axis=2)
    return both[0], both[1]


def _third(traffic: Traffic) -> float:
    """E[L^3] / E[L]^3 of the input length (the prefill work's third moment)."""
    return float(np.mean(traffic.input.unit ** 3))


def per_concurrency(batch: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` given at the concurrencies ``batch`` (a grid), at every whole concurrency 1..max."""
    return np.interp(np.arange(1, int(batch[-1]) + 1, dtype=float), batch, values)


def concurrency_seen(rate: np.ndarray, capacity: np.ndarray, peakedness: float = 1.0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(mean, SD) of the concurrency a request sees at each arrival rate ``rate``, from the
    flow-equivalent server of the replica: a birth-death chain over the concurrency ``n`` with births
    at ``rate`` and completions at ``capacity[n - 1]`` (the closed form's requests per second at
    concurrency ``n``), read size-biased (a request is one of the ``n``). Bursty arrivals: each step's
    log ratio ``ln(rate / capacity)`` over the ``peakedness`` (:func:`peakedness`), the chain of a
    diffusion whose noise is that much larger (variance ``z`` times the Poisson chain's near its mode;
    a flatter chain spends longer at the high concurrencies where steps are slow and the slots fill)."""
    rate = np.asarray(rate, dtype=float)
    if len(rate) > 2 * QUANTILE_GRID:  # solved at a grid of rates, interpolated in between
        idx = geometric_rows(len(rate), 2 * QUANTILE_GRID)
        m, sd = concurrency_seen(rate[idx], capacity, peakedness)
        return np.interp(rate, rate[idx], m), np.interp(rate, rate[idx], sd)
    n = np.arange(1, len(capacity) + 1, dtype=float)
    lam = rate[:, None]
    log_pi = np.concatenate([np.zeros((lam.shape[0], 1)),
                             np.cumsum(np.log(np.maximum(lam, 1e-300)) - np.log(capacity)[None, :], axis=1)
                             / peakedness],
                            axis=1)
    pi = np.exp(log_pi - log_pi.max(axis=1, keepdims=True))[:, 1:]
    w = n[None, :] * pi
    w /= w.sum(axis=1, keepdims=True)
    mean = (w * n).sum(axis=1)
    return mean, np.sqrt(np.maximum((w * n * n).sum(axis=1) - mean ** 2, 0.0))


def peakedness(traffic: Traffic) -> float:
    """Var / mean of the number of requests in flight when they arrive as the traffic's renewal stream
    and each stays for a life in proportion to its output: ``z = 1 + (c_a^2 - 1) eta``, ``eta =
    int (1 - G(t))^2 dt / E[S] = E[min(S_1, S_2)] / E[S]`` (``G``: the life's distribution, read at the
    output's quantile points). It is derived here, and has the form of the infinite-server queue's
    heavy-traffic peakedness (recalled from W. Whitt, "Heavy-traffic approximations for service systems
    with blocking", AT&T Bell Lab. Tech. J. 63(5), 1984; not re-read, no copy reachable from here):
    the count ``N(t) = int 1{S > t - a} dA(a)`` has variance ``R int G(1 - G) + c_a^2 R int (1 - G)^2``
    when arrivals in a window have variance ``c_a^2`` times their mean. 1 for Poisson arrivals (the
    birth-death chain of :func:`concurrency_seen` then holds as it is); ``c_a^2`` for outputs of one
    length."""
    if traffic.arrival_cv == 1.0:
        return 1.0
    u = traffic.output.unit
    eta = float(np.minimum(u[:, None], u[None, :]).mean() / u.mean())
    return 1.0 + (traffic.arrival_cv ** 2 - 1.0) * eta


TPOT_SHORT_POINTS = 6  # output length points a TPOT mixture reads one by one, from the shortest,
TPOT_GROUPS = 3  # then the rest in this many groups (each its middle point, weighed by its share)


@functools.lru_cache(maxsize=256)
def _decoded_points(traffic: Traffic) -> tuple[np.ndarray, np.ndarray]:
    """(decode tokens, weight) of a request at quantile points of the output: only a request of two
    tokens or more has a TPOT (vllm bench serve's rule; a length rounds to whole tokens, so one of 1.5
    or more), and its decode tokens are its output less the first, so the points are ``UNIT_QUANTILES``
    of the output given at least 1.5 tokens. The shortest ``TPOT_SHORT_POINTS`` each (a short output's
    TPOT is a few steps, far from the mean: they make the tail), the rest in ``TPOT_GROUPS`` groups (the
    middle point of each, weighed by its share); one point where every request decodes as many tokens
    (read-only: shared by equal traffic)."""
    out = traffic.output
    if out.samples is not None:  # a CSV's: the quantiles of its rows of 1.5 tokens or more
        rows = np.asarray(out.samples)
        tokens = np.quantile(rows[rows >= 1.5], UNIT_QUANTILES) if np.any(rows >= 1.5) else np.ones(1)
    else:
        tokens = out.quantile(out.cdf(1.5) + (1 - out.cdf(1.5)) * UNIT_QUANTILES)
    n = np.maximum(np.round(tokens) - 1, 1.0)
    if np.all(n == n[0]):
        n, w = n[:1], np.ones(1)
    else:
        groups = np.array_split(np.arange(TPOT_SHORT_POINTS, len(n)), TPOT_GROUPS)
        mids = [g[len(g) // 2] for g in groups]
        w = np.concatenate([np.ones(TPOT_SHORT_POINTS), [len(g) for g in groups]]) / len(n)
        n = np.concatenate([n[:TPOT_SHORT_POINTS], n[mids]])
    n.flags.writeable = w.flags.writeable = False
    return n, w


def _request_tpot(steps: Steps, traffic: Traffic, rate: np.ndarray, rho: np.ndarray, tp_mean: float,
                  tp_var: float, first_s: np.ndarray | None = None, first_var: np.ndarray | float = 0.0,
                  chunked: bool = False) -> Tpot:
    """TPOT of a request when prefills of arriving prompts are slotted between its decode steps: the
    decode step at the concurrency it sees (:func:`concurrency_seen` at the arrivals' :func:`peakedness`;
    near saturation the concurrency changes more slowly than a request lives, so its life sees the whole
    spread), stretched by the prefills, at each output length point (a mixture: a short output's TPOT is
    a few steps, each far from the mean). A request of ``n`` decode tokens carries the prompts that
    arrive before its first decode step, during ``first_s`` (mean; variance ``first_var``: its TTFT
    unchunked, the step that finishes its prompt chunked; under a renewal stream, the time over which the
    rate brings as many as arrive then, :func:`renewal_count`), and during each of its steps but the last.
    Unchunked, prefills run until no prompt waits (the branching of work arriving during work: mean
    ``rho / (1 - rho)`` per second of arrivals, variance ``R X E[t_p^2] / (1 - rho)^3`` over the ``X =
    first_s + (n - 1) t_d`` they arrive in). Chunked, a step carries what arrived during the step
    before (``a_i = t_d + rho a_(i-1)`` on average, ``a_-1 = first_s``), so the branching runs for ``n``
    steps only. No prompt arrives with chance ``exp(-kappa R X)`` (the count a negative binomial,
    ``kappa`` as in :func:`_static_batches`, at most 50 for a near-regular stream); the rest is a gamma
    of the mean and variance given some."""
    t_d, sd_b = _continuous_seen(steps, traffic)
    n, w = _decoded_points(traffic)
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
    kappa = 1.0 if abs(ca2 - 1) < 1e-9 else (50.0 if ca2 < 1e-6 else min(math.log(ca2) / (ca2 - 1), 50.0))
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


def _with_light(steps: Steps) -> Steps:
    """``steps`` with the concurrencies ``LIGHT_CONCURRENCIES`` below its first (1) before them, a
    decode step there as long as at batch 1 (whatever runs, runs as one request)."""
    light = LIGHT_CONCURRENCIES[LIGHT_CONCURRENCIES < steps.batch[0]]
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
    p, wait, shape = _gg1_wait(rate, work_mean, work_var, traffic.arrival_cv, _third(traffic))
    feasible = feasible & (rate * work_mean < 1)
    alone = np.broadcast_to(tp_points, (len(b), len(tp_points)))  # a prompt's step with no decode
    bare = (1 - decoding, alone) if light.any() else (None, None)
    ttft = Ttft(np.zeros_like(b), residual, p, wait, np.asarray(service), shape, *bare)
    ttft_rows = functools.partial(_rows, ttft)
    if budget is not None and traffic.arrival_cv != 1.0:  # prompts arriving before its step starts share it
        most = (room - li.mean) / li.mean
        terms = _arrival_terms(most)

        def later_s(rows: np.ndarray) -> np.ndarray:  # their prefill, beyond (or short of) Poisson's
            bursty, poisson = _arrivals_after(rate[rows], traffic.arrival_cv, residual[rows], p[rows],
                                              wait[rows], most[rows], terms)
            return tp_mean * (bursty - poisson)

        ttft_rows = _with_later(ttft, _RowCache(len(b), later_s), tp_points)
    if budget is None:  # the prompts that arrive during its TTFT are prefilled before its first step
        first_s, first_var = ttft.mean(), _ttft_var(ttft)
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


RENEWAL_U = np.concatenate([[0.0], np.geomspace(1e-4, 1e3, 141)])  # arrivals per mean gap, tabulated


@functools.lru_cache(maxsize=64)
def renewal_count(arrival_cv: float) -> Callable[[np.ndarray], np.ndarray]:
    """The mean number of arrivals within ``u`` mean gaps after an arrival of a renewal stream of gamma
    gaps of CV ``arrival_cv`` (the renewal function ``M(u) = sum_n P(S_n <= u)``, ``S_n`` a gamma of
    shape ``n k``; ``u`` for Poisson arrivals, about ``u + (c_a^2 - 1) / 2`` once ``u`` is large),
    tabulated at ``RENEWAL_U`` and read linearly in between."""
    from scipy.special import gammainc

    k = 1.0 / max(arrival_cv, 1e-3) ** 2
    u = RENEWAL_U
    n = np.arange(1, int((k * u[-1] + 8 * math.sqrt(k * u[-1]) + 20) / k) + 2, dtype=float)
    table = gammainc(n[None, :] * k, k * u[:, None]).sum(axis=1)
    return lambda x: np.interp(x, u, table, right=float(table[-1])) + np.maximum(np.asarray(x) - u[-1], 0.0)


def _ttft_var(d: Ttft) -> np.ndarray:
    """The variance of a :class:`Ttft` of one residual per concurrency (its busy component: the
    uniform rest of a step, the gamma wait of those who wait, the service over the length points)."""
    k = np.ones_like(d.p) if d.shape is None else d.shape
    waited = d.p * d.wait ** 2 * (1 + 1 / k) - (d.p * d.wait) ** 2
    return d.residual ** 2 / 12 + waited + d.service.var(axis=1)


def _with_later(ttft: Ttft, later_s: Callable[[np.ndarray], np.ndarray],
                own_s: np.ndarray) -> Callable[[np.ndarray], Ttft]:
    """``ttft_rows`` of ``ttft`` with ``later_s(rows)`` seconds added to every point's service (fewer
    where a smoother stream than Poisson brings fewer prompts to share the step), never below the
    prompt's own prefill ``own_s`` (at each length point)."""

    def ttft_rows(rows: np.ndarray) -> Ttft:
        d = _rows(ttft, rows)
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
    request's batch (picked by its size too)."""
    from scipy.special import gammaincinv

    b, t_d = steps.batch.astype(float), steps.decode_s
    li, ca2 = traffic.input, traffic.arrival_cv ** 2
    tp_mean, _, _ = _prefill_moments(steps, traffic)
    longest, longest_var = longest_output(traffic, b)
    prefill = b * steps.token_s * li.mean + steps.request_s
    cycle = prefill + np.maximum(longest - 1, 0.0) * t_d
    rate = b / cycle
    cond_var = b * (steps.token_s * li.mean * li.cv) ** 2 + longest_var * t_d ** 2
    mean_b, idle, batch_var, _, k, theta = _static_batches(b, cycle, cond_var, ca2)
    idle_share = idle / mean_b  # of requests: the one that ends an idle spell starts its batch at once
    u = np.clip((STATIC_POINTS[None, :] - idle_share[:, None]) / np.maximum(1 - idle_share[:, None], 1e-12),
                0.0, 1.0)

    def cycle_seen(rows: np.ndarray) -> np.ndarray:  # (rows, STATIC_POINTS): the cycle a request arrives in
        at = u[rows]
        return np.where(at > 0, theta[rows, None] * gammaincinv(k[rows, None] + 1, np.maximum(at, 1e-12)),
                        0.0)

    seen_cycle = _RowCache(len(b), cycle_seen)
    zeros = np.zeros_like(b)
    own = steps.request_s + steps.token_s * li.mean  # a request's own prompt; the others' arrive with it

    def ttft_rows(rows: np.ndarray) -> Ttft:
        cycle = seen_cycle(rows)
        others = rate[rows, None] * steps.token_s * li.mean * cycle  # prompts that arrived during the cycle
        return Ttft(np.full(len(rows), own), cycle, zeros[rows], zeros[rows], others)

    seen = mean_b + batch_var / mean_b  # the batch a request is in, picked by its size
    seen_sd = np.sqrt(batch_var + (batch_var / mean_b) ** 2)
    step_slope = np.gradient(t_d, b) if len(b) > 1 else np.zeros_like(b)
    tpot = Tpot(np.interp(seen, b, t_d, right=t_d[-1] + step_slope[-1] * (seen[-1] - b[-1])), zeros, zeros,
                np.interp(seen, b, step_slope) * seen_sd)
    prefill_share = rate / mean_b * (mean_b * steps.token_s * li.mean + steps.request_s)
    return Operating("static", b, t_d, rate, prefill_share, ttft_rows, tpot,
                     np.ones_like(b, dtype=bool), prefill_s=tp_mean)


def _static_batches(b: np.ndarray, cycle: np.ndarray, cond_var: np.ndarray, ca2: float
                    ) -> tuple[np.ndarray, ...]:
    """(mean batch, chance a cycle sees no arrival, batch variance, mean cycle, its gamma shape and
    scale) of static batches at the rate ``R = b / c(b)`` of each row (``c``: the mean cycle of a batch
    of ``b``, ``V_c`` its variance given the batch). The next batch is the arrivals during a cycle (a
    count of mean ``R C`` and variance ``c_a^2 R C + R^2 Var(C)``), or one request after an idle spell
    when none came (chance ``P0 = E[exp(-R C kappa)]``, ``kappa = ln(c_a^2) / (c_a^2 - 1)``, 1 for
    Poisson arrivals: a negative binomial count with the renewal stream's variance). So the mean batch
    is ``B = R c(B) + P0`` (``b`` when no cycle goes without an arrival), a cycle's variance
    ``V_c + c'^2 Var(B)`` (read as a gamma), and the batch's ``(c_a^2 R c + R^2 V_c) / (1 - g^2) +
    P0 (1 - P0) - 2 R c P0`` with ``g = R c'`` the share of a batch's excess that carries to the next.
    Solved in rounds from ``B = b``. Where ``c`` is not linear in the batch (outputs that vary: the
    longest of ``B`` is concave in ``B``), the last ``STATIC_MIXED_ROUNDS`` read ``c``, ``V_c`` and
    ``c'`` over the batch's distribution (:func:`_batch_mass`) rather than at its mean: a concave cycle
    is shorter on average, and more cycles see no arrival."""
    kappa = 1.0 if abs(ca2 - 1) < 1e-9 else (math.inf if ca2 == 0 else math.log(ca2) / (ca2 - 1))
    rate = b / cycle
    grad = np.gradient(cycle, b) if len(b) > 1 else cycle / b
    curved = len(b) > 2 and bool(np.any(np.abs(np.diff(grad)) > 1e-9 * np.abs(grad[1:])))
    mean_b, batch_var = b.copy(), b.copy()
    count, count_var = b.copy(), b.copy()  # the arrivals during a cycle
    for i in range(STATIC_ROUNDS):
        c = np.interp(mean_b, b, cycle, right=cycle[-1]) + grad[-1] * np.maximum(mean_b - b[-1], 0.0)
        slope, v_c = np.interp(mean_b, b, grad), np.interp(mean_b, b, cond_var)
        if curved and i >= STATIC_ROUNDS - STATIC_MIXED_ROUNDS:  # the cycle over the batch's spread
            jensen, bent, slope = _over_batches(b, cycle, cond_var, _batch_mass(b, count, count_var))
            c, v_c = c + jensen, v_c + bent
        cycle_var = np.maximum(v_c + slope ** 2 * batch_var, 1e-12 * c ** 2)
        k, theta = np.minimum(c ** 2 / cycle_var, 1e6), cycle_var / c
        idle = np.zeros_like(b) if math.isinf(kappa) else (1 + rate * theta * kappa) ** -k
        m = rate * c
        gain = np.clip(rate * slope, 0.0, MAX_CYCLE_GAIN)
        count, count_var = m, (ca2 * m + rate ** 2 * v_c) / (1 - gain ** 2)
        batch_var = np.maximum(count_var + idle * (1 - idle) - 2 * m * idle, 1e-9)
        mean_b = m + idle
    return mean_b, idle, batch_var, c, k, theta


def _batch_mass(b: np.ndarray, count: np.ndarray, count_var: np.ndarray) -> np.ndarray:
    """(rows, len(b)): the chance a batch is of each size of ``b`` (the nearest, read between the
    midpoints) when the arrivals during a cycle are a negative binomial count of mean ``count`` and
    variance ``count_var`` (a Poisson one where that is under the mean), none taken as a batch of one
    (after the idle spell). Exact up to ``STATIC_EXACT_COUNT`` arrivals, where a batch's few requests
    are whole; beyond, a gamma's CDF (Wilson and Hilferty's cube root of a normal)."""
    from scipy.special import ndtr

    m, v = np.maximum(count, 1e-9)[:, None], np.maximum(count_var, 1e-9)[:, None]
    edges = np.floor((b[:-1] + b[1:]) / 2)  # P(count <= edge) at each
    n = int(min(STATIC_EXACT_COUNT, edges[-1] + 1))
    small = int(np.searchsorted(edges, n))  # edges (rising) counted exactly
    r = np.minimum(m * m / np.maximum(v - m, 1e-6 * m), 1e6)
    j = np.arange(1, n)
    log_pmf = np.empty((len(m), n))
    log_pmf[:, :1] = -r * np.log1p(m / r)
    log_pmf[:, 1:] = np.log1p((j - 1 - m) / (r + m)) + (np.log(m) - np.log(j))
    exact = np.exp(log_pmf.cumsum(axis=1)).cumsum(axis=1)
    cdf = np.empty((len(m), len(edges) + 2))  # with 0 before the first and 1 after the last
    cdf[:, 0], cdf[:, -1] = 0.0, 1.0
    cdf[:, 1:small + 1] = exact[:, edges[:small].astype(int)]
    if small < len(edges):
        k = (m * m / v)[:, 0]
        z = np.cbrt(edges[small:] + 0.5)[None, :] * np.cbrt(1 / m)
        z -= (1 - 1 / (9 * k))[:, None]
        z *= (3 * np.sqrt(k))[:, None]
        tail = ndtr(z)
        np.maximum(tail, exact[:, -1:], out=tail)  # where the two meet
        cdf[:, small + 1:-1] = np.minimum(tail, 1.0)
    return np.diff(cdf, axis=1)


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
                     functools.partial(_rows, ttft),
                     _decode_pool_tpot(steps, o, traffic), np.full(n, meets), prefill_load=rho_p,
                     prefill_s=tp_mean)


def _highest_load(cand: Ttft, ttft_ok: Callable[[Ttft], np.ndarray] | None) -> tuple[int, bool]:
    """The highest load (index) of the prefill pool's ``cand`` whose TTFT meets the targets, and whether
    one does (the lowest load when none does): loads tried from the highest, ``FIRST_LOADS`` first,
    then twice as many each time (TTFT quantile solves cost most; the highest loads usually decide)."""
    n = len(cand.p)
    if ttft_ok is None:
        return n - 1, True
    i = first_meeting(np.arange(n)[::-1], lambda rows: ttft_ok(_rows(cand, rows)), np.arange(1, n + 1),
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
    (:func:`concurrency_seen` of the decode replica alone) and its spread, and a request's first decode
    token waits out the rest of the step in progress when its cache arrives (it joins at the next step):
    a uniform share of a step over its ``n`` decode tokens, at each output length point (a mixture, read
    as gammas of that mean and SD)."""
    b = steps.batch.astype(float)
    capacity = b / (max(decode_tokens, 1.0) * steps.decode_s)
    seen, spread = concurrency_seen(capacity, per_concurrency(b, capacity))
    slope = np.interp(seen, b, np.gradient(steps.decode_s, b) if len(b) > 1 else np.zeros_like(b))
    t_d = np.interp(seen, b, steps.decode_s)
    n, w = _decoded_points(traffic)
    joined = t_d[:, None] / n[None, :]
    return Tpot(t_d, joined / 2, joined / math.sqrt(12), slope * spread, None, w)


def prefill_pool_ttft(steps: Steps, traffic: Traffic, loads: np.ndarray) -> Ttft:
    """TTFT of prefill replicas run at each load in ``loads`` (M/G/1, then the key/value transfer)."""
    tp_mean, tp_var, tp_points = _prefill_moments(steps, traffic)
    kv = steps.kv_token_s * traffic.input.mean * traffic.input.unit
    loads = np.asarray(loads, dtype=float)
    p, wait, shape = _gg1_wait(loads / tp_mean, np.full_like(loads, tp_mean), np.full_like(loads, tp_var),
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
                     functools.partial(_rows, prefill_pool_ttft(alone, traffic, rho)),
                     Tpot(zeros, zeros, zeros, zeros), np.ones_like(b, dtype=bool), prefill_s=tp_mean)


SCHEDULERS: dict[str, Scheduler] = {"continuous": continuous, "static": static,
                                    "disaggregated": disaggregated}


@functools.cache
def scheduler_names() -> tuple[str, ...]:
    return tuple(SCHEDULERS)
