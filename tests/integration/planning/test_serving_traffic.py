"""Serving schedulers, length distributions, percentile targets and `ecobench serve-point` through the
CLI and the API: results, and bad input (exit 2 naming the field and what is allowed)."""

import json
import re

import pytest
import yaml

from ecobench.cli import main
from ecobench.words import fmt_num

SERVING = {"requests_per_h": 36000, "input_tokens": 1024, "output_tokens": 256, "horizon_h": 1}


def _write(tmp_path, serving=None, configs=None, name="s.yaml", model="llama3-8b"):
    doc = {"schema_version": 2, "name": "t",
           "workload": {"model": model, "serving": {**SERVING, **(serving or {})}},
           "configs": configs or [{"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16"}],
           "baseline": (configs or [{"id": "p5"}])[0]["id"], "uncertainty": {"draws": 0}}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def _run(tmp_path, capsys, **kw):
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    code = main(["run", str(_write(tmp_path, **kw)), "-q", "--out", str(out)])
    err = capsys.readouterr().err
    rows = None
    if code == 0:
        rows = {r["config_id"]: r for r in json.loads((out / "results.json").read_text())["rows"]}
    return code, err, rows


def test_each_scheduler_plans_and_says_which_statistic_each_column_holds(tmp_path, capsys):
    cfg = {"instance_type": "p5.48xlarge", "precision": "bf16"}
    # a static batch's whole decode is the TTFT tail of the requests that arrive during it: 15 s leaves
    # room for exponential-like outputs of mean 256 (about 9 s at batch 1)
    code, err, rows = _run(tmp_path, capsys, serving={"p99_ttft_ms": 15000, "p95_tpot_ms": 60,
                                                      "input_tokens_cv": 1.0, "output_tokens_cv": 1.0},
                           configs=[{"id": "c", **cfg}, {"id": "s", **cfg, "scheduler": "static"},
                                    {"id": "d", **cfg, "scheduler": "disaggregated"}])
    assert code == 0, err
    for cid, row in rows.items():
        assert row["scheduler"] == {"c": "continuous", "s": "static", "d": "disaggregated"}[cid]
        assert row["ttft_ms_p50"] <= row["ttft_ms_p99"] <= 15000
        assert row["tpot_ms_p50"] <= row["tpot_ms_p95"] <= 60
        assert "p99_ttft_ms 15000:" in row["slo"] and "meets" in row["slo"] and "misses" not in row["slo"]
        assert "ttft_ms" not in row and "tpot_p99_ms" not in row
    assert rows["d"]["prefill_replicas"] >= 1 and rows["d"]["decode_replicas"] >= 1
    assert rows["d"]["replicas"] == rows["d"]["prefill_replicas"] + rows["d"]["decode_replicas"]
    assert rows["s"]["tpot_ms_p50"] < rows["c"]["tpot_ms_p50"]  # no prefill between a static batch's steps


def test_old_target_names_still_read_as_medians(tmp_path, capsys):
    code, err, old = _run(tmp_path, capsys, serving={"ttft_ms": 800, "tpot_ms": 40, "ttft_p99_ms": 3000})
    assert code == 0, err
    # one deprecation warning per old name, naming the new one
    for was, now, stat in (("ttft_ms", "median_ttft_ms", "the median"),
                           ("tpot_ms", "median_tpot_ms", "the median"),
                           ("ttft_p99_ms", "p99_ttft_ms", "the 99th percentile")):
        line = (f"ecobench: warning: workload.serving.{was} is deprecated (read as {now}, {stat}); "
                f"rename it {now}\n")
        assert err.count(line) == 1, err
    assert err.count(" is deprecated ") == 3
    code, err, new = _run(tmp_path, capsys, serving={"median_ttft_ms": 800, "median_tpot_ms": 40,
                                                     "p99_ttft_ms": 3000})
    assert code == 0, err
    assert "deprecated" not in err
    assert old["p5"]["instances"] == new["p5"]["instances"] and old["p5"]["slo"] == new["p5"]["slo"]
    ignore = {"run_id", "created_utc"}
    assert {k: v for k, v in old["p5"].items() if k not in ignore} == \
        {k: v for k, v in new["p5"].items() if k not in ignore}


def test_longer_tails_need_as_many_or_more_replicas(tmp_path, capsys):
    tight = {"p99_ttft_ms": 400, "requests_per_h": 360000}
    code, _, fixed = _run(tmp_path, capsys, serving=tight)
    code2, _, spread = _run(tmp_path, capsys, serving={**tight, "input_tokens_cv": 2.0, "arrival_cv": 3.0})
    assert code == code2 == 0
    assert spread["p5"]["replicas"] >= fixed["p5"]["replicas"]
    assert spread["p5"]["ttft_ms_p99"] <= 400


