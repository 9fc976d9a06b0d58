"""Scenario input bounds: every number finite and in its documented range; strict, capped YAML.

Each case here was a crash (traceback), a hang or a silent acceptance before the bounds existed.
"""

import os
import subprocess
import sys

import pytest
import yaml

from ecobench.bounds import RANGES
from ecobench.cli import main
from ecobench.io.yamlio import MAX_YAML_BYTES
from tests.conftest import ROOT


def _write(tmp_path, data, name="s.yaml"):
    f = tmp_path / name
    f.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return f


def _rejected(tmp_path, capsys, data, *expect):
    f = _write(tmp_path, data)
    code = main(["run", str(f), "-q", "--results", str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and str(f) in err
    for e in expect:
        assert e in err, err
    assert not (tmp_path / "res").exists()
    return err


def _set(d, path, value):
    *head, last = path
    for k in head:
        d = d[k]
    d[last] = value


TRAINING = {"schema_version": 1, "name": "t",
            "workload": {"architecture": {"layers": 2, "hidden_size": 64, "heads": 2,
                                          "intermediate_size": 256},
                         "training": {"total_sequences": 1000, "phases": [{"seq_len": 64, "fraction": 1}]}},
            "configs": [{"id": "a", "instance_type": "trn1.2xlarge", "precision": "bf16", "instances": 1}],
            "baseline": "a"}

INFERENCE_FIELDS = [("workload", "inference", "rate_per_h"), ("workload", "inference", "horizon_h"),
                    ("workload", "inference", "max_utilization"), ("pue",),
                    ("configs", 0, "price_usd_per_h"), ("configs", 0, "measured_throughput_per_s"),
                    ("configs", 0, "host_cpu_utilization"), ("measurement", "warmup_s"),
                    ("measurement", "min_window_s"), ("measurement", "gemm_s")]
ZERO_ALLOWED = {"warmup_s", "gemm_s"}


EXTREMES = [float("inf"), float("-inf"), float("nan"), 1e308, 5e-324, -1.0]
# 0 is in range for these two, and a denormal is as harmless as 0
CASES = [(p, v) for p in INFERENCE_FIELDS for v in EXTREMES if not (v == 5e-324 and p[-1] in ZERO_ALLOWED)]


@pytest.mark.parametrize("path,value", CASES, ids=[f"{p[-1]}={v!r}" for p, v in CASES])
def test_non_finite_and_out_of_range_floats_are_bad_input(tmp_path, capsys, scenario_dict, path, value):
    scenario_dict.setdefault("measurement", {})
    _set(scenario_dict, path, value)
    field = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path).replace(".[", "[")
    _rejected(tmp_path, capsys, scenario_dict, field)


@pytest.mark.parametrize("path,value", [
    (("workload", "architecture", "layers"), 10_000_000),
    (("workload", "architecture", "hidden_size"), 10**9),
    (("workload", "training", "total_sequences"), 1e308),
    (("workload", "training", "total_sequences"), float("inf")),
    (("workload", "training", "phases", 0, "fraction"), 5e-324),
    (("configs", 0, "instances"), 10**12),
])
def test_training_fields_out_of_range(tmp_path, capsys, path, value):
    s = yaml.safe_load(yaml.safe_dump(TRAINING))
    _set(s, path, value)
    _rejected(tmp_path, capsys, s, path[-1])


@pytest.mark.parametrize("task", [None, "pretrain"])
def test_num_labels_without_a_classification_task_is_bad_input(tmp_path, capsys, task):
    """trial18: num_labels 4 with task pretrain (or no task) ran the pretrain head, the labels
    silently dropped; 2, the default a resolved scenario.yaml repeats, still passes."""
    s = yaml.safe_load(yaml.safe_dump(TRAINING))
    s["workload"]["training"] |= {"num_labels": 4} | ({"task": task} if task else {})
    _rejected(tmp_path, capsys, s, "workload.training: num_labels 4 counts only for task classification "
                                   "(the task is pretrain); allowed: task: classification, or no num_labels")
    s["workload"]["training"]["num_labels"] = 2
    assert main(["run", str(_write(tmp_path, s)), "-q", "--out", str(tmp_path / "ok")]) == 0


@pytest.mark.parametrize("field,value", [("device", "cuda"), ("layers", 2)])
@pytest.mark.parametrize("backend", ["analytic", "emulated"])
def test_a_reference_option_on_a_modelled_backend_is_bad_input(tmp_path, capsys, field, value, backend):
    """trial18: device: cuda and layers: 2 on an analytic or emulated configuration ran unchanged (exit
    0), the option silently dropped: only the reference backend measures."""
    s = yaml.safe_load(yaml.safe_dump(TRAINING))
    s["configs"][0] |= {field: value, "backend": backend}
    _rejected(tmp_path, capsys, s, f"configuration 'a': {field} applies to the reference backend (backend: "
                                   f"reference, which measures on this host); remove it")
    s["configs"][0]["device"] = "auto"  # the default a resolved scenario.yaml repeats still passes
    s["configs"][0].pop("layers", None)
    assert main(["run", str(_write(tmp_path, s)), "-q", "--out", str(tmp_path / "ok")]) == 0


def test_a_measurement_block_without_a_reference_configuration_is_bad_input(tmp_path, capsys):
    """trial18: measurement: {warmup_s: 5} beside analytic configurations ran unchanged (exit 0), the
    block silently dropped: it sets how the reference backend measures."""
    s = yaml.safe_load(yaml.safe_dump(TRAINING))
    s["measurement"] = {"warmup_s": 5}
    _rejected(tmp_path, capsys, s, "measurement: applies to configurations with backend: reference (none "
                                   "here); remove it")
    s["measurement"] = {"warmup_s": 3.0}  # the default a resolved scenario.yaml repeats still passes
    assert main(["run", str(_write(tmp_path, s)), "-q", "--out", str(tmp_path / "ok")]) == 0


@pytest.mark.parametrize("pricing,expect", [
    ({"spot_discount_pct": 70}, "pricing.spot_discount_pct: applies to spot pricing, and no configuration "
                                "here is on spot; allowed: pricing.model: spot (or a configuration's "
                                "pricing: spot), or remove it"),
    ({"model": "on_demand", "spot_interruption_pct_per_month": 10},
     "pricing.spot_interruption_pct_per_month: applies to spot pricing"),
    ({"model": "spot", "spot_discount_pct": 50, "checkpoint_interval_h": 2},
     "pricing.checkpoint_interval_h: applies to spot training (a training job loses the work since its last "
     "checkpoint); this scenario is inference; remove it"),
])
def test_spot_terms_that_cannot_apply_are_bad_input(tmp_path, capsys, scenario_dict, pricing, expect):
    """trial18: pricing: {model: on_demand, spot_discount_pct: 70} priced every row on demand (exit 0),
    the discount silently dropped; so were the checkpoint terms of an inference scenario on spot."""
    scenario_dict["pricing"] = pricing
    _rejected(tmp_path, capsys, scenario_dict, expect)


def test_spot_terms_stand_when_one_configuration_is_on_spot(tmp_path, capsys, scenario_dict):
    scenario_dict["pricing"] = {"spot_discount_pct": 70}
    scenario_dict["configs"][0]["pricing"] = "spot"
    assert main(["run", str(_write(tmp_path, scenario_dict)), "-q", "--out", str(tmp_path / "ok")]) == 0


SERVING = yaml.safe_load((ROOT / "scenarios" / "llama3_8b_chat.yaml").read_text())


@pytest.mark.parametrize("base,path,value,expect", [
    (SERVING, ("workload", "serving", "input_tokens"), True,
     "workload.serving.input_tokens: true, a boolean, not a number; allowed: an integer from 1 to "
     "16,777,216"),
    (SERVING, ("workload", "serving", "output_tokens"), False,
     "workload.serving.output_tokens: false, a boolean, not a number; allowed: an integer"),
    (SERVING, ("workload", "serving", "requests_per_h"), True,
     "workload.serving.requests_per_h: true, a boolean, not a number; allowed: a number from 0.001"),
    (SERVING, ("configs", 0, "max_batch"), True, "configs[0].max_batch: true, a boolean, not a number; "
                                                 "allowed: an integer from 1 to 1,048,576 or 'auto'"),
    (SERVING, ("workload", "serving", "profile"), {"multipliers": [1] * 23 + [True]},
     "workload.serving.profile.multipliers: [23] is true, a boolean"),
    (SERVING, ("sweep",), {"max_num_batched_tokens": [2048, True]},
     "sweep.max_num_batched_tokens[1]: true, a boolean, not a number"),
    (TRAINING, ("configs", 0, "batch_size"), True, "configs[0].batch_size: true, a boolean, not a number"),
    (TRAINING, ("configs", 0, "parallelism"), {"zero": True},
     "configs[0].parallelism.zero: true, a boolean, not a number; allowed: one of 0, 1, 2, 3"),
    (TRAINING, ("schema_version",), True,
     "schema_version: true, a boolean, not a number; allowed: one of 1, 2"),
    (TRAINING, ("pue",), False, "pue: false, a boolean, not a number; allowed: a number from 1 to 3"),
    (TRAINING, ("overrides",), {"grid_g_per_kwh": {"us-east-1": True}},
     "overrides.grid_g_per_kwh: [us-east-1] is true, a boolean"),
])
def test_a_boolean_is_not_a_number(tmp_path, capsys, base, path, value, expect):
    """Pydantic's lax mode read YAML's true/false as 1/0 wherever a number goes."""
    s = yaml.safe_load(yaml.safe_dump(base))
    _set(s, path, value)
    _rejected(tmp_path, capsys, s, expect)


@pytest.mark.parametrize("base,path,value,expect", [
    (SERVING, ("workload", "serving", "profile"), {"rates_per_h": [-1, -2] + [1] * 22},
     "workload.serving.profile.rates_per_h[0]: -1 is out of range; allowed: a number from 0 to 10^12"),
    (SERVING, ("workload", "serving", "profile"), {"multipliers": [1] * 23 + [1500.5]},
     "workload.serving.profile.multipliers[23]: 1500.5 is out of range; allowed: a number from 0 to 1,000"),
    (TRAINING, ("overrides",), {"grid_g_per_kwh": {"us-east-1": 400, "eu-west-1": 5000}},
     "overrides.grid_g_per_kwh.eu-west-1: 5000 is out of range; allowed: a number from 0.1 to 2,000"),
])
def test_an_item_out_of_range_names_the_item_and_the_range(tmp_path, capsys, base, path, value, expect):
    """A list's or mapping's number out of range said pydantic's 'Input should be greater than or equal
    to 0' (the bound crossed only), one line per item; now the item, its value and the whole range, as
    a plain field's, in one line."""
    s = yaml.safe_load(yaml.safe_dump(base))
    _set(s, path, value)
    err = _rejected(tmp_path, capsys, s, expect)
    assert "Input should be" not in err and err.count("\n") == 2, err  # the file's line and this one


@pytest.mark.parametrize("base,path,value,expect", [
    (SERVING, ("workload", "serving", "requests_per_h"), "1M",
     "workload.serving.requests_per_h: '1M' is not a number; allowed: a number from 0.001 to 10^12, in plain "
     "digits (1000000 or 1e6 for a million"),
    (SERVING, ("workload", "serving", "input_tokens"), "1,024",
     "workload.serving.input_tokens: '1,024' is not a number; allowed: an integer from 1 to 16,777,216"),
    (TRAINING, ("pue",), "1.2x", "pue: '1.2x' is not a number; allowed: a number from 1 to 3"),
])
def test_text_that_is_no_number_says_what_is_allowed(tmp_path, capsys, base, path, value, expect):
    """A unit or suffix where a number goes gave pydantic's 'unable to parse string as a number',
    naming neither the value nor what is allowed."""
    s = yaml.safe_load(yaml.safe_dump(base))
    _set(s, path, value)
    _rejected(tmp_path, capsys, s, expect)


def test_a_whole_number_in_exponent_form_is_an_integer_and_a_fraction_is_refused(tmp_path, capsys):
    """trial: YAML leaves ``input_tokens: 1e3`` as text, which an integer field refused as "'1e3' is text,
    not a number; allowed: an integer, unquoted" (it was unquoted); serve-point reads it alike."""
    from ecobench.scenario.load import scenario_from_dict

    s = yaml.safe_load(yaml.safe_dump(SERVING))
    _set(s, ("workload", "serving", "input_tokens"), "1e3")
    _set(s, ("workload", "serving", "output_tokens"), "2.56e2")
    w = scenario_from_dict(s, "s.yaml", ROOT / "scenarios").workload.serving
    assert (w.input_tokens, w.output_tokens) == (1000, 256) and type(w.input_tokens) is int
    _set(s, ("workload", "serving", "input_tokens"), "1.5e0")
    _rejected(tmp_path, capsys, s, "workload.serving.input_tokens: 1.5e0 is not a whole number; allowed: an "
                                   "integer from 1 to 16,777,216")


def test_an_integer_or_auto_field_reads_an_exponent_form_whole_number_like_an_integer_field(tmp_path, capsys):
    """review: ``max_batch: 6.4e1`` (an integer or 'auto') was refused as 'unable to parse string as an
    integer' while ``input_tokens: 1e3`` reads as 1000; now it reads as 64, and a fraction or a number
    out of range says the field's whole range."""
    from ecobench.scenario.load import scenario_from_dict

    s = yaml.safe_load(yaml.safe_dump(SERVING))
    _set(s, ("configs", 0, "max_batch"), "6.4e1")
    c = scenario_from_dict(s, "s.yaml", ROOT / "scenarios").configs[0]
    assert c.max_batch == 64 and type(c.max_batch) is int
    allowed = "allowed: an integer from 1 to 1,048,576 or 'auto'"
    _set(s, ("configs", 0, "max_batch"), "6.45e1")
    _rejected(tmp_path, capsys, s, f"configs[0].max_batch: 6.45e1 is not a whole number; {allowed}")
    _set(s, ("configs", 0, "max_batch"), 0)
    (tmp_path / "zero").mkdir()
    _rejected(tmp_path / "zero", capsys, s, f"configs[0].max_batch: 0 is out of range; {allowed}")


@pytest.mark.parametrize("path,value", [(("workload", "serving", "requests_per_h"), "36000"),
                                        (("configs", 0, "max_batch"), "auto")])
def test_a_number_in_quotes_and_a_named_choice_still_pass(path, value):
    """Quoted digits stay a number (pydantic's lax reading), and a field's string choice stays allowed."""
    from ecobench.scenario.load import scenario_from_dict

    s = yaml.safe_load(yaml.safe_dump(SERVING))
    _set(s, path, value)
    scenario_from_dict(s, "s.yaml", ROOT / "scenarios")


def test_yaml_infinity_literal_is_bad_input(tmp_path, capsys, scenario_dict):
    text = yaml.safe_dump(scenario_dict).replace("rate_per_h: 100000", "rate_per_h: .inf")
    assert ".inf" in text
    _rejected(tmp_path, capsys, text, "workload.inference.rate_per_h", "finite")


def test_warmup_infinity_is_bad_input_not_a_hang(tmp_path, capsys, scenario_dict):
    scenario_dict["measurement"] = {"warmup_s": float("inf")}
    _rejected(tmp_path, capsys, scenario_dict, "measurement.warmup_s")


def test_idle_power_above_max_is_bad_input(tmp_path, capsys, scenario_dict):
    scenario_dict["overrides"] = {"accelerator_power_w": {"inferentia": {"idle_w": 90, "max_w": 50}}}
    _rejected(tmp_path, capsys, scenario_dict, "idle_w (90) must not exceed max_w (50)")


@pytest.mark.parametrize("other", ["region", "schema"])
def test_every_misspelt_chip_of_accelerator_power_w_is_named_in_one_run(tmp_path, capsys, scenario_dict,
                                                                         other):
    """Each misspelt key with its nearest names, whatever else is wrong (a misspelt region was named
    first and alone; a schema error alone): one run names them all."""
    inferentai = {"idle_w": 90, "max_w": 50} if other == "schema" else {"idle_w": 10, "max_w": 50}
    scenario_dict["overrides"] = {"accelerator_power_w": {"inferentai": inferentai,
                                                          "t44": {"idle_w": 10, "max_w": 70}}}
    if other == "region":
        scenario_dict["region"] = "us-east1"
    _rejected(tmp_path, capsys, scenario_dict, "invalid scenario",
              "overrides.accelerator_power_w.inferentai: unknown accelerator 'inferentai'; did you "
              "mean 'inferentia', 'inferentia2'?",
              "overrides.accelerator_power_w.t44: unknown accelerator 't44'; did you mean 't4'",
              "region: unknown region 'us-east1'; did you mean 'us-east-1'" if other == "region"
              else "overrides.accelerator_power_w.inferentai: idle_w (90) must not exceed max_w (50)")


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "../escape", "a/b", "-rf", "x" * 101, "x" * 300])
def test_name_cannot_leave_results_or_be_too_long(tmp_path, capsys, scenario_dict, name):
    scenario_dict["name"] = name
    _rejected(tmp_path, capsys, scenario_dict, "name")
    assert list(tmp_path.iterdir()) == [tmp_path / "s.yaml"]


