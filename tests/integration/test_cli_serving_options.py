"""Serving options and measured serving through the command line, and their bad inputs (exit 2)."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ecobench.cli import main
from ecobench.io import vllm_bench

BENCH = {"date": "20261120-101010", "backend": "vllm", "completed": 1000, "total_input_tokens": 1024000,
         "total_output_tokens": 256000, "request_throughput": 12.5, "output_throughput": 3200.0,
         "mean_ttft_ms": 180.0, "median_ttft_ms": 150.0, "p99_ttft_ms": 900.0, "mean_tpot_ms": 30.0,
         "median_tpot_ms": 28.0, "p99_tpot_ms": 60.0, "mean_itl_ms": 29.0, "median_itl_ms": 25.0,
         "p99_itl_ms": 90.0, "max_concurrency": 64}


def _scenario(configs, model="llama3-8b", **serving):
    return {"schema_version": 2, "name": "s", "uncertainty": {"draws": 0},
            "workload": {"model": model, "serving": {"requests_per_h": 36000, "input_tokens": 1024,
                                                     "output_tokens": 256, "ttft_ms": 1000, "tpot_ms": 50,
                                                     "horizon_h": 24, **serving}},
            "configs": configs, "baseline": configs[0]["id"]}


def _run(tmp_path, scenario):
    tmp_path.mkdir(parents=True, exist_ok=True)
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario))
    return main(["run", str(f), "-q", "--results", str(tmp_path / "res")])


def _rows(tmp_path):
    (run_dir,) = (tmp_path / "res" / "s").iterdir()
    return pd.read_csv(run_dir / "results.csv").set_index("config_id")


def _texts(tmp_path, column):
    """A text column from results.json (results.csv keys long texts)."""
    (run_dir,) = (tmp_path / "res" / "s").iterdir()
    doc = json.loads((run_dir / "results.json").read_text())
    return {r["config_id"]: r[column] for r in doc["rows"]}


def test_options_change_the_plan_in_the_expected_direction(tmp_path):
    base = {"instance_type": "p5.48xlarge", "precision": "bf16", "parallelism": {"tensor": 1}, "max_batch": 8}
    configs = [{"id": "plain", **base}, {"id": "fp8", **base, "quantization": "fp8"},
               {"id": "int4", **base, "quantization": "int4"},
               {"id": "ngram", **base, "speculative": {"method": "ngram", "num_speculative_tokens": 4,
                                                       "acceptance_rate": 0.8}}]
    assert _run(tmp_path, _scenario(configs)) == 0
    d = _rows(tmp_path)
    for faster in ("fp8", "int4", "ngram"):  # batch <= 8: decode is weight-read bound
        assert d.tpot_ms_p50[faster] < d.tpot_ms_p50["plain"], faster
    method = _texts(tmp_path, "method")
    assert "FP8 W8A8" in method["fp8"] and "speculative (n-gram" in method["ngram"]


def test_prefix_cache_shortens_ttft(tmp_path):
    # each prompt prefilled alone (no chunks sharing steps with decodes): TTFT is mostly the prefill.
    # Not at 4 slots since the wait for a free slot is modelled (schedulers._slot_wait, 2026-11-29):
    # there the median target lets the planner run near the slot limit, where the wait for a slot is
    # most of the TTFT (TTFT p50 94 ms without the cache, 720 ms with it, at 31 and 21 instances); at 16
    # slots 101 ms and 41 ms.
    configs = [{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16", "max_batch": 16,
                "chunked_prefill": False}]
    assert _run(tmp_path / "0", _scenario(configs)) == 0
    assert _run(tmp_path / "1", _scenario(configs, prefix_cache_hit_rate=0.9)) == 0
    assert _rows(tmp_path / "1").ttft_ms_p50["a"] < 0.5 * _rows(tmp_path / "0").ttft_ms_p50["a"]


def test_a_draft_models_cache_bounds_the_planned_batch(tmp_path):
    """A draft model's own key/value cache per sequence counts in the batch a replica holds. llama2-70b
    at tensor 8 on p4d.24xlarge (A100 40 GB: 36.0 GiB usable after 10% headroom), 3,072 + 1,024 tokens:
    weights 17.63 GiB per device with a 6.74 B drafter, 1 GiB workspace, 17.37 GiB free; the target's
    cache 4,096 x 327,680 / 8 bytes = 0.15625 GiB per sequence, llama2-7b's (32 key/value heads)
    0.25 GiB more: 111 sequences without the drafter's cache, 42 with it (17.37 / 0.40625). It was
    planned at 111 (one instance at a batch of 42.7; now two instances). n-gram lookup keeps no cache:
    the plain replica's 121 (no drafter weights)."""
    base = {"instance_type": "p4d.24xlarge", "precision": "bf16", "parallelism": {"tensor": 8}}

    def spec(**drafter):
        return {"speculative": {**drafter, "num_speculative_tokens": 4, "acceptance_rate": 0.7}}

    configs = [{"id": "size", **base, **spec(method="draft", draft_params=6.738415616e9)},
               {"id": "model", **base, **spec(method="draft", draft_model="llama2-7b")},
               {"id": "ngram", **base, **spec(method="ngram")}, {"id": "plain", **base}]
    s = _scenario(configs, model="llama2-70b", requests_per_h=3600, input_tokens=3072, output_tokens=1024,
                  ttft_ms=20000, tpot_ms=200)
    assert _run(tmp_path, s) == 0
    d = _rows(tmp_path)
    assert (d.max_batch["size"], d.max_batch["model"]) == (111, 42)
    assert d.max_batch["ngram"] == d.max_batch["plain"] == 121
    assert d.batch["model"] <= 42 and d.memory_per_device_gib["model"] <= 36.0


