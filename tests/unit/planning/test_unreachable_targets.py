"""A latency target that no concurrency of any layout meets: the serving planner plans batch 1 at the
layout closest to the targets, with the replicas the rate needs there, and says what it misses;
memory that fits no layout is still refused."""

import math
import re

import numpy as np
import pytest

from ecobench.errors import InputError
from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import load_catalog
from ecobench.planning.serving import plan, slo_misses
from ecobench.scenario.model import HardwareConfig, ServingSpec
from ecobench.units import SECONDS_PER_HOUR
from ecobench.workloads.presets import PRESETS

CAT = load_catalog()
SPEC = {"requests_per_h": 36000, "input_tokens": 1024, "output_tokens": 256, "median_ttft_ms": 1000,
        "p99_ttft_ms": 3000, "horizon_h": 1}


def _plan(tpot_ms, instance="p5.48xlarge", model="llama3-8b", targets=None, **cfg):
    inst = CAT.instance(instance)
    acc = CAT.accelerator_of(inst)
    fit = current_fit()
    eff = fit.efficiency(acc.vendor, "serving", inst.spec.accelerator, None)
    spec = ServingSpec(**{**SPEC, **(targets or {})}, median_tpot_ms=tpot_ms)
    hc = HardwareConfig(id="a", instance_type=instance, precision="bf16", **cfg)
    return plan(spec, PRESETS[model], hc, inst, CAT, eff, fit.request_overhead_s(acc.vendor))


def test_an_unreachable_target_is_planned_at_batch_1_of_the_closest_tensor_degree():
    sp = _plan(3)
    assert sp.unmet.startswith("median_tpot_ms 3 is below the ") and " at batch 1 on p5.48xlarge " in sp.unmet
    assert sp.batch == 1 and sp.latency["tpot_ms_p50"] > 3
    # auto takes the tensor degree whose batch-1 TPOT (the only target missed) is the least
    given = {t: _plan(3, parallelism={"tensor": t}) for t in (1, 2, 4, 8)}
    assert all(g.unmet and g.batch == 1 for g in given.values())
    assert sp.latency["tpot_ms_p50"] == min(g.latency["tpot_ms_p50"] for g in given.values())
    assert sp.tensor == min(given, key=lambda t: given[t].latency["tpot_ms_p50"])
    # replicas: the fewest that carry the rate at batch 1's capacity
    rate = 36000 / SECONDS_PER_HOUR
    assert sp.capacity_per_replica_per_s == pytest.approx(float(sp.operating.rate_per_s[0]))
    assert sp.replicas == math.ceil(rate / sp.capacity_per_replica_per_s)
    assert sp.instances == math.ceil(sp.replicas / sp.replicas_per_instance)
    assert slo_misses(sp.slo) == [("median_tpot_ms 3", f"{sp.latency['tpot_ms_p50']:.4g}")]
    assert "no batch meets the targets, so planned at batch 1" in sp.choice
    assert "auto: closest to the targets at batch 1" in sp.choice


def test_a_reachable_target_is_planned_as_before_and_misses_nothing():
    sp = _plan(50)
    assert sp.unmet == "" and slo_misses(sp.slo) == [] and sp.batch > 1
    assert "auto: fewest instances, then least accelerator activity" in sp.choice
    assert sp.latency["tpot_ms_p50"] <= 50 and np.isfinite(sp.latency["ttft_ms_p99"])


def test_a_ttft_no_prefill_pool_load_meets_is_a_miss_of_the_disaggregated_scheduler_too():
    sp = _plan(50, targets={"p99_ttft_ms": 0.5}, scheduler="disaggregated")
    assert sp.unmet.startswith("p99_ttft_ms 0.5 is below the ") and "disaggregated scheduler" in sp.unmet
    assert "cannot keep up" not in sp.unmet and sp.batch == 1
    assert sp.prefill_replicas >= 1 and sp.decode_replicas >= 1
    assert slo_misses(sp.slo) == [("p99_ttft_ms 0.5", f"{sp.latency['ttft_ms_p99']:.4g}")]


def test_weights_that_fit_no_layout_are_still_refused_whatever_the_target():
    with pytest.raises(InputError, match=r"llama2-70b needs [\d.]+ GiB of weights per device"):
        _plan(0.5, instance="g6.xlarge", model="llama2-70b")


def test_slo_misses_reads_each_missed_target_and_its_value():
    slo = "median_ttft_ms 1000: 93.69 meets; median_tpot_ms 5: 10.48 misses; p99_ttft_ms 3: 148.6 misses"
    assert slo_misses(slo) == [("median_tpot_ms 5", "10.48"), ("p99_ttft_ms 3", "148.6")]
    assert slo_misses("no latency target") == [] and slo_misses(None) == []


