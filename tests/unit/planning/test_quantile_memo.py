"""The solved quantiles kept per distinct distribution (``tpot_dist.memo_quantiles``) are the solve's
own, bit for bit, for equal distributions built apart; a caller's change to what it gets does not
reach the next caller; a changed solver setting solves again; and the TTFT CDF's incomplete gamma
worked out where its argument is not 0 only equals the one worked out everywhere."""

import dataclasses

import numpy as np
import pytest
from scipy.special import gammainc

from ecobench.planning import tpot_dist, ttft_dist
from ecobench.planning.schedulers import SCHEDULERS, Steps
from ecobench.planning.traffic import Lengths, Traffic
from ecobench.planning.ttft_dist import Ttft, _TtftCdf

BATCH = np.arange(1.0, 65.0)
STEPS = Steps(BATCH, 0.01 + 0.0002 * BATCH, 0.05 / 512, 0.002, 1e-6)
TRAFFIC = Traffic(Lengths(512, 1.0), Lengths(100, 1.5), arrival_cv=1.5)
QS = [0.5, 0.9, 0.99]


def _operating(scheduler: str, budget: int | None):
    return SCHEDULERS[scheduler](STEPS, TRAFFIC, budget=budget, ttft_ok=None)


@pytest.mark.parametrize("scheduler,budget",
                         [("continuous", 2048), ("static", None), ("disaggregated", None)])
def test_kept_quantiles_are_the_solves_own_bits(scheduler, budget):
    tpot_dist._quantiles_cache.clear()
    a, b = _operating(scheduler, budget), _operating(scheduler, budget)  # equal, built apart
    first = a.ttft.quantiles(QS)
    again = b.ttft.quantiles(QS)  # from the memo
    plain = Ttft._quantiles(b.ttft, QS)  # no memo
    assert np.array_equal(first, plain) and np.array_equal(again, plain)
    t = _operating(scheduler, budget).tpot
    assert np.array_equal(a.tpot.quantiles(QS), tpot_dist.Tpot._quantiles(t, QS))
    assert np.array_equal(t.quantiles(QS), tpot_dist.Tpot._quantiles(t, QS))


def test_a_callers_change_does_not_reach_the_next_caller():
    tpot_dist._quantiles_cache.clear()
    d = _operating("continuous", None).ttft
    got = d.quantiles(QS)
    kept = got.copy()
    got[:] = -1.0
    assert np.array_equal(d.quantiles(QS), kept)


def test_a_different_distribution_or_setting_solves_again(monkeypatch):
    tpot_dist._quantiles_cache.clear()
    d = _operating("continuous", None).ttft
    base = d.quantiles(QS)
    slower = dataclasses.replace(d, wait=d.wait * 2)
    assert not np.array_equal(slower.quantiles(QS), base)
    monkeypatch.setattr(ttft_dist, "SOLVE_ROUNDS", 1)  # a coarser solve: not the kept one
    coarse = d.quantiles(QS)
    assert np.array_equal(coarse, Ttft._quantiles(d, QS)) and not np.array_equal(coarse, base)


def test_incomplete_gamma_where_the_argument_is_not_zero_only():
    d = _operating("continuous", None).ttft
    f = _TtftCdf(d)
    rng = np.random.default_rng(0)
    z = np.maximum(rng.normal(0.5, 1.0, (2, len(d.p), 5, f.service.shape[2])), 0.0)  # a share at 0
    assert (z == 0).any() and (z != 0).any()
    assert np.array_equal(f._gammainc_k(z), gammainc(f.k, z))
    assert np.array_equal(f._gammainc_k(z + 1.0), gammainc(f.k, z + 1.0))  # none at 0: the plain call
