"""Static batches as a Markov chain over the requests waiting when a cycle starts (issue 22: the
moment recursion of ``schedulers._static_batches`` near a gain of 1, where a batch's excess carries
almost whole into the next and the batch sizes' tail is not its two moments').

A cycle starts with ``Q`` requests waiting; it takes ``B = min(Q, S)`` of them (``S``: the slot
limit, the last batch of the grid), prefills them, and decodes until the longest output of the
batch ends: a cycle of mean ``c(B)`` and variance ``V_c(B)``. The prompts arriving meanwhile, a
negative binomial count of mean ``R c(B)`` and variance ``c_a^2 R c(B) + R^2 V_c(B)`` (Poisson where
that is under the mean), and the ``Q - B`` left waiting make the next cycle's ``Q``; none is one
request after an idle spell (it starts its batch at once). States are batch sizes (every one to
``STATES_EXACT``, then geometric to ``S``: :func:`chain_states`), each standing for the whole counts
between its neighbours' midpoints, then ``S`` plus each of the requests left over for the cycles after,
evenly spaced cells each read at its middle, reaching many of the queue's tail scales past the limit
(:func:`left_grid`; the last holds all beyond); the stationary distribution is solved as a linear
system. Read from it: the batch a request is in (TPOT: the decode step at that batch), the cycle it
arrives in (a length-biased pick of the cycles over the batch sizes and their longest output), the
share that finds the replica idle, and how many whole cycles of a full batch it waits after that cycle
(those left over and those that arrived before it in its cycle ahead of it: :func:`_ahead`), and how
much of its cycle is left when one that waits them arrives: it arrived late (:func:`_late`).

Until 2026-11-29 (later) the states past the limit were geometric up to ``S`` left over and the chain
read a share left over for one more cycle only: where the queue is several full batches long (16 slots
at 90-97% load) TTFT came out 30-90% low, and cells wider than the count spreads (geometric, or a
state at the bottom of its cell) lose or gain the queue's slow drift (with 16 batches on geometric
cells TTFT came out +300% to +2,000%); tests/unit/planning/test_schedulers.py and docs/serving.md.
Until 2026-11-29 (later still) the rest of that cycle and the whole cycles were independent: where few
wait (86% load with 16 slots) TTFT p99 came out up to 25% high.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

EXACT_COUNT = 24  # arrivals per cycle counted one by one (beyond, a gamma's CDF)
STATES_EXACT = 8  # the chain's states: every batch size up to this,
STATES_GEOMETRIC = 24  # then this many geometrically spaced to the slot limit
# the chain's states at most: OpenBLAS's solve runs threaded past about 100 (measured 2026-11-29: 0.06 ms
# at 96 states, 0.6 ms at 104, 4.7 ms at 120, and 66 ms at 128 on the loaded 2-core machine)
STATES_MOST = 96
LEFT_MOST = STATES_MOST - STATES_EXACT - STATES_GEOMETRIC  # the requests left over past it: evenly spaced,
# reaching this many of the queue's tail scales past the limit (12, with wider cells: TTFT at 97% load with 16
# slots 3-14 points higher; tests/unit/planning/test_schedulers.py),
LEFT_TAIL = 8
LEFT_BATCHES = 64  # but at most this many full batches
WHOLE_SDS = 12  # a count's CDF is taken as 1 this many SDs (and EXACT_COUNT) past its mean
LATE_LEAST = 1e-9  # the states a request arrives in less often than this are left out of _ahead and _late
LATE_POINTS = 6  # Gauss-Legendre points over the share of its cycle gone when a request arrives (_late)


@dataclass(frozen=True)
class StaticChain:
    """The chain's readings at each of a set of rates (a row each)."""

    batch_mass: np.ndarray  # (rows, len(b)): the chance a cycle's batch is each of the grid's sizes
    idle: np.ndarray  # (rows,): the chance a cycle ends with nobody waiting (then an idle spell)
    left_over: np.ndarray  # (rows,): mean requests left waiting past a full batch when a cycle starts
    # (rows,) each: the chance a request arriving during a cycle waits whole cycles of full batches after
    # it (the queue ahead of it is a full batch or more), and the mean and variance of how many, if it does
    ahead_p: np.ndarray
    ahead_mean: np.ndarray
    ahead_var: np.ndarray
    # (rows,): twice the mean share of its cycle left when a request that waits whole cycles arrived (it
    # arrived late: those that arrived before it in the cycle fill a batch): :func:`_late`
    ahead_rest: np.ndarray