def _parts(unmet):
    """(p99 at batch 1, mean, [part values]) read from the unreachable-TTFT sentence."""
    best = float(re.search(r"is below the ([\d.]+) ms a request waits and is prefilled at batch 1 ",
                           unmet)[1])
    mean = float(re.search(r"its mean, ([\d.]+) ms, is ", unmet)[1])
    tail = unmet.split("its mean, ")[1]
    return best, mean, [float(x) for x in re.findall(r"([\d.]+) ms (?!, is)", tail)]


@pytest.mark.parametrize("scheduler, words", [
    ("static", ["waiting for the batch in flight to finish", "prefilling its own batch"]),
    ("continuous", ["waiting for the step in progress", "queued behind other prompts' prefill",
                    "its own prefill"]),
    ("disaggregated", ["queued behind other prompts at the prefill replicas' lowest load",
                       "its prefill and key/value transfer"])])
def test_an_unreachable_ttft_says_what_batch_1s_time_is_made_of(scheduler, words):
    sp = _plan(500, instance="g6e.xlarge", targets={"median_ttft_ms": None, "p99_ttft_ms": 1},
               scheduler=scheduler)
    assert sp.batch == 1 and "the prefill takes" not in sp.unmet
    best, mean, parts = _parts(sp.unmet)
    # the row's, at its own rate, are no higher than batch 1's (a replica below batch 1's rate is idle
    # between requests, Operating.light)
    at_1 = {s: float(sp.operating.latency_ms("ttft", s, np.array([0]))[0]) for s in (0.99, "mean")}
    assert sp.latency["ttft_ms_p99"] <= at_1[0.99] * (1 + 1e-9)
    assert sp.latency["ttft_ms_mean"] <= at_1["mean"] * (1 + 1e-9)
    if scheduler == "disaggregated":  # its pool's lowest load that the sentence names
        assert best == pytest.approx(at_1[0.99], rel=1e-3) and mean == pytest.approx(at_1["mean"], rel=1e-3)
    else:  # one figure for one thing: the sentence gives the row's, at the load it is planned at
        assert sp.replicas * sp.capacity_per_replica_per_s > 36000 / SECONDS_PER_HOUR  # below batch 1's
        assert (best, mean) == (round(sp.latency["ttft_ms_p99"], 1), round(sp.latency["ttft_ms_mean"], 1))
    assert len(parts) == len(words) and sum(parts) == pytest.approx(mean, abs=0.1 * len(parts))
    assert all(w in sp.unmet for w in words)
    if scheduler == "static":  # the wait for the batch in flight (its decode), not the prefill, dominates
        assert parts[0] > 5 * parts[1]


def test_a_target_met_only_below_batch_1_is_planned_there_with_more_replicas(monkeypatch):
    """Prompt-heavy traffic (2,048 tokens in, 4 out) whose TTFT p99 target batch 1 misses (its
    prompts queue behind one another) but a replica kept idle between requests meets: planned at
    the highest rate per replica that meets it (Operating.light), below concurrency 1, with as many
    replicas as that needs; before, it was planned at batch 1 and missed (26 instances, 1,923 ms)."""
    monkeypatch.setitem(globals(), "SPEC", {"requests_per_h": 360000, "input_tokens": 2048,
                                            "output_tokens": 4, "horizon_h": 1})
    sp = _plan(None, instance="g6e.xlarge", targets={"p99_ttft_ms": 400})
    at_1 = _plan(None, instance="g6e.xlarge", targets={"p99_ttft_ms": 10_000, "median_ttft_ms": 1})
    assert not sp.unmet and sp.slo.endswith("meets") and sp.latency["ttft_ms_p99"] <= 400
    assert at_1.unmet and at_1.batch == 1 and at_1.latency["ttft_ms_p99"] > 400
    assert sp.batch < 1 and sp.replicas > at_1.replicas
    assert sp.capacity_per_replica_per_s == pytest.approx(float(np.interp(sp.batch, sp.operating.batch,
                                                                          sp.operating.rate_per_s)), rel=0.05)


def test_one_slot_is_planned_below_batch_1_where_batch_1_would_hold_it_always():
    """max_batch 1: at batch 1 the one slot is always held and the queue for it grows without bound
    (the slot-limit wait put the fallback's TTFT at 3.8e12 ms, 2026-11-29); the fallback plans the
    concurrency below 1 nearest the targets instead, with a finite TTFT, and says so."""
    sp = _plan(50, instance="g6e.xlarge", targets={"requests_per_h": 3600}, max_batch=1)
    assert sp.unmet and sp.batch < 1
    assert "one slot" in sp.choice and "so planned at " in sp.choice
    assert math.isfinite(sp.latency["ttft_ms_p99"]) and sp.latency["ttft_ms_p99"] < 60_000
    assert sp.latency["ttft_ms_p50"] < 1000  # a replica idle between requests: about its prefill
