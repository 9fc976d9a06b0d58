"""Backends as planning sees them: declared capabilities, the job factory and the shipped doubles."""

from typing import get_args

import pytest

from ecobench.errors import BackendError
from ecobench.hardware.backends import BACKENDS
from ecobench.hardware.backends.base import SUPPLIED, LazyBackend
from ecobench.hardware.backends.testing import FakeBackend, ReplayBackend, fixed_performance
from ecobench.hardware.catalog import load_catalog
from ecobench.planning.evaluate import evaluate
from ecobench.planning.jobs import capabilities, make_job
from ecobench.scenario.load import scenario_from_dict
from ecobench.scenario.model import BackendName

CAT = load_catalog()


def test_the_scenario_names_the_registered_backends():
    assert set(get_args(BackendName)) == set(BACKENDS)


def test_a_lazy_entry_declares_the_real_backends_capabilities_without_importing_it():
    for name, entry in BACKENDS.items():
        if isinstance(entry, LazyBackend):
            declared = entry.capabilities
            assert entry.load().capabilities == declared, name
    analytic, emulated, reference = (BACKENDS[n].capabilities for n in ("analytic", "emulated", "reference"))
    assert "serving" in analytic.modes and "serving" in emulated.modes and "serving" not in reference.modes
    assert emulated.own_serving_model and not analytic.own_serving_model
    assert analytic.sizes_clusters and analytic.cheap and not emulated.cheap
    assert not reference.sweepable and reference.measures_host
    assert analytic.throughput_errors("training") == "training"
    assert emulated.throughput_errors("training") == "emulated"
    assert reference.throughput_errors("inference") is None and SUPPLIED.throughput_errors("training") is None


def test_job_factory_carries_every_setting_of_the_configuration(scenario_dict):
    s = scenario_from_dict(scenario_dict | {"configs": [
        {"id": "a", "instance_type": "g5.xlarge", "precision": "fp16", "host_cpu_utilization": 0.3,
         "stack": "vllm"}], "baseline": "a"})
    job = make_job(scenario=s, config=s.configs[0], mode="inference", seq_len=128, batch_size=4)
    assert (job.dtype, job.host_cpu_utilization, job.stack, job.config_id) == ("fp16", 0.3, "vllm", "a")
    assert job.arch.name == "bert-base" and job.layout is None and job.instances == 1
    with pytest.raises(TypeError):
        type(job)(job.arch, "inference", 128, 4, "fp16")  # keyword-only


def test_capabilities_of_a_supplied_throughput_and_of_a_missing_backend(scenario_dict):
    s = scenario_from_dict(scenario_dict)
    supplied = s.configs[0].model_copy(update={"measured_throughput_per_s": 10.0})
    assert capabilities(supplied, BACKENDS) is SUPPLIED
    with pytest.raises(BackendError, match=r"backend 'analytic' is not available \(available: fake\)"):
        capabilities(s.configs[0], {"fake": FakeBackend()})


def test_fake_backend_gives_its_fixed_performance_to_every_job(scenario_dict):
    fake = FakeBackend(fixed_performance(250.0))
    s = scenario_from_dict(scenario_dict | {"uncertainty": {"draws": 0}})
    df = evaluate(s, backends={"analytic": fake}).set_index("config_id")
    assert df["throughput_per_instance_per_s"].tolist() == [250.0, 250.0]
    assert df.loc["a", "instances"] == 1 + int(100000 / 3600 / (250.0 * 0.7))  # the rate at 70% headroom
    assert [j.config_id for j in fake.jobs][:2] == ["a", "b"]


def test_replay_backend_gives_each_configuration_its_recorded_performance(scenario_dict):
    replay = ReplayBackend({"a": fixed_performance(100.0), "b": fixed_performance(400.0)}, name="analytic")
    s = scenario_from_dict(scenario_dict | {"uncertainty": {"draws": 0}})
    df = evaluate(s, backends={"analytic": replay}).set_index("config_id")
    assert df.loc["a", "throughput_per_instance_per_s"] == 100.0
    assert df.loc["b", "throughput_per_instance_per_s"] == 400.0
    job = make_job(scenario=s, config=s.configs[0].model_copy(update={"id": "zz"}), mode="inference",
                   seq_len=128, batch_size=1)
    with pytest.raises(BackendError, match=r"'zz' \(recorded: a, b\)"):
        replay.evaluate(job, CAT.instance("inf1.xlarge"), CAT)