@functools.lru_cache(maxsize=64)
def chain_states(limit: int) -> np.ndarray:
    """The chain's batch states up to the slot limit: every size to ``STATES_EXACT``, then
    ``STATES_GEOMETRIC`` geometrically spaced to ``limit`` (each state stands for the counts between its
    neighbours' midpoints; read-only: shared between calls). The requests left over past the limit:
    :func:`left_grid`."""
    exact = np.arange(1, min(limit, STATES_EXACT) + 1)
    geo = np.round(np.geomspace(min(limit, STATES_EXACT), limit, STATES_GEOMETRIC))
    states = np.unique(np.concatenate([exact, geo])).astype(float)
    states.flags.writeable = False
    return states


def left_grid(limit: int, mean: float, var: float, most: int = LEFT_MOST) -> np.ndarray:
    """The requests left over past a full batch that the chain holds as states: ``most`` of them, evenly
    spaced, each the middle of the ``step`` whole counts it stands for (a state at the bottom of its cell
    would lose half a step each cycle, as much as the queue's drift near a load of 1). The step is half
    the SD of a full batch's cycle's arrivals (of ``mean`` and ``var``; cells no wider than the count
    spreads keep the queue's drift, which geometric ones lost), wider where the states would not reach
    ``LEFT_TAIL`` times the queue's tail scale past the limit (its diffusion's: ``var / (2 (S -
    mean))``), the limit, or at most ``LEFT_BATCHES`` full batches (wider cells widen the queue's spread
    as well: near a load of 1, where the queue is cut, its latencies are high)."""
    drift = limit - mean
    reach = LEFT_TAIL * var / (2 * drift) if drift > 0 else math.inf
    reach = min(max(reach, float(limit)), LEFT_BATCHES * limit)
    step = max(1, math.floor(math.sqrt(max(var, 0.0)) / 2), math.ceil(reach / most))
    return step * np.arange(most) + (step + 1) / 2


