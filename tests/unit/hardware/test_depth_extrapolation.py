"""Full-depth rates from a shallow measurement: what is not a layer is paid once, and a layer's share
of a step is read from alternated pairs of steps."""

import time
from types import SimpleNamespace

import pytest

from ecobench.errors import BackendError
from ecobench.hardware.backends.torch_ref import depth_pair, extrapolate_depth, paired_steps


def test_the_part_outside_the_layers_is_paid_once_not_per_layer():
    # 4 ms outside the layers, 2 ms per layer: 1 layer -> 6 ms, 2 -> 8 ms, 24 layers -> 52 ms
    rates, how = extrapolate_depth([1 / 0.006, 1 / 0.006], [(0.006, 0.008)] * 4, (1, 2), 1, 24)
    assert rates == pytest.approx([1 / 0.052, 1 / 0.052])
    assert "24 layers" in how and "4 alternated 1- and 2-layer steps" in how
    assert "8% of the full-depth time" in how  # 4 of 52 ms


def test_the_first_layers_extra_is_not_charged_to_every_layer():
    # 1 ms outside the layers, the first layer 3 ms, each further one 2 ms: 1 layer -> 4 ms,
    # 4 -> 10 ms, 12 -> 26 ms; a slope from no layers (9 ms over 4) would say 1 + 12 x 2.25 = 28 ms
    assert depth_pair(4) == (1, 4)
    rates, _ = extrapolate_depth([1 / 0.010], [(0.004, 0.010)] * 3, depth_pair(4), 4, 12)
    assert rates == pytest.approx([1 / 0.026])


def test_drift_between_pairs_cancels_and_each_window_keeps_its_own_spread():
    # the host runs at half speed for the first half of the pairs: each pair's ratio is the same
    pairs = [(0.010, 0.020)] * 5 + [(0.005, 0.010)] * 5  # 1 and 2 layers; 2 of 4 layers measured
    rates, _ = extrapolate_depth([100.0, 200.0], pairs, depth_pair(2), 2, 4)
    assert rates == pytest.approx([50.0, 100.0])  # x (1 + 2 x 1/2)


def test_one_measured_layer_is_paired_with_two():
    assert depth_pair(1) == (1, 2)


def test_a_layer_no_slower_is_refused_not_extrapolated():
    with pytest.raises(BackendError, match="too noisy to time one layer"):
        extrapolate_depth([100.0, 101.0], [(0.010, 0.0101), (0.010, 0.0099)] * 4, (1, 2), 1, 24)


def _busy(seconds):
    def step():
        t = time.perf_counter() + seconds
        while time.perf_counter() < t:
            pass
    return step


def test_paired_steps_alternate_and_time_each_side():
    calls = []
    lo, hi = _busy(0.001), _busy(0.002)
    spec = SimpleNamespace(warmup_s=0.0, min_window_s=0.01, repetitions=2, min_batches=2)
    pairs = paired_steps(lambda: (calls.append("lo"), lo()), lambda: (calls.append("hi"), hi()), 4, spec, "t")
    assert len(pairs) >= 10  # repetitions x max(min_batches, 5)
    assert calls[2:10] == ["lo", "hi", "hi", "lo", "lo", "hi", "hi", "lo"]  # after the warm-up pair
    assert sum(b > a for a, b in pairs) > len(pairs) / 2  # (lo, hi): a busy host may preempt one
