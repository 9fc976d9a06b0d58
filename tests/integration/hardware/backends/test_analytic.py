import pytest

from ecobench.errors import BackendError
from ecobench.hardware.backends import BACKENDS, Job
from ecobench.hardware.catalog import load_catalog
from ecobench.parallel.layout import Layout
from ecobench.workloads import preset

CAT = load_catalog()
ANALYTIC = BACKENDS["analytic"]


def _train(instances, gbs=1048576, layout=None):
    lay = layout or Layout(1, 1, 32 * instances, 0, "none", 16)
    return Job(
        arch=preset("bert-large"),
        mode="training",
        seq_len=128,
        batch_size=16,
        dtype="bf16",
        instances=instances,
        global_batch_size=gbs,
        layout=lay,
    )


def test_scale_out_loses_a_little_per_instance():
    t1 = ANALYTIC.evaluate(_train(1), CAT.instance("trn1.32xlarge"), CAT).throughput_per_instance_per_s
    t16 = ANALYTIC.evaluate(_train(16), CAT.instance("trn1.32xlarge"), CAT).throughput_per_instance_per_s
    assert 0.8 < t16 / t1 < 1.0


def test_training_reports_the_step_and_needs_a_layout():
    perf = ANALYTIC.evaluate(_train(2), CAT.instance("trn1.32xlarge"), CAT)
    step = perf.step
    assert 0 < step["mfu"] < 1 and step["memory_per_device_gib"] > 0 and "TP1 PP1 DP64" in perf.method
    with pytest.raises(BackendError, match="layout"):
        ANALYTIC.evaluate(
            Job(
                arch=preset("bert-large"),
                mode="training",
                seq_len=128,
                batch_size=16,
                dtype="bf16",
                instances=1,
                global_batch_size=65536,
            ),
            CAT.instance("trn1.32xlarge"),
            CAT,
        )


def test_unsupported_precision_and_cpu_instance_are_clear_errors():
    with pytest.raises(BackendError, match="no published fp32 peak"):
        ANALYTIC.evaluate(
            Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=1, dtype="fp32"),
            CAT.instance("inf1.xlarge"),
            CAT,
        )
    with pytest.raises(BackendError, match="no accelerator"):
        ANALYTIC.evaluate(
            Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=1, dtype="fp32"),
            CAT.instance("c6i.2xlarge"),
            CAT,
        )


def test_faster_precision_is_faster_and_bigger_batch_amortises():
    job = lambda dt, b=8: Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=b, dtype=dt)  # noqa: E731
    g4 = CAT.instance("g4dn.xlarge")
    t32 = ANALYTIC.evaluate(job("fp32"), g4, CAT).throughput_per_instance_per_s
    t16 = ANALYTIC.evaluate(job("fp16"), g4, CAT).throughput_per_instance_per_s
    t16b1 = ANALYTIC.evaluate(job("fp16", 1), g4, CAT).throughput_per_instance_per_s
    assert t16 > t32 and t16 > t16b1


def test_every_neuroncore_runs_a_copy_in_inference():
    one = ANALYTIC.evaluate(
        Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=8, dtype="bf16"),
        CAT.instance("inf2.xlarge"),
        CAT,
    )
    twelve = ANALYTIC.evaluate(
        Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=8, dtype="bf16"),
        CAT.instance("inf2.48xlarge"),
        CAT,
    )
    assert twelve.throughput_per_instance_per_s == pytest.approx(12 * one.throughput_per_instance_per_s)