def count_cdf(mean: np.ndarray, var: np.ndarray, at: np.ndarray) -> np.ndarray:
    """P(N <= at) of a negative binomial count ``N`` of ``mean`` and ``var`` (a Poisson one where that is
    under the mean), a row each, at the whole numbers ``at`` (rows, points): exact up to
    ``EXACT_COUNT``, beyond a gamma's CDF (Wilson and Hilferty's cube root of a normal), never below the
    exact part (``schedulers._batch_mass`` reads a batch's sizes from it)."""
    from scipy.special import ndtr

    m, v = np.maximum(mean, 1e-9)[:, None], np.maximum(var, 1e-9)[:, None]
    exact = _exact_table(mean, var)
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
    batch), then the limit plus each of ``left`` (requests left over: :func:`left_grid`'s, each the
    middle of the whole counts it stands for; a row each, or one for all). Each row's figures are its
    own alone (the same bits however many are solved together)."""
    n, limit, rows = len(b), b[-1], len(rate)
    left = np.broadcast_to(left, (rows, np.shape(left)[-1]))
    m = left.shape[1]
    states = n + m  # the requests waiting when a cycle starts: a batch, or the limit and those left over
    # a state holds the counts up to its upper edge: the midpoints between batches, the limit, then
    # each left-over cell's top
    edges = np.concatenate([np.broadcast_to(np.floor((b[:-1] + b[1:]) / 2), (rows, n - 1)),
                            np.full((rows, 1), limit), limit + left[:, :-1] + left[:, :1] - 1], axis=1)
    batch = np.concatenate([np.arange(n), np.full(m, n - 1)])  # the batch each state runs
    mean = rate[:, None] * cycle[batch][None, :]
    var = ca2 * mean + rate[:, None] ** 2 * cond_var[batch][None, :]
    cdf = np.empty((rows, states, states - 1))
    # from a batch (none left over) one count each; past the limit every state runs a full batch
    cdf[:, :n] = _sparse_cdf(mean[:, :n].ravel(), var[:, :n].ravel(),
                             np.repeat(edges, n, axis=0)).reshape(rows, n, -1)
    past = (edges[:, None, :] - left[:, :, None]).reshape(rows * m, -1)
    full_count = np.repeat(np.arange(rows), m)  # one count for every state of a row past the limit
    cdf[:, n:] = _sparse_cdf(mean[:, -1], var[:, -1], past, full_count).reshape(rows, m, -1)
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
    ahead = _ahead(pi, cycle[batch], cond_var[batch], left, limit, ca2, rate)
    rest = _late(pi, cycle[batch], cond_var[batch], left, limit, ca2, rate)
    return StaticChain(mass, (pi[:, :n] * none).sum(axis=1), (pi[:, n:] * left).sum(axis=1), *ahead, rest)


def _sparse_cdf(mean: np.ndarray, var: np.ndarray, at: np.ndarray, which: np.ndarray | None = None
                ) -> np.ndarray:
    """:func:`count_cdf` (counts of ``mean`` and ``var``; row ``i`` of the points ``at`` is the count
    ``which[i]``'s, or the ``i``-th), worked out only where it is neither 0 (below 0) nor 1 (``WHOLE_SDS``
    SDs and ``EXACT_COUNT`` past the count's mean): the chain reads it at many points, most of them out
    there. Between two whole numbers it is the line between their CDFs (a state past the limit stands
    for several counts and is read at their middle: the mean of their CDFs, to the curvature's second
    order)."""
    which = np.arange(len(mean)) if which is None else which
    top = (mean + WHOLE_SDS * np.sqrt(var) + EXACT_COUNT)[which]
    need = (at >= 0) & (at <= top[:, None])
    out = np.where(at < 0, 0.0, 1.0)
    row, col = np.nonzero(need)
    if len(row):
        x = at[row, col]
        whole = np.floor(x)
        part = x - whole
        used = np.zeros(len(mean), dtype=bool)  # the counts read: their exact parts only (row by row)
        used[which[row]] = True
        count = (np.cumsum(used) - 1)[which[row]]
        mean, var = mean[used], var[used]
        table = _exact_table(mean, var)
        got = _whole_at(mean, var, table, count, whole)
        between = part > 0
        if between.any():
            high = _whole_at(mean, var, table, count[between], whole[between] + 1)
            got[between] += part[between] * (high - got[between])
        out[row, col] = got
    return out


def _exact_table(mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """(rows, EXACT_COUNT): P(N <= j) for j below ``EXACT_COUNT`` (:func:`count_cdf`'s exact part)."""
    m, v = np.maximum(mean, 1e-9)[:, None], np.maximum(var, 1e-9)[:, None]
    r = np.minimum(m * m / np.maximum(v - m, 1e-6 * m), 1e6)
    j = np.arange(1, EXACT_COUNT)
    log_pmf = np.empty((len(m), EXACT_COUNT))
    log_pmf[:, :1] = -r * np.log1p(m / r)
    log_pmf[:, 1:] = np.log1p((j - 1 - m) / (r + m)) + (np.log(m) - np.log(j))
    return np.minimum(np.exp(np.cumsum(log_pmf, axis=1)).cumsum(axis=1), 1.0)


def _whole_at(mean: np.ndarray, var: np.ndarray, table: np.ndarray, row: np.ndarray,
              at: np.ndarray) -> np.ndarray:
    """:func:`count_cdf` at single points: the whole numbers ``at``, each of the count of its ``row``."""
    from scipy.special import ndtr

    out = np.empty(len(at))
    small = at < EXACT_COUNT
    out[small] = table[row[small], np.clip(at[small], 0, EXACT_COUNT - 1).astype(int)]
    big = ~small  # the gamma only where it is read
    if big.any():
        row, x = row[big], at[big]
        m, v = np.maximum(mean[row], 1e-9), np.maximum(var[row], 1e-9)
        k = m * m / v
        z = (np.cbrt((x + 0.5) / m) - (1 - 1 / (9 * k))) * (3 * np.sqrt(k))
        out[big] = np.minimum(np.maximum(ndtr(z), table[row, -1]), 1.0)
    return np.where(at < 0, 0.0, out)


def _ahead(pi: np.ndarray, cycle: np.ndarray, cond_var: np.ndarray, left: np.ndarray, limit: float,
           ca2: float, rate: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chance, mean, variance): how many whole cycles of full batches a request waits after the cycle it
    arrives in, ``K``, if one or more. It arrives in a cycle started at a state picked by its length
    (``pi`` times its mean cycle ``c``, a row each), a uniform share ``U`` of the way through: those
    left over (none from a batch state, ``left`` a row each past the limit) and the ``N`` that arrived
    before it in the cycle are ahead of it, a negative binomial count of mean ``R E[U C]`` and variance
    ``c_a^2 R E[U C] + R^2 Var(U C)`` (the cycle a gamma of mean ``c`` and variance ``V_c``,
    length-biased), so ``P(K >= k) = P(N >= k S - carry)``."""
    rows, m = left.shape
    c, v = cycle[None, :], cond_var[None, :]
    r = rate[:, None]
    second = c * c + v  # E[C^2]; of a gamma E[C^3] = (c + 2 V / c) E[C^2]
    seen = second / (2 * c)  # E[U C] over the length-biased cycle
    seen_var = (c + 2 * v / c) * second / (3 * c) - seen ** 2
    mean = r * seen
    var = ca2 * mean + r * r * np.maximum(seen_var, 0.0)
    weight, carry, row, state = _states_read(pi, c, left)
    kinds = pi.shape[1] - m  # the batches' counts (the states past the limit run the last, a full batch)
    reach = (carry + mean + WHOLE_SDS * np.sqrt(var) + EXACT_COUNT)[row, state]  # no K past it
    k = np.arange(1, int(np.ceil(reach.max() / limit)) + 1)
    at = k[None, :] * limit - carry[row, state][:, None] - 1  # K >= k: N > k S - carry - 1
    which = row * kinds + np.minimum(state, kinds - 1)
    cdf = _sparse_cdf(mean[:, :kinds].ravel(), var[:, :kinds].ravel(), at, which)
    miss = weight[row, state][:, None] * (1 - cdf)
    p, first, second_k = np.empty(rows), np.empty(rows), np.empty(rows)
    for i in range(rows):  # each row over its own reach: the same bits however many rows
        mine = row == i
        own = miss[mine, :int(np.ceil(reach[mine].max() / limit))].sum(axis=0)  # P(K >= k)
        p[i], first[i], second_k[i] = own[0], own.sum(), own @ (2 * k[:len(own)] - 1.0)
    given = first / np.maximum(p, 1e-300)
    return p, given, np.maximum(second_k / np.maximum(p, 1e-300) - given ** 2, 0.0)


def _states_read(pi: np.ndarray, c: np.ndarray, left: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(weight, carry, row, state) of :func:`_ahead` and :func:`_late`: the chance a request arrives in
    each state (``pi`` times its mean cycle ``c``, a row each), those left over ahead of it in each (none
    from a batch state, ``left`` past the limit), and the (row, state) pairs it arrives in at least
    ``LATE_LEAST`` of the time (more than half are not)."""
    rows, m = left.shape
    weight = pi * c
    weight = weight / weight.sum(axis=1, keepdims=True)
    carry = np.concatenate([np.zeros((rows, pi.shape[1] - m)), left], axis=1)
    row, state = np.nonzero(weight >= LATE_LEAST)
    return weight, carry, row, state


@functools.lru_cache(maxsize=4)
def _late_points(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(points, weights): Gauss-Legendre's ``n`` on (0, 1)."""
    x, w = np.polynomial.legendre.leggauss(n)
    u, w = (x + 1) / 2, w / 2
    u.flags.writeable = w.flags.writeable = False
    return u, w


def _late(pi: np.ndarray, cycle: np.ndarray, cond_var: np.ndarray, left: np.ndarray, limit: float,
          ca2: float, rate: np.ndarray) -> np.ndarray:
    """(rows,): ``2 E[1 - U | K >= 1]``, the share of its cycle that a request waiting whole cycles after
    it (:func:`_ahead`'s ``K``) has left when it arrives, twice over (a uniform's width). It waits when
    the ``N`` that arrived before it in its cycle, with those left over, fill a full batch: the later
    it arrives (``U``), the likelier. At ``LATE_POINTS`` shares ``u``, ``N`` is a negative binomial count
    over ``u C`` (``C`` the length-biased cycle of each state picked by its length, as in
    :func:`_ahead`); ``P(K >= 1 | u)`` weighs ``1 - u``. 1 where none waits (the rest as a whole)."""
    rows, m = left.shape
    u, w = _late_points(LATE_POINTS)
    c, v = cycle[None, :], cond_var[None, :]
    seen = (c * c + v) / c  # the length-biased cycle's mean and variance (of a gamma)
    seen_var = (c + 2 * v / c) * seen - seen ** 2
    kinds = pi.shape[1] - m
    ru = rate[:, None, None] * u[None, :, None]
    mean = ru * seen[:, None, :kinds]  # (rows, points, kinds)
    var = ca2 * mean + ru * ru * np.maximum(seen_var, 0.0)[:, None, :kinds]
    weight, carry, row, state = _states_read(pi, c, left)
    at = np.broadcast_to(limit - carry[row, state] - 1, (LATE_POINTS, len(row)))  # K >= 1: N >= S - carry
    count = row[None, :] * LATE_POINTS + np.arange(LATE_POINTS)[:, None]  # (point, state read): its count
    which = count * kinds + np.minimum(state, kinds - 1)
    cdf = _sparse_cdf(mean.ravel(), var.ravel(), at.reshape(-1, 1), which.ravel()).reshape(at.shape)
    miss = weight[row, state] * (1 - cdf)
    waits = np.stack([miss[:, row == i].sum(axis=1) for i in range(rows)])  # P(K >= 1 | u), row by row
    some = waits @ w
    late = 2 * (waits @ (w * (1 - u))) / np.maximum(some, 1e-300)
    return np.where(some > 0, np.clip(late, 0.0, 1.0), 1.0)


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
