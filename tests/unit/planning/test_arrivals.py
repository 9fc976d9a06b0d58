"""The arrival stream's counts (planning/arrivals.py) against Monte Carlo draws of the same stream."""

import numpy as np
import pytest

from ecobench.planning.arrivals import left_behind


def _left_behind_drawn(rate, cv, residual, p, wait, room, n=200_000, seed=0):
    """Mean of ``max(0, N(t) - room V)``: ``N(t)`` the arrivals within ``t`` after an arrival of a
    renewal stream of gamma gaps (CV ``cv``), ``t`` the rest of a step (uniform on ``(0, residual)``)
    plus ``wait`` with chance ``p``, ``V`` uniform on (0, 1)."""
    rng = np.random.default_rng(seed)
    k = 1.0 / cv ** 2
    t = residual * rng.uniform(size=n) + np.where(rng.uniform(size=n) < p, wait, 0.0)
    arrived, count = np.zeros(n), np.zeros(n)
    while True:
        arrived += rng.gamma(k, 1.0 / (rate * k), size=n)
        inside = arrived <= t
        if not inside.any():
            break
        count += inside
    return float(np.maximum(0.0, count - room * rng.uniform(size=n)).mean())


@pytest.mark.parametrize("cv,rate,residual,p,wait,room", [
    (1.5, 10.0, 0.2, 0.5, 0.5, 3.8),  # bursts: a burst's rest queues behind the prompt
    (1.0, 10.0, 0.2, 0.5, 0.5, 3.8),  # Poisson
    (0.5, 10.0, 0.2, 0.3, 0.3, 2.0),  # smoother than Poisson
    (1.5, 5.0, 0.1, 0.0, 0.0, 8.0),  # no wait, a roomy step: almost nothing left behind
])
def test_prompts_left_behind_a_prompt_are_those_its_finishing_step_has_no_room_for(cv, rate, residual, p,
                                                                                   wait, room):
    model = float(left_behind(np.array([rate]), cv, np.array([residual]), np.array([p]), np.array([wait]),
                              np.array([room]))[0])
    drawn = _left_behind_drawn(rate, cv, residual, p, wait, room)
    assert model == pytest.approx(drawn, rel=0.03, abs=0.005)


def test_a_step_with_no_room_leaves_every_arrival_behind_and_a_bigger_room_fewer():
    rooms = np.array([0.0, 1.0, 4.0, 50.0])
    behind = left_behind(np.full(4, 10.0), 1.5, np.full(4, 0.2), np.full(4, 0.5), np.full(4, 0.5), rooms)
    assert np.all(np.diff(behind) < 0)
    assert behind[0] == pytest.approx(_left_behind_drawn(10.0, 1.5, 0.2, 0.5, 0.5, 0.0), rel=0.03)
