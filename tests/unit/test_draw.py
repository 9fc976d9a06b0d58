"""The draw model on its own (``power/draw.py``): no scenario, no catalog."""

import numpy as np
import pytest

from ecobench.hardware.backends.base import Activity
from ecobench.power.draw import NETWORK_W_PER_GB_PER_S, DrawParams, DrawSpec, draw_w

COMPUTE = Activity(1.0, 0.0, 0.0)
SPEC = DrawSpec(accelerator_count=2, chip_idle_ratio=0.25, chip_max_w=100.0, activity=COMPUTE, vcpus=8,
                cpu_min_w_per_vcpu=1.0, cpu_max_w_per_vcpu=4.0, ranks=2, cpu_utilization=None,
                memory_gb=32.0, network_bytes_per_s=0.0)
PARAMS = DrawParams(d_compute=0.8, d_memory=0.5, d_stall=0.1, d_sync=0.8, vcpus_per_rank=2.0,
                    memory_w_per_gb=0.4, pue=1.5)


def test_idle_and_full_load_by_component():
    idle, full = draw_w(SPEC, PARAMS, busy=0.0), draw_w(SPEC, PARAMS, busy=1.0)
    assert idle["accelerator"] == pytest.approx(2 * 25.0)  # idle is a share of the maximum
    assert full["accelerator"] == pytest.approx(2 * (25.0 + 75.0 * 0.8))  # compute-bound share 0.8
    assert idle["cpu"] == pytest.approx(8 * 1.0)
    assert full["cpu"] == pytest.approx(8 * (1.0 + 3.0 * 0.5))  # 2 ranks x 2 vCPUs of 8 busy
    assert idle["memory"] == full["memory"] == pytest.approx(32 * 0.4)
    for w in (idle, full):
        it = w["accelerator"] + w["cpu"] + w["memory"] + w["network"]
        assert w["it"] == pytest.approx(it) and w["overhead"] == pytest.approx(0.5 * it)
        assert w["total"] == pytest.approx(1.5 * it)


def test_draw_is_linear_in_busy_and_broadcasts():
    busy = np.array([0.0, 0.25, 0.5, 1.0])
    acc = draw_w(SPEC, PARAMS, busy=busy)["accelerator"]
    assert np.diff(acc) / np.diff(busy) == pytest.approx(np.full(3, 2 * 75.0 * 0.8))


def test_the_activity_mix_and_an_unreached_throughput_lower_the_dynamic_share():
    mixed = DrawSpec(**{**SPEC.__dict__, "activity": Activity(0.5, 0.3, 0.2)})
    share = 0.5 * 0.8 + 0.3 * 0.5 + 0.2 * 0.1
    assert draw_w(mixed, PARAMS)["accelerator"] == pytest.approx(2 * (25.0 + 75.0 * share))
    half = draw_w(SPEC, PARAMS, achieved=0.5)["accelerator"]  # waits the other half: stall draw
    assert half == pytest.approx(2 * (25.0 + 75.0 * (0.5 * 0.8 + 0.5 * 0.1)))


def test_network_and_a_supplied_instance_measurement():
    net = draw_w(SPEC, PARAMS, network_bytes_per_s=2e9)["network"]
    assert net == pytest.approx(2 * NETWORK_W_PER_GB_PER_S)
    measured = DrawSpec(**{**SPEC.__dict__, "measured_power_w": 300.0, "measured_power_scope": "instance"})
    w = draw_w(measured, PARAMS)
    model = draw_w(SPEC, PARAMS)
    assert w["it"] == pytest.approx(300.0)  # the measurement, split as the model splits it
    assert w["accelerator"] / w["cpu"] == pytest.approx(model["accelerator"] / model["cpu"])
