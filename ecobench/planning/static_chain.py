"""Static batches as a Markov chain over the requests waiting when a cycle starts (issue 22: the
moment recursion of ``schedulers._static_batches`` near a gain of 1, where a batch's excess carries
almost whole into the next and the batch sizes' tail is not its two moments').

A cycle starts with ``Q`` requests waiting; it takes ``B = min(Q, S)`` of them (``S``: the slot
limit, the last batch of the grid), prefills them, and decodes until the longest output of the
batch ends: a cycle of mean ``c(B)`` and variance ``V_c(B)``. The prompts arriving meanwhile, a
negative binomial count of mean ``R c(B)`` and variance ``c_a^2 R c(B) + R^2 V_c(B)`` (Poisson where
that is under the mean), and the ``Q - B`` left waiting make the next cycle's ``Q``; none is one
request after an idle spell (it starts its batch at once). States are batch sizes (every one to
``STATES_EXACT``, then geometric to ``S``: :func:`chain_states`), then ``S`` plus each (requests left
over for the cycle after; the last holds all beyond), each standing for the whole counts between its
neighbours' midpoints; the stationary distribution is solved as a linear system. Where the slot limit
binds so often that the queue is several full batches long (16 slots at 90% load), that truncation and
the geometric cells (which lose a long queue's slow drift) put TTFT 30-60% low
(tests/unit/planning/test_schedulers.py). Read from it:
the batch a request is in (TPOT: the decode step at that batch), the cycle it arrives in (a
length-biased pick of the cycles over the batch sizes and their longest output), the share that
finds the replica idle, and the share left over for one more cycle (their wait: a cycle of ``S``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

EXACT_COUNT = 24  # arrivals per cycle counted one by one (beyond, a gamma's CDF)
STATES_EXACT = 8  # the chain's states: every batch size up to this,
STATES_GEOMETRIC = 24  # then this many geometrically spaced to the slot limit
LEFT_GEOMETRIC = 12  # and the requests left over past it: as many exact, then this many geometric


@dataclass(frozen=True)
class StaticChain:
    """The chain's readings at each of a set of rates (a row each)."""

    batch_mass: np.ndarray  # (rows, len(b)): the chance a cycle's batch is each of the grid's sizes
    idle: np.ndarray  # (rows,): the chance a cycle ends with nobody waiting (then an idle spell)
    left_over: np.ndarray  # (rows,): mean requests left waiting past a full batch when a cycle starts