def test_a_smoother_arrival_stream_never_needs_more_instances_or_longer_waits(tmp_path, capsys):
    """Arrival CV 0 to 0.1 (near-deterministic) against Poisson: the plan is continuous as the CV goes
    to 0 (a D/G/1 queue at load < 1 waits little); it planned 26 g6e.xlarge at CV 0-0.01 against 5 at
    CV 0.05-1, the wait of the few who wait read as 2e10 mean works (the new-user walkthrough's case)."""
    chat = {"input_tokens": 1500, "output_tokens": 300, "input_tokens_cv": 1.2, "output_tokens_cv": 0.8,
            "length_distribution": "lognormal", "median_tpot_ms": 40, "p99_tpot_ms": 80,
            "p99_ttft_ms": 5000, "prefix_cache_hit_rate": 0.3, "horizon_h": 720}
    rows = []
    for cv in (0.0, 0.001, 0.01, 0.05, 0.1, 1.0):
        code, err, got = _run(tmp_path, capsys, serving={**chat, "arrival_cv": cv},
                              configs=[{"id": "l40s", "instance_type": "g6e.xlarge", "precision": "bf16"}])
        assert code == 0, err
        rows.append(got["l40s"])
    instances = [r["instances"] for r in rows]
    assert instances == sorted(instances), instances  # never fewer as the arrivals grow burstier
    for q in ("p50", "p99"):
        ttft = [r[f"ttft_ms_{q}"] for r in rows if r["instances"] == rows[0]["instances"]]
        assert all(b >= a * 0.99 for a, b in zip(ttft, ttft[1:], strict=False)), (q, ttft)


def test_lengths_csv_gives_the_means(tmp_path, capsys):
    (tmp_path / "lengths.csv").write_text("input_tokens,output_tokens,count\n100,50,3\n900,450,1\n")
    serving = {"lengths_csv": "lengths.csv", "median_tpot_ms": 100}
    doc = {k: v for k, v in SERVING.items() if k not in ("input_tokens", "output_tokens")}
    path = _write(tmp_path, serving=serving)
    data = yaml.safe_load(path.read_text())
    data["workload"]["serving"] = {**doc, **serving}
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 0
    resolved = yaml.safe_load((tmp_path / "o" / "scenario.yaml").read_text())["workload"]["serving"]
    assert resolved["input_tokens"] == 300 and resolved["output_tokens"] == 150


