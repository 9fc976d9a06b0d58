"""The mode registry: one mode per workload mode, each banding what the Monte Carlo simulates."""

from ecobench.hardware.backends.testing import FakeBackend, ReplayBackend, fixed_performance
from ecobench.hardware.catalog import load_catalog
from ecobench.planning.modes import MODES, ConfigRun, MeasuredMode, mode_for
from ecobench.planning.modes.inference import InferenceMode
from ecobench.planning.plan import Context
from ecobench.power.carbon import GridIntensity
from ecobench.power.setup import power_setup
from ecobench.power.uncertainty import BAND_METRICS_INFERENCE, BAND_METRICS_SERVING, BAND_METRICS_TRAINING
from ecobench.scenario.load import scenario_from_dict

CAT = load_catalog()


def test_every_workload_mode_has_a_mode_with_its_band_metrics():
    assert {m: MODES[m].band_metrics for m in MODES} == {  # type: ignore[attr-defined]
        "inference": BAND_METRICS_INFERENCE, "serving": BAND_METRICS_SERVING,
        "training": BAND_METRICS_TRAINING}


def _run(scenario_dict, backends):
    s = scenario_from_dict(scenario_dict)
    inst = CAT.instance("inf1.xlarge")
    ctx = Context(CAT, inst, 0.2, GridIntensity(300.0, "test", 2024), 1.1,
                  power_setup(CAT, inst, None, None, None, None))
    return ConfigRun(s, s.configs[0], 0, inst, CAT, backends, ctx)


def test_a_measuring_backend_gets_the_measured_mode_around_its_workloads(scenario_dict):
    modelled = mode_for(_run(scenario_dict, {"analytic": FakeBackend()}))
    assert isinstance(modelled, InferenceMode)
    measured = mode_for(_run(scenario_dict, {"analytic": ReplayBackend({"a": fixed_performance()})}))
    assert isinstance(measured, MeasuredMode) and isinstance(measured.inner, InferenceMode)
    assert measured.backend_columns([fixed_performance()]) == {"measurement_method": None}


def test_a_mode_asks_its_jobs_and_plans_them(scenario_dict):
    fake = FakeBackend(fixed_performance(50.0))
    mode = mode_for(_run(scenario_dict, {"analytic": fake}))
    jobs = mode.jobs()
    perfs = mode.performances(jobs)
    assert fake.jobs == jobs and [j.config_id for j in jobs] == ["a"]
    result = mode.plan(perfs)
    assert result.row["throughput_per_instance_per_s"] == 50.0 and result.mc is None
    assert mode.columns(perfs, result) == {}