def test_405b_replica_spans_two_p5_instances(tmp_path):
    arch = {"kind": "decoder", "layers": 126, "hidden_size": 16384, "heads": 128, "kv_heads": 8,
            "intermediate_size": 53248, "ffn": "swiglu", "vocab_size": 128256, "tied_embeddings": False,
            "max_position_embeddings": 131072}
    s = _scenario([{"id": "auto", "instance_type": "p5.48xlarge", "precision": "bf16"},
                   {"id": "pp", "instance_type": "p5.48xlarge", "precision": "bf16",
                    "parallelism": {"tensor": 8, "pipeline": 2}}], tpot_ms=200, ttft_ms=5000,
                  requests_per_h=3600)
    del s["workload"]["model"]
    s["workload"]["architecture"] = arch
    assert _run(tmp_path, s) == 0
    d = _rows(tmp_path)
    assert (d.replicas_per_instance == 0.5).all() and (d.instances == 2).all()
    assert all("2 instances per replica" in t for t in _texts(tmp_path, "layout_choice").values())


LLAMA_405B = {"kind": "decoder", "layers": 126, "hidden_size": 16384, "heads": 128, "kv_heads": 8,
              "intermediate_size": 53248, "ffn": "swiglu", "vocab_size": 128256, "tied_embeddings": False,
              "max_position_embeddings": 131072}


def test_a_gpu_replica_over_instances_uses_a_tensor_degree_the_engines_run(tmp_path):
    # vLLM, SGLang and TensorRT-LLM require the tensor degree to divide the attention heads (vLLM:
    # "Total number of attention heads (128) must be divisible by tensor parallel size (24)"); only
    # Neuron's libraries pad heads. 405B in bf16 over A100 40GB instances (p4d.24xlarge): three
    # instances were planned as one tensor-24 replica (2026-11-29: 405B at 360 requests/h, 3 instances,
    # tensor 24); a tensor degree of 8 with pipeline stages (or one of 16, 32) is what runs.
    s = _scenario([{"id": "p4d", "instance_type": "p4d.24xlarge", "precision": "bf16"}], tpot_ms=100,
                  ttft_ms=3000, requests_per_h=360)
    del s["workload"]["model"]
    s["workload"]["architecture"] = LLAMA_405B
    assert _run(tmp_path, s) == 0
    d = _rows(tmp_path)
    assert LLAMA_405B["heads"] % int(d.tensor_parallel["p4d"]) == 0, d.tensor_parallel["p4d"]
    assert d.replicas_per_instance["p4d"] < 1  # still one replica over several instances


