import pytest

from ecobench.errors import BackendError
from ecobench.hardware.backends import BACKENDS, Job
from ecobench.hardware.backends.calibration import efficiency, point_efficiencies
from ecobench.hardware.catalog import load_catalog
from ecobench.workloads import preset

CAT = load_catalog()
ANALYTIC = BACKENDS["analytic"]


def test_efficiencies_are_physical():
    for acc, _, dtype, mode, eff in point_efficiencies():
        assert 0.05 < eff <= 1.0, (acc, dtype, mode, eff)


def test_single_point_calibration_reproduces_its_point():
    # inf1.xlarge BERT-base seq 128 batch 8 is the only Inferentia point: predicting it returns it.
    perf = ANALYTIC.evaluate(Job(preset("bert-base"), "inference", 128, 8, "bf16"),
                             CAT.instance("inf1.xlarge"), CAT)
    assert perf.throughput_per_instance_per_s == pytest.approx(1095, rel=1e-9)
    assert perf.provenance == "estimated"
    one = ANALYTIC.evaluate(Job(preset("bert-large"), "training", 128, 16, "bf16", 1, 65536),
                            CAT.instance("trn1.32xlarge"), CAT)
    assert one.throughput_per_instance_per_s == pytest.approx(3827, rel=1e-9)


def test_scale_out_loses_a_little_per_instance():
    job1 = Job(preset("bert-large"), "training", 128, 16, "bf16", 1, 1048576)
    job16 = Job(preset("bert-large"), "training", 128, 16, "bf16", 16, 1048576)
    t1 = ANALYTIC.evaluate(job1, CAT.instance("trn1.32xlarge"), CAT).throughput_per_instance_per_s
    t16 = ANALYTIC.evaluate(job16, CAT.instance("trn1.32xlarge"), CAT).throughput_per_instance_per_s
    # the published scale-out point: 57,408 / (16 x 3,827) = 0.938
    assert t16 / t1 == pytest.approx(57408 / (16 * 3827), rel=0.01)


def test_fallback_tier_is_reported():
    e = efficiency("t4", "bf16", "training")
    assert "t4" not in e.match or "any" in e.match


def test_unsupported_precision_and_cpu_instance_are_clear_errors():
    with pytest.raises(BackendError, match="no published fp32 peak"):
        ANALYTIC.evaluate(Job(preset("bert-base"), "inference", 128, 1, "fp32"),
                          CAT.instance("inf1.xlarge"), CAT)
    with pytest.raises(BackendError, match="no accelerator"):
        ANALYTIC.evaluate(Job(preset("bert-base"), "inference", 128, 1, "fp32"),
                          CAT.instance("c6i.2xlarge"), CAT)


def test_faster_precision_is_faster():
    job = lambda dt: Job(preset("bert-base"), "inference", 128, 8, dt)  # noqa: E731
    t32 = ANALYTIC.evaluate(job("fp32"), CAT.instance("g4dn.xlarge"), CAT).throughput_per_instance_per_s
    t16 = ANALYTIC.evaluate(job("fp16"), CAT.instance("g4dn.xlarge"), CAT).throughput_per_instance_per_s
    assert t16 > t32