def test_duplicate_key_is_bad_input(tmp_path, capsys, scenario_dict):
    text = yaml.safe_dump(scenario_dict, sort_keys=False) + "baseline: a\n"
    _rejected(tmp_path, capsys, text, "duplicate key 'baseline'")


def test_deep_nesting_is_bad_input(tmp_path, capsys):
    _rejected(tmp_path, capsys, "a: " + "[" * 500 + "]" * 500 + "\n", "nested more than")


def test_alias_bomb_is_bad_input(tmp_path, capsys):
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, cur in zip("abcde", "bcdef", strict=True):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 10) + "]")
    _rejected(tmp_path, capsys, "\n".join(lines) + "\n", "once aliases are expanded")


def test_oversized_file_is_bad_input(tmp_path, capsys, scenario_dict):
    text = yaml.safe_dump(scenario_dict) + "#" * MAX_YAML_BYTES + "\n"
    _rejected(tmp_path, capsys, text, "may be at most")


def test_not_utf8_is_bad_input(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_bytes(b"name: \xff\xfe\n")
    assert main(["run", str(f)]) == 2
    assert "UTF-8" in capsys.readouterr().err


def test_python_tags_are_refused(tmp_path, capsys):
    _rejected(tmp_path, capsys, "!!python/object/apply:os.system ['true']\n", "invalid YAML")


def test_directory_is_bad_input(tmp_path, capsys):
    assert main(["run", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "ecobench", "run", str(fifo)], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "FIFO" in proc.stderr and "Traceback" not in proc.stderr


def test_every_range_is_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for r in RANGES:
        assert f"| {r.what} | {r.low} | {r.high} | {r.unit} |" in readme, r


@pytest.mark.parametrize("path,text,expect", [
    (("workload", "inference", "rate_per_h"), "1e300",
     "workload.inference.rate_per_h: 1e300 is out of range; allowed: a number from 0.001 to 10^12"),
    (("workload", "inference", "rate_per_h"), ".inf",
     "workload.inference.rate_per_h: inf is not a finite number; allowed: a number from 0.001 to 10^12"),
    (("workload", "inference", "horizon_h"), "1e-9",
     "workload.inference.horizon_h: 1e-9 is out of range; allowed: a number from 0.001 to 87,660"),
    (("name",), "12345", "name: 12345 is a number, not text; allowed: text (quote it: name: '12345')"),
    # a preset's name: quoting a number named no preset ('unknown preset' next); the presets are listed
    (("workload", "model"), "7", "workload.model: 7 is a number, not a model preset; allowed: bert-base, "
     "bert-large, deepseek-v2"),
    (("configs", 0, "speculative"), "{method: draft, draft_model: 8}", "configs[0].speculative.draft_model: "
     "8 is a number, not a model preset; allowed: bert-base, "),
    # YAML 1.1 reads an unquoted no / on as a boolean: this said "False is a number, not text; ... (quote
    # it: region: 'False')", neither what the value is nor what was written
    (("region",), "no", "region: false, a boolean (YAML reads unquoted no, off and false as false), "
     "not text; allowed: text (quote the value as written: region: '...')"),
    (("configs", 0, "precision"), "on", "configs[0].precision: true, a boolean (YAML reads unquoted yes, on "
     "and true as true), not one of the names; allowed: 'fp32', 'tf32', 'bf16', 'fp16', 'fp8' or 'int8'"),
])
def test_schema_errors_say_the_value_and_what_is_allowed(tmp_path, capsys, scenario_dict, path, text, expect):
    """YAML reads 1e300 and 1e-9 (no dot) as text, which passed the range check to pydantic's 'Input
    should be less than or equal to 1000000000000'; .inf gave 'Input should be a finite number', and
    a number for a name 'Input should be a valid string'. Each now says the value and what is allowed."""
    _set(scenario_dict, path, "@@")
    text_yaml = yaml.safe_dump(scenario_dict, sort_keys=False).replace("'@@'", text)
    err = _rejected(tmp_path, capsys, text_yaml, expect)
    assert "Input should" not in err, err


def test_a_missing_field_says_which_and_what_it_is(tmp_path, capsys, scenario_dict):
    """'rate_per_h: Field required' named neither what the field is nor that it must be given."""
    del scenario_dict["workload"]["inference"]["rate_per_h"]
    err = _rejected(tmp_path, capsys, scenario_dict, "workload.inference.rate_per_h: missing; this field is "
                    "required (")
    assert "Field required" not in err, err


def test_a_list_item_written_as_text_is_range_checked(tmp_path, capsys):
    s = yaml.safe_load(yaml.safe_dump(SERVING))
    s["workload"]["serving"]["profile"] = {"rates_per_h": ["@@"] + [1] * 23}
    text = yaml.safe_dump(s, sort_keys=False).replace("'@@'", "1e300")
    _rejected(tmp_path, capsys, text, "workload.serving.profile.rates_per_h[0]: 1e300 is out of range; "
              "allowed: a number from 0 to 10^12")


def _realtime(**inference):
    s = yaml.safe_load((ROOT / "scenarios" / "layoutlm_realtime.yaml").read_text())
    s["workload"]["inference"].update(inference)
    return s


def _largest(err: str) -> int:
    return int(err.split("allowed: at most ")[1].split(" ")[0])


def test_an_inference_batch_beyond_device_memory_is_bad_input(tmp_path, capsys):
    """trial15 L4: batch 100,000 of 512-token pages ran with exit 0, though its activations (tens of
    GB) fit neither a 16 GB T4 nor an Inferentia NeuronCore. It names the field, what the batch needs
    and the device has, and the largest batch that fits."""
    err = _rejected(tmp_path, capsys, _realtime(batch_size=100000),
                    "workload.inference.batch_size: 100000 sequences of 512 tokens need ",
                    "GiB per NeuronCore on inf1.2xlarge (configs[inf1], bf16", "which has 2.00 GiB",
                    "(the largest batch that fits)")
    need = float(err.split(" need ")[1].split(" GiB")[0].replace(",", ""))
    assert need > 100  # 100,000 x 512 tokens x 768 x 2 bytes alone is 73 GiB
    largest = _largest(err)
    assert 1 <= largest < 100000
    # the largest batch it names runs; one more is refused with the same figure
    f = _write(tmp_path, _realtime(batch_size=largest), "ok.yaml")
    assert main(["run", str(f), "-q", "--results", str(tmp_path / "ok")]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert _largest(_rejected(tmp_path, capsys, _realtime(batch_size=largest + 1))) == largest


def test_a_configurations_own_batch_beyond_device_memory_names_its_field(tmp_path, capsys):
    s = _realtime()
    s["configs"][1]["batch_size"] = 5000  # the T4 (fp32, 16 GB)
    _rejected(tmp_path, capsys, s, "configs[gpu].batch_size: 5000 sequences of 512 tokens need ",
              "GiB per device on g4dn.2xlarge (fp32", "allowed: at most ")
