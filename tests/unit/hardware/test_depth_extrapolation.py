"""Full-depth rates from a shallow measurement: what is not a layer is paid once."""

import pytest

from ecobench.errors import BackendError
from ecobench.hardware.backends.torch_ref import extrapolate_depth


def test_the_part_outside_the_layers_is_paid_once_not_per_layer():
    # t0 = 4 ms outside the layers, 2 ms per layer: 1 layer -> 6 ms, 24 layers -> 52 ms
    rates, how = extrapolate_depth([1 / 0.006, 1 / 0.006], [1 / 0.004, 1 / 0.004], 1, 24)
    assert rates == pytest.approx([1 / 0.052, 1 / 0.052])
    assert "24 layers" in how and "8%" in how  # 4 of 52 ms


def test_each_window_keeps_its_own_spread():
    rates, _ = extrapolate_depth([100.0, 200.0], [400.0], 2, 4)
    # t0 = 2.5 ms; per layer (10 - 2.5) / 2 and (5 - 2.5) / 2 ms
    assert rates == pytest.approx([1 / 0.0175, 1 / 0.0075])


def test_a_layer_no_slower_than_no_layers_is_refused_not_extrapolated():
    with pytest.raises(BackendError, match="too noisy to time one layer"):
        extrapolate_depth([100.0, 101.0], [99.0, 100.0], 1, 24)
