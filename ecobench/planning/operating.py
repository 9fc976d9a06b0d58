"""A replica's operating points under a scheduler (:class:`Operating`: throughput, TTFT and TPOT at
each candidate concurrency) and how their latencies are read: quantiles solved at ``QUANTILE_GRID``
concurrencies (:func:`geometric_rows`) and interpolated in between, each solved once. The schedulers
that build it: ``planning/schedulers.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ecobench.planning.tpot_dist import Tpot
from ecobench.planning.ttft_dist import Ttft, take_rows

QUANTILE_GRID = 16  # concurrencies at which whole quantile curves are solved (interpolated in between)


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
    # disaggregated: the prefill pool's TTFT at each of an array of loads (a plan reads it at the load
    # its prefill replicas run at, which rounding them up puts below prefill_load)
    prefill_ttft: Callable[[np.ndarray], Ttft] | None = field(default=None, repr=False)
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
    light_factory: Callable[[], Operating] | None = field(default=None, repr=False)  # continuous, static
    # rows from the first whose quantiles are each solved, not interpolated (static below concurrency 1,
    # where TTFT p99 jumps from a replica's own prefill to a share of a whole cycle within a few rows)
    exact_rows: int = 0
    _light: Operating | None = field(default=None, repr=False)
    # TPOT at the concurrencies of an index where it is worked out only at the rows read (static batches
    # near saturation, schedulers.static); None: ``tpot`` at every row
    tpot_rows: Callable[[np.ndarray], Tpot] | None = field(default=None, repr=False)

    def light(self) -> Operating | None:
        """This scheduler at concurrencies from ``schedulers.LIGHT_CONCURRENCIES`` up (None: not modelled)."""
        if self._light is None and self.light_factory is not None:
            self._light = self.light_factory()
        return self._light

    @property
    def ttft(self) -> Ttft:
        """TTFT at every concurrency."""
        return self.ttft_rows(np.arange(len(self.batch)))

    def _at(self, metric: str, idx: np.ndarray) -> Ttft | Tpot:
        """``ttft`` or ``tpot`` at the concurrencies of index ``idx``."""
        if metric == "ttft":
            return self.ttft_rows(idx)
        return take_rows(self.tpot, idx) if self.tpot_rows is None else self.tpot_rows(idx)

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
        grid = geometric_rows(n, min(n, QUANTILE_GRID))
        if self.exact_rows:
            grid = np.union1d(np.arange(min(self.exact_rows, n)), grid)
        return grid

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
