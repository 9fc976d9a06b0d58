"""Requests of one output token: no decode step, each request is its prefill. Every scheduler plans
them as a queue of prompts (planning/schedulers.py prefill_queue) instead of counting the prefill as
100% busy ('cannot keep up with one request at a time')."""

import numpy as np
import pytest

from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import load_catalog
from ecobench.planning.schedulers import Steps, prefill_queue
from ecobench.planning.serving import plan
from ecobench.planning.simulate import simulate
from ecobench.planning.traffic import Lengths, Traffic
from ecobench.scenario.model import HardwareConfig, ServingSpec
from ecobench.units import SECONDS_PER_HOUR
from ecobench.workloads.presets import PRESETS

CAT = load_catalog()


def _plan(instance="g6e.xlarge", output_tokens=1, **cfg):
    inst = CAT.instance(instance)
    acc = CAT.accelerator_of(inst)
    fit = current_fit()
    eff = fit.efficiency(acc.vendor, "serving", inst.spec.accelerator, None)
    spec = ServingSpec(requests_per_h=36000, input_tokens=1500, output_tokens=output_tokens,
                       p99_ttft_ms=5000, median_tpot_ms=40, horizon_h=1)
    hc = HardwareConfig(id="a", instance_type=instance, precision="bf16", **cfg)
    return plan(spec, PRESETS["llama3-8b"], hc, inst, CAT, eff, fit.request_overhead_s(acc.vendor))


@pytest.mark.parametrize("scheduler, instance", [("continuous", "g6e.xlarge"), ("static", "g6e.xlarge"),
                                                 ("disaggregated", "p5.48xlarge")])
def test_one_output_token_plans_as_a_queue_of_prompts(scheduler, instance):
    sp = _plan(instance, scheduler=scheduler)
    assert sp.unmet == "" and sp.slo.count("meets") == 2, sp.slo
    assert "one output token: no decode" in sp.choice
    assert sp.latency["tpot_ms_p50"] == 0 and 0 < sp.latency["ttft_ms_p99"] <= 5000
    rate = 36000 / SECONDS_PER_HOUR
    load = rate / sp.replicas * sp.operating.prefill_s  # each replica prefills its share, idle the rest
    used = sp.replicas / (sp.instances * sp.replicas_per_instance)  # replica slots in use
    assert 0 < load < 1 and sp.busy == pytest.approx(load * used)
    assert sp.prefill_replicas is None and sp.decode_replicas is None
    # the fewest replicas: one fewer would be at or past the prefill's capacity, or miss the target
    assert sp.replicas == 1 or (sp.replicas - 1) * sp.capacity_per_replica_per_s < rate


def test_two_output_tokens_still_decode():
    sp = _plan(output_tokens=2)
    assert "one output token" not in sp.choice and sp.latency["tpot_ms_p50"] > 0


# The queue of prompts against the discrete-event simulation (planning/simulate.py) of a replica that
# prefills each prompt alone (continuous without a token budget): medians within 10%, 99th percentiles
# within 20%, as tests/unit/planning/test_schedulers.py holds the other queue models to.
@pytest.mark.parametrize("load", [0.6, 0.9])
def test_the_queue_of_prompts_agrees_with_the_simulation(load):
    a, b, tok, req = 0.01, 0.0002, 0.05 / 512, 0.002
    batch = np.arange(1, 257).astype(float)
    traffic = Traffic(Lengths(512), Lengths(1))
    op = prefill_queue(Steps(batch, a + b * batch, tok, req), traffic, "continuous")
    rate = load / op.prefill_s
    x = np.interp(rate, op.rate_per_s, batch)
    sim = simulate("continuous", rate, traffic, lambda k: a + b * k, tok, req, max_batch=256, n=40000)
    for q, tol in ((0.5, 0.10), (0.99, 0.20)):
        model = float(np.interp(x, batch, op.latency_ms("ttft", q)))
        assert model == pytest.approx(1e3 * np.quantile(sim["ttft_s"], q), rel=tol)
