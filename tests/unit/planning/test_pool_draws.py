"""The Monte Carlo's TTFT of a disaggregated plan reads the prefill pool at the load the draw's pool
runs at (``serving.pool_ttft_ms_p50``), as the plan reads its own (``prefill_pool_columns``): until
2026-11-29 every draw read the highest load that meets the targets, so a pool that rounding up left
at 8% load had a median TTFT of 509 ms and a band of 509-3,019 ms (the band's low edge the plan's
value itself)."""

import numpy as np

from ecobench.planning.schedulers import SCHEDULERS, Steps
from ecobench.planning.serving import latency_at, pool_ttft_ms_p50, prefill_pool_columns
from ecobench.planning.traffic import Lengths, Traffic

BATCH = np.arange(1.0, 129.0)
STEPS = Steps(BATCH, 0.01 + 0.0002 * BATCH, 0.05 / 512, 0.002, 1e-6)
TRAFFIC = Traffic(Lengths(512, 1.0), Lengths(100, 1.5))
OP = SCHEDULERS["disaggregated"](STEPS, TRAFFIC, budget=None, ttft_ok=lambda d: d.quantiles([0.5])[0] < 0.3)


def _plan_pool(rate: float) -> int:
    return int(np.ceil(rate * OP.prefill_s / OP.prefill_load - 1e-9))


def test_at_the_planned_speed_a_draw_reads_the_plans_own_ttft():
    for rate in (0.5, 3.0, 40.0):  # a pool of 1 at a low load, a few replicas, many
        pool = _plan_pool(rate)
        load = rate * OP.prefill_s / pool
        want = prefill_pool_columns(OP, load, [("p50", 0.5)])["ttft_ms_p50"]
        got = pool_ttft_ms_p50(OP, rate, pool, np.array([1.0]))[0]
        assert abs(got / want - 1) < 1e-3, (rate, got, want)


def test_draws_centre_on_the_plan_not_on_the_highest_load_that_meets_the_targets():
    rate = 0.5  # one prefill replica at a fraction of prefill_load
    pool = _plan_pool(rate)
    assert rate * OP.prefill_s / pool < 0.5 * OP.prefill_load
    speed = np.exp(np.random.default_rng(0).normal(0.0, 0.2, 2000))
    capacity = float(OP.rate_per_s[-1])
    draws = latency_at(OP, rate, capacity, speed, prefill_replicas=pool)["ttft_ms_p50"]
    planned = pool_ttft_ms_p50(OP, rate, pool, np.array([1.0]))[0]
    at_limit = 1e3 * float(OP.ttft.quantiles([0.5])[0][0])  # every row: the pool at prefill_load
    assert planned < at_limit
    lo, mid, hi = np.quantile(draws, [0.05, 0.5, 0.95])
    assert lo < planned < hi and abs(mid / planned - 1) < 0.05
    assert hi < at_limit  # before: the draws' median was the TTFT at prefill_load


def test_a_faster_draw_never_has_a_longer_ttft_at_the_same_pool():
    rate, pool = 3.0, _plan_pool(3.0)
    speed = np.linspace(1.0, 1.3, 31)  # faster: the same pool, at a lower load, every time shorter
    got = pool_ttft_ms_p50(OP, rate, pool, speed)
    assert np.all(np.diff(got) <= 1e-9)


def test_a_floor_on_replicas_keeps_the_planned_pool_at_the_planned_speed():
    rate = 0.5
    floor = _plan_pool(rate) + 3  # a plan whose pool a floor on replicas set (bursts spread over it)
    load = rate * OP.prefill_s / floor
    want = prefill_pool_columns(OP, load, [("p50", 0.5)])["ttft_ms_p50"]
    assert abs(pool_ttft_ms_p50(OP, rate, floor, np.array([1.0]))[0] / want - 1) < 1e-3
