import numpy as np
import pytest

from ecobench.hardware.backends import BACKENDS, Job, Performance, Utilization
from ecobench.hardware.backends.activity import kernel_regimes_s
from ecobench.hardware.backends.analytic import activity_of
from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.step import KernelArrays
from ecobench.workloads.presets import preset
from ecobench.workloads.transformer import forward_kernels

CAT = load_catalog()


@pytest.mark.parametrize("instance,dtype", [("g4dn.2xlarge", "fp32"), ("inf1.2xlarge", "bf16"),
                                            ("p4d.24xlarge", "bf16")])
def test_regimes_add_up_to_the_roofline_time(instance, dtype):
    inst = CAT.instance(instance)
    acc = CAT.accelerator_of(inst)
    cl = instance_cluster(CAT, inst, dtype)
    eff = current_fit().efficiency(acc.vendor, "inference", inst.spec.accelerator)
    ks = KernelArrays.of(forward_kernels(preset("bert-base"), 128, 4, dtype))
    c, m, o = kernel_regimes_s(ks, 4, cl, eff)
    assert c + m + o == pytest.approx(float(ks.time_s(np.array([4]), cl, eff)[0]))
    if acc.activations_on_chip:
        assert m == 0.0  # Inferentia keeps activations on chip: compute-only roofline


def test_analytic_activity_shares_sum_to_one_and_a_shortfall_becomes_stall():
    inst = CAT.instance("g4dn.2xlarge")
    job = Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=8, dtype="fp16")
    model = BACKENDS["analytic"].evaluate(job, inst, CAT)
    act = model.activity
    assert act.compute + act.memory + act.stall == pytest.approx(1.0)
    half = Performance(model.throughput_per_instance_per_s / 2, Utilization(1, 1, 1, 0), "supplied", "")
    got = activity_of(half, job, inst, CAT)
    assert got.compute == pytest.approx(act.compute / 2) and got.stall == pytest.approx(act.stall / 2 + 0.5)
    assert "50% of the model's" in got.source
