"""The Pareto front against brute force, and the picks."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ecobench.planning.pareto import front


def _brute(p: np.ndarray) -> np.ndarray:
    n = len(p)
    out = np.ones(n, dtype=bool)
    for i in range(n):
        for j in range(n):
            if np.all(p[j] <= p[i]) and np.any(p[j] < p[i]):
                out[i] = False
                break
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers(2, 3), st.integers(0, 2**31 - 1), st.booleans())
def test_front_matches_brute_force(n, k, seed, coarse):
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 4, size=(n, k)).astype(float) if coarse else rng.random((n, k))  # coarse: ties
    assert np.array_equal(front(p), _brute(p))


def test_identical_points_are_both_kept():
    p = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 3.0]])
    assert front(p).tolist() == [True, True, False]


def test_large_front_is_fast_enough_to_use():
    rng = np.random.default_rng(0)
    p = rng.random((100_000, 3))
    mask = front(p)
    assert 0 < mask.sum() < 2_000
    sample = rng.choice(np.flatnonzero(mask), 20)
    for i in sample:  # nothing dominates a front point
        assert not np.any(np.all(p <= p[i], axis=1) & np.any(p < p[i], axis=1))