@pytest.mark.parametrize("serving,configs,message", [
    ({"input_tokens_cv": 11}, None, "input_tokens_cv"),
    ({"arrival_cv": -1}, None, "arrival_cv"),
    ({"p99_ms": 500}, None, "p99_ms: a percentile target must name its statistic (ttft or tpot)"),
    ({"p97_ttft_ms": 500}, None, "p97_ttft_ms: no target for that statistic; allowed: median_ttft_ms"),
    # the unit or the statistic's name was wrong, and the message said the metric was missing
    ({"p99_ttft_s": 3}, None, "p99_ttft_s: latency targets are in milliseconds, named with _ms: write "
                              "p99_ttft_ms (1 s = 1000 ms); allowed: median_ttft_ms"),
    ({"p99_tpot": 80}, None, "p99_tpot: latency targets are in milliseconds, named with _ms: write "
                             "p99_tpot_ms;"),
    ({"p50_ttft_ms": 500}, None, "p50_ttft_ms: the 50th-percentile target is named median: write "
                                 "median_ttft_ms;"),
    ({"p99_e2e_ms": 500}, None, "p99_e2e_ms: e2e is not a latency ecobench plans for; targets bound "
                                "ttft or tpot"),
    ({"ttft_ms": 500, "median_ttft_ms": 600}, None, "ttft_ms (deprecated name of median_ttft_ms) is 500"),
    # named metric first: 'unknown field' with no hint (tpot_p99, ttft) or a hint that named p99 for p90
    ({"tpot_p99": 80}, None, "tpot_p99: a target is named statistic first, in milliseconds: write "
                             "p99_tpot_ms;"),
    ({"ttft": 500}, None, "ttft: a target is named statistic first, in milliseconds: write median_ttft_ms "
                          "(no statistic: the median; or p90_ttft_ms ... p99_ttft_ms);"),
    ({"ttft_p90_ms": 500}, None, "ttft_p90_ms: a target is named statistic first, in milliseconds: write "
                                 "p90_ttft_ms;"),
    ({"ttft_p99_s": 3}, None, "write p99_ttft_ms (1 s = 1000 ms);"),
    (None, [{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16", "scheduler": "fifo"}],
     "scheduler"),
    # a drafter larger than the target was planned, and its weights blamed on the target
    (None, [{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16",
             "speculative": {"method": "draft", "draft_model": "llama3-70b", "num_speculative_tokens": 4,
                             "acceptance_rate": 0.7}}],
     "configs[0].speculative.draft_model: llama3-70b (70.6 B parameters) is not smaller than the model it "
     "drafts for, llama3-8b (8.03 B); allowed: a drafter of fewer than"),
    (None, [{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16",
             "speculative": {"method": "draft", "draft_params": 1e11, "num_speculative_tokens": 4,
                             "acceptance_rate": 0.7}}],
     "configs[0].speculative.draft_params: 1e+11 is not smaller than the model it drafts for"),
    (None, [{"id": "a", "instance_type": "g6.xlarge", "precision": "bf16",
             "speculative": {"method": "draft", "draft_params": 7e9, "num_speculative_tokens": 4,
                             "acceptance_rate": 0.7}}],
     "llama3-8b and its drafter need 28.0 GiB of weights per device at tensor 1 on g6.xlarge"),
    (None, [{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16", "scheduler": "static",
             "max_num_batched_tokens": 2048}], "max_num_batched_tokens applies to the continuous scheduler"),
    (None, [{"id": "a", "instance_type": "inf2.48xlarge", "precision": "bf16", "scheduler": "disaggregated"}],
     "cannot hand between replicas; allowed here: continuous, static"),
    (None, [{"id": "a", "instance_type": "p5.48xlarge", "precision": "bf16", "backend": "reference",
             "scheduler": "static"}], "schedulers: continuous, static, disaggregated"),
])
def test_bad_serving_input_exits_2_naming_it(tmp_path, capsys, serving, configs, message):
    code, err, _ = _run(tmp_path, capsys, serving=serving, configs=configs)
    assert code == 2 and message in err and err.count("\n") <= 3, err
    assert "Traceback" not in err


@pytest.mark.parametrize("input_tokens,eight_bit", [(3000, True), (3800, False)])
def test_a_cache_that_does_not_fit_beside_the_weights_is_named_with_what_would_fit(tmp_path, capsys,
                                                                                    input_tokens, eight_bit):
    """Llama 2 13B with a Llama 2 7B drafter on one L40S: the weights (36.8 GiB) fit the 40.2 GiB usable,
    one request's caches (the target's and the drafter's) beside them do not. The refusal said only
    '36.8 GiB of weights ... which has 40.2 GiB usable'."""
    draft = {"method": "draft", "draft_model": "llama2-7b", "num_speculative_tokens": 4,
             "acceptance_rate": 0.7}
    cfg = {"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16", "speculative": draft}
    serving = {"input_tokens": input_tokens, "output_tokens": 256}
    code, err, _ = _run(tmp_path, capsys, serving=serving, configs=[cfg], model="llama2-13b")
    tokens = fmt_num(input_tokens + 256)
    assert code == 2 and "llama2-13b and its drafter need 36.8 GiB of weights and " in err, err
    assert f"GiB of KV cache for one request of {tokens} tokens (the drafter's cache included)" in err
    assert "allowed: fewer tokens per request (input_tokens + output_tokens), " in err
    assert ("kv_cache_precision: fp8" in err) == eight_bit
    # the advice holds: an 8-bit cache fits where it is offered, and fewer tokens always
    code, err, _ = _run(tmp_path, capsys, serving=serving, configs=[{**cfg, "kv_cache_precision": "fp8"}],
                        model="llama2-13b")
    assert (code == 0) == eight_bit, err
    code, err, _ = _run(tmp_path, capsys, serving={"input_tokens": 512, "output_tokens": 256}, configs=[cfg],
                        model="llama2-13b")
    assert code == 0, err


@pytest.mark.parametrize("rows,message", [
    ("input_tokens,output_tokens\n100,-5\n", "line 2, output_tokens: -5 is not allowed"),
    ("input_tokens,output_tokens\n100,0\n",
     "line 2, output_tokens: 0 is not allowed; allowed: a whole number >= 1"),
    ("input_tokens,output_tokens\nabc,5\n", "line 2, input_tokens: 'abc' is not a number"),
    ("prompt,answer\n1,2\n", "needs a header with input_tokens and output_tokens"),
    # one field past the csv module's limit: was an internal error (exit 3)
    ("input_tokens,output_tokens\n" + "1" * 200_000 + ",5\n", "not a readable CSV"),
    # a short row was read with the missing value as 1 (output_tokens 1, or count 1), silently
    ("input_tokens,output_tokens,count\n100,50,3\n900,450\n", "line 3: fewer fields than the header's 3"),
    ("input_tokens,output_tokens\n100\n", "line 2: fewer fields than the header's 2 columns"),
    ("input_tokens,output_tokens\n100,50,7\n", "line 2: more fields than the header's 2 columns"),
    # a request longer than the context was planned for (only the means were checked)
    ("input_tokens,output_tokens,count\n100,50,90\n8000,500,1\n",
     "line 3: input_tokens + output_tokens 8500 exceeds llama3-8b's max_position_embeddings (8192); allowed: "
     "requests of at most 8192 tokens"),
])
def test_bad_lengths_csv_exits_2_naming_file_row_and_field(tmp_path, capsys, rows, message):
    (tmp_path / "l.csv").write_text(rows)
    path = _write(tmp_path, serving={"lengths_csv": "l.csv", "input_tokens": None, "output_tokens": None})
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and "l.csv" in err and "lengths_csv" in err, err


@pytest.mark.parametrize("special,message", [
    ("/dev/zero", "is a character device; give a regular lengths CSV file"),  # was a MemoryError, exit 3
    (".", "is a directory; give a regular lengths CSV file"),
    ("missing.csv", "no such file (the lengths CSV)"),
])
def test_lengths_csv_goes_through_the_bounded_reader(tmp_path, capsys, special, message):
    path = _write(tmp_path, serving={"lengths_csv": special})
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and "workload.serving.lengths_csv" in err and err.count("\n") == 1, err


def test_lengths_csv_from_a_spreadsheet_with_a_byte_order_mark_reads(tmp_path, capsys):
    """Excel's "CSV UTF-8" starts with a byte-order mark and ends lines with CRLF: it was refused as
    having no input_tokens header."""
    (tmp_path / "l.csv").write_bytes(b"\xef\xbb\xbfinput_tokens,output_tokens,count\r\n"
                                     b"100,50,3\r\n900,450,1\r\n")
    path = _write(tmp_path, serving={"lengths_csv": "l.csv", "median_tpot_ms": 100})
    data = yaml.safe_load(path.read_text())
    del data["workload"]["serving"]["input_tokens"], data["workload"]["serving"]["output_tokens"]
    path.write_text(yaml.safe_dump(data))
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 0, capsys.readouterr().err
    resolved = yaml.safe_load((tmp_path / "o" / "scenario.yaml").read_text())["workload"]["serving"]
    assert resolved["input_tokens"] == 300 and resolved["output_tokens"] == 150


def test_serve_point_prints_a_static_batch_with_bands(capsys):
    assert main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--batch", "16",
                 "--input-tokens", "512", "--output-tokens", "128", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for k in ("ttft_ms", "tpot_ms", "output_tokens_per_s"):
        assert doc[f"{k}_low"] < doc[k] < doc[f"{k}_high"]
    assert doc["output_tokens_per_s"] == pytest.approx(
        16 * 128 / (doc["ttft_ms"] / 1e3 + 127 * doc["tpot_ms"] / 1e3))
    assert main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--batch", "64",
                 "--input-tokens", "512", "--output-tokens", "128", "--format", "json"]) == 0
    big = json.loads(capsys.readouterr().out)
    assert big["tpot_ms"] > doc["tpot_ms"] and big["output_tokens_per_s"] > doc["output_tokens_per_s"]


