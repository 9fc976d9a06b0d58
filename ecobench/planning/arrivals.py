"""The arrival stream as the queue models read it: a renewal stream of gamma gaps of CV ``c_a``
(``arrival_cv``; Poisson at 1). The chance that no request arrives within a time
(:func:`no_arrival_exponent`), the mean count after an arrival (:func:`renewal_count`), the prompts that
arrive after one and share its chunked step (:func:`arrivals_after`), those its finishing step has no
room for (:func:`left_behind`), and the peakedness of the requests in flight (:func:`peakedness`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ecobench.planning.traffic import Traffic

CARRIED_POINTS = 4  # points of the step in progress the prompts carried with a prompt are counted at
LEFT_BEHIND_TERMS = 2048  # the most arrivals :func:`left_behind` counts one by one


def no_arrival_exponent(ca2: float) -> float:
    """The exponent ``kappa`` of the chance that a renewal stream of squared arrival CV ``ca2`` brings no
    arrival while it brings ``m`` on average: ``exp(-kappa m)``, ``kappa = ln(c_a^2) / (c_a^2 - 1)`` (the
    count read as a negative binomial of mean ``m`` and the renewal stream's variance ``c_a^2 m``, which
    is 0 with chance ``(1 / c_a^2)^(m / (c_a^2 - 1))``): 1 for Poisson arrivals (``ca2`` within 1e-9 of
    1), above 1 for a smoother stream and below for a burstier one, infinite for a regular one (``ca2``
    0). Uncapped: a caller that needs a bound applies it (:func:`schedulers._request_tpot`: 50)."""
    return 1.0 if abs(ca2 - 1) < 1e-9 else (math.inf if ca2 == 0 else math.log(ca2) / (ca2 - 1))


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


def arrival_terms(most: np.ndarray) -> int:
    """The arrivals :func:`arrivals_after` counts per row: as many as the most any row counts (rows
    worked out apart sum the same terms, so the same floating-point sum, as all rows together)."""
    return int(np.ceil(most.max())) if most.max() > 0 else 0


def arrivals_after(rate: np.ndarray, arrival_cv: float, residual: np.ndarray, p: np.ndarray,
                    wait: np.ndarray, most: np.ndarray, terms: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean number of prompts that arrive after a prompt and before its chunked step starts (they are
    carried in the same step, so its first token waits for their prefill too), at most ``most``, for
    gamma inter-arrival times of CV ``arrival_cv`` and for Poisson arrivals (CV 1), on the same grid:
    the renewal count ``E[min(N(s), m)] = sum_{n <= m} P(S_n <= s)`` (``S_n``: the n-th arrival after
    it, a gamma of shape ``n k``), averaged over the start ``s`` = the rest of the step in progress
    (uniform) plus, with probability ``p``, the mean queue wait. Bursty arrivals (``k < 1``) come in
    clusters, so this is far above ``rate * s``."""
    n = np.arange(1, terms + 1, dtype=float)  # the arrivals counted (:func:`arrival_terms`)
    # the n-th arrival counts fully up to the whole prompts that fit, a fraction for the chunk after
    weight = np.clip(np.maximum(most, 0.0)[:, None] - (n[None, :] - 1), 0.0, 1.0)
    bursty, poisson = _counted(rate, (arrival_cv, 1.0), residual, p, wait, weight)
    return bursty, poisson


def left_behind(rate: np.ndarray, arrival_cv: float, residual: np.ndarray, p: np.ndarray, wait: np.ndarray,
                room: np.ndarray) -> np.ndarray:
    """Mean number of prompts queued behind a prompt when the chunked step that finishes it ends (they
    fill its first decode steps): of the ``N`` that arrive after it and before that step starts (over
    the window of :func:`arrivals_after`), the step carries those that fit in the room ``c V`` its own
    end leaves (``c = room`` prompts a step carries, ``V`` uniform on (0, 1): where in the step its
    last chunk ends), and the rest wait: ``E[N] - E[min(N, c V)]``, ``E[N]`` the renewal count
    (:func:`renewal_count`) and ``E[min(N, c V)] = sum_n w_n P(S_n <= s)``, ``w_n = E[clip(c V - n + 1,
    0, 1)]``, for gamma gaps of CV ``arrival_cv``. A burst that arrives with a prompt leaves its rest
    queued behind it; a smooth stream at middle load, almost nothing."""
    c = np.maximum(room, 1e-9)[:, None]
    # the arrivals counted: those that fit in the room (n <= c), at most as many as can arrive within
    # the longest window (its mean plus 12 SDs of a count of squared CV c_a^2: beyond, P(S_n <= s) is
    # nil), and at most LEFT_BEHIND_TERMS: a step with room for more prompts than that (prompts of a few
    # tokens) next to a wait that brings as many (a replica near saturation) counts too few carried,
    # so too many left behind, where its TTFT is hours anyway
    most = float(np.max(rate * (residual + wait))) if len(rate) else 0.0
    ca2 = max(arrival_cv ** 2, 1.0)
    terms = min(arrival_terms(room), math.ceil(most + 12 * math.sqrt(ca2 * most) + 30 * ca2),
                LEFT_BEHIND_TERMS)
    x = np.arange(terms, dtype=float)[None, :]  # n - 1
    # w_n = (1 / c) int_0^c clip(y - x, 0, 1) dy
    weight = np.where(c >= x + 1, c - x - 0.5, np.where(c > x, (c - x) ** 2 / 2, 0.0)) / c
    (carried,) = _counted(rate, (arrival_cv,), residual, p, wait, weight)
    s = _rest_points(residual)
    count, r = renewal_count(arrival_cv), rate[:, None]
    arrived = (1 - p) * count(r * s).mean(axis=1) + p * count(r * (s + wait[:, None])).mean(axis=1)
    return np.maximum(arrived - carried, 0.0)