def test_a_given_tensor_degree_that_does_not_divide_the_heads_exits_2(tmp_path, capsys):
    s = _scenario([{"id": "p4d", "instance_type": "p4d.24xlarge", "precision": "bf16",
                    "parallelism": {"tensor": 24}}], tpot_ms=200, ttft_ms=5000, requests_per_h=360)
    del s["workload"]["model"]
    s["workload"]["architecture"] = LLAMA_405B
    assert _run(tmp_path, s) == 2
    err = capsys.readouterr().err
    assert "configs[0].parallelism.tensor" in err and "128 attention heads" in err and "allowed" in err
    assert "Traceback" not in err and not (tmp_path / "res").exists()


def test_measured_serving_sizes_from_the_benchmark(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps(BENCH))
    configs = [{"id": "m", "instance_type": "g6e.xlarge", "precision": "bf16",
                "measured_serving": "bench.json", "measured_power_w": 450,
                "measured_power_scope": "instance"},
               {"id": "model", "instance_type": "g6e.xlarge", "precision": "bf16"}]
    assert _run(tmp_path, _scenario(configs)) == 0
    d = _rows(tmp_path)
    assert d.instances["m"] == 1  # 10 requests/s on one instance measured at 12.5
    assert d.load["m"] == pytest.approx(10 / 12.5)
    assert d.ttft_ms_p50["m"] == 150 and d.tpot_ms_p99["m"] == 60 and d.provenance["m"] == "measured"
    assert d.backend["m"] == "measured"
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "bench.json").write_text(json.dumps(dict(BENCH, request_throughput=3.0,
                                                                output_throughput=768.0)))
    assert _run(tmp_path / "x", _scenario(configs)) == 0  # the file is read beside the scenario
    assert _rows(tmp_path / "x").instances["m"] == 4  # 10 requests/s at 3 per instance


def test_a_benchmark_of_other_request_lengths_is_named_on_stderr(tmp_path, capsys):
    """The mismatch was only in the row's method text: a 128-token benchmark sized a 1,024-token
    service silently."""
    (tmp_path / "bench.json").write_text(json.dumps(dict(BENCH, total_input_tokens=128000)))
    configs = [{"id": "m", "instance_type": "g6e.xlarge", "precision": "bf16",
                "measured_serving": "bench.json"}]
    assert _run(tmp_path, _scenario(configs)) == 0
    err = capsys.readouterr().err
    assert ("ecobench: warning: m: the measured_serving benchmark's requests differ from the workload's (its "
            "mean input is 128 tokens, the scenario's 1024)") in err, err
    (tmp_path / "same").mkdir()
    (tmp_path / "same" / "bench.json").write_text(json.dumps(BENCH))
    assert _run(tmp_path / "same", _scenario(configs)) == 0
    assert "measured_serving benchmark" not in capsys.readouterr().err


def _bad(tmp_path, capsys, scenario, *needles):
    assert _run(tmp_path, scenario) == 2
    err = capsys.readouterr().err
    for n in needles:
        assert n in err, (n, err)
    assert "Traceback" not in err


@pytest.mark.parametrize("field,value,needle", [
    ("speculative", {"method": "ngram", "num_speculative_tokens": 4, "acceptance_rate": 1.5},
     "acceptance_rate: 1.5 is out of range; allowed: a number from 0 to 1"),
    ("speculative", {"method": "draft", "num_speculative_tokens": 4, "acceptance_rate": 0.5},
     "exactly one of draft_model or draft_params"),
    ("speculative", {"method": "draft", "draft_model": "llama9", "num_speculative_tokens": 4,
                     "acceptance_rate": 0.5}, "is not a model preset"),
    ("quantization", "int3",
     "configs[0].quantization: 'int3' is not allowed; allowed: 'fp8', 'int8' or 'int4'"),
])
def test_bad_option_values_exit_2(tmp_path, capsys, field, value, needle):
    _bad(tmp_path, capsys, _scenario([{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16",
                                      field: value}]), needle)


