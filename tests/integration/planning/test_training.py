"""Training plans: the layout a configuration runs, its memory check, the deadline search."""

import pytest

from ecobench.errors import InputError
from ecobench.scenario.load import scenario_from_dict

AUTO_P4D = {"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16", "parallelism": "auto"}


def _scenario(model="llama2-7b", configs=None, **training):
    tr = {"total_tokens": 1e11, "phases": [{"seq_len": 4096, "fraction": 1.0}], "global_batch_size": 1024}
    tr.update(training)
    return scenario_from_dict({
        "schema_version": 2, "name": "t", "workload": {"model": model, "training": tr},
        "configs": configs or [{"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16",
                                "instances": 16, "parallelism": "auto"}],
        "baseline": "a"})


def _rows(s):
    from ecobench.planning.evaluate import evaluate

    return evaluate(s).set_index("config_id")


def test_auto_layout_fits_and_is_reported():
    r = _rows(_scenario()).loc["a"]
    assert r.tensor_parallel * r.pipeline_parallel * r.data_parallel == 128
    assert 0 < r.memory_per_device_gib <= 40 and 0 < r.mfu < 1 and 0 <= r.comm_overhead_pct < 100
    assert r.layout_choice.startswith("auto: fastest of")


def test_given_layout_that_does_not_fit_names_memory_and_fixes():
    s = _scenario(configs=[{"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": 16,
                            "parallelism": {"tensor": 1, "pipeline": 1, "zero": 0}}])
    with pytest.raises(InputError) as e:
        _rows(s)
    msg = str(e.value)
    assert "configs[0].parallelism" in msg and "40.0 GiB per device" in msg and "it fits with" in msg
    assert "zero: " in msg or "tensor >= " in msg


def test_default_data_parallel_refuses_what_does_not_fit():
    s = _scenario(model="llama2-70b", configs=[{"id": "a", "instance_type": "p4d.24xlarge",
                                                "precision": "bf16", "instances": 16}])
    with pytest.raises(InputError, match="configs\\[0\\].instances: TP1 PP1 DP128"):
        _rows(s)


def test_invalid_degrees_are_named():
    s = _scenario(configs=[{"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16", "instances": 16,
                            "parallelism": {"tensor": 3, "pipeline": 40}}])
    with pytest.raises(InputError) as e:
        _rows(s)
    assert "tensor 3 must divide the 32 attention heads" in str(e.value)
    assert "pipeline 40 is more stages than the 32 layers" in str(e.value)


def test_neuron_offers_zero_1_only():
    s = _scenario(configs=[{"id": "a", "instance_type": "trn1.32xlarge", "precision": "bf16", "instances": 16,
                            "parallelism": {"tensor": 8, "zero": 3}}])
    with pytest.raises(InputError, match="ZeRO stages up to 1"):
        _rows(s)


def test_deadline_finds_the_fewest_instances_and_meets_it():
    s = _scenario(deadline_h=500, total_tokens=2e11, configs=[AUTO_P4D])
    r = _rows(s).loc["a"]
    assert r.duration_h <= 500 and r.layout_choice.startswith("deadline 500 h")
    for n in range(max(1, int(r.instances) - 3), int(r.instances)):  # no smaller cluster makes it
        fewer = _scenario(total_tokens=2e11, configs=[{**AUTO_P4D, "instances": n}])
        try:
            assert _rows(fewer).loc["a"].duration_h > 500
        except InputError as exc:
            assert "no valid layout" in str(exc) or "fits" in str(exc)


def test_unmeetable_deadline_says_the_fastest_and_why():
    s = _scenario(model="gpt3-175b", deadline_h=1, total_tokens=3e11, global_batch_size=1536,
                  phases=[{"seq_len": 2048, "fraction": 1.0}], max_instances=256, configs=[AUTO_P4D])
    row = _rows(s).loc["a"]  # a row at the fastest reachable size, not an error for the scenario
    msg = row.layout_choice
    assert "training.deadline_h 1 cannot be met" in msg
    assert "fastest reachable is" in msg and "limited by" in msg
    assert not row.meets_deadline and row.duration_h > 1 and row.instances <= 256
    assert f"on {row.instances} instances" in msg and f"{row.duration_h:,.1f} h" in msg


