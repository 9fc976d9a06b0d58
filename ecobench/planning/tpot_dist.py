"""A request's time per output token (TPOT) as the schedulers give it: :class:`Tpot`, the decode step
plus a gamma of the prefills slotted between a request's steps (a mixture over output length points:
:func:`decoded_points`) plus a normal for the concurrency's swings, and the quantiles of the gamma
mixture (:func:`_gamma_mixture_quantiles`: a grid below Cantelli bounds, then Newton steps). The
schedulers that build it: ``planning/schedulers.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecobench.planning.traffic import UNIT_QUANTILES, Traffic


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
        """The quantiles at each probability of ``qs`` (a row each); solved once per distinct
        distribution (:func:`memo_quantiles`)."""
        return memo_quantiles(self, qs, Tpot._quantiles, (MIXTURE_STEPS, MIXTURE_FIRST.tobytes()))

    def _quantiles(self, qs: Sequence[float]) -> np.ndarray:
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


QUANTILES_CACHED = 2048  # distinct (distribution, probabilities) whose solved quantiles are kept (a pass of
# bench_serving_plan.py's 100 configurations keeps 1,273, 3.4 MB with their keys; the largest key 43 kB)
_quantiles_cache: dict[tuple[Any, ...], np.ndarray] = {}


def _field_key(v: Any) -> Any:
    """A field of a distribution as a dict key: an array by its dtype, shape and bytes (exact)."""
    if v is None:
        return None
    a = np.asarray(v)
    return a.dtype.str, a.shape, a.tobytes()


def clear_quantiles_memo() -> None:
    """Drop every kept quantile (:func:`memo_quantiles`): a benchmark's pass that times the solves."""
    _quantiles_cache.clear()


def memo_quantiles(d: Any, qs: Sequence[float], solve: Callable[[Any, Sequence[float]], np.ndarray],
                   settings: tuple[Any, ...] = ()) -> np.ndarray:
    """``solve(d, qs)``, worked out once per distribution and probabilities of equal value (every
    field's exact bytes): configurations that share traffic and step times (an instance's schedulers
    whose budgets do not bind, the Monte Carlo's reads of a plan) build equal distributions, and the
    solve is deterministic, so the result is the same array of the same bits. ``settings``: the
    solver's module settings, read at the call (a test or a study that changes one gets a new solve).
    A copy is returned (the kept one is read-only)."""
    key = (type(d).__name__, tuple(float(q) for q in qs), settings,
           *(_field_key(getattr(d, k)) for k in d.__dataclass_fields__ if k != "solved"))
    got = _quantiles_cache.get(key)
    if got is None:
        got = np.asarray(solve(d, qs))
        got.flags.writeable = False
        if len(_quantiles_cache) >= QUANTILES_CACHED:
            _quantiles_cache.clear()
        _quantiles_cache[key] = got
    return got.copy()


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
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a step off the bracket is not taken
        for _ in range(MIXTURE_STEPS):
            z = x[..., None] * per_theta
            c = at_zero + (gammainc(k, z)[..., None, :] @ w)[..., 0, 0]
            d = (np.exp(k1 * np.log(z) - z + log_norm)[..., None, :] @ w)[..., 0, 0]
            under = c < q
            lo, hi = np.where(under, x, lo), np.where(under, hi, x)
            step = x + (q - c) / d
            x = np.where((step >= lo) & (step <= hi), step, (lo + hi) / 2)
    return x


TPOT_SHORT_POINTS = 6  # output length points a TPOT mixture reads one by one, from the shortest,
TPOT_GROUPS = 3  # then the rest in this many groups (each its middle point, weighed by its share)


@functools.lru_cache(maxsize=256)
def decoded_points(traffic: Traffic) -> tuple[np.ndarray, np.ndarray]:
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