@functools.lru_cache(maxsize=64)
def chain_states(limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(batches, left over): the chain's states up to the slot limit, every size to ``STATES_EXACT`` then
    ``STATES_GEOMETRIC`` geometrically spaced to ``limit``, and the requests left over past it, from 1
    to the limit with ``LEFT_GEOMETRIC`` (each state stands for the counts between its neighbours'
    midpoints; the last holds all beyond; read-only: shared between calls)."""
    def grid(top: int, geometric: int) -> np.ndarray:
        exact = np.arange(1, min(top, STATES_EXACT) + 1)
        geo = np.round(np.geomspace(min(top, STATES_EXACT), top, geometric))
        states = np.unique(np.concatenate([exact, geo])).astype(float)
        states.flags.writeable = False
        return states

    return grid(limit, STATES_GEOMETRIC), grid(limit, LEFT_GEOMETRIC)


def count_cdf(mean: np.ndarray, var: np.ndarray, at: np.ndarray) -> np.ndarray:
    """P(N <= at) of a negative binomial count ``N`` of ``mean`` and ``var`` (a Poisson one where that is
    under the mean), a row each, at the whole numbers ``at`` (rows, points): exact up to
    ``EXACT_COUNT``, beyond a gamma's CDF (Wilson and Hilferty's cube root of a normal), never below the
    exact part (``schedulers._batch_mass`` reads a batch's sizes from it)."""
    from scipy.special import ndtr

    m, v = np.maximum(mean, 1e-9)[:, None], np.maximum(var, 1e-9)[:, None]
    r = np.minimum(m * m / np.maximum(v - m, 1e-6 * m), 1e6)
    j = np.arange(1, EXACT_COUNT)
    log_pmf = np.empty((len(m), EXACT_COUNT))
    log_pmf[:, :1] = -r * np.log1p(m / r)
    log_pmf[:, 1:] = np.log1p((j - 1 - m) / (r + m)) + (np.log(m) - np.log(j))
    exact = np.minimum(np.exp(np.cumsum(log_pmf, axis=1)).cumsum(axis=1), 1.0)
    k = m * m / v
    z = (np.cbrt((np.maximum(at, 0) + 0.5) / m) - (1 - 1 / (9 * k))) * (3 * np.sqrt(k))
    out = np.minimum(np.maximum(ndtr(z), exact[:, -1:]), 1.0)
    small = at < EXACT_COUNT
    if small.any():
        pick = np.take_along_axis(exact, np.clip(at, 0, EXACT_COUNT - 1).astype(int), axis=1)
        out = np.where(small, pick, out)
    return np.where(at < 0, 0.0, out)


def solve_chain(b: np.ndarray, cycle: np.ndarray, cond_var: np.ndarray, ca2: float, rate: np.ndarray,
                left: np.ndarray) -> StaticChain:
    """The stationary chain at each rate of ``rate`` (requests per second): states ``b`` (whole batches
    from 1, the last the slot limit; each with its mean cycle and the cycle's variance given the
    batch), then the limit plus each of ``left`` (requests left over)."""
    n, limit = len(b), b[-1]
    values = np.concatenate([b, limit + left])  # the states: requests waiting when a cycle starts
    edges = np.floor((values[:-1] + values[1:]) / 2)  # a state holds the counts up to its upper edge
    batch = np.concatenate([np.arange(n), np.full(len(left), n - 1)])  # the batch each state runs
    carry = np.concatenate([np.zeros(n), left])  # and those it leaves waiting
    rows, states = len(rate), len(values)
    mean = rate[:, None] * cycle[batch][None, :]
    var = ca2 * mean + rate[:, None] ** 2 * cond_var[batch][None, :]
    at = np.broadcast_to(edges[None, None, :] - carry[None, :, None], (rows, states, states - 1))
    cdf = count_cdf(mean.ravel(), var.ravel(), at.reshape(rows * states, -1)).reshape(at.shape)
    full = np.concatenate([np.zeros((rows, states, 1)), cdf, np.ones((rows, states, 1))], axis=2)
    move = np.maximum(np.diff(full, axis=2), 0.0)  # (rows, from, to)
    move /= move.sum(axis=2, keepdims=True)
    system = np.swapaxes(move, 1, 2) - np.eye(states)[None]  # pi (T - I) = 0, and the chances sum to 1
    system[:, -1, :] = 1.0
    rhs = np.zeros((rows, states, 1))
    rhs[:, -1] = 1.0
    pi = np.maximum(np.linalg.solve(system, rhs)[..., 0], 0.0)
    pi /= pi.sum(axis=1, keepdims=True)
    mass = pi[:, :n].copy()
    mass[:, -1] += pi[:, n:].sum(axis=1)
    none = count_cdf(mean[:, :n].ravel(), var[:, :n].ravel(), np.zeros((rows * n, 1))).reshape(rows, n)
    return StaticChain(mass, (pi[:, :n] * none).sum(axis=1), (pi[:, n:] * left).sum(axis=1))


def cycle_cells(b: np.ndarray, prefill: np.ndarray, decode_s: np.ndarray, edges: np.ndarray,
                tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, cycles, chance): every (batch, longest output bin) cell's cycle, ascending (``order``
    indexes the flattened (batch, bin) cells), and the chance of each bin given the batch, (len(b),
    bins): the longest of ``B`` outputs lands in the output's probability bin ``(u_j, u_j+1]`` with
    chance ``u_j+1^B - u_j^B`` (``edges`` and the bins' ``tokens``)."""
    chance = np.diff(edges[None, :] ** b[:, None], axis=1)
    cycles = prefill[:, None] + np.maximum(tokens[None, :] - 1, 0.0) * decode_s[:, None]
    order = np.argsort(cycles, axis=None, kind="stable")
    return order, cycles.ravel()[order], chance


def cycle_seen(mass: np.ndarray, cells: tuple[np.ndarray, np.ndarray, np.ndarray],
               u: np.ndarray) -> np.ndarray:
    """(rows, points): the cycle a request arrives in at the probabilities ``u`` (rows, points; 0: none,
    it found the replica idle): a length-biased pick of the cycles over the batch sizes (``mass``, a
    row each) and their longest output (``cells``)."""
    order, cycles, chance = cells
    weight = (mass[:, :, None] * chance[None]).reshape(len(mass), -1)[:, order] * cycles[None, :]
    cdf = np.cumsum(weight, axis=1)
    cdf -= weight / 2  # each cell's cycle at the middle of its probability (no bias toward the shorter)
    cdf /= cdf[:, -1:] + weight[:, -1:] / 2
    out = np.empty(u.shape)
    for i in range(len(mass)):
        out[i] = np.interp(u[i], cdf[i], cycles)
    return np.where(u > 0, out, 0.0)


def slices(mass: np.ndarray, values: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, SD) of ``values`` (rising, one per column of ``mass``) within each probability slice
    between ``edges`` of the distribution ``mass`` (a row each): (rows, len(edges) - 1) each."""
    cdf = np.cumsum(mass, axis=1)
    cdf /= cdf[:, -1:]
    before = np.concatenate([np.zeros((len(mass), 1)), cdf[:, :-1]], axis=1)
    lo, hi = edges[None, None, :-1], edges[None, None, 1:]
    share = np.clip(np.minimum(cdf[..., None], hi) - np.maximum(before[..., None], lo), 0.0, None)
    width = np.diff(edges)[None, :]
    mean = (share * values[None, :, None]).sum(axis=1) / width
    second = (share * (values * values)[None, :, None]).sum(axis=1) / width
    return mean, np.sqrt(np.maximum(second - mean * mean, 0.0))
