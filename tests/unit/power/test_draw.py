import pytest

from ecobench.hardware.catalog import load_catalog
from ecobench.power.draw import Activity, DrawParams, central_params, draw_w, host_cpu_utilization
from ecobench.power.params import Z90, power_model, split_lognormal
from ecobench.power.setup import power_setup

CAT = load_catalog()


def params(**kw):
    base = dict(d_compute=0.9, d_memory=0.6, d_stall=0.1, d_sync=0.8, vcpus_per_rank=1.0, memory_w_per_gb=0.4,
                pue=1.0)
    return DrawParams(**(base | kw))


COMPUTE = Activity(1.0, 0.0, 0.0)


def spec(instance="g4dn.2xlarge", act=COMPUTE, **kw):
    return power_setup(CAT, CAT.instance(instance), None, None, kw.get("w"), kw.get("scope")).spec(act, 0.0)


def test_share_is_time_weighted_and_a_shortfall_is_waiting():
    act = Activity(0.5, 0.3, 0.2)
    assert act.share(0.9, 0.6, 0.1, 0.8) == pytest.approx(0.5 * 0.9 + 0.3 * 0.6 + 0.2 * 0.1)
    c, m, s, y = act.scaled(0.5)  # half the modelled throughput: the same kernels, waiting the rest
    assert (c, m, s, y) == pytest.approx((0.25, 0.15, 0.6, 0.0))
    # faster than modelled: the stalls shrink first (1.2x: kernels fill 0.96 of the time) ...
    assert act.scaled(1.2) == pytest.approx((0.6, 0.36, 0.04, 0.0))
    # ... and once none is left the kernels run faster, their split kept
    assert act.scaled(2.0) == pytest.approx((0.5 / 0.8, 0.3 / 0.8, 0.0, 0.0))


def test_sync_keeps_its_time_when_slower_and_shrinks_with_the_stalls_when_faster():
    act = Activity(0.5, 0.1, 0.1, "", 0.3)  # a training step: 30% communication and bubble
    assert act.share(0.9, 0.6, 0.1, 0.8) == pytest.approx(0.45 + 0.06 + 0.01 + 0.24)
    # at half the throughput the step takes twice as long: kernels and sync keep their seconds, the
    # extra time is a stall
    assert act.scaled(0.5) == pytest.approx((0.25, 0.05, 0.55, 0.15))
    # 1.25x faster: kernels fill 0.75 of the time, the waits (0.25) keep their 1:3 split
    assert act.scaled(1.25) == pytest.approx((0.625, 0.125, 0.0625, 0.1875))
    assert sum(act.scaled(1.25)) == pytest.approx(1.0)


def test_accelerator_draw_runs_from_idle_to_max_with_the_work():
    t4 = CAT.accelerators["t4"].power
    idle = draw_w(spec(), params(), busy=0.0)
    full = draw_w(spec(), params(d_compute=1.0), busy=1.0)
    assert float(idle["accelerator"]) == pytest.approx(t4.idle_w)
    assert float(full["accelerator"]) == pytest.approx(t4.max_w)
    half = draw_w(spec(act=Activity(0.0, 1.0, 0.0)), params(), busy=1.0)  # memory-bound at 0.6
    assert float(half["accelerator"]) == pytest.approx(t4.idle_w + 0.6 * (t4.max_w - t4.idle_w))


def test_host_cpu_load_follows_the_ranks_it_feeds():
    g4 = spec("g4dn.2xlarge")  # 1 GPU, 8 vCPUs
    trn = spec("trn1.32xlarge")  # 32 NeuronCores, 128 vCPUs
    cpu_only = spec("c6i.2xlarge")
    assert float(host_cpu_utilization(g4, 1.0)) == pytest.approx(1 / 8)
    assert float(host_cpu_utilization(trn, 2.0)) == pytest.approx(64 / 128)
    assert float(host_cpu_utilization(cpu_only, 1.0)) == 1.0
    fixed = power_setup(CAT, CAT.instance("g4dn.2xlarge"), None, 0.7, None, None).spec(Activity(1, 0, 0), 0)
    assert float(host_cpu_utilization(fixed, 2.0)) == 0.7


def test_supplied_power_replaces_its_scope():
    acc = draw_w(spec(w=60.0, scope="accelerator"), params(), busy=1.0)
    assert float(acc["accelerator"]) == 60.0 and float(acc["it"]) > 60.0
    inst = draw_w(spec(w=150.0, scope="instance"), params(pue=1.2), busy=1.0)
    parts = sum(float(inst[k]) for k in ("accelerator", "cpu", "memory", "network"))
    assert float(inst["it"]) == pytest.approx(150.0) and parts == pytest.approx(150.0)
    assert float(inst["total"]) == pytest.approx(180.0)


def test_ranges_are_sourced_and_the_distribution_matches_them():
    pm = power_model()
    for r in (pm.draw.compute_bound, pm.draw.memory_bound, pm.draw.stall, pm.host_cpu.vcpus_per_rank,
              pm.memory_w_per_gb, pm.pue):
        assert r.low <= r.central <= r.high and r.source and r.inferred_from
    assert split_lognormal(10.0, 5.0, 40.0, [-Z90, 0.0, Z90]) == pytest.approx([5.0, 10.0, 40.0])
    assert central_params(1.2).pue == 1.2
