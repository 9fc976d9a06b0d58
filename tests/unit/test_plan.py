"""Plan arithmetic on a fixed performance: no scenario, no backend (``planning/plan.py``)."""

from dataclasses import replace

import numpy as np
import pytest

from ecobench.hardware.backends.testing import fixed_performance
from ecobench.hardware.catalog import load_catalog
from ecobench.planning.plan import (
    Context,
    instances_for_latency,
    instances_for_rate,
    latency_p99_s,
    plan_inference,
    plan_training,
    whole,
)
from ecobench.power.carbon import GridIntensity
from ecobench.power.embodied import embodied_kg
from ecobench.power.setup import power_setup
from ecobench.power.uncertainty import (
    BAND_METRICS_INFERENCE,
    BAND_METRICS_TRAINING,
    UncertainSetup,
    ZeroDraws,
    simulate,
)
from ecobench.scenario.model import InferenceSpec, TrainingSpec

CAT = load_catalog()
INST = CAT.instance("inf2.xlarge")
GRID = GridIntensity(400.0, "a test grid", 2024)
CTX = Context(CAT, INST, 0.76, GRID, 1.2, power_setup(CAT, INST, None, None, None, None))
# Every input at a fixed value: the Monte Carlo then reruns the plan's own arithmetic.
FIXED = UncertainSetup(None, "k", None, 0.0, 0.0, 0.0, False, None, 400.0, 400.0, 400.0, 0.76,
                       embodied_kg(INST, 1.0))
SPEC = InferenceSpec(rate_per_h=360_000, seq_len=128, max_utilization=0.5, horizon_h=10)


def test_fewest_instances_for_a_rate_and_exact_boundaries():
    assert instances_for_rate(100.0, 50.0, 1.0) == 2  # exactly full: no extra instance
    assert instances_for_rate(100.0, 50.0, 0.99) == 3
    assert instances_for_rate(0.001, 50.0, 0.5) == 1  # at least one
    assert whole(2.0 + 1e-13) == 2.0 and whole(0.2) == 1.0
    assert list(whole(np.array([0.5, 2.0, 2.1]))) == [1.0, 2.0, 3.0]


def test_inference_plan_energy_cost_and_co2_follow_from_instances_and_draw():
    row = plan_inference(SPEC, fixed_performance(40.0), CTX).row
    # 100 requests/s at 40/s per instance and 50% headroom: 5 instances at 50% load
    assert row["instances"] == 5 and row["load"] == pytest.approx(0.5)
    inst_h = 5 * 10
    assert row["instance_hours"] == inst_h and row["cost_usd"] == pytest.approx(inst_h * 0.76)
    assert row["energy_kwh"] == pytest.approx(inst_h * row["power_w"] / 1000)
    assert row["power_overhead_w"] == pytest.approx(0.2 / 1.2 * row["power_w"])  # PUE 1.2
    assert row["co2_operational_kg"] == pytest.approx(row["energy_kwh"] * 0.4)
    assert row["co2_kg"] == pytest.approx(row["co2_operational_kg"] + embodied_kg(INST, inst_h))
    millions = 360_000 * 10 / 1e6
    assert row["energy_kwh_per_million"] == pytest.approx(row["energy_kwh"] / millions)


def test_inference_plan_broadcasts_over_headrooms_and_prices():
    utils = np.array([[0.25], [0.5], [1.0]])
    ctx = replace(CTX, price_usd_per_h=np.array([[0.5, 1.0]]))
    arr = plan_inference(SPEC, fixed_performance(40.0), ctx, max_utilization=utils).row
    assert arr["instances"].shape == (3, 1) and arr["cost_usd"].shape == (3, 2)
    for i, u in enumerate((0.25, 0.5, 1.0)):
        for j, price in enumerate((0.5, 1.0)):
            one = plan_inference(SPEC, fixed_performance(40.0), replace(CTX, price_usd_per_h=price),
                                 max_utilization=u).row
            assert arr["instances"][i, 0] == one["instances"]
            assert arr["cost_usd"][i, j] == pytest.approx(one["cost_usd"])
            assert arr["energy_kwh"][i, 0] == pytest.approx(one["energy_kwh"])


def test_fractional_instances_for_repetition_samples():
    row = plan_inference(SPEC, fixed_performance(30.0), CTX, whole_instances=False).row
    assert row["instances"] == pytest.approx(100 / (30 * 0.5)) and row["load"] == pytest.approx(0.5)


def test_latency_queue_and_the_target_it_cannot_meet():
    batch_s, batch = 0.01, 4
    assert latency_p99_s(1e-6, batch_s, batch) > 1e3  # one request waits for three more
    assert np.isinf(latency_p99_s(batch / batch_s, batch_s, batch))  # at capacity the queue grows
    quarter, three_quarters = latency_p99_s(np.array([100.0, 300.0]), batch_s, batch)
    # at 25% load: the batch, the wait for 3 more requests (30 ms) and the M/D/1 tail by hand
    wait = 0.25 * batch_s / (2 * 0.75)
    assert quarter == pytest.approx(batch_s + 3 / 100 + wait / 0.25 * np.log(25))
    assert three_quarters > quarter  # the queue of batches outgrows the shorter wait to fill one
    assert instances_for_latency(100.0, 1, batch_s, 1, 0.005) is None  # below the 10 ms batch: no load
    n = instances_for_latency(100.0, 2, batch_s, 1, 0.05)
    assert 0 < n < 100.0 / (2 * 100.0) * 2


def test_training_plan_adds_the_phases_and_the_monte_carlo_reruns_it():
    spec = TrainingSpec(total_tokens=1e9, phases=[{"seq_len": 128, "fraction": 0.9},
                                                  {"seq_len": 512, "fraction": 0.1}],
                        global_batch_size=256)
    perfs = {128: fixed_performance(400.0), 512: fixed_performance(100.0)}
    result = plan_training(spec, 4, lambda ph: perfs[ph.seq_len], replace(CTX, uncertain=FIXED))
    seconds = sum(spec.phase_sequences(ph) / (4 * perfs[ph.seq_len].throughput_per_instance_per_s)
                  for ph in spec.phases)
    row = result.row
    assert row["duration_h"] == pytest.approx(seconds / 3600) and row["instances"] == 4
    assert row["throughput_per_instance_per_s"] == pytest.approx(row["sequences"] / (seconds * 4))
    sim = simulate(result.mc, ZeroDraws(2, 0))
    own = set(BAND_METRICS_TRAINING) - {"mfu"}  # MFU: the training mode attaches its inputs
    assert set(sim) == own
    for k in own:
        assert sim[k] == pytest.approx(np.full(2, row[k]), rel=1e-12), k


def test_the_plan_result_carries_the_monte_carlo_input_only_when_uncertain():
    assert plan_inference(SPEC, fixed_performance(40.0), CTX).mc is None
    result = plan_inference(SPEC, fixed_performance(40.0), replace(CTX, uncertain=FIXED))
    sim = simulate(result.mc, ZeroDraws(2, 0))
    assert set(sim) == set(BAND_METRICS_INFERENCE)
    for k in BAND_METRICS_INFERENCE:
        assert sim[k] == pytest.approx(np.full(2, result.row[k]), rel=1e-12), k
