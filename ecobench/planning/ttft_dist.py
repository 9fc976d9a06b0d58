"""A prompt's time to first token (TTFT) as the schedulers give it: :class:`Ttft`, a fixed time, the
uniform rest of the step in progress, a gamma wait in the queue of prompts (for those who wait) and the
prefill at the input length's quantile points (a mixture of them, and of a bare component where a prompt
often runs alone), with its CDF and the quantiles solved on a grid that narrows in rounds
(``SOLVE_GRID``, ``SOLVE_ROUNDS``) over a few of the length points (``SOLVE_POINTS``,
``SOLVE_TAIL_STEP``). The schedulers that build it: ``planning/schedulers.py``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ecobench.planning.tpot_dist import Tpot, memo_quantiles

# Groups of length quantile points a TTFT quantile is solved over (one point each, but every second of
# the last group's: the longest prompts). 8 until 2026-11-28: with prompts of CV 1.5 the median fell on
# one of 8 atoms (disaggregated TTFT p50 +25% at load 0.3; over 16 points +9%, over 32 +2%:
# tests/unit/planning/test_schedulers.py). 16 costs bench_serving_plan.py about 5% more, 32 about 15%.
SOLVE_POINTS = 16  # groups of length quantile points a TTFT quantile is solved over (one point each,
SOLVE_TAIL_STEP = 2  # but every second of the last group's: the longest prompts)
SOLVE_GRID = 16  # times per round a TTFT quantile is bracketed with
SOLVE_ROUNDS = 3  # rounds: the bracket shrinks SOLVE_GRID - 1 times each
WAIT_REST_LEAST = 1e-3  # Ttft.wait_rest's shares of the residual, at least (and 1 - a at least)


@dataclass(frozen=True)
class Ttft:
    """TTFT = ``fixed`` + Uniform(0, ``residual``) + [waits with probability ``p``] a gamma wait of
    mean ``wait`` and shape ``shape`` + ``service`` at the input length's quantile points (a row per
    concurrency). A ``residual`` given per point too (rows, points) makes TTFT a mixture of equally
    likely points each with its own ``residual`` and ``service`` (static: the cycle a request arrives in).
    With ``bare`` (a probability per concurrency), TTFT is a mixture: with that probability a prompt
    finds no step in progress and none to share its own (no residual, ``bare_service``), else as above
    (continuous batching below concurrency 1, where a prompt often runs alone). With ``slot_p``, a share
    ``slot_p`` of the prompts waits a gamma of mean ``slot_wait`` and shape ``slot_shape`` for a free
    slot instead of the gamma wait above (the queue for slots is the prompts' queue then). With
    ``wait_rest`` (static, a queue a full batch long), those who wait arrived late in their cycle: their
    uniform rest is the first ``wait_rest`` of ``residual``, the others' its last share."""

    fixed: np.ndarray
    residual: np.ndarray  # (concurrencies,) or (concurrencies, points)
    p: np.ndarray
    wait: np.ndarray
    service: np.ndarray  # (concurrencies, points)
    shape: np.ndarray | None = None  # of the wait of those who wait (None: 1, exponential)
    bare: np.ndarray | None = None  # (concurrencies,): the share of prompts that run alone
    bare_service: np.ndarray | None = None  # (concurrencies, points): their service
    # (concurrencies,): the share of prompts that wait for a free slot (every one of the replica's
    # concurrency limit in use), and that wait's mean and gamma shape: added to the rest (continuous
    # batching, schedulers._slot_wait; None: no slot limit reached)
    slot_p: np.ndarray | None = None
    slot_wait: np.ndarray | None = None
    slot_shape: np.ndarray | None = None
    # (concurrencies,): static, where the queue is a full batch or more: those who wait arrived late in
    # their cycle, so they wait out the first share ``wait_rest`` of the ``residual``, uniformly, and the
    # others its last ``1 - a``, ``a = p (1 - wait_rest) / (1 - p)`` (the same mean; None, or 1: both
    # the whole residual)
    wait_rest: np.ndarray | None = None

    @property
    def slot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(share, mean wait, shape) of the wait for a free slot; None without one."""
        if self.slot_p is None or self.slot_wait is None or self.slot_shape is None:
            return None
        return self.slot_p, self.slot_wait, self.slot_shape

    def mean(self) -> np.ndarray:
        rest = self.residual.mean(axis=1) if self.residual.ndim == 2 else self.residual
        busy = rest / 2 + self.service.mean(axis=1)
        if self.bare is not None and self.bare_service is not None:
            busy = (1 - self.bare) * busy + self.bare * self.bare_service.mean(axis=1)
        if (slot := self.slot) is None:
            return self.fixed + self.p * self.wait + busy
        share, wait, _ = slot
        return self.fixed + (1 - share) * self.p * self.wait + share * wait + busy

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
                  self.bare, self.bare_service, self.slot_p, self.slot_wait, self.slot_shape, self.wait_rest)
        return all(v is None or bool(np.all(v == v[:1])) for v in fields)

    def cdf(self, t: np.ndarray) -> np.ndarray:
        """P(TTFT <= t) for a ``t`` per concurrency."""
        return _cdf_of(self)(np.asarray(t, dtype=float)[:, None])[:, 0]

    def quantile(self, q: float) -> np.ndarray:
        """Solved on a grid of times between bounds, then on a finer grid inside the bracket found."""
        return self.quantiles([q])[0]

    def quantiles(self, qs: Sequence[float]) -> np.ndarray:
        """:meth:`quantile` at each probability of ``qs`` (a row each), solved together: one grid
        search over every (probability, concurrency) pair; solved once per distinct distribution
        (:func:`memo_quantiles`)."""
        return memo_quantiles(self, qs, Ttft._quantiles,
                              (SOLVE_POINTS, SOLVE_TAIL_STEP, SOLVE_GRID, SOLVE_ROUNDS, SOLVE_STEP))

    def _quantiles(self, qs: Sequence[float]) -> np.ndarray:
        n = len(self.p)
        if n > 1 and self.same_rows():  # one solved for all
            return np.repeat(take_rows(self, np.zeros(1, dtype=int)).quantiles(qs), n, axis=1)
        d = take_rows(self, np.tile(np.arange(n), len(qs)))
        assert isinstance(d, Ttft)
        q = np.repeat(np.asarray(qs, dtype=float), n)
        lo, hi = bracket(d, q)
        cdf = _cdf_of(d)
        for _ in range(SOLVE_ROUNDS):
            width = hi - lo
            j = _first_at_or_past(cdf, lo, width, q)
            lo, hi = lo + width * SOLVE_U[j - 1], lo + width * SOLVE_U[j]  # the bracket's grid points
        return ((lo + hi) / 2).reshape(len(qs), n)


def bracket(d: Ttft, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) times a row's quantile ``q`` (one per row) is searched between: from the
    fixed time and the shortest service to past the longest service, the whole step in progress and
    a far quantile of the wait. Where a share ``s`` waits for a slot, the quantile is at most the
    rest's at ``q / (1 - s)``: the bracket reaches that far (a wider one would cost the solve its
    precision), or past a far quantile of the slot's wait too where that is 1 or more."""
    slot = np.zeros_like(q) if d.slot_p is None else d.slot_p
    past_slot = q >= (1 - slot) * (1 - 1e-6)
    reach = np.where(past_slot, q, q / np.maximum(1 - slot, 1e-12))
    tail = 3 + np.log(1 / (1 - reach))  # how far past the mean wait
    lo = d.fixed + (d.service if d.bare_service is None else d.bare_service).min(axis=1)

    def far(wait: np.ndarray, shape: np.ndarray) -> np.ndarray:  # a far quantile of a gamma wait
        return wait * (1 + tail / np.sqrt(np.minimum(shape, 1.0)) * 3)

    rest = (d.residual if d.residual.ndim == 2 else d.residual[:, None]) + d.service
    hi = d.fixed + rest.max(axis=1) + far(d.wait, np.ones_like(d.p) if d.shape is None else d.shape) + 1e-9
    if (slot := d.slot) is not None and past_slot.any():
        hi += np.where(past_slot, far(slot[1], slot[2]), 0.0)
    return lo, hi


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
    """The CDF of ``d`` at a matrix of times: :class:`_TtftCdf`, or the mixture of its components', and
    where a share ``q`` of the prompts waits for a free slot instead of the prompts' queue, ``(1 - q)
    F(t) + q F_s(t)``, ``F_s`` the same with the slot's gamma wait for everyone in place of the queue's
    (the same closed form), worked out at the rows where ``q > 0`` only."""
    if (slot := d.slot) is not None and slot[0].any():
        f = _cdf_of(dataclasses.replace(d, slot_p=None, slot_wait=None, slot_shape=None))
        rows = np.flatnonzero(slot[0] > 0)
        inner = take_rows(d, rows)
        assert isinstance(inner, Ttft) and inner.slot_wait is not None
        g = _cdf_of(dataclasses.replace(inner, p=np.ones_like(inner.p), wait=inner.slot_wait,
                                        shape=inner.slot_shape, slot_p=None, slot_wait=None, slot_shape=None))
        q = slot[0][rows, None]

        def cdf(t: np.ndarray) -> np.ndarray:
            out = f(t)
            out[rows] = (1 - q) * out[rows] + q * g(t[rows])
            return out

        return cdf
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
        # Ttft.wait_rest: the waits' rest b r, 1 / (b r); the others' from a r, 1 / ((1 - a) r)
        self.late: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        if d.wait_rest is not None and np.any(d.wait_rest < 1):
            b = np.clip(d.wait_rest, WAIT_REST_LEAST, 1.0)[:, None, None]
            a = np.clip(self.p * (1 - b) / np.maximum(self.no_wait, 1e-12), 0.0, 1 - WAIT_REST_LEAST)
            self.late = b * self.r, 1 / (b * self.r_floor), a * self.r, 1 / ((1 - a) * self.r_floor)

    def f(self, x: np.ndarray) -> np.ndarray:
        """The wait's CDF."""
        waited = self.gammainc(self.k, np.maximum(x, 0) / self.theta)
        return np.where(x >= 0, 1 - self.p + self.p * waited, 0.0)

    def _gammainc_k(self, z: np.ndarray) -> np.ndarray:
        """P(k, z) at each ``z`` (broadcast with the rows' ``k``), worked out where ``z`` is not 0 only:
        P(k, 0) is 0, and a time still before the waits (often a sixth of a solve's grid) costs the
        incomplete gamma's series as much as any other (the same values, element by element)."""
        nonzero = z != 0
        if nonzero.all():
            return self.gammainc(self.k, z)
        out = np.zeros(z.shape)
        out[nonzero] = self.gammainc(np.broadcast_to(self.k, z.shape)[nonzero], z[nonzero])
        return out

    def g(self, x: np.ndarray) -> np.ndarray:
        """The wait's CDF integrated from 0 to ``x``."""
        x = np.maximum(x, 0.0)
        out = self.no_wait * x
        out += self._g_some(x)
        return out

    def _g_some(self, x: np.ndarray) -> np.ndarray:
        """The part of :meth:`g` of those who wait (at ``x >= 0``); P(k + 1, z) = P(k, z) - z^k e^-z /
        Gamma(k + 1): one incomplete gamma instead of two."""
        z = x / self.theta
        pk = self._gammainc_k(z)
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
        return pk

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
        if self.late is None:
            np.subtract(y, r, out=both[1])
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # log(0): no wait yet
                both = self.g(both)
                uniform = (both[0] - both[1]) / self.r_floor
        else:  # those who wait: the first share b of the rest; the others: from a of it to its end
            b_r, per_b, a_r, per_a = self.late
            np.subtract(y, b_r, out=both[1])
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                both = self._g_some(np.maximum(both, 0.0, out=both))
                uniform = np.subtract(both[0], both[1], out=both[0])
                uniform *= per_b
            others = np.subtract(y, a_r, out=both[1])
            others *= per_a
            np.clip(others, 0.0, 1.0, out=others)
            others *= self.no_wait
            uniform += others
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


def ttft_var(d: Ttft) -> np.ndarray:
    """The variance of a :class:`Ttft` of one residual per concurrency (its busy component: the
    uniform rest of a step, the gamma wait of those who wait, the service over the length points)."""
    k = np.ones_like(d.p) if d.shape is None else d.shape
    first, second = d.p * d.wait, d.p * d.wait ** 2 * (1 + 1 / k)  # the wait's moments
    if (slot := d.slot) is not None:  # or a slot's
        q, wait, shape = slot
        first = (1 - q) * first + q * wait
        second = (1 - q) * second + q * wait ** 2 * (1 + 1 / shape)
    return d.residual ** 2 / 12 + second - first ** 2 + d.service.var(axis=1)


def take_rows(d: Ttft | Tpot, idx: np.ndarray) -> Ttft | Tpot:
    """The distribution at the concurrencies ``idx`` only."""
    return type(d)(**{k: getattr(d, k) if getattr(d, k) is None or k == "weights"  # type: ignore[arg-type]
                      else np.asarray(getattr(d, k))[idx] for k in d.__dataclass_fields__ if k != "solved"})
