"""Issue 24's reproducers: hostile or careless files and arguments end in exit 2 with the file, the
field, what is wrong and what is allowed; never exit 3, a hang, unbounded memory or a file's
contents echoed beyond 40 characters."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from ecobench.cli import main
from ecobench.errors import InputError
from ecobench.io.bounded import MAX_SNIPPET_CHARS, load_json, read_bytes, snippet

LLAMA = {"model_type": "llama", "num_attention_heads": 32, "hidden_size": 4096, "intermediate_size": 14336,
         "vocab_size": 128256, "max_position_embeddings": 8192, "num_hidden_layers": 2}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 2, "vocab_size": 50257,
        "n_positions": 1024}
BERT = {"model_type": "bert", "num_attention_heads": 12, "hidden_size": 768, "intermediate_size": 3072,
        "vocab_size": 30522, "max_position_embeddings": 512, "num_hidden_layers": 2}


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return code, err


def _serving(tmp_path: Path, hf: str) -> Path:
    s = {"schema_version": 2, "name": "h",
         "workload": {"architecture": {"from_hf_config": hf},
                      "serving": {"requests_per_h": 1000, "input_tokens": 128, "output_tokens": 16,
                                  "ttft_ms": 1000, "tpot_ms": 100}},
         "configs": [{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16"}], "baseline": "a"}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(s))
    return f


@pytest.mark.parametrize("cfg,expect", [
    ({**LLAMA, "num_hidden_layers": 1_000_000}, "is 1000000; allowed: an integer 1 to 1,000 (nearest"),
    ({**LLAMA, "num_key_value_heads": -1}, "'num_key_value_heads' is -1; allowed: an integer 1 to 1,024"),
    ({**LLAMA, "num_key_value_heads": 0}, "'num_key_value_heads' is 0"),
    ({**LLAMA, "num_key_value_heads": 0.5}, "'num_key_value_heads' is 0.5"),
    ({**LLAMA, "num_key_value_heads": True}, "'num_key_value_heads' is true"),
    ({**BERT, "num_attention_heads": "12"}, "'num_attention_heads' is '12'"),
    ({**GPT2, "n_inner": -5000}, "'n_inner' is -5000; allowed: an integer 1 to 1,048,576 (nearest valid: 1)"),
    ({**LLAMA, "tie_word_embeddings": "yes"}, "'tie_word_embeddings' is 'yes'; allowed: true or false"),
    ({**LLAMA, "hidden_size": 10**400}, "an integer of 401 digits; at most 40"),
    ({**LLAMA, "vocab_size": 1e400}, "too large for a 64-bit float"),
])
def test_hf_config_values_are_bounded(tmp_path, capsys, cfg, expect):
    (tmp_path / "config.json").write_text(json.dumps(cfg).replace("Infinity", "1e400"))
    code, err = _cli(capsys, "run", str(_serving(tmp_path, "config.json")), "-q", "--results",
                     str(tmp_path / "r"))
    assert code == 2 and "from_hf_config" in err and expect in err, err
    code, err = _cli(capsys, "workload", str(tmp_path / "config.json"))
    assert code == 2 and expect in err, err


@pytest.mark.parametrize("value,shown", [
    ("12\\34", "'12\\34'"),  # one backslash in the value: one in the message
    ("12\x0134", "'12\\x0134'"),  # a control character: escaped once
])
def test_a_text_value_is_escaped_once(tmp_path, capsys, value, shown):
    """A backslash in a config.json's text was shown doubled ('12\\\\34'), an escaped control
    character as '\\\\x01': ``snippet`` escaped the control characters and then took ``repr``."""
    (tmp_path / "config.json").write_text(json.dumps({**BERT, "hidden_size": value}))
    for args in (["workload", str(tmp_path / "config.json")],
                 ["run", str(_serving(tmp_path, "config.json")), "-q", "--results", str(tmp_path / "r")]):
        code, err = _cli(capsys, *args)
        assert code == 2 and f"field 'hidden_size' is {shown}; allowed: an integer" in err, err
        assert "\x01" not in err and "\\\\" not in err, err


def test_hf_config_nested_100000_deep_is_bad_input(tmp_path, capsys):
    (tmp_path / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    code, err = _cli(capsys, "workload", str(tmp_path / "config.json"))
    assert code == 2 and "nested too deeply" in err and "at most 16 levels" in err


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo", "dir", "loop"])
def test_special_files_are_refused_before_reading(tmp_path, capsys, special):
    if special == "fifo":
        os.mkfifo(tmp_path / "f.json")
        path = str(tmp_path / "f.json")
    elif special == "dir":
        (tmp_path / "d.json").mkdir()
        path = str(tmp_path / "d.json")
    elif special == "loop":
        os.symlink(tmp_path / "b.json", tmp_path / "a.json")
        os.symlink(tmp_path / "a.json", tmp_path / "b.json")
        path = str(tmp_path / "a.json")
    else:
        path = special
    code, err = _cli(capsys, "run", str(_serving(tmp_path, path)), "-q", "--results", str(tmp_path / "r"))
    assert code == 2 and "from_hf_config" in err, err
    assert any(w in err for w in ("character device", "FIFO", "directory", "symbolic links")), err
    code, err = _cli(capsys, "workload", path)
    assert code == 2


def test_oversized_file_is_refused_naming_the_cap(tmp_path):
    f = tmp_path / "big.json"
    f.write_bytes(b" " * 2_000_000)
    with pytest.raises(InputError, match="2,000,000 bytes; a config.json may be at most 1,048,576 bytes"):
        read_bytes(f, 1 << 20, "config.json")


def test_nul_byte_in_paths_is_bad_input(tmp_path, capsys):
    code, err = _cli(capsys, "run", str(_serving(tmp_path, "a\x00b.json")), "-q")
    assert code == 2 and "NUL byte" in err and "\x00" not in err
    with pytest.raises(InputError, match="NUL byte"):
        read_bytes("a\x00b", 10, "file")


@pytest.fixture
def encoder_scenario():
    return {"schema_version": 2, "name": "h",
            "workload": {"model": "bert-base",
                         "inference": {"rate_per_h": 100000, "seq_len": 128, "batch_size": 1}},
            "configs": [{"id": "a", "instance_type": "g4dn.xlarge", "precision": "fp16"}], "baseline": "a"}


def _run_dict(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict) -> tuple[int, str]:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc))
    return _cli(capsys, "run", str(f), "-q", "--results", str(tmp_path / "r"))


def test_profile_csv_path_cannot_echo_a_secret_file(tmp_path, capsys, encoder_scenario):
    secret = "root:$6$saltsalt$VERYSECRETHASHVALUE1234567890:19000:0:99999:7:::"
    (tmp_path / "shadow").write_text(secret + "\n")
    encoder_scenario["workload"]["inference"]["profile"] = {"csv": "shadow"}
    code, err = _run_dict(tmp_path, capsys, encoder_scenario)
    assert code == 2 and "not a CSV header" in err and "SECRET" not in err and "$6$" not in err


def test_profile_csv_that_is_a_device_is_refused(tmp_path, capsys, encoder_scenario):
    encoder_scenario["workload"]["inference"]["profile"] = {"csv": "/dev/zero"}
    code, err = _run_dict(tmp_path, capsys, encoder_scenario)
    assert code == 2 and "character device" in err


def test_subnormal_profile_rates_in_yaml_are_bad_input(tmp_path, capsys, encoder_scenario):
    encoder_scenario["workload"]["inference"]["profile"] = {"rates_per_h": [1e-320] * 24}
    code, err = _run_dict(tmp_path, capsys, encoder_scenario)
    assert code == 2 and "below 0.001; allowed: 0 (a quiet hour) or 0.001 to 10^12" in err, err


def test_sweep_of_null_is_bad_input(tmp_path, capsys, encoder_scenario):
    encoder_scenario["sweep"] = {"region": [None]}
    code, err = _run_dict(tmp_path, capsys, encoder_scenario)
    assert code == 2 and "sweep.region[0]: null is not a region" in err, err


@pytest.mark.parametrize("model", ["llama3-8b", "bert-base"])
def test_training_at_int8_is_bad_input(tmp_path, capsys, model):
    doc = {"schema_version": 2, "name": "h",
           "workload": {"model": model, "training": {"total_tokens": 1e9, "global_batch_size": 512,
                                                     "phases": [{"seq_len": 128, "fraction": 1.0}]}},
           "configs": [{"id": "a", "instance_type": "p4d.24xlarge", "precision": "int8", "instances": 2}],
           "baseline": "a"}
    code, err = _run_dict(tmp_path, capsys, doc)
    assert code == 2 and "precision 'int8' is not a training data type" in err and "fp8" in err, err


@pytest.mark.parametrize("rule,expect", [
    ("energy_kwh:+5", "needs its % sign (nearest valid: energy_kwh:+5%)"),
    ("energy_kwh:+\uff15%", "the percentage '\uff15' is not a finite number"),  # a full-width digit 5
    ("energy_kwh<\uff11\uff10", "the limit '\uff11\uff10' is not a finite number"),
])
def test_fail_on_rules_are_strict(tmp_path, capsys, rule, expect):
    code, err = _cli(capsys, "check", str(tmp_path), "--baseline", str(tmp_path), "--fail-on", rule)
    assert code == 2 and expect in err, err


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile_run")
    s = {"schema_version": 2, "name": "h",
         "workload": {"model": "bert-base", "inference": {"rate_per_h": 100000, "seq_len": 128,
                                                           "batch_size": 1}},
         "configs": [{"id": "a", "instance_type": "g4dn.xlarge", "precision": "fp16"}], "baseline": "a"}
    (d / "s.yaml").write_text(yaml.safe_dump(s))
    assert main(["run", str(d / "s.yaml"), "-q", "--out", str(d / "run")]) == 0
    return d / "run"


def _tampered(tmp_path, capsys, run_dir, command, field, value):
    """``command`` (compare, report or check) over a copy of ``run_dir``'s results.json whose first row
    has ``field`` set to ``value``: (exit code, stderr, the copy's folder)."""
    doc = json.loads((run_dir / "results.json").read_text())
    doc["rows"][0][field] = value
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text(json.dumps(doc))
    args = {"compare": ["compare", str(run_dir), str(bad)], "report": ["report", str(bad)],
            "check": ["check", str(bad), "--baseline", str(run_dir)]}[command]
    capsys.readouterr()
    return (*_cli(capsys, *args), bad)


@pytest.mark.parametrize("command", ["compare", "report", "check"])
def test_400_digit_integer_in_a_results_file_is_bad_input(tmp_path, capsys, run_dir, command):
    code, err, _ = _tampered(tmp_path, capsys, run_dir, command, "energy_kwh", 10**400)
    assert code == 2 and "an integer of 401 digits; at most 40" in err, err


@pytest.mark.parametrize("command", ["compare", "report", "check"])
@pytest.mark.parametrize("field,value,shown", [("energy_kwh", -1.5, "-1.5"), ("cost_usd", -0.01, "-0.01"),
                                              ("co2_kg", "Infinity", "'Infinity'"), ("co2_kg_low", -2, "-2"),
                                              ("energy_kwh_per_million", True, "True")])
def test_negative_or_non_finite_footprint_in_a_results_file_is_bad_input(tmp_path, capsys, run_dir, command,
                                                                        field, value, shown):
    """A results.json edited by hand: every reader refuses an energy, cost or CO2 figure that is not a
    finite number, 0 or more, naming the file, the row, its configuration and the figure."""
    code, err, bad = _tampered(tmp_path, capsys, run_dir, command, field, value)
    assert code == 2, err
    assert (f"{bad / 'results.json'}: rows[0]: configuration 'a': {field} is {shown}; allowed: a finite "
            "number, 0 or more") in err, err
    assert not (bad / "report.html").exists()


def test_a_null_footprint_figure_is_read(tmp_path, capsys, run_dir):
    """Null is how a results file says a figure is unknown (cost without a price): not refused."""
    code, err, _ = _tampered(tmp_path, capsys, run_dir, "compare", "cost_usd", None)
    assert code == 0, err


def test_results_nested_too_deep_is_bad_input(tmp_path):
    f = tmp_path / "results.json"
    f.write_text(json.dumps({"rows": []})[:-1] + ', "x": ' + "[" * 100 + "]" * 100 + "}")
    with pytest.raises(InputError, match="nested more than 64 levels deep"):
        load_json(f, "results", 1 << 20)


@pytest.mark.parametrize("line,expect", [
    ("POWER_STATUS_VALID,inf,10.0,20.0,15.0", "field timestamp is 'inf'; allowed: Unix seconds 0 to"),
    ("POWER_STATUS_VALID,-5,10.0,20.0,15.0", "field timestamp is '-5'"),
    ("POWER_STATUS_VALID,1e400,10.0,20.0,15.0", "field timestamp is '1e400'"),
    ("SECRET" * 20, "1 fields in 'SECRETSECRET"),
])
def test_neuron_sysfs_values_are_bounded(tmp_path, capsys, line, expect):
    f = tmp_path / "neuron0" / "stats" / "power" / "utilization"
    f.parent.mkdir(parents=True)
    f.write_text(line + "\n")
    code, err = _cli(capsys, "neuron-power", "--sysfs", str(tmp_path), "--max-w", "100")
    assert code == 2 and expect in err, err
    assert err.count("SECRET") <= MAX_SNIPPET_CHARS // len("SECRET") + 1


def test_neuron_sysfs_file_that_is_a_fifo_does_not_block(tmp_path, capsys):
    f = tmp_path / "neuron0" / "stats" / "power" / "utilization"
    f.parent.mkdir(parents=True)
    os.mkfifo(f)
    code, err = _cli(capsys, "neuron-power", "--sysfs", str(tmp_path), "--max-w", "100")
    assert code == 2 and "FIFO" in err


def test_snippet_is_short_and_inert():
    s = snippet("\x1b[31m" + "x" * 100)
    assert "\x1b" not in s and s.endswith("...") and len(s) < MAX_SNIPPET_CHARS + 20


@pytest.mark.skipif(sys.platform != "linux", reason="/proc")
def test_internal_error_message_is_bounded(monkeypatch, capsys):
    import ecobench.hardware.catalog as catalog

    def broken():
        raise RuntimeError("x" * 100_000)

    monkeypatch.setattr(catalog, "load_catalog", broken)
    assert main(["catalog"]) == 3
    assert len(capsys.readouterr().err) < 1000


def test_quiet_run_draws_no_measurement_bar(tmp_path, capsys):
    """Issue 24: -q still printed the measurement progress bar."""
    pytest.importorskip("torch")
    from tests.integration.test_emissions_csv import _tiny

    assert main(["run", str(_tiny(tmp_path)), "-q", "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert not [ln for ln in err.splitlines() if ln.lstrip("\r").startswith("  measuring ")], err


def test_workload_summary_escapes_a_hostile_folder_name(tmp_path, capsys):
    d = tmp_path / "evil\x1b]0;pwned\x07"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(BERT))
    assert main(["workload", str(d)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b" in out


def test_relative_symlink_loops_are_bad_input(tmp_path, capsys, encoder_scenario):
    """A relative path is resolved against the scenario's folder: a loop there is bad input too."""
    os.symlink("b.json", tmp_path / "a.json")
    os.symlink("a.json", tmp_path / "b.json")
    code, err = _cli(capsys, "run", str(_serving(tmp_path, "a.json")), "-q", "--results", str(tmp_path / "r"))
    assert code == 2 and "from_hf_config" in err and "symlink loop" in err, err
    encoder_scenario["workload"]["inference"]["profile"] = {"csv": "a.json"}
    code, err = _run_dict(tmp_path, capsys, encoder_scenario)
    assert code == 2 and "profile.csv" in err and "symlink loop" in err, err
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    code, err = _cli(capsys, "run", str(tmp_path / "s.yaml"), "-q", "--results", str(tmp_path / "loop1"))
    assert code == 2 and "symlink loop" in err, err


@pytest.mark.parametrize("key", ["type_vocab_size", "tie_word_embeddings", "num_key_value_heads", "n_inner"])
def test_null_optional_hf_values_take_their_defaults(tmp_path, capsys, key):
    """Found by benchmarks/fuzz_inputs.py: `type_vocab_size: null` was an internal error."""
    base = GPT2 if key == "n_inner" else LLAMA if key == "num_key_value_heads" else BERT
    (tmp_path / "config.json").write_text(json.dumps({**base, key: None}))
    code, err = _cli(capsys, "workload", str(tmp_path / "config.json"))
    assert code == 0, err


def test_compare_with_a_git_record_that_is_not_a_mapping_shows_it(tmp_path, capsys, run_dir):
    """Found by benchmarks/fuzz_inputs.py after the merges: `git: 5` in a results file was exit 3."""
    doc = json.loads((run_dir / "results.json").read_text())
    doc["git"] = 5
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text(json.dumps(doc))
    capsys.readouterr()
    code, out = _cli(capsys, "compare", str(run_dir), str(other))
    assert code == 0, out