def _rest_points(residual: np.ndarray) -> np.ndarray:
    """(rows, CARRIED_POINTS): the rest of the step in progress at its midpoint quantiles (uniform)."""
    return residual[:, None] * ((np.arange(CARRIED_POINTS) + 0.5) / CARRIED_POINTS)[None, :]


def _counted(rate: np.ndarray, cvs: tuple[float, ...], residual: np.ndarray, p: np.ndarray, wait: np.ndarray,
             weight: np.ndarray) -> list[np.ndarray]:
    """``E[sum_n w_n 1{S_n <= s}]`` for gamma gaps of each CV of ``cvs``, ``weight`` (rows, n), over the
    window of :func:`arrivals_after`: the rest of the step in progress (uniform), plus the mean wait
    with probability ``p``."""
    from scipy.special import gammainc

    k = np.array([1.0 / cv ** 2 if cv > 0 else 1e6 for cv in cvs])
    s = _rest_points(residual)
    n = np.arange(1, weight.shape[1] + 1, dtype=float)
    shape = n[None, :] * k[:, None]  # (cvs, n)
    theta = 1.0 / (np.maximum(rate, 1e-30)[None, :] * k[:, None])  # (cvs, rows)
    w = weight[:, None, :]  # (rows, 1, n)

    def count(t: np.ndarray) -> np.ndarray:  # (cvs, rows, points)
        cdf = gammainc(shape[:, None, None, :], t[None, :, :, None] / theta[:, :, None, None])
        return (w * cdf).sum(axis=3)

    both = (1 - p) * count(s).mean(axis=2) + p * count(s + wait[:, None]).mean(axis=2)
    return list(both)


# Periodic arrivals (arrival CV 0) with outputs of one length leave the requests in flight no spread
# at all (peakedness 0), which the chain of queueing.concurrency_seen divides by: read as CV 0.01's.
MIN_PEAKEDNESS = 1e-4


def peakedness(traffic: Traffic) -> float:
    """Var / mean of the number of requests in flight when they arrive as the traffic's renewal stream
    and each stays for a life in proportion to its output: ``z = 1 + (c_a^2 - 1) eta``, ``eta =
    int (1 - G(t))^2 dt / E[S] = E[min(S_1, S_2)] / E[S]`` (``G``: the life's distribution, read at the
    output's quantile points). It is derived here, and has the form of the infinite-server queue's
    heavy-traffic peakedness (recalled from W. Whitt, "Heavy-traffic approximations for service systems
    with blocking", AT&T Bell Lab. Tech. J. 63(5), 1984; not re-read, no copy reachable from here):
    the count ``N(t) = int 1{S > t - a} dA(a)`` has variance ``R int G(1 - G) + c_a^2 R int (1 - G)^2``
    when arrivals in a window have variance ``c_a^2`` times their mean. 1 for Poisson arrivals (the
    birth-death chain of :func:`queueing.concurrency_seen` then holds as it is); ``c_a^2`` for outputs of one
    length."""
    if traffic.arrival_cv == 1.0:
        return 1.0
    return max(MIN_PEAKEDNESS, 1.0 + (traffic.arrival_cv ** 2 - 1.0) * life_overlap(traffic))


def life_overlap(traffic: Traffic) -> float:
    """``eta = E[min(S_1, S_2)] / E[S]`` of two lives in proportion to the output (read at its quantile
    points): 1 for outputs of one length, 1/2 for exponential ones, less for a longer tail. How much of
    a request's life another one's, started with it, shares (:func:`peakedness`)."""
    u = traffic.output.unit
    return float(np.minimum(u[:, None], u[None, :]).mean() / u.mean())