@pytest.mark.parametrize("args,message", [
    (["--batch", "0"], "argument --batch: '0' is out of range; allowed: an integer from 1 to 1,048,576"),
    # trial: 1e3 was refused as an invalid int; a fraction in exponent form is refused with the range
    (["--input-tokens", "1.5e0"],
     "argument --input-tokens: '1.5e0' is not a whole number; allowed: an integer from 1 to 16,777,216"),
    (["--output-tokens", "1e400"],
     "'1e400' is not a finite number; allowed: an integer from 1 to 16,777,216"),
    (["--tensor", "2.5"],
     "argument --tensor: '2.5' is not a whole number; allowed: an integer from 1 to 10^6"),
    (["--input-tokens", "1k"],
     "argument --input-tokens: '1k' is not a number; allowed: an integer from 1 to"),
])
def test_serve_point_integer_options_are_read_as_a_scenario_reads_integers(capsys, args, message):
    with pytest.raises(SystemExit) as e:
        main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_serve_point_reads_a_whole_number_in_exponent_form_as_a_scenario_does(capsys):
    """trial: `--input-tokens 1e3` was 'invalid int value' while a scenario reads input_tokens: 1e3."""
    base = ["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--format", "json"]
    assert main([*base, "--input-tokens", "1000", "--batch", "4"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*base, "--input-tokens", "1e3", "--batch", "4.0e0"]) == 0
    assert json.loads(capsys.readouterr().out) == plain


