import math

import numpy as np
import pytest

from ecobench.planning.interruption import HOURS_PER_MONTH, SpotTerms, fleet_overhead, training_overhead


def _simulated_overhead(lam: float, tau: float, restart: float, intervals: int, seed: int) -> float:
    """Mean extra time per checkpoint interval of work, by drawing the interruptions: an attempt at an
    interval is interrupted (rate ``lam``) before ``tau`` with probability p, so each interval sees a
    geometric number of interrupted attempts; each costs its own time (an exponential cut at ``tau``,
    drawn by its inverse CDF) and ``restart``."""
    rng = np.random.default_rng(seed)
    p = -math.expm1(-lam * tau)
    failed = int((rng.geometric(1 - p, intervals) - 1).sum())
    lost = -np.log1p(-rng.random(failed) * p) / lam
    return (lost.sum() + failed * restart) / (intervals * tau)


def test_training_overhead_is_lost_work_and_restart_per_cluster_interruption():
    terms = SpotTerms(interruption_pct_per_month=7.3, checkpoint_interval_h=2.0, restart_h=0.5)
    assert HOURS_PER_MONTH == pytest.approx(730.5)
    assert terms.rate_per_instance_h == pytest.approx(0.073 / 730.5)
    lam = 100 * 0.073 / 730.5
    # the renewal result: (1/lam + restart) (e^(lam tau) - 1) per interval tau of work
    assert training_overhead(terms, 100) == pytest.approx((1 / lam + 0.5) * math.expm1(2 * lam) / 2 - 1)
    # to first order, half an interval and a restart per interruption (0.8% of it above here)
    assert training_overhead(terms, 100) == pytest.approx(lam * (2.0 / 2 + 0.5), rel=0.01)
    assert training_overhead(terms, 1) == pytest.approx(lam / 100 * 1.5, rel=1e-4)
    longer = SpotTerms(7.3, 4.0, 0.5)
    assert training_overhead(longer, 100) > training_overhead(terms, 100)
    assert training_overhead(terms, 200) > 2 * training_overhead(terms, 100)  # beyond first order
    assert training_overhead(SpotTerms(0.0, 4.0, 0.5), 100) == 0


@pytest.mark.parametrize(("pct", "instances", "tau", "restart"),
                         [(20.0, 256, 1.0, 0.25), (100.0, 1000, 1.0, 0.25), (20.0, 1000, 4.0, 0.5)])
def test_training_overhead_is_what_drawn_interruptions_cost(pct, instances, tau, restart):
    """A million drawn intervals (0.3% spread over seeds at the lowest rate here): the first-order form
    said 5.26%, 103% and 68.4%; the draws give 5.41%, 187% and 107%, which the overhead now is."""
    terms = SpotTerms(pct, tau, restart)
    lam = instances * terms.rate_per_instance_h
    sim = _simulated_overhead(lam, tau, restart, 1_000_000, seed=1)
    assert training_overhead(terms, instances) == pytest.approx(sim, rel=0.015)


def test_an_overhead_too_large_for_a_float_is_infinite_not_an_error():
    assert training_overhead(SpotTerms(100.0, 1_000.0, 0.25), 100_000) == math.inf


def test_a_fleet_keeps_the_interrupted_share():
    assert fleet_overhead(SpotTerms(15.0, 1.0, 0.25)) == pytest.approx(0.15)
