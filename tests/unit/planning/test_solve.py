"""The serving planner's fast paths give what the plain computations give: the two-step grid search of
a TTFT quantile (``Ttft.quantiles``) the bracket of counting every grid point, several statistics
solved together what each solved alone, and the load of a rate what ``at_rate`` reports."""


import numpy as np
import pytest

from ecobench.planning.operating import geometric_rows
from ecobench.planning.schedulers import SCHEDULERS, Steps, first_meeting
from ecobench.planning.serving import at_rate, batch_grid, latency_columns, load_at
from ecobench.planning.traffic import Lengths, Traffic
from ecobench.planning.ttft_dist import SOLVE_GRID, SOLVE_ROUNDS, Ttft, bracket

BATCH = np.arange(1.0, 129.0)
STEPS = Steps(BATCH, 0.01 + 0.0002 * BATCH, 0.05 / 512, 0.002, 1e-6)
TRAFFIC = Traffic(Lengths(512, 1.0), Lengths(100, 1.5), arrival_cv=1.5)
CASES = [("continuous", 2048), ("continuous", None), ("static", None), ("disaggregated", None)]


def _operating(scheduler, budget):
    return SCHEDULERS[scheduler](STEPS, TRAFFIC, budget=budget, ttft_ok=None)


def _counted_quantile(d: Ttft, q: float) -> np.ndarray:
    """The quantile by counting the CDF below ``q`` at every point of each round's grid."""
    lo, hi = bracket(d, np.full(len(d.p), q))  # the search's own bracket
    r = np.arange(len(lo))
    for _ in range(SOLVE_ROUNDS):
        t = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, SOLVE_GRID)[None, :]
        c = np.stack([d.cdf(t[:, i]) for i in range(SOLVE_GRID)], axis=1)
        j = np.clip((c < q).sum(axis=1), 1, SOLVE_GRID - 1)
        lo, hi = t[r, j - 1], t[r, j]
    return (lo + hi) / 2


@pytest.mark.parametrize("scheduler,budget", CASES)
def test_two_step_search_finds_the_bracket_counting_every_point_finds(scheduler, budget):
    d = _operating(scheduler, budget).ttft
    solved = d.quantiles([0.5, 0.9, 0.99])
    for row, q in zip(solved, (0.5, 0.9, 0.99), strict=True):
        assert np.array_equal(row, _counted_quantile(d, q))
        assert np.array_equal(row, d.quantile(q))


@pytest.mark.parametrize("scheduler,budget", CASES)
def test_statistics_solved_together_equal_each_solved_alone(scheduler, budget):
    together, alone = _operating(scheduler, budget), _operating(scheduler, budget)
    stats = [0.5, "mean", 0.99]
    idx = np.array([0, 5, 40, 127])
    for metric in ("ttft", "tpot"):
        for got, stat in zip(together.latencies_ms(metric, stats), stats, strict=True):
            assert np.array_equal(got, alone.latency_ms(metric, stat))
        for got, stat in zip(together.latencies_at(metric, stats, idx), stats, strict=True):
            assert np.array_equal(got, alone.latency_at(metric, stat, idx))


@pytest.mark.parametrize("scheduler,budget", [*CASES, ("continuous", 4096)])
def test_ttft_worked_out_at_the_rows_read_equals_every_row_at_once(scheduler, budget):
    """The costly TTFT terms are worked out at the rows a search reads (in any order, a row once);
    each row holds what working out every row at once gives."""
    piecewise, whole = _operating(scheduler, budget), _operating(scheduler, budget).ttft
    idx = np.array([127, 3, 40, 3])
    for rows in (idx, np.arange(len(BATCH))):
        got = piecewise.ttft_rows(rows)
        for name in Ttft.__dataclass_fields__:
            a, b = getattr(got, name), getattr(whole, name)
            assert a is None and b is None or np.array_equal(a, np.asarray(b)[rows]), name


def test_block_search_finds_what_a_plain_scan_finds():
    rng = np.random.default_rng(0)
    order = rng.permutation(40)
    cost = np.cumsum(rng.integers(0, 3, 40))  # rising, some items free (grid rows already solved)
    for _ in range(50):
        ok = rng.random(40) < rng.choice([0.0, 0.05, 0.3])
        blocks = []

        def meets(items, ok=ok, blocks=blocks):
            blocks.append(items)
            return ok[items]

        got = first_meeting(order, meets, cost, 2)
        hits = [i for i in order if ok[i]]
        assert got == (int(hits[0]) if hits else None)
        read = np.concatenate(blocks)
        assert np.array_equal(read, order[:len(read)])  # from the front, each item once
        spent = 0
        for k, b in enumerate(blocks):  # each block as far as twice the cost of the one before
            end = spent + len(b)
            assert len(b) == 1 or cost[end - 1] - (cost[spent - 1] if spent else 0) <= 2 * 2 ** k
            spent = end


def test_disaggregated_ttft_is_one_distribution_solved_once():
    d = _operating("disaggregated", None).ttft
    assert d.same_rows() and not _operating("continuous", 2048).ttft.same_rows()
    assert np.array_equal(d.quantiles([0.99])[0], _counted_quantile(d, 0.99))


def test_load_and_latency_columns_are_what_at_rate_reports():
    op = _operating("continuous", 2048)
    rates = np.array([0.01, 1.0, 0.5 * float(op.rate_per_s.max())])
    load = load_at(op, rates)
    batch = np.where(rates >= op.rate_per_s[0], np.interp(rates, op.rate_per_s, op.batch), 1.0)
    assert np.array_equal(load["batch"], batch) and load["batch"][0] == 1.0 < load["batch"][2]
    assert np.array_equal(load["prefill_share"], np.interp(batch, op.batch, op.prefill_share))
    stats = [("mean", "mean"), ("p50", 0.5), ("p99", 0.99)]
    columns = latency_columns(op, float(rates[2]), stats)
    at = at_rate(op, rates[2], 1.0, stats)
    assert columns == {f"{m}_ms_{label}": float(at[f"{m}_ms_{label}"])
                       for label, _ in stats for m in ("ttft", "tpot")}


def test_shared_grids_are_read_only():
    for grid in (batch_grid(300), geometric_rows(95, 16)):
        with pytest.raises(ValueError):
            grid[0] = 0
    assert np.array_equal(geometric_rows(95, 16),
                          np.unique(np.round(np.geomspace(1, 95, 16)).astype(int) - 1))
