"""Serving plans: the continuous-batching queue model (checked against a simulation of the same
replica), the plan's targets, memory and refusals, and the encoder real-time latency plan."""

from collections import deque

import numpy as np
import pytest

from ecobench.errors import InputError
from ecobench.planning.serving import _at_rate, queue_figures
from ecobench.scenario.model import scenario_from_dict
from ecobench.units import SECONDS_PER_HOUR

CHAT = {"requests_per_h": 36000, "input_tokens": 512, "output_tokens": 256, "ttft_ms": 1000, "tpot_ms": 50,
        "horizon_h": 24}


def _scenario(configs, model="llama3-8b", **serving):
    return scenario_from_dict({
        "schema_version": 2, "name": "t", "workload": {"model": model, "serving": {**CHAT, **serving}},
        "configs": configs, "baseline": configs[0]["id"]})


def _rows(s):
    from ecobench.planning.evaluate import evaluate

    return evaluate(s).set_index("config_id")


def simulate(rate, decode_s, prefill_s, out, n=5000, seed=0):
    """One replica, Poisson arrivals, prefill first (a waiting prompt is prefilled before the next
    decode step), every in-flight request gets a token per step."""
    rng = np.random.default_rng(seed)
    arrive = np.cumsum(rng.exponential(1 / rate, n))
    t, i, queue, active, gaps = 0.0, 0, deque(), [], []
    first, done, last = np.zeros(n), np.zeros(n), np.zeros(n)
    while i < n or queue or active:
        while i < n and arrive[i] <= t:
            queue.append(i)
            i += 1
        if queue:
            r = queue.popleft()
            t += prefill_s
            first[r] = last[r] = t
            active.append([r, out - 1])
        elif active:
            t += decode_s(len(active))
            for a in active:
                a[1] -= 1
                gaps.append(t - last[a[0]])
                last[a[0]] = t
                if a[1] == 0:
                    done[a[0]] = t
            active = [a for a in active if a[1] > 0]
        else:
            t = arrive[i]
    k = slice(n // 10, None)
    ttft = first[k] - arrive[k]
    return {"ttft_ms": 1e3 * ttft.mean(), "ttft_p99_ms": 1e3 * np.quantile(ttft, 0.99),
            "tpot_ms": 1e3 * ((done[k] - first[k]) / (out - 1)).mean(),
            "tpot_p99_ms": 1e3 * np.quantile(gaps[len(gaps) // 10:], 0.99)}


CASES = [(0.01, 0.0005, 0.05, 50), (0.008, 0.0002, 0.02, 200), (0.02, 0.001, 0.1, 100),
         (0.005, 0.0001, 0.2, 500)]  # decode step a + b * batch (s), prefill (s), output tokens


def _check_queue_model(a, b, prefill, out, load):
    """The closed form's error against the simulation, within the ranges the planning module's
    docstring states (plus a margin for the simulation's sampling)."""
    batch = np.arange(1, 257)
    op = queue_figures(batch, a + b * batch, prefill, out)
    rate = load * op.rate_per_s.max()
    got, sim = _at_rate(op, rate), simulate(rate, lambda n: a + b * n, prefill, out, n=20000)
    err = {k: got[k] / sim[k] - 1 for k in sim}
    assert abs(err["ttft_ms"]) <= 0.04
    assert -0.22 <= err["tpot_ms"] <= 0.02
    assert -0.07 <= err["ttft_p99_ms"] <= 0.30
    assert -0.46 <= err["tpot_p99_ms"] <= 0.02


@pytest.mark.parametrize("case", CASES[:3])
def test_queue_model_agrees_with_a_simulated_replica(case):
    _check_queue_model(*case, load=0.6)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("load", [0.3, 0.6, 0.85])
def test_queue_model_agrees_with_a_simulated_replica_at_every_load(case, load):
    _check_queue_model(*case, load=load)


def test_throughput_rises_with_batch_and_latency_with_it():
    batch = np.arange(1, 65)
    op = queue_figures(batch, 0.01 + 0.0005 * batch, 0.05, 100)
    assert np.all(np.diff(op.rate_per_s) > 0) and np.all(np.diff(op.tpot_ms) > 0)
    assert op.rate_per_s[-1] < 1 / 0.05  # never more prompts than prefill time allows


def test_issue_example_meets_its_targets():
    r = _rows(_scenario([{"id": "inf2", "instance_type": "inf2.48xlarge", "precision": "bf16",
                          "parallelism": {"tensor": 8}},
                         {"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16",
                          "parallelism": {"tensor": 1}}]))
    for cid in ("inf2", "p5"):
        row = r.loc[cid]
        assert row.instances >= 1 and row.replicas >= 1
        assert row.ttft_ms <= 1000 and row.tpot_ms <= 50
        served = row.output_tokens_per_s_per_instance * row.instances
        assert served == pytest.approx(36000 / SECONDS_PER_HOUR * 256)
        tokens = 36000 * 24 * 256
        assert row.energy_j_per_output_token == pytest.approx(row.energy_kwh * 3.6e6 / tokens)
        assert row.cost_usd_per_million_output_tokens == pytest.approx(row.cost_usd / tokens * 1e6)
    assert r.loc["inf2", "tensor_parallel"] == 8 and r.loc["p5", "tensor_parallel"] == 1


def test_tpot_below_one_decode_step_is_refused_naming_it():
    s = _scenario([{"id": "inf2", "instance_type": "inf2.48xlarge", "precision": "bf16",
                    "parallelism": {"tensor": 8}}], tpot_ms=0.5)
    with pytest.raises(InputError, match=r"configs\[0\]: tpot_ms 0.5 is below the [\d.]+ ms a single decode "
                                         r"step takes on inf2.48xlarge \(tensor 8\)"):
        _rows(s)


def test_more_requests_need_more_replicas_and_tighter_tpot_smaller_batches():
    cfg = [{"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16", "parallelism": {"tensor": 1}}]
    base = _rows(_scenario(cfg, requests_per_h=360000)).loc["p5"]
    double = _rows(_scenario(cfg, requests_per_h=720000)).loc["p5"]
    assert 2 * base.replicas - 1 <= double.replicas <= 2 * base.replicas + 1
    tight = _rows(_scenario(cfg, requests_per_h=360000, tpot_ms=15)).loc["p5"]
    assert tight.batch < base.batch and tight.replicas >= base.replicas and tight.tpot_ms <= 15


def test_weights_that_do_not_fit_are_named():
    s = _scenario([{"id": "g6", "instance_type": "g6.xlarge", "precision": "bf16"}], model="llama2-70b",
                  tpot_ms=500)
    with pytest.raises(InputError, match=r"llama2-70b needs [\d.]+ GiB of weights per device"):
        _rows(s)


def test_int8_weights_speed_up_memory_bound_decode():
    cfg = {"instance_type": "inf2.48xlarge", "precision": "bf16", "parallelism": {"tensor": 8}}
    r = _rows(_scenario([{"id": "bf16", **cfg}, {"id": "int8", **cfg, "weight_precision": "int8"}],
                        requests_per_h=3600))
    assert r.loc["int8", "tpot_ms"] < r.loc["bf16", "tpot_ms"]


def test_auto_tensor_keeps_the_fewest_instances():
    auto = _rows(_scenario([{"id": "a", "instance_type": "inf2.48xlarge", "precision": "bf16"}])).loc["a"]
    for t in (2, 4, 8, 24):
        given = _rows(_scenario([{"id": "a", "instance_type": "inf2.48xlarge", "precision": "bf16",
                                  "parallelism": {"tensor": t}}])).loc["a"]
        assert auto.instances <= given.instances
    assert "auto: fewest instances" in auto.layout_choice


def test_decoder_under_inference_and_encoder_under_serving_are_refused():
    with pytest.raises(InputError, match="use workload.serving"):
        scenario_from_dict({
            "schema_version": 2, "name": "t",
            "workload": {"model": "llama3-8b", "inference": {"rate_per_h": 10, "seq_len": 128}},
            "configs": [{"id": "a", "instance_type": "p5.48xlarge"}], "baseline": "a"})
    with pytest.raises(InputError, match="use workload.inference"):
        _scenario([{"id": "a", "instance_type": "p5.48xlarge"}], model="bert-base", input_tokens=256,
                  output_tokens=128)


def _layoutlm(latency_ms=None):
    inf = {"rate_per_h": 1_000_000, "seq_len": 512, "batch_size": 1}
    if latency_ms is not None:
        inf["latency_ms_p99"] = latency_ms
    return scenario_from_dict({
        "schema_version": 2, "name": "t", "workload": {"model": "layoutlm-base", "inference": inf},
        "configs": [{"id": "inf1", "instance_type": "inf1.2xlarge", "precision": "bf16"},
                    {"id": "gpu", "instance_type": "g4dn.2xlarge", "precision": "fp16"}], "baseline": "gpu"})


def test_a_latency_target_needs_at_least_the_full_load_instances_and_is_met():
    full = _rows(_layoutlm())
    loose, tight = _rows(_layoutlm(1000)), _rows(_layoutlm(60))
    for cid in ("inf1", "gpu"):
        assert full.loc[cid, "instances"] <= loose.loc[cid, "instances"] <= tight.loc[cid, "instances"]
        assert tight.loc[cid, "latency_p99_ms"] <= 60
    with pytest.raises(InputError, match=r"latency_ms_p99 1 is below the [\d.]+ ms"):
        _rows(_layoutlm(1))
