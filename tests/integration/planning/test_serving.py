"""Serving plans: the plan's targets, memory and refusals, and the encoder real-time latency plan
(the schedulers' queue models against a simulation: tests/unit/planning/test_schedulers.py)."""

import re

import pytest

from ecobench.errors import InputError
from ecobench.scenario.load import scenario_from_dict
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


def test_issue_example_meets_its_targets():
    r = _rows(_scenario([{"id": "inf2", "instance_type": "inf2.48xlarge", "precision": "bf16",
                          "parallelism": {"tensor": 8}},
                         {"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16",
                          "parallelism": {"tensor": 1}}]))
    for cid in ("inf2", "p5"):
        row = r.loc[cid]
        assert row.instances >= 1 and row.replicas >= 1
        assert row.ttft_ms_p50 <= 1000 and row.tpot_ms_p50 <= 50
        served = row.output_tokens_per_s_per_instance * row.instances
        assert served == pytest.approx(36000 / SECONDS_PER_HOUR * 256)
        tokens = 36000 * 24 * 256
        assert row.energy_j_per_output_token == pytest.approx(row.energy_kwh * 3.6e6 / tokens)
        assert row.cost_usd_per_million_output_tokens == pytest.approx(row.cost_usd / tokens * 1e6)
    assert r.loc["inf2", "tensor_parallel"] == 8 and r.loc["p5", "tensor_parallel"] == 1


def test_tpot_below_one_decode_step_is_a_row_at_batch_1_that_misses_it():
    """Once refused (exit 2); now planned at batch 1 of the given layout, the miss named."""
    row = _rows(_scenario([{"id": "inf2", "instance_type": "inf2.48xlarge", "precision": "bf16",
                            "parallelism": {"tensor": 8}}], tpot_ms=0.5)).loc["inf2"]
    assert row.batch == 1 and row.tensor_parallel == 8 and row.tpot_ms_p50 > 0.5 and row.energy_kwh > 0
    assert f"median_tpot_ms 0.5: {row.tpot_ms_p50:.4g} misses" in row.slo
    assert re.match(r"median_tpot_ms 0.5 is below the [\d.]+ ms a decode step .* at batch 1 on "
                    r"inf2.48xlarge \(tensor 8", row.layout_choice)


def test_more_requests_need_more_replicas_and_tighter_tpot_smaller_batches():
    cfg = [{"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16", "parallelism": {"tensor": 1}}]
    base = _rows(_scenario(cfg, requests_per_h=360000)).loc["p5"]
    double = _rows(_scenario(cfg, requests_per_h=720000)).loc["p5"]
    assert 2 * base.replicas - 1 <= double.replicas <= 2 * base.replicas + 1
    tight = _rows(_scenario(cfg, requests_per_h=360000, tpot_ms=15)).loc["p5"]
    assert tight.batch < base.batch and tight.replicas >= base.replicas and tight.tpot_ms_p50 <= 15


def test_weights_that_do_not_fit_are_named():
    s = _scenario([{"id": "g6", "instance_type": "g6.xlarge", "precision": "bf16"}], model="llama2-70b",
                  tpot_ms=500)
    with pytest.raises(InputError, match=r"llama2-70b needs [\d.]+ GiB of weights per device"):
        _rows(s)


def test_int8_weights_speed_up_memory_bound_decode():
    cfg = {"instance_type": "inf2.48xlarge", "precision": "bf16", "parallelism": {"tensor": 8}}
    r = _rows(_scenario([{"id": "bf16", **cfg}, {"id": "int8", **cfg, "weight_precision": "int8"}],
                        requests_per_h=3600))
    assert r.loc["int8", "tpot_ms_p50"] < r.loc["bf16", "tpot_ms_p50"]


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
    assert set(tight["slo"]) == {"latency_ms_p99 60: " + f"{tight.loc[c, 'latency_p99_ms']:.4g} meets"
                                 for c in ("inf1", "gpu")}