def test_bad_hit_rate_exits_2(tmp_path, capsys):
    _bad(tmp_path, capsys, _scenario([{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16"}],
                                     prefix_cache_hit_rate=-0.1),
         "workload.serving.prefix_cache_hit_rate: -0.1 is out of range; allowed: a number from 0 to 1")


def test_quantization_the_chip_cannot_run_exits_2(tmp_path, capsys):
    _bad(tmp_path, capsys, _scenario([{"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16",
                                      "quantization": "fp8"}]),
         "configs[0].quantization", "no published fp8 peak", "allowed: int8, int4")
    _bad(tmp_path, capsys, _scenario([{"id": "a", "instance_type": "trn2.48xlarge", "precision": "bf16",
                                      "price_usd_per_h": 35.76, "quantization": "int8"}]),
         "configs[0].quantization", "no published int8 peak", "allowed: fp8, int4")


@pytest.mark.parametrize("content,needle", [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "is a JSON object"),
    (json.dumps({k: v for k, v in BENCH.items() if k != "median_tpot_ms"}).encode(),
     "field 'median_tpot_ms' is missing"),
    (json.dumps(dict(BENCH, request_throughput=-1)).encode(), "field 'request_throughput' is -1"),
    (json.dumps(dict(BENCH, median_ttft_ms="fast")).encode(), "field 'median_ttft_ms' is 'fast'"),
    (json.dumps(dict(BENCH, p99_tpot_ms=10)).encode(), "'p99_tpot_ms' 10 is below 'median_tpot_ms' 28"),
    (b'{"request_throughput": NaN, "median_ttft_ms": 1, "median_tpot_ms": 1}',
     "NaN is not a measured figure"),
    (b"\xff\xfe", "UTF-8"),
])
def test_bad_benchmark_files_exit_2(tmp_path, capsys, content, needle):
    (tmp_path / "bench.json").write_bytes(content)
    _bad(tmp_path, capsys, _scenario([{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16",
                                      "measured_serving": "bench.json"}]),
         "configs[0].measured_serving", "bench.json", needle)


FIXTURES = Path(__file__).parent.parent / "fixtures" / "vllm_bench"


@pytest.mark.parametrize("changes, needle", [
    ({}, "request_throughput 1e-09 disagrees with completed / duration = 3.99521"),
    ({"request_throughput": 3.995, "total_output_tokens": 128000},
     "output_throughput 1198.5 disagrees with total_output_tokens / duration = 511.386"),
    ({"duration": None, "output_throughput": 1198.5},  # no duration: output tokens per request
     "output_throughput / request_throughput 1.1985e+12 disagrees with total_output_tokens / completed "
     "= 300"),
])
def test_a_benchmark_whose_rates_disagree_with_its_counts_exits_2(tmp_path, capsys, changes, needle):
    """request_throughput 1e-9 with 1,000 requests completed in 250.3 s planned 1e10 instances."""
    doc = json.loads((FIXTURES / "request_throughput_1e-9.json").read_text())
    doc = {k: v for k, v in {**doc, **changes}.items() if v is not None}
    (tmp_path / "bench.json").write_text(json.dumps(doc))
    _bad(tmp_path, capsys, _scenario([{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16",
                                      "measured_serving": "bench.json"}]),
         "configs[0].measured_serving", "bench.json", needle, "more than 5% apart")


def test_a_consistent_benchmark_and_figures_rounded_as_the_console_prints_them_are_read():
    good = json.loads((FIXTURES / "consistent.json").read_text())
    assert vllm_bench.parse(good, "g.json").request_throughput == 3.995  # 1000 / 250.3 = 3.9952
    rounded = dict(good, completed=32, duration=150.87, request_throughput=0.21, total_output_tokens=65536,
                   output_throughput=434.40)  # vLLM's console: 32 requests in 150.87 s
    assert vllm_bench.parse(rounded, "r.json").request_throughput == 0.21
    slow = dict(good, completed=10, duration=900.0, request_throughput=0.01, total_output_tokens=3000,
                output_throughput=3.33)  # 0.0111/s printed as 0.01: within half the last digit
    assert vllm_bench.parse(slow, "s.json").request_throughput == 0.01
    with pytest.raises(vllm_bench.InputError, match="request_throughput 0.02 disagrees"):
        vllm_bench.parse(dict(slow, request_throughput=0.02), "s.json")


def test_benchmark_not_a_regular_file_or_too_large_exits_2(tmp_path, capsys, monkeypatch):
    (tmp_path / "dir.json").mkdir()
    cfg = {"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16", "measured_serving": "dir.json"}
    _bad(tmp_path, capsys, _scenario([cfg]), "is a directory")
    (tmp_path / "big.json").write_text(json.dumps(BENCH))
    monkeypatch.setattr(vllm_bench, "MAX_BYTES", 100)
    _bad(tmp_path, capsys, _scenario([dict(cfg, measured_serving="big.json")]), "may be at most 100 bytes")
    _bad(tmp_path, capsys, _scenario([dict(cfg, measured_serving="missing.json")]), "no such")


def test_a_chunk_budget_without_chunked_prefill_exits_2(tmp_path, capsys):
    """2026-11-29: max_num_batched_tokens beside chunked_prefill: false ran (exit 0) with the budget
    dropped: 512 and 100000 gave the same plan as none (g6e.xlarge, 3 instances, TTFT p50 99.5 ms),
    where vLLM refuses a budget below the model's length without chunked prefill."""
    _bad(tmp_path, capsys, _scenario([{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16",
                                      "chunked_prefill": False, "max_num_batched_tokens": 512}]),
         "configs[0].max_num_batched_tokens", "chunked_prefill: false", "allowed")
    assert not (tmp_path / "res").exists()


def test_a_model_that_fits_no_instance_is_offered_4_bit_weights_only_where_they_fit(tmp_path, capsys):
    """2026-11-29: llama3-70b on g4dn.xlarge (a 16 GB T4, 13.4 GiB usable) was told 'allowed: 4-bit
    weights (quantization: int4), or an instance with more accelerator memory', though its 4-bit
    weights (33 GiB) overflow it too; on g6e.xlarge (40.2 GiB usable) they fit, and are offered."""
    one = {"id": "a", "precision": "fp16"}
    _bad(tmp_path / "t4", capsys, _scenario([{**one, "instance_type": "g4dn.xlarge"}], model="llama3-70b"),
         "configs[0]", "no tensor degree fits; allowed: an instance with more accelerator memory")
    _bad(tmp_path / "l40s", capsys, _scenario([{**one, "instance_type": "g6e.xlarge"}], model="llama3-70b"),
         "allowed: 4-bit weights (quantization: int4), or an instance with more accelerator memory")


def test_measured_benchmark_missing_a_target_exits_2(tmp_path, capsys):
    (tmp_path / "bench.json").write_text(json.dumps(dict(BENCH, median_tpot_ms=80.0, p99_tpot_ms=90.0)))
    _bad(tmp_path, capsys, _scenario([{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16",
                                      "measured_serving": "bench.json"}]),
         "median_tpot_ms 80 misses the target median_tpot_ms 50")


@pytest.mark.parametrize("field,value", [
    ("quantization", "fp8"), ("weight_precision", "int8"), ("kv_cache_precision", "fp8"),
    ("speculative", {"method": "ngram", "num_speculative_tokens": 4, "acceptance_rate": 0.7}),
    ("scheduler", "static"), ("max_batch", 8), ("max_num_batched_tokens", 4096), ("chunked_prefill", False),
    ("parallelism", {"tensor": 2}), ("memory_headroom_pct", 5), ("lnc", 1)])
def test_serving_model_options_beside_a_measured_benchmark_are_refused(tmp_path, capsys, field, value):
    """2026-11-29: each of these beside measured_serving ran (exit 0) with the benchmark's figures
    unchanged and the option silently dropped (quantization fp8 on g6e.12xlarge: TTFT p50 100 ms, 3
    instances, as without it), though the row read as if the option had been planned."""
    (tmp_path / "bench.json").write_text(json.dumps(BENCH))
    cfg = {"id": "a", "instance_type": "g6e.12xlarge", "precision": "bf16", "measured_serving": "bench.json"}
    _bad(tmp_path, capsys, _scenario([{**cfg, field: value}]),
         f"configuration 'a': {field} is an input of the serving model")
    default = {"scheduler": "continuous", "max_batch": "auto", "chunked_prefill": True}
    if field in default:  # the value a resolved scenario.yaml repeats still passes
        (tmp_path / "ok").mkdir()
        (tmp_path / "ok" / "bench.json").write_text(json.dumps(BENCH))
        assert _run(tmp_path / "ok", _scenario([{**cfg, field: default[field]}])) == 0


def test_options_outside_serving_are_refused(tmp_path, capsys):
    s = {"schema_version": 2, "name": "s", "workload": {"model": "bert-base", "inference": {
        "rate_per_h": 1000, "seq_len": 128}},
        "configs": [{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16", "quantization": "fp8"}],
        "baseline": "a"}
    _bad(tmp_path, capsys, s, "'quantization' applies to serving")


@pytest.mark.parametrize("workload", ["inference", "training"])
@pytest.mark.parametrize("field,value", [("scheduler", "static"), ("max_batch", 8),
                                         ("weight_precision", "int8"), ("kv_cache_precision", "fp8"),
                                         ("max_num_batched_tokens", 4096), ("chunked_prefill", False)])
def test_serving_options_outside_serving_are_refused(tmp_path, capsys, workload, field, value):
    """trial18: each of these ran an inference or training scenario unchanged (exit 0), the option
    silently dropped, where quantization, speculative and measured_serving were refused."""
    job = ({"inference": {"rate_per_h": 1000, "seq_len": 128}} if workload == "inference" else
           {"training": {"total_sequences": 1000, "phases": [{"seq_len": 128, "fraction": 1}]}})
    cfg = {"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16", field: value}
    s = {"schema_version": 2, "name": "s", "workload": {"model": "bert-base", **job},
         "configs": [cfg | ({"instances": 1} if workload == "training" else {})], "baseline": "a"}
    _bad(tmp_path, capsys, s, f"configuration 'a': {field} applies to serving (workload.serving); remove it")
    if workload == "inference":  # the value a resolved scenario.yaml repeats still passes
        default = {"scheduler": "continuous", "max_batch": "auto", "chunked_prefill": True}
        if field in default:
            assert _run(tmp_path / "ok", {**s, "configs": [{**cfg, field: default[field]}]}) == 0


def test_emulated_neuroncore_plans_serving(tmp_path):
    configs = [{"id": "inf2", "instance_type": "inf2.48xlarge", "precision": "bf16", "backend": "emulated"},
               {"id": "trn2", "instance_type": "trn2.48xlarge", "precision": "bf16", "backend": "emulated",
                "price_usd_per_h": 35.76},
               {"id": "analytic", "instance_type": "inf2.48xlarge", "precision": "bf16"}]
    assert _run(tmp_path, _scenario(configs)) == 0
    d = _rows(tmp_path)
    assert d.provenance["inf2"] == "emulated" and d.provenance["analytic"] == "estimated"
    assert (d.tpot_ms_p50 <= 50).all() and (d.instances >= 1).all()
    assert _texts(tmp_path, "method")["trn2"].startswith("emulated NeuronCore serving model")


@pytest.mark.parametrize("cfg,needle", [
    ({"instance_type": "p5.48xlarge"}, "configs[0].backend"),
    ({"instance_type": "inf2.48xlarge", "speculative": {"method": "ngram", "num_speculative_tokens": 2,
                                                         "acceptance_rate": 0.5}},
     "analytic serving model only"),
    # W8A8: the emulated NeuronCore times every matmul at `precision` (its timer never sees the
    # quantized cluster's 8-bit peak), so it would plan weight-only storage under the W8A8 name
    ({"instance_type": "trn2.48xlarge", "price_usd_per_h": 35.76, "quantization": "fp8"},
     "configs[0].quantization: fp8 (W8A8, weight matmuls"),
    ({"instance_type": "inf2.48xlarge", "quantization": "int8"}, "allowed with backend: emulated"),
])
def test_emulated_serving_refuses_what_it_does_not_model(tmp_path, capsys, cfg, needle):
    _bad(tmp_path, capsys, _scenario([{"id": "a", "precision": "bf16", "backend": "emulated", **cfg}]),
         needle)