@pytest.mark.parametrize("args,message", [
    (["--precision", "fp7"], "--precision 'fp7': not a data type"),
    (["--tensor", "3"], "--tensor 3: must divide the 8 ranks"),
    (["--batch", "100000"], "do not fit p5.48xlarge"),
    (["--instance-type", "p9.huge"], "p9.huge"),
    (["--quantization", "int4", "--weight-precision", "int8"],
     "give --quantization or --weight-precision, not both"),
    (["--instance-type", "p4d.24xlarge", "--quantization", "fp8"],
     "--quantization fp8: NVIDIA A100 40GB SXM4 has no published fp8 peak"),
    # the name as a vendor writes it: was "no fitted efficiency", with no suggestion
    (["--stack", "vLLM"],
     "--stack: unknown software stack 'vLLM'; did you mean 'vllm', 'vllm-v1', 'vllm-neuron'?"),
    (["--stack", "TensorRT-LLM"], "unknown software stack 'TensorRT-LLM'; did you mean 'tensorrt-llm',"),
])
def test_serve_point_bad_input_exits_2(capsys, args, message):
    base = ["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge"]
    assert main(base + args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("model,instance,args,message", [
    ("deepseek-v3", "p5.48xlarge", [],
     "--instance-type p5.48xlarge: deepseek-v3's weights alone take 156.2 GiB per device at tensor 8, "
     "beyond its 80.0 GiB; allowed: 4-bit weights (--quantization int4), or an instance with more "
     "accelerator memory"),
    ("llama3-70b", "g6.xlarge", ["--quantization", "int4"],
     "llama3-70b's weights alone take 32.9 GiB per device at tensor 1, beyond its 22.4 GiB; allowed: an "
     "instance with more accelerator memory"),
    # 2026-11-29: offered 4-bit weights, whose 32.9 GiB overflow the 14.9 GiB of a T4 as well
    ("llama3-70b", "g4dn.xlarge", ["--precision", "fp16"],
     "llama3-70b's weights alone take 131.4 GiB per device at tensor 1, beyond its 14.9 GiB; allowed: an "
     "instance with more accelerator memory"),
])
def test_serve_point_names_weights_that_fit_no_batch(capsys, model, instance, args, message):
    """deepseek-v3 on p5.48xlarge said '--batch 1: deepseek-v3's weights and 1 caches of 256 tokens do
    not fit ...; use fewer tokens, ...': no batch or length helps when the weights alone overflow."""
    assert main(["serve-point", model, "--instance-type", instance, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "fewer tokens" not in err and err.count("\n") == 1, err


def test_serve_point_takes_a_quantization_as_a_configuration_does(capsys):
    """--quantization (which a scenario's configuration takes) was missing, and --weight-precision int4
    refused: W8A8 runs the prefill's weight matmuls at the 8-bit peak and halves the weights a decode
    step reads; W4A16 quarters them and leaves the prefill at --precision."""
    def point(*args: str) -> dict:
        assert main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--batch", "8",
                     "--input-tokens", "1024", "--output-tokens", "256", "--format", "json", *args]) == 0
        return json.loads(capsys.readouterr().out)

    bf16, fp8, int4 = point(), point("--quantization", "fp8"), point("--quantization", "int4")
    assert fp8["quantization"] == "fp8" and bf16["quantization"] is None
    assert fp8["ttft_ms"] < 0.7 * bf16["ttft_ms"] and fp8["tpot_ms"] < bf16["tpot_ms"]
    assert int4["ttft_ms"] == pytest.approx(bf16["ttft_ms"], rel=0.02) and int4["tpot_ms"] < fp8["tpot_ms"]


def test_serve_point_names_the_weight_and_kv_cache_precision_it_priced(capsys):
    """--weight-precision and --kv-cache-precision change the figures (an FP8 cache: a shorter TPOT at a
    long context) but the header and the JSON said only "(bf16, tensor 1)"."""
    base = ["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--batch", "64", "--input-tokens",
            "2048"]
    assert main([*base, "--weight-precision", "int8", "--kv-cache-precision", "fp8"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith("llama3-8b on p5.48xlarge (bf16, weights int8, KV cache fp8, tensor 1)"), head
    assert main([*base, "--kv-cache-precision", "fp8", "--format", "json"]) == 0
    fp8 = json.loads(capsys.readouterr().out)
    assert main([*base, "--format", "json"]) == 0
    bf16 = json.loads(capsys.readouterr().out)
    assert fp8["kv_cache_precision"] == "fp8" and bf16["kv_cache_precision"] is None
    assert fp8["weight_precision"] is None and fp8["tpot_ms"] < bf16["tpot_ms"]


def test_serve_point_on_a_chip_without_the_default_precision_names_the_option(capsys):
    """A T4 at the default bf16 said "NVIDIA T4 has no published bf16 peak; ..." without naming
    --precision, which the user had not typed."""
    assert main(["serve-point", "llama3-8b", "--instance-type", "g4dn.xlarge"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ecobench: error: --precision bf16: NVIDIA T4 has no published bf16 peak; choose "
                          "a precision it supports: fp32, fp16"), err


def test_serve_point_help_exits_0(capsys):
    with pytest.raises(SystemExit) as e:
        main(["serve-point", "--help"])
    assert e.value.code == 0 and "static batch" in capsys.readouterr().out


def test_serve_point_says_its_figures_are_one_replicas(capsys):
    assert main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--tensor", "2"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith("one replica on 2 of the instance's 8 accelerators")


def test_serve_point_on_an_encoder_names_the_decoders_it_takes(capsys):
    assert main(["serve-point", "bert-base", "--instance-type", "p5.48xlarge"]) == 2
    err = capsys.readouterr().err
    # the model is the positional argument: there is no --model option to name
    assert "error: model bert-base: an encoder" in err and "--model" not in err
    assert "(allowed: gpt3-175b, llama2-7b," in err and "bert-base," not in err and err.count("\n") == 1


def test_a_target_one_configuration_cannot_meet_is_a_row_that_misses_it(tmp_path, capsys):
    """A TPOT target below inf2's batch-1 decode step (about 10.5 ms) but above p5's and trn2's: the
    run exits 0, inf2's row is planned at batch 1 with the miss in ``slo`` and a warning naming the
    target and the best value; the other rows are those of a run without inf2 (it was exit 2 before)."""
    others = [{"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16"},
              {"id": "trn2", "instance_type": "trn2.48xlarge", "precision": "bf16",
               "price_usd_per_h": 35.7608}]
    inf2 = {"id": "inf2", "instance_type": "inf2.48xlarge", "precision": "bf16"}
    serving = {"median_tpot_ms": 9, "p99_ttft_ms": 3000}
    code, err, rows = _run(tmp_path, capsys, serving=serving, configs=[*others, inf2])
    assert code == 0, err
    row = rows["inf2"]
    assert row["batch"] == 1 and row["instances"] >= 1 and row["energy_kwh"] > 0 and row["cost_usd"] > 0
    assert row["tpot_ms_p50"] > 9
    assert f"median_tpot_ms 9: {row['tpot_ms_p50']:.4g} misses" in row["slo"]
    assert "p99_ttft_ms 3000: " in row["slo"] and row["slo"].endswith(" meets")
    assert row["layout_choice"].startswith("median_tpot_ms 9 is below the ")
    assert "no batch meets the targets, so planned at batch 1" in row["layout_choice"]
    warning = (f"ecobench: warning: inf2: no batch meets median_tpot_ms 9 on inf2.48xlarge: "
               f"{fmt_num(float(format(row['tpot_ms_p50'], '.4g')))} ms at batch 1 (tensor "
               f"{row['tensor_parallel']}), where this row is planned (")
    assert warning in err and "Traceback" not in err
    assert all(rows[c]["slo"].count("meets") == 2 for c in ("p5", "trn2")) and "p5: no batch" not in err
    code, _, alone = _run(tmp_path, capsys, serving=serving, configs=others)
    assert code == 0 and {c: rows[c] for c in alone} == alone


def test_a_target_no_configuration_meets_still_runs_with_a_warning_each(tmp_path, capsys):
    code, err, rows = _run(tmp_path, capsys, serving={"p99_ttft_ms": 0.5},
                           configs=[{"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16"},
                                    {"id": "g6e", "instance_type": "g6e.xlarge", "precision": "bf16"}])
    assert code == 0, err
    for cid, inst in (("p5", "p5.48xlarge"), ("g6e", "g6e.xlarge")):
        assert f"ecobench: warning: {cid}: no batch meets p99_ttft_ms 0.5 on {inst}: " in err
        assert rows[cid]["slo"].endswith(" misses") and rows[cid]["ttft_ms_p99"] > 0.5
        assert " ms a request waits and is prefilled at batch 1 on " in rows[cid]["layout_choice"]
    assert rows["g6e"]["cost_change_pct"] == pytest.approx(
        100 * (rows["g6e"]["cost_usd"] / rows["p5"]["cost_usd"] - 1))


def test_serve_point_with_one_output_token_gives_no_tpot(capsys):
    assert main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--batch", "4",
                 "--input-tokens", "512", "--output-tokens", "1", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "tpot_ms" not in doc and "no tpot_ms" in doc["source"]
    assert doc["output_tokens_per_s"] == pytest.approx(4 / (doc["ttft_ms"] / 1e3))
    assert main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--batch", "4",
                 "--input-tokens", "512", "--output-tokens", "1"]) == 0
    assert "tpot_ms" not in capsys.readouterr().out.split("(")[0]


@pytest.mark.parametrize("instance,args,advice,not_advised", [
    ("g6e.xlarge",
     ["--quantization", "int4", "--batch", "8", "--input-tokens", "4000", "--output-tokens", "4000"],
     "at tensor 1; use a smaller batch or fewer tokens, or an instance with more accelerator memory",
     "--tensor"),
    ("p5.48xlarge", ["--tensor", "1", "--batch", "2000"], "or a larger --tensor (2, 4, 8)", "instance with"),
])
def test_serve_point_advises_a_larger_tensor_only_where_there_is_one(capsys, instance, args, advice,
                                                                     not_advised):
    assert main(["serve-point", "llama3-70b", "--instance-type", instance, *args]) == 2
    err = capsys.readouterr().err
    assert advice in err and not_advised not in err.split("; use")[1] and err.count("\n") == 1, err


def test_a_lengths_csv_that_is_a_fifo_or_too_large_is_refused_not_read(tmp_path, capsys):
    """The lengths CSV goes through the bounded reader, as every user file does: a FIFO (which an
    unbounded read waits on for ever) and a file past the size cap exit 2 before anything is read."""
    import os

    from ecobench.io.lengths_csv import MAX_BYTES

    os.mkfifo(tmp_path / "l.csv")
    path = _write(tmp_path, serving={"lengths_csv": "l.csv"})
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 2
    assert "is a FIFO" in capsys.readouterr().err
    (tmp_path / "l.csv").unlink()
    with open(tmp_path / "l.csv", "wb") as fh:
        fh.truncate(MAX_BYTES + 1)
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"a lengths CSV may be at most {MAX_BYTES:,} bytes" in err and "lengths_csv" in err, err


def test_a_lengths_csv_edited_between_runs_of_one_process_is_read_again(tmp_path):
    """The API plans in one long process: a lengths CSV changed between two runs gives the second run
    the new lengths (the plan's distributions were cached by path, so it kept the first file's)."""
    import os

    path = _write(tmp_path, serving={"lengths_csv": "l.csv", "median_tpot_ms": 100})
    data = yaml.safe_load(path.read_text())
    del data["workload"]["serving"]["input_tokens"], data["workload"]["serving"]["output_tokens"]
    for name in ("l.csv", "other.csv"):
        data["workload"]["serving"]["lengths_csv"] = name
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(data))

    def run(name: str, out: str) -> dict:
        assert main(["run", str(tmp_path / f"{name}.yaml"), "-q", "--out", str(tmp_path / out)]) == 0
        return {r["config_id"]: r for r in json.loads((tmp_path / out / "results.json").read_text())["rows"]}

    (tmp_path / "l.csv").write_text("input_tokens,output_tokens\n100,50\n900,450\n")
    first = run("l.csv", "a")
    (tmp_path / "l.csv").write_text("input_tokens,output_tokens\n100,50\n100,50\n300,150\n")
    os.utime(tmp_path / "l.csv", ns=(1, 1))
    (tmp_path / "other.csv").write_text((tmp_path / "l.csv").read_text())
    again, fresh = run("l.csv", "b"), run("other.csv", "c")
    for cid, row in fresh.items():
        assert again[cid]["ttft_ms_p99"] == row["ttft_ms_p99"] != first[cid]["ttft_ms_p99"], cid


def test_a_missed_ttft_target_says_the_least_reachable_latency_not_batch_1s(tmp_path, capsys):
    """32,000-token prompts on inf2.48xlarge: batch 1 (a replica kept busy) gives a p99 TTFT of about
    19 s (13 s since the refit of 2026-11-29), which the warning called 'at best', yet replicas idle
    between requests reach under half of it. The warning now says the least reachable and its
    instances, in plain notation, and a target just above that value is met at those instances."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
              "intermediate_size": 14336, "max_position_embeddings": 131072, "num_attention_heads": 32,
              "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    (tmp_path / "config.json").write_text(json.dumps(config))

    def run(target: float) -> tuple[str, dict]:
        doc = {"schema_version": 2, "name": "t", "workload": {
            "architecture": {"from_hf_config": "config.json"},
            "serving": {"requests_per_h": 18000, "input_tokens": 32000, "output_tokens": 300, "horizon_h": 1,
                        "p99_ttft_ms": target}},
            "configs": [{"id": "inf2", "instance_type": "inf2.48xlarge", "precision": "bf16"}],
            "baseline": "inf2", "uncertainty": {"draws": 0}}
        path = tmp_path / f"s{target}.yaml"
        path.write_text(yaml.safe_dump(doc))
        assert main(["run", str(path), "-q", "--out", str(tmp_path / f"o{target}")]) == 0
        err = capsys.readouterr().err
        return err, json.loads((tmp_path / f"o{target}" / "results.json").read_text())["rows"][0]

    err, row = run(1000)  # below any replica's reach: a 32,000-token prefill alone takes seconds
    assert row["batch"] == 1 and row["ttft_ms_p99"] > 10000, row  # planned at batch 1, as before
    assert "e+0" not in err and " ms at best" not in err, err
    found = re.search(r"the least reachable, with each replica idle between requests: p99_ttft_ms ([\d,]+) "
                      r"at [\d.]+ requests in flight per replica \(([\d,]+) instances\)", err)
    assert found, err
    least, instances = (int(g.replace(",", "")) for g in found.groups())
    assert least < row["ttft_ms_p99"] / 2 and instances > row["instances"]
    assert found.group(0) in row["layout_choice"]
    _, met = run(least + 1)
    assert met["slo"].endswith(" meets") and met["instances"] == instances, met


def test_a_tensor_degree_over_one_gpu_instances_is_refused_as_serve_point_refuses_it(tmp_path, capsys):
    """``parallelism: {tensor: 3}`` on g6e.xlarge (one GPU) was planned as a replica over three instances
    joined by their 2.5 Gbps network (354 instances, TTFT p99 146 s) while ``serve-point --tensor 3``
    refused it; a replica spans instances only where ``auto`` would span them (several accelerators
    joined by a device link)."""
    g6e = {"id": "g6e", "instance_type": "g6e.xlarge", "precision": "bf16"}
    code, err, _ = _run(tmp_path, capsys, configs=[{**g6e, "parallelism": {"tensor": 3}}])
    assert code == 2 and "Traceback" not in err, err
    assert "configs[0].parallelism.tensor: 3 must divide the 1 rank of g6e.xlarge; allowed: 1" in err, err
    assert main(["serve-point", "llama3-8b", "--instance-type", "g6e.xlarge", "--tensor", "3"]) == 2
    assert "allowed: 1" in capsys.readouterr().err
    code, err, rows = _run(tmp_path, capsys, configs=[{**g6e, "parallelism": {"tensor": 1}}])
    assert code == 0 and rows["g6e"]["tensor_parallel"] == 1, err
    # a multi-accelerator instance still spans: tensor 16 over two p5.48xlarge
    code, err, rows = _run(tmp_path, capsys, configs=[{"id": "p5", "instance_type": "p5.48xlarge",
                                                       "precision": "bf16", "parallelism": {"tensor": 16}}])
    assert code == 0 and rows["p5"]["tensor_parallel"] == 16 and rows["p5"]["instances"] % 2 == 0, err


@pytest.mark.parametrize("instance,args,expect", [
    ("inf2.48xlarge", ["--tensor", "24", "--batch", "4"],
     "one replica on 24 of the instance's 24 NeuronCores (12 chips)"),
    ("trn1.32xlarge", [], "one replica on 1 of the instance's 32 NeuronCores (16 chips)"),
    ("p5.48xlarge", [], "one replica on 1 of the instance's 8 accelerators"),
])
def test_serve_point_header_counts_what_the_tensor_degree_counts(capsys, instance, args, expect):
    """--tensor counts NeuronCores on Neuron instances, yet the header counted chips: 'one replica on
    24 of the instance's 12 accelerators' (inf2.48xlarge)."""
    assert main(["serve-point", "llama3-8b", "--instance-type", instance, *args]) == 0
    assert expect in capsys.readouterr().out.splitlines()[0]


def test_lengths_csv_and_other_mean_lengths_are_refused_and_a_runs_scenario_reads_again(tmp_path, capsys):
    """lengths_csv with input_tokens 2048 / output_tokens 300: the CSV's means (100 / 10) were used,
    silently. The schema says the means come from the file, so other values are bad input; a run's
    scenario.yaml (which holds the file's means beside it) still runs again."""
    (tmp_path / "l.csv").write_text("input_tokens,output_tokens\n100,10\n")
    path = _write(tmp_path, serving={"lengths_csv": "l.csv", "input_tokens": 2048, "output_tokens": 300,
                                     "median_tpot_ms": 100})
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert ("workload.serving.input_tokens: 2048 differs from the mean of lengths_csv l.csv (100); the file "
            "gives the lengths: drop input_tokens and output_tokens, or lengths_csv") in err, err
    assert not (tmp_path / "o").exists()
    path = _write(tmp_path, serving={"lengths_csv": "l.csv", "input_tokens": None, "output_tokens": None,
                                     "median_tpot_ms": 100})
    assert main(["run", str(path), "-q", "--out", str(tmp_path / "o")]) == 0
    again = tmp_path / "o" / "scenario.yaml"
    assert yaml.safe_load(again.read_text())["workload"]["serving"]["input_tokens"] == 100
    assert main(["run", str(again), "-q", "--out", str(tmp_path / "o2")]) == 0, capsys.readouterr().err


CHAT_TARGETS = {"median_ttft_ms": 1000, "median_tpot_ms": 50, "p99_ttft_ms": 3000}


def _g6e(scheduler):
    return [{"id": "g6e", "instance_type": "g6e.xlarge", "precision": "bf16", "scheduler": scheduler}]


def test_a_static_replica_far_below_one_request_in_flight_has_an_idle_replicas_latencies(tmp_path, capsys):
    """Llama 3 8B on g6e.xlarge at 3.6 requests/h (a replica idle between requests): static batches
    reported batch 1's latencies, TTFT p50 2,136 ms and p99 6,028 ms (a replica with one request
    always in flight), where continuous batching gives its own prefill (79 / 110 ms); a request that
    finds the replica idle starts its batch at once (planning/simulate.py's static batcher). With the
    chat targets at 3,600 requests/h the row missed them at 6 instances; it is planned below
    concurrency 1, meeting them."""
    serving = {"requests_per_h": 3.6, "horizon_h": 1}
    code, _, static = _run(tmp_path, capsys, serving=serving, configs=_g6e("static"))
    code2, _, cont = _run(tmp_path, capsys, serving=serving, configs=_g6e("continuous"))
    assert code == code2 == 0
    s, c = static["g6e"], cont["g6e"]
    assert s["ttft_ms_p50"] == pytest.approx(c["ttft_ms_p50"], rel=0.05)  # its own prefill
    assert s["ttft_ms_p99"] <= 1.1 * s["ttft_ms_p50"]  # a prompt finds the replica busy 0.6% of the time
    code, _, rows = _run(tmp_path, capsys, serving={"requests_per_h": 3600, **CHAT_TARGETS},
                         configs=_g6e("static"))
    assert code == 0
    row = rows["g6e"]
    assert "misses" not in row["slo"] and row["batch"] < 1, (row["slo"], row["batch"])


def test_a_disaggregated_plans_ttft_is_its_prefill_pools_at_the_load_it_runs_at(tmp_path, capsys):
    """The prefill pool's TTFT was read at the highest load that meets the targets (0.98 without any),
    not at the load its replicas run at: Llama 3 8B on g6e.xlarge at 3.6 requests/h gave TTFT p50
    1,851 ms and p99 9,523 ms at 0.1% load, and 749 ms at 3,600 requests/h (8% load)."""
    code, _, rows = _run(tmp_path, capsys, serving={"requests_per_h": 3.6}, configs=_g6e("disaggregated"))
    assert code == 0
    idle = rows["g6e"]
    assert idle["ttft_ms_p99"] <= 1.05 * idle["ttft_ms_p50"]  # 1 prompt in 1,000 waits
    code, _, rows = _run(tmp_path, capsys, serving={"requests_per_h": 3600, **CHAT_TARGETS},
                         configs=_g6e("disaggregated"))
    assert code == 0
    light = rows["g6e"]
    assert "prefill replicas at 8% load" in light["layout_choice"], light["layout_choice"]
    # 92% of the prompts find the pool idle: the median is an idle pool's (prefill and transfer)
    assert light["ttft_ms_p50"] == pytest.approx(idle["ttft_ms_p50"], rel=0.01)


@pytest.mark.parametrize(("extra", "field", "says"), [
    # an fp32 cache under bf16 compute was planned with twice the cache's bytes (max_batch 179, not 358)
    ({"kv_cache_precision": "fp32"}, "kv_cache_precision", "fp32 key/value cache under bf16 compute: no "
                                                           "serving engine stores"),
    ({"kv_cache_precision": "tf32"}, "kv_cache_precision", "tf32 is a matmul mode"),
    # fp32 weights under bf16 compute were planned with twice the weight reads (TPOT 22.8 ms, not 12.5)
    ({"weight_precision": "fp32"}, "weight_precision", "fp32 weights under bf16 compute"),
])
def test_weights_or_cache_stored_wider_than_compute_are_refused(tmp_path, capsys, extra, field, says):
    cfg = {"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16", **extra}
    code, err, _ = _run(tmp_path, capsys, configs=[cfg])
    assert code == 2, err
    assert f"configs[0].{field}" in err and says in err, err
    assert "allowed: bf16 (the default), fp8, int8" in err, err


@pytest.mark.parametrize("extra", [{"kv_cache_precision": "fp8"}, {"kv_cache_precision": "int8"},
                                   {"kv_cache_precision": "bf16"}, {"weight_precision": "int8"}])
def test_storage_as_wide_as_compute_or_narrower_is_planned(tmp_path, capsys, extra):
    cfg = {"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16", **extra}
    code, err, _ = _run(tmp_path, capsys, configs=[cfg])
    assert code == 0, err


@pytest.mark.parametrize(("flags", "says"), [
    (["--kv-cache-precision", "fp32"], "--kv-cache-precision fp32 key/value cache under bf16 compute"),
    (["--weight-precision", "tf32"], "--weight-precision tf32 is a matmul mode"),
])
def test_serve_point_refuses_storage_wider_than_compute(capsys, flags, says):
    code = main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--precision", "bf16", *flags])
    err = capsys.readouterr().err
    assert code == 2 and says in err, err


def test_a_prefix_cache_hit_counts_only_the_uncached_tokens_against_the_token_budget(tmp_path, capsys):
    """vLLM's budget is spent on a request's new tokens (num_tokens - num_computed_tokens, its cached
    prefix computed): 6,000-token prompts 90% cached are 600 new tokens, one step under a budget of
    2,048 as under 8,192. The whole prompt was chunked against it (3 steps): TTFT p50 63.4 ms against
    39.3 ms, p99 228 ms against 92 ms."""
    cfg = {"instance_type": "p5.48xlarge", "precision": "bf16"}
    code, err, rows = _run(tmp_path, capsys,
                           serving={"input_tokens": 6000, "output_tokens": 100, "prefix_cache_hit_rate": 0.9},
                           configs=[{"id": "b2k", **cfg, "max_num_batched_tokens": 2048},
                                    {"id": "b8k", **cfg, "max_num_batched_tokens": 8192}])
    assert code == 0, err
    small, large = rows["b2k"], rows["b8k"]
    for col in ("ttft_ms_p50", "ttft_ms_p99"):
        assert small[col] <= 1.05 * large[col], (col, small[col], large[col])
