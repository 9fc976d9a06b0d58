"""The queues of a serving replica: the wait of a prompt in a GI/G/1 queue of prefill work with gamma
inter-arrival times (:func:`gg1_wait`: GI/M/1's delay probability, corrected for the work's spread by
Lindley's recursion, :func:`_lindley_table`; the wait's shape from the M/G/1 queue), and the
concurrency a request sees (:func:`concurrency_seen`, the flow-equivalent server's birth-death chain),
and how often the requests in flight reach a replica's limit (:func:`at_limit`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ecobench.planning.operating import QUANTILE_GRID, geometric_rows

DELAY_BISECTIONS = 32  # halvings of the delay probability's bracket (to 2e-10)
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


def gg1_wait(rate: np.ndarray, work_mean: np.ndarray, work_var: np.ndarray, arrival_cv: float,
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
    scaled by ``(c_a^2 + c_s^2) / (c_a^2 + 1)`` (:func:`gg1_wait`)."""
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
    before it waiting ``W`` and bringing ``S``) solved as a fixed point, ``W`` read as :func:`gg1_wait`'s
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


def per_concurrency(batch: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` given at the concurrencies ``batch`` (a grid), at every whole concurrency 1..max."""
    return np.interp(np.arange(1, int(batch[-1]) + 1, dtype=float), batch, values)


def concurrency_seen(rate: np.ndarray, capacity: np.ndarray, peakedness: float = 1.0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(mean, SD) of the concurrency a request sees at each arrival rate ``rate``, from the
    flow-equivalent server of the replica: a birth-death chain over the concurrency ``n`` with births
    at ``rate`` and completions at ``capacity[n - 1]`` (the closed form's requests per second at
    concurrency ``n``), read size-biased (a request is one of the ``n``). Bursty arrivals: each step's
    log ratio ``ln(rate / capacity)`` over the ``peakedness`` (:func:`arrivals.peakedness`), the chain of a
    diffusion whose noise is that much larger (variance ``z`` times the Poisson chain's near its mode;
    a flatter chain spends longer at the high concurrencies where steps are slow and the slots fill)."""
    rate = np.asarray(rate, dtype=float)
    if len(rate) > 2 * QUANTILE_GRID:  # solved at a grid of rates, interpolated in between
        idx = geometric_rows(len(rate), 2 * QUANTILE_GRID)
        m, sd = concurrency_seen(rate[idx], capacity, peakedness)
        return np.interp(rate, rate[idx], m), np.interp(rate, rate[idx], sd)
    n = np.arange(1, len(capacity) + 1, dtype=float)
    log_pi = _chain_log(rate, capacity, peakedness)
    # scaled by the largest of n >= 1 (the size-biased read leaves n = 0 out): a narrow chain whose mass
    # sits at n = 0 would otherwise underflow every n >= 1 to 0 and the weights to 0 / 0
    tail = log_pi[:, 1:]
    pi = np.exp(tail - tail.max(axis=1, keepdims=True))
    w = n[None, :] * pi
    w /= w.sum(axis=1, keepdims=True)
    mean = (w * n).sum(axis=1)
    return mean, np.sqrt(np.maximum((w * n * n).sum(axis=1) - mean ** 2, 0.0))


def at_limit(rate: np.ndarray, capacity: np.ndarray, peakedness: np.ndarray, past: np.ndarray) -> np.ndarray:
    """P(N >= c) at each arrival rate ``rate``, ``c = len(capacity)`` a replica's limit on the requests in
    flight: the flow-equivalent server's birth-death chain (:func:`concurrency_seen`) up to ``c``, each
    step's log ratio over that rate's ``peakedness`` (an array), read at the time (not size-biased), and
    past ``c`` a queue of requests waiting for a slot whose chain falls by ``past`` (per rate, below 1)
    a step: ``P(N = c) / (1 - past)`` of the mass, the chance an arrival finds every slot held. (The
    many-server queue's chance of waiting read off the concurrency's tail, as Halfin and Whitt read it
    off the infinite-server count's: S. Halfin and W. Whitt, "Heavy-traffic limits for queues with many
    exponential servers", Operations Research 29(3), 567-588, 1981; here the chain's own tail, not a
    normal's: the flow-equivalent capacity flattens as the batch grows, so the tail is heavier.)"""
    log_pi = _chain_log(np.asarray(rate, dtype=float), capacity, peakedness[:, None])  # n = 0 .. c
    pi = np.exp(log_pi - log_pi.max(axis=1, keepdims=True))
    held = pi[:, -1] / np.maximum(1 - past, 1e-12)
    return held / (pi[:, :-1].sum(axis=1) + held)


def _chain_log(rate: np.ndarray, capacity: np.ndarray, peakedness: float | np.ndarray) -> np.ndarray:
    """(rates, c + 1): the unnormalised log probabilities of the flow-equivalent server's birth-death
    chain at ``n = 0 .. c`` requests in flight, births at each ``rate``, completions at
    ``capacity[n - 1]``, each step's log ratio over the ``peakedness`` (a number, or a column per rate)."""
    steps = np.log(np.maximum(rate, 1e-300))[:, None] - np.log(capacity)[None, :]
    return np.concatenate([np.zeros((len(rate), 1)), np.cumsum(steps, axis=1) / peakedness], axis=1)