def test_a_latency_target_one_configuration_cannot_reach_leaves_its_row_marked_as_missing_it():
    """A p99 target below what a batch alone takes on g4dn was bad input for the whole scenario (exit 2),
    although inf1 meets it; now the g4dn row is planned at full load, its slo says misses, a warning
    names it, and it is not eligible for a recommendation (as a serving row that misses)."""
    from ecobench.planning.evaluate import evaluate_all, row_warnings

    s = _layoutlm(22)
    ev = evaluate_all(s)
    rows = {r["config_id"]: r for r in ev.rows}
    full = _rows(_layoutlm())
    assert rows["inf1"]["slo"].endswith(" meets") and rows["inf1"]["latency_p99_ms"] <= 22
    assert rows["gpu"]["slo"] == f"latency_ms_p99 22: {rows['gpu']['latency_p99_ms']:.4g} misses"
    assert rows["gpu"]["instances"] == full.loc["gpu", "instances"]  # full load, not a latency sizing
    missed = [w for w in row_warnings(ev.rows) if "no load meets" in w]
    assert len(missed) == 1 and missed[0].startswith("gpu: no load meets latency_ms_p99 22 on g4dn.2xlarge")
    assert {r["config_id"] for r in ev.recommendations} <= {"inf1"}


def test_a_target_under_a_millisecond_says_the_unit_once():
    """latency_ms_p99: 0.05 (seconds written into a field in milliseconds) is missed by every
    configuration; one warning, not one per row, says the unit."""
    from ecobench.planning.evaluate import evaluate_all, row_warnings

    warns = row_warnings(evaluate_all(_layoutlm(0.05)).rows)
    unit = [w for w in warns if "latency targets are in milliseconds" in w]
    assert unit == ["latency_ms_p99 0.05 is under 1 ms (missed): latency targets are in milliseconds "
                    "(0.05 s would be 50 ms); check the unit"], warns
    assert not [w for w in row_warnings(evaluate_all(_layoutlm(22)).rows) if "milliseconds" in w]


def test_a_draw_too_slow_for_the_target_needs_no_latency_instances():
    """The Monte Carlo's latency sizing gave a draw that misses the target at any load its least-latency
    load, near no load for a batch of 1: thousands of instances. It now needs none for the target (0):
    the draw is planned at full load, as the central plan that misses is."""
    import numpy as np

    from ecobench.planning.plan import latency_sizing

    need = latency_sizing(rate_s=100.0, servers=1, batch_s=0.010, batch=1, target_s=0.020)
    got = need(np.array([1.0, 0.4]))  # the batch takes 10 ms, then 25 ms: the second cannot meet 20 ms
    assert got[0] > 1.0 and got[1] == 0.0


def test_a_gpu_serving_engine_leaves_vllms_default_headroom_and_a_config_may_state_its_own():
    """DeepSeek-V3 in bf16 was planned on two p5.48xlarge at 79.997 of each H100's 80 GiB, which
    vLLM's default --gpu-memory-utilization 0.9 would refuse; a GPU engine now leaves 10% free
    (parallel/memory.SERVING_HEADROOM_PCT), so it spans three, and memory_headroom_pct: 0 gives the old
    plan back. Neuron allocates statically: no default headroom."""
    from ecobench.hardware.catalog import load_catalog

    cfg = [{"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16"},
           {"id": "h0", "instance_type": "p5.48xlarge", "precision": "bf16", "memory_headroom_pct": 0}]
    r = _rows(_scenario(cfg, model="deepseek-v3", requests_per_h=3600, input_tokens=1024, output_tokens=256))
    gib = load_catalog().accelerators["h100-sxm"].memory_gib
    assert r.loc["p5", "memory_per_device_gib"] <= 0.9 * gib < r.loc["h0", "memory_per_device_gib"] <= gib
    assert r.loc["p5", "instances"] > r.loc["h0", "instances"]
    inf2 = [{"id": "a", "instance_type": "inf2.48xlarge", "precision": "bf16"},
            {"id": "b", "instance_type": "inf2.48xlarge", "precision": "bf16", "memory_headroom_pct": 0}]
    r = _rows(_scenario(inf2))
    assert r.loc["a", "max_batch"] == r.loc["b", "max_batch"]


def test_memory_headroom_is_refused_for_encoder_inference():
    with pytest.raises(InputError, match="'memory_headroom_pct' applies to training and serving"):
        scenario_from_dict({
            "schema_version": 2, "name": "t",
            "workload": {"model": "bert-base", "inference": {"rate_per_h": 10, "seq_len": 128}},
            "configs": [{"id": "a", "instance_type": "g5.xlarge", "memory_headroom_pct": 5}],
            "baseline": "a"})