def test_tokens_and_sequences_agree():
    by_tokens = _rows(_scenario(total_tokens=4096 * 1e6)).loc["a"]
    by_sequences = _rows(_scenario(total_tokens=None, total_sequences=1e6)).loc["a"]
    assert by_tokens.duration_h == pytest.approx(by_sequences.duration_h)
    assert by_tokens.tokens == pytest.approx(4096e6)


def _deadline(parallelism, instance="p5.48xlarge", **training):
    return _scenario(deadline_h=60, global_batch_size=1536, **training,
                     configs=[{"id": "a", "instance_type": instance, "precision": "bf16",
                               "parallelism": parallelism}])


def test_deadline_runs_a_given_layout_the_search_would_not_try():
    # mb 3 divides the 1,536-sequence batch and selective_op runs on NVIDIA GPUs: with instances given
    # both run; the deadline search enumerated only its own micro-batches (powers of two up to 64) and
    # recompute modes, and refused them as "no valid layout of up to 2048x p5.48xlarge".
    r = _rows(_deadline({"tensor": 1, "recompute": "selective_op", "zero": 1})).loc["a"]
    assert r.recompute == "selective_op" and r.duration_h <= 60
    assert r.layout_choice.startswith("deadline 60 h")
    r = _rows(_deadline({"tensor": 4, "recompute": "full", "zero": 1, "microbatch": 3})).loc["a"]
    assert r.microbatch == 3 and r.tensor_parallel == 4 and r.duration_h <= 60


@pytest.mark.parametrize(("parallelism", "instance", "field", "allowed"), [
    ({"tensor": 1, "microbatch": 5}, "p5.48xlarge", "parallelism.microbatch", "allowed: 1, 2, 3, 4, 6, 8"),
    ({"tensor": 8, "zero": 3}, "trn1.32xlarge", "parallelism.zero", "allowed: 0, 1"),
])
def test_deadline_names_the_given_field_that_no_instance_count_mends(parallelism, instance, field, allowed):
    with pytest.raises(InputError) as e:
        _rows(_deadline(parallelism, instance))
    msg = str(e.value)
    assert f"configs[0].{field}:" in msg and allowed in msg and "no valid layout of up to" not in msg


def test_deadline_with_a_given_layout_that_never_fits_blames_the_layout():
    with pytest.raises(InputError) as e:
        _rows(_deadline({"tensor": 1, "microbatch": 16}))
    msg = str(e.value)
    assert "configs[0].parallelism:" in msg and "fits device memory" in msg
    assert "microbatch 16" in msg and "parallelism: auto" in msg


def test_mfu_counts_the_ranks_the_layout_uses_not_the_idle_ones():
    # 25 p4d (200 A100s) with a 1,024-sequence batch: DP128, 72 ranks idle; MFU over all 200 read 0.358
    from ecobench.parallel.step import Workload, model_flops_per_sequence
    from ecobench.workloads import preset

    r = _rows(_scenario(configs=[{**AUTO_P4D, "instances": 25}])).loc["a"]
    used = r.tensor_parallel * r.context_parallel * r.pipeline_parallel * r.data_parallel
    assert r.idle_devices == 200 - used > 0
    flops = model_flops_per_sequence(Workload(preset("llama2-7b"), 4096, 1024, "bf16")) * 1e11 / 4096
    a100_bf16_dense_tflops = 312  # NVIDIA A100 datasheet (2020): 312 TFLOPS BF16 tensor, dense
    peak_flops = used * a100_bf16_dense_tflops * 1e12
    assert r.mfu == pytest.approx(flops / (r.duration_h * 3600 * peak_flops), rel=1e-6)
