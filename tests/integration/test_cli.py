"""End-to-end CLI behaviour: the main job, and every kind of bad input (exit 2, clear message)."""

import json
import re
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from ecobench.cli import main
from ecobench.reports.tables import CORE_COLUMNS, INFERENCE_COLUMNS
from tests.conftest import SCENARIOS, exit_code


def _run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "ecobench", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_run_layoutlm_writes_complete_run_dir(tmp_path):
    proc = _run_cli("run", str(SCENARIOS / "layoutlm_realtime.yaml"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "results" / "layoutlm_realtime").iterdir()
    assert {p.name for p in run_dir.iterdir()} == {"scenario.yaml", "results.csv", "results.json",
                                                   "report.html"}
    df = pd.read_csv(run_dir / "results.csv")
    assert list(df.columns[: len(CORE_COLUMNS)]) == CORE_COLUMNS
    assert set(INFERENCE_COLUMNS) <= set(df.columns)
    doc = json.loads((run_dir / "results.json").read_text())
    assert doc["schema_version"] == 1 and doc["ecobench_version"] and doc["machine"]["python"]
    assert "inf1" in proc.stdout and "energy_change_pct" in proc.stdout
    base = df.set_index("config_id").loc["gpu"]
    assert base.energy_change_pct == 0 and base.provenance == "estimated"


def test_second_run_never_overwrites(tmp_path):
    for _ in range(2):
        assert main(["run", str(SCENARIOS / "bert_large_pretrain.yaml"), "-q",
                     "--results", str(tmp_path)]) == 0
    assert len(list((tmp_path / "bert_large_pretrain").iterdir())) == 2


def test_out_must_not_exist(tmp_path, capsys):
    out = tmp_path / "exists"
    out.mkdir()
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err
    # what is allowed instead: a new directory, or the default under --results
    assert "(name a new directory, or omit --out to write results/layoutlm_realtime/<run-id>/)" in err, err
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out",
                 str(tmp_path / "new")]) == 0
    assert (tmp_path / "new" / "report.html").exists()


def test_interrupt_mid_write_leaves_nothing(tmp_path, monkeypatch, capsys):
    import ecobench.runner as run_mod

    def boom(doc, path):
        path.write_text("partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(run_mod, "write_html", boom)
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "--results", str(tmp_path)]) == 130
    assert list(tmp_path.iterdir()) == []  # not even the layoutlm_realtime/ folder the run made
    assert "nothing was written" in capsys.readouterr().err


def _bad(tmp_path, capsys, text, *expect):
    f = tmp_path / "s.yaml"
    f.write_text(text if isinstance(text, str) else yaml.safe_dump(text))
    code = main(["run", str(f), "--results", str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert code == 2
    assert str(f) in err and "Traceback" not in err
    for e in expect:
        assert e in err, err
    assert not (tmp_path / "res").exists()
    return err


def test_missing_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "no such scenario file" in capsys.readouterr().err


def test_missing_example_path_says_how_to_get_it(tmp_path, capsys, monkeypatch):
    # the README's `ecobench run scenarios/layoutlm_realtime.yaml`, run outside a checkout
    monkeypatch.chdir(tmp_path)
    assert main(["run", "scenarios/layoutlm_realtime.yaml"]) == 2
    err = capsys.readouterr().err
    assert "scenarios/layoutlm_realtime.yaml: no such scenario file; layoutlm_realtime is a packaged " \
           "example: `ecobench examples layoutlm_realtime --to .`" in err, err
    assert main(["run", "scenarios/not_an_example.yaml"]) == 2  # no hint for a name that is no example
    assert capsys.readouterr().err.rstrip().endswith("no such scenario file")


def test_invalid_yaml(tmp_path, capsys):
    _bad(tmp_path, capsys, "name: [unclosed\n", "invalid YAML")


@pytest.mark.parametrize("text,expect", [
    ("name: [unclosed\n", "invalid YAML at line 2, column 1: did not find expected ',' or ']' "
                          "(while parsing a flow sequence at line 1, column 7)"),
    ("a: 1\na: 2\n", "invalid YAML at line 2, column 1: found duplicate key 'a' (first at line 1)"),
    ("a: \x01\n", "invalid YAML at character 4: character #x0001: control characters are not allowed"),
    ("a:\n\tb: 1\n", "invalid YAML at line 2, column 1: found character that cannot start any token (while "
                     "scanning for the next token at line 2, column 1); it is a tab: YAML indents with "
                     "spaces only")])
def test_invalid_yaml_is_one_line_with_its_line_and_column(tmp_path, capsys, text, expect):
    # PyYAML's message spanned four lines and named the file "<unicode string>"
    err = _bad(tmp_path, capsys, text, expect)
    assert err.count("\n") == 1 and "<unicode string>" not in err


@pytest.mark.parametrize("text,got", [("", "got an empty file"), ("# only a comment\n", "got an empty file"),
                                      ("[a, b]\n", "got a list"), ("3\n", "got a single int value")])
def test_a_file_that_is_not_a_mapping_says_what_it_holds(tmp_path, capsys, text, got):
    err = _bad(tmp_path, capsys, text, "a scenario is a mapping of fields (schema_version, name,", got)
    assert "NoneType" not in err


def test_a_results_baseline_or_points_file_given_as_the_scenario_says_what_it_is(tmp_path, capsys):
    """Each was validated as a scenario: every scenario field missing and every one of its own unknown,
    a screenful that never said what the file was."""
    run = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(run)]) == 0
    assert main(["baseline", str(run), "--to", str(tmp_path / "b.json")]) == 0
    points = tmp_path / "points.yaml"
    points.write_text("sources: {}\npoints: []\n")
    capsys.readouterr()
    cases = ((run / "results.json", "a run's results.json, not a scenario; its scenario is scenario.yaml "
              "beside it"),
             (tmp_path / "b.json", "a baseline file, not a scenario; give it to `ecobench check RUN_DIR "
              "--baseline`"),
             (points, "a measured-power points file, not a scenario; give it to `ecobench calibrate`"))
    for f, words in cases:
        assert main(["run", str(f)]) == 2
        err = capsys.readouterr().err
        assert f"{f}: {words}" in err and err.count("\n") == 1, err


def test_unknown_field(tmp_path, capsys, scenario_dict):
    scenario_dict["workload"]["inference"]["rate_per_hr"] = 5
    _bad(tmp_path, capsys, scenario_dict, "workload.inference.rate_per_hr: unknown field")


def test_unknown_field_names_the_nearest_and_the_fields_allowed_there(tmp_path, capsys, scenario_dict):
    scenario_dict["workload"]["inference"]["rate_per_hr"] = 5
    scenario_dict["configs"][0]["parallelism"] = {"tensr": 1}
    scenario_dict["baslne"] = "x"
    _bad(tmp_path, capsys, scenario_dict,
         "workload.inference.rate_per_hr: unknown field; did you mean 'rate_per_h'? "
         "(allowed here: rate_per_h, horizon_h, seq_len,",
         "configs[0].parallelism.tensr: unknown field; did you mean 'tensor'? "
         "(allowed here: tensor, pipeline,",
         "baslne: unknown field; did you mean 'baseline'? (allowed here: schema_version, name,")



def test_a_misspelt_required_field_is_said_once(tmp_path, capsys, scenario_dict):
    """rate_per_hr for rate_per_h: the unknown field's suggestion explains the missing field, so
    'rate_per_h: missing; this field is required' is not said too; a missing field nothing explains
    still is."""
    scenario_dict["workload"]["inference"]["rate_per_hr"] = scenario_dict["workload"]["inference"].pop(
        "rate_per_h")
    err = _bad(tmp_path, capsys, scenario_dict,
               "workload.inference.rate_per_hr: unknown field; did you mean 'rate_per_h'?")
    assert "this field is required" not in err and err.count("\n") == 2, err  # the file's line and this one
    del scenario_dict["workload"]["inference"]["rate_per_hr"]
    scenario_dict["workload"]["inference"]["colour"] = "red"  # unknown, and no misspelling of rate_per_h
    _bad(tmp_path, capsys, scenario_dict, "workload.inference.rate_per_h: missing; this field is required",
         "workload.inference.colour: unknown field (allowed here:")
    scenario_dict["configs"][0]["instanc_type"] = scenario_dict["configs"][1].pop("instance_type")
    _bad(tmp_path, capsys, scenario_dict, "configs[1].instance_type: missing; this field is required",
         "configs[0].instanc_type: unknown field; did you mean 'instance_type', 'instances'?")

def test_wrong_type(tmp_path, capsys, scenario_dict):
    scenario_dict["workload"]["inference"]["seq_len"] = "long"
    _bad(tmp_path, capsys, scenario_dict, "workload.inference.seq_len", "integer")


@pytest.mark.parametrize("field,value,allowed", [
    ("rate_per_h", 0, "a number from 0.001 to 10^12"), ("seq_len", -128, "an integer from 1 to 16,777,216"),
    ("horizon_h", -1, "a number from 0.001 to 87,660"), ("batch_size", 0, "an integer from 1 to")])
def test_zero_or_negative(tmp_path, capsys, scenario_dict, field, value, allowed):
    """The message gives the value and the field's whole range, not only the bound it crossed."""
    scenario_dict["workload"]["inference"][field] = value
    _bad(tmp_path, capsys, scenario_dict, f"workload.inference.{field}",
         f"{value} is out of range; allowed: {allowed}")


def test_zero_cluster(tmp_path, capsys):
    s = yaml.safe_load((SCENARIOS / "bert_large_pretrain.yaml").read_text())
    s["configs"][0]["instances"] = 0
    _bad(tmp_path, capsys, s, "configs[0].instances", "0 is out of range; allowed: an integer from 1 to")


def test_unknown_instance_type_suggests(tmp_path, capsys, scenario_dict):
    scenario_dict["configs"][0]["instance_type"] = "inf1.xlarg"
    _bad(tmp_path, capsys, scenario_dict, "configs[0].instance_type", "did you mean 'inf1.xlarge'")


def test_unknown_region(tmp_path, capsys, scenario_dict):
    scenario_dict["region"] = "us-east-9"
    _bad(tmp_path, capsys, scenario_dict, "region: unknown region 'us-east-9'", "us-east-1")


def test_unknown_preset(tmp_path, capsys, scenario_dict):
    scenario_dict["workload"]["model"] = "layoutlm-bsae"
    _bad(tmp_path, capsys, scenario_dict, "workload.model", "layoutlm-base")


def test_bad_baseline(tmp_path, capsys, scenario_dict):
    scenario_dict["baseline"] = "c"
    _bad(tmp_path, capsys, scenario_dict, "baseline 'c' is not a configuration id", "ids: a, b")


def test_bad_precision_lists_allowed(tmp_path, capsys, scenario_dict):
    scenario_dict["configs"][0]["precision"] = "fp64"
    _bad(tmp_path, capsys, scenario_dict, "configs[0].precision", "'bf16'")


def test_backend_cannot_evaluate_is_exit_2(tmp_path, capsys, scenario_dict):
    scenario_dict["configs"][0]["precision"] = "fp32"  # Inferentia has no fp32 peak
    _bad(tmp_path, capsys, scenario_dict, "configs[a]", "no published fp32 peak")


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("run", "validate", "catalog"):
        assert cmd in out


@pytest.mark.parametrize("argv,line", [
    ([], "ecobench: error: the following arguments are required: COMMAND (see ecobench --help)"),
    (["frob"], "ecobench: error: argument COMMAND: invalid choice: 'frob' (choose from "),
    (["run"], "ecobench run: error: the following arguments are required: scenario "
              "(see ecobench run --help)"),
    (["run", "s.yaml", "--bogus", "x"], "ecobench run: error: unrecognized arguments: --bogus x "
                                        "(see ecobench run --help)"),
    (["catalog", "--format", "xml"], "ecobench catalog: error: argument --format: invalid choice: 'xml'"),
    (["rn", "s.yaml"], "ecobench: error: argument COMMAND: invalid choice: 'rn'; did you mean 'run'? (choose "
                       "from 'run', 'examples',"),
    (["catalgo"], "ecobench: error: argument COMMAND: invalid choice: 'catalgo'; did you mean 'catalog'? "),
    (["catalog", "--format", "tabel"], "ecobench catalog: error: argument --format: invalid choice: 'tabel'; "
                                       "did you mean 'table'? (choose from 'table', 'json')"),
    (["serve-point", "llama3-8b", "--batch", "x\nusage: forged"],
     "ecobench serve-point: error: argument --batch: 'x\\nusage: forged' is not a number; allowed: an "
     "integer from 1 to 1,048,576 (see ecobench serve-point --help)"),
    (["run", "s.yaml", "x\nusage: forged"], "ecobench run: error: unrecognized arguments: x usage: forged "
                                             "(see ecobench run --help)"),
])
def test_a_usage_error_is_one_line(capsys, argv, line):
    """argparse printed its usage block before the error; one line names the command, the error and
    where its help is."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(line), captured.err


def test_help_still_prints_the_usage(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("usage: ecobench run [-h]")


def test_catalog_lists_and_shows_sources(capsys):
    assert main(["catalog"]) == 0
    assert "trn1.32xlarge" in capsys.readouterr().out
    assert main(["catalog", "inf1.2xlarge"]) == 0
    assert "instances.vantage.sh" in capsys.readouterr().out
    assert main(["catalog", "inf1.2xlarg"]) == 2


def test_catalog_format_table_shows_one_instance_as_a_table_and_json_as_json(capsys):
    """`catalog INSTANCE --format table` (the default) printed JSON."""
    assert main(["catalog", "trn1.32xlarge", "--format", "table"]) == 0
    table = capsys.readouterr().out
    assert not table.lstrip().startswith("{") and "\"instance\":" not in table
    lines = table.splitlines()
    assert lines[1].split() == ["figure", "source", "value"] and "sources:" in lines
    vcpus = next(line.split() for line in lines if line.startswith("instance.spec.vcpus "))
    assert vcpus[2] == "128" and any(line.startswith(f"{vcpus[1]} https://instances.vantage.sh/")
                                     for line in lines)
    assert main(["catalog", "trn1.32xlarge"]) == 0 and capsys.readouterr().out == table  # the default
    assert main(["catalog", "trn1.32xlarge", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["instance"]["spec"]["vcpus"] == 128 and doc["accelerator"]["power"]["max_w"] > 0


def test_catalog_help_says_what_each_format_prints(capsys):
    with pytest.raises(SystemExit):
        main(["catalog", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "table (default): the list, one row per instance type, or one instance's figures" in out
    assert "json: every instance type's catalog record, or the instance's and its accelerator's" in out
    assert "always JSON" not in out


@pytest.mark.parametrize("name", [
    pytest.param(p.name, marks=[pytest.mark.slow] if p.name == "local_measure.yaml" else [])
    for p in sorted(SCENARIOS.glob("*.yaml"))])
def test_every_shipped_scenario_runs_and_passes_against_itself(tmp_path, name, capsys):
    """local_measure mixes measured, projected and modelled rows: checking it against itself
    crashed (AttributeError, exit 1) before; a noisy host now refuses it with exit 5."""
    out = tmp_path / "r"
    assert main(["run", str(SCENARIOS / name), "-q", "--out", str(out)]) == 0
    noisy = any(r.get("measurement_warnings") for r in json.loads((out / "results.json").read_text())["rows"])
    assert main(["check", str(out), "--baseline", str(out)]) == (5 if noisy else 0)
    assert main(["check", str(out), "--baseline", str(out), "--allow-noisy"]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_every_command_and_option_has_help(capsys):
    """`ecobench COMMAND --help` says what the command does and what each option is for."""
    import argparse

    from ecobench.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, parser in sub.choices.items():
        with pytest.raises(SystemExit) as exit_:
            main([name, "--help"])
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        if not parser.description or " ".join(parser.description.split()[:5]) not in " ".join(out.split()):
            missing.append(f"{name}: no description")
        missing += [f"{name} {a.option_strings or a.dest}: no help" for a in parser._actions if not a.help]
    assert missing == []


def test_run_help_says_parallelism_also_splits_a_serving_replica(capsys):
    """configs[].parallelism read as training-only, though serving takes {tensor, pipeline} too."""
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    lines = capsys.readouterr().out.splitlines()
    line = next(ln for ln in lines if ln.strip().startswith("configs[].parallelism "))
    assert "training layout" in line and "Serving: {tensor, pipeline}, ranks per model replica" in line


def test_run_help_lists_the_speculative_fields_and_only_real_commands(capsys):
    """configs[].speculative's fields were missing from `run --help` and the README's field table, and
    draft_model's text sent users to `ecobench models`, a command that does not exist."""
    import argparse
    import re

    from ecobench.cli import build_parser

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    for field in ("method", "draft_model", "draft_params", "num_speculative_tokens", "acceptance_rate"):
        assert f"configs[].speculative.{field} " in out, field
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    commands = set(sub.choices)
    for named in re.findall(r"`ecobench ([a-z-]+)", out):
        assert named in commands, f"run --help names `ecobench {named}`, not a command"


def test_readme_documents_every_scenario_field_and_commands():
    from ecobench.scenario.model import describe_fields

    readme = (SCENARIOS.parent / "README.md").read_text()
    for path, _, _ in describe_fields():
        assert f"`{path}`" in readme, path
    assert "ecobench run scenarios/layoutlm_realtime.yaml" in readme
    shipped = readme.split("## Scenarios shipped", 1)[1].split("\n## ", 1)[0]
    for scenario in sorted(SCENARIOS.glob("*.yaml")):
        assert f"| `scenarios/{scenario.name}` |" in shipped, f"{scenario.name} is not in 'Scenarios shipped'"
    import argparse

    from ecobench.cli import build_parser

    table = readme.split("Other commands:", 1)[1].split("\n\n", 2)[1]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in sub.choices:  # `serve-point` was missing
        assert f"| `ecobench {command} " in table or f"| `ecobench {command}`" in table, command
    ci = (SCENARIOS.parent / ".ci" / "run").read_text()
    assert "python -m pytest -q" in ci and "python -m pytest -q" in readme


@pytest.mark.parametrize("workload,expect", [
    ({"model": "llama3-8b", "serving": {"requests_per_h": 100, "input_tokens": 9000, "output_tokens": 100}},
     "workload.serving.input_tokens + output_tokens: 9100 exceeds llama3-8b's max_position_embeddings "
     "(8192); allowed: at most 8192 tokens"),
    ({"model": "layoutlm-base", "inference": {"rate_per_h": 1000, "seq_len": 600}},
     "workload.inference.seq_len: 600 exceeds layoutlm-base's max_position_embeddings (512); "
     "allowed: at most 512"),
    ({"model": "bert-base", "training": {"total_sequences": 1000, "global_batch_size": 8,
                                         "phases": [{"seq_len": 128, "fraction": 0.5},
                                                    {"seq_len": 1024, "fraction": 0.5}]}},
     "workload.training.phases[1].seq_len: 1024 exceeds bert-base's max_position_embeddings (512)")])
def test_a_sequence_beyond_the_context_names_its_field_and_the_limit(tmp_path, capsys, workload, expect):
    # it said "workload: input_tokens + output_tokens 9100 exceeds the model's max_position_embeddings (8192)"
    _bad(tmp_path, capsys, {"schema_version": 2, "name": "t", "workload": workload, "baseline": "a",
                            "configs": [{"id": "a", "instance_type": "p4d.24xlarge", "precision": "bf16"}
                                        | ({"instances": 1} if "training" in workload else {})]},
         expect)


@pytest.mark.parametrize("field,value", [("name", "../evil"), ("name", "my run"), ("id", "inf 1")])
def test_a_bad_name_says_what_a_name_may_hold_not_its_regular_expression(tmp_path, capsys, field, value):
    # it said "name: String should match pattern '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$'"
    s = yaml.safe_load((SCENARIOS / "layoutlm_realtime.yaml").read_text())
    (s if field == "name" else s["configs"][0])[field] = value
    where = "name" if field == "name" else "configs[0].id"
    err = _bad(tmp_path, capsys, s, f"{where}: {value!r} is not a name; allowed: 1 to 100 ASCII letters "
                                    "(A-Z, a-z), digits, '_', '.' or '-', the first a letter, digit or '_'")
    assert "pattern" not in err


@pytest.mark.parametrize("extra,allowed", [
    ({}, "allowed: 4-bit weights (quantization: int4), or an instance with more accelerator memory"),
    ({"quantization": "int4", "instance_type": "g6.xlarge"},
     "allowed: an instance with more accelerator memory")])
def test_serving_weights_that_fit_no_layout_say_what_would(tmp_path, capsys, extra, allowed):
    # llama3-70b on g6e.xlarge said only "... which has 44.7 GiB; no tensor degree fits"
    s = {"schema_version": 2, "name": "t", "baseline": "a",
         "workload": {"model": "llama3-70b", "serving": {"requests_per_h": 1000, "input_tokens": 512,
                                                         "output_tokens": 128}},
         "configs": [{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16"} | extra]}
    _bad(tmp_path, capsys, s, "configs[0]: llama3-70b needs", f"no tensor degree fits; {allowed}")


def test_a_deadline_with_a_tensor_degree_the_model_cannot_split_names_why(tmp_path, capsys):
    # it said "configs[0].instances: no valid layout of up to 2048x trn1.32xlarge for this model and
    # global batch", though no instance count helps a tensor degree of 3 for 32 heads
    s = {"schema_version": 2, "name": "t", "baseline": "a",
         "workload": {"model": "llama2-7b", "training": {"total_tokens": 1.0e9, "global_batch_size": 64,
                                                         "deadline_h": 24,
                                                         "phases": [{"seq_len": 2048, "fraction": 1.0}]}},
         "configs": [{"id": "a", "instance_type": "trn1.32xlarge", "precision": "bf16",
                      "parallelism": {"tensor": 3, "pipeline": 1}}]}
    _bad(tmp_path, capsys, s, "configs[0].parallelism.tensor: tensor 3 must divide the 32 attention heads",
         "allowed: tensor 1, 2, 4, 8, 16, 32")


@pytest.mark.parametrize("parallelism,expect", [
    ({"tensor": 1, "pipeline": 1, "schedule": "interleaved", "virtual_stages": 2},
     "configs[0].parallelism: schedule: interleaved needs pipeline >= 2 (nearest valid: 2)"),
    ("fast", "configs[0].parallelism: 'fast' is not allowed; allowed: 'auto', or a mapping of tensor, "
             "pipeline, data,"),
    # it said "should be 'auto', or a mapping of ...": neither the value written nor the nearest word
    ("autoo", "configs[0].parallelism: 'autoo' is not allowed; allowed: 'auto', or a mapping of tensor,"),
    ("autoo", "offload; did you mean 'auto'?")])
def test_parallelism_errors_read_as_the_users_not_pydantics(tmp_path, capsys, parallelism, expect):
    # they said "should be 'auto', or Value error, schedule: ..." and "or a valid dictionary or
    # instance of ParallelismSpec"
    s = yaml.safe_load((SCENARIOS / "llama2_7b_pretrain.yaml").read_text())
    s["configs"][0]["parallelism"] = parallelism
    err = _bad(tmp_path, capsys, s, expect)
    assert "Value error" not in err and "instance of" not in err


@pytest.mark.parametrize("path,value,expect", [
    (("workload",), [1], "workload: a list, not a mapping; allowed: a mapping of fields (model, "),
    (("workload", "inference"), 5, "workload.inference: 5, not a mapping; allowed: a mapping of fields "
                                   "(rate_per_h, horizon_h, seq_len,"),
    (("pricing",), "spot", "pricing: 'spot', not a mapping; allowed: a mapping of fields (model,"),
    (("configs",), {"id": "a"}, "configs: a mapping, not a list; allowed: a list"),
])
def test_a_value_of_the_wrong_kind_names_the_kind_allowed(tmp_path, capsys, path, value, expect):
    # they said pydantic's "Input should be a valid dictionary or instance of WorkloadSpec" and
    # "Input should be a valid list"
    s = yaml.safe_load((SCENARIOS / "layoutlm_realtime.yaml").read_text())
    node = s
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    err = _bad(tmp_path, capsys, s, expect)
    assert "Input should be" not in err and "instance of" not in err


@pytest.mark.parametrize("scenario,path,value,expect", [
    # it offered no word: difflib compares the characters as written, and 'BF16' is far from 'bf16'
    ("layoutlm_realtime", ("configs", 0, "precision"), "BF16",
     "configs[0].precision: 'BF16' is not allowed; allowed: 'fp32', 'tf32', 'bf16', 'fp16', 'fp8' or 'int8'; "
     "did you mean 'bf16'?"),
    # it said "None is not a number; allowed: a number": Python's word for YAML's empty value, no range
    ("layoutlm_realtime", ("workload", "inference", "rate_per_h"), None,
     "workload.inference.rate_per_h: empty (null); allowed: a number from 0.001 to 10^12"),
    # it said "2.5 is not an integer; allowed: an integer", without the range
    ("llama2_7b_pretrain", ("configs", 0, "instances"), 2.5,
     "configs[0].instances: 2.5 is not a whole number; allowed: an integer from 1 to 100,000"),
])
def test_a_near_miss_names_the_value_the_range_and_the_word_meant(tmp_path, capsys, scenario, path, value,
                                                                  expect):
    s = yaml.safe_load((SCENARIOS / f"{scenario}.yaml").read_text())
    node = s
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    err = _bad(tmp_path, capsys, s, expect)
    assert "None" not in err


def test_two_workload_modes_are_refused_before_either_is_read(tmp_path, capsys):
    # an inference block beside the serving one, half written: it said only
    # "workload.inference.seq_len: missing", not that the workload holds two modes
    s = yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text())
    s["workload"]["inference"] = {"rate_per_h": 5}
    err = _bad(tmp_path, capsys, s, "workload: give exactly one of 'inference', 'training' or 'serving'; "
                                    "this workload gives inference and serving")
    assert "seq_len" not in err


def test_a_chip_refusing_the_default_precision_says_none_was_given(tmp_path, capsys):
    # it said "configs[inf1] (inf1.2xlarge, fp32): ... has no published fp32 peak" for a configuration
    # that names no precision: the fp32 came from nowhere the user could see
    s = yaml.safe_load((SCENARIOS / "layoutlm_realtime.yaml").read_text())
    del s["configs"][0]["precision"]
    err = _bad(tmp_path, capsys, s, "configs[inf1] (inf1.2xlarge, fp32, the default: no precision given): ",
               "has no published fp32 peak; choose a precision it supports: bf16, fp16, int8")
    s["configs"][0]["precision"] = "fp32"
    err = _bad(tmp_path, capsys, s, "configs[inf1] (inf1.2xlarge, fp32): ")
    assert "default" not in err


@pytest.mark.parametrize("args,flag", [
    (["run", "SCENARIO", "--out", ""], "--out"),
    (["run", "SCENARIO", "--results", ""], "--results"),
    (["run", ""], "scenario"),
    (["emulate", "SCENARIO", "--out", ""], "--out"),
    (["examples", "layoutlm_realtime", "--to", ""], "--to"),
    (["compare", "A", "B", "--out", ""], "--out"),
    (["compare", "A", "B", "--html", ""], "--html"),
    (["check", "A", "--baseline", "B", "--markdown", ""], "--markdown"),
    (["check", "A", "--baseline", "B", "--junit", ""], "--junit"),
    (["check", "A", "--baseline", ""], "--baseline"),
    (["baseline", "A", "--to", ""], "--to"),
    (["validate", "--html", ""], "--html"),
    (["report", ""], "run_dir"),
    (["workload", "--arch", ""], "--arch"),  # was an internal error (exit 3)
])
def test_an_empty_path_is_bad_input(tmp_path, monkeypatch, capsys, args, flag):
    """An unset shell variable (``--out "$DIR"``): run --out '' and --results '' wrote into the current
    folder, compare --out '' and check --markdown '' were taken as no option at all, examples --to ''
    wrote the example into the current folder."""
    monkeypatch.chdir(tmp_path)
    scenario = str(SCENARIOS / "layoutlm_realtime.yaml")
    with pytest.raises(SystemExit) as exit_:
        main([scenario if a == "SCENARIO" else a for a in args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: '' is an empty path; allowed: a file or folder name" in err, err
    assert list(tmp_path.iterdir()) == []


def test_workload_of_an_empty_model_name_says_what_to_give(capsys):
    """``ecobench workload ''`` read '' as the current folder: ': a directory without config.json'."""
    assert main(["workload", ""]) == 2
    err = capsys.readouterr().err
    words = "give a preset, a local config.json, or --arch FILE (a scenario or an architecture block); got ''"
    assert words in err, err


def _deadline_scenario(f, model: str, tokens: float, seq_len: int, deadline_h: float, max_instances: int,
                       more: list[dict] | None = None):
    """A training scenario with a deadline: baseline p5 (p5.48xlarge, auto layout), plus ``more``."""
    f.write_text(yaml.safe_dump({
        "schema_version": 2, "name": f.stem, "baseline": "p5",
        "workload": {"model": model, "training": {
            "total_tokens": tokens, "phases": [{"seq_len": seq_len, "fraction": 1.0}],
            "deadline_h": deadline_h, "max_instances": max_instances}},
        "configs": [{"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16", "parallelism": "auto"},
                    *(more or [])]}))
    return f


def test_training_where_every_row_misses_its_deadline_says_so_on_stdout(tmp_path, capsys):
    """trial14: with every row past training.deadline_h, -q printed no sign of it (the Pareto front and
    the recommendations vanished silently)."""
    f = _deadline_scenario(tmp_path / "dl.yaml", "llama3-70b", 15.0e12, 8192, 24, 64,
                           [{"id": "trn2", "instance_type": "trn2.48xlarge", "precision": "bf16",
                             "parallelism": "auto", "price_usd_per_h": 35.76}])
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    fastest = min(doc["rows"], key=lambda r: r["duration_h"])
    assert all(not r["meets_deadline"] for r in doc["rows"]) and doc["recommendations"] == []
    line = next(x for x in out.splitlines() if x.startswith("no configuration meets"))
    assert line.startswith("no configuration meets training.deadline_h 24: the closest is "
                           f"{fastest['config_id']} ({fastest['instance_type']}, ")
    assert "h on 64 instances); no Pareto front or recommendation" in line


def test_serving_where_every_row_misses_a_target_says_so_on_stdout(tmp_path, capsys):
    s = yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text())
    s["workload"]["serving"]["p99_ttft_ms"] = 5
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(s))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "no configuration meets the latency targets (" in out and "TTFT p99 5 ms" in out
    assert "the closest is " in out and "Pareto front (" not in out and "recommendations:" not in out


def test_a_run_where_a_row_meets_its_goal_prints_no_such_line(tmp_path, capsys):
    assert main(["run", str(SCENARIOS / "gpt3_175b_deadline.yaml"), "-q", "--out", str(tmp_path / "r")]) == 0
    assert "no configuration meets" not in capsys.readouterr().out


def _train_layout(tmp_path, name, parallelism):
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump({
        "schema_version": 2, "name": "t", "baseline": "trn1",
        "workload": {"model": "llama2-13b", "training": {
            "total_tokens": 1.0e12, "phases": [{"seq_len": 4096, "fraction": 1.0}],
            "global_batch_size": 1024}},
        "configs": [{"id": "trn1", "instance_type": "trn1.32xlarge", "precision": "bf16", "instances": 16,
                     "parallelism": parallelism}]}))
    return f


def test_a_given_training_layout_that_leaves_ranks_idle_is_warned_once_with_one_that_uses_them(
        tmp_path, capsys):
    """trial14: {tensor: 8, pipeline: 3, data: 16} on 16x trn1.32xlarge (512 NeuronCores) ran 384 ranks
    with 128 idle (drawing idle power) without a word."""
    f = _train_layout(tmp_path, "pp3", {"tensor": 8, "pipeline": 3, "data": 16, "zero": 1})
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    (row,) = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    assert row["idle_devices"] == 128
    idle = [x for x in err.splitlines() if "stay idle" in x]
    assert idle == ["ecobench: warning: trn1: TP8 PP3 DP16 ZeRO-1 mb1 recompute none uses 384 of the 512 "
                    "ranks of 16x trn1.32xlarge; 128 stay idle, drawing idle power: TP8 PP4 DP16 ZeRO-1 mb1 "
                    "recompute none uses them all (idle_devices)"]
    assert row["layout_choice"].startswith("given; TP8 PP3 DP16")
    g = _train_layout(tmp_path, "pp4", {"tensor": 8, "pipeline": 4, "data": 16, "zero": 1})
    assert main(["run", str(g), "-q", "--out", str(tmp_path / "full")]) == 0
    assert "idle" not in capsys.readouterr().err
    (row,) = json.loads((tmp_path / "full" / "results.json").read_text())["rows"]
    assert row["idle_devices"] == 0 and row["layout_choice"] == "given"


@pytest.mark.parametrize("args,expect", [
    (["check", "{run}", "--baseline", "{run}"], "results.json: run results must be UTF-8 text ("),
    (["report", "{run}"], "results.json: results must be UTF-8 text ("),
    (["calibrate", "{points}"], "points.yaml: calibration points must be UTF-8 text ("),
    (["run", "{scenario}"], "s.yaml: a scenario must be UTF-8 text ("),
])
def test_a_file_that_is_not_utf8_is_named_in_plain_english(tmp_path, capsys, args, expect):
    """trial14: 'a run results must be UTF-8 text', 'a calibration points must be UTF-8 text'."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_bytes(b"\xff\xfe{}")
    (tmp_path / "points.yaml").write_bytes(b"points: \xff\n")
    (tmp_path / "s.yaml").write_bytes(b"name: \xff\xfe\n")
    paths = {"{run}": str(run), "{points}": str(tmp_path / "points.yaml"),
             "{scenario}": str(tmp_path / "s.yaml")}
    assert main([paths.get(x, x) for x in args]) == 2
    err = capsys.readouterr().err
    assert expect in err and "a run results" not in err and "Traceback" not in err, err


def test_serve_point_on_a_one_accelerator_instance_says_so_in_the_singular(capsys):
    assert main(["serve-point", "llama3-8b", "--instance-type", "g6e.xlarge"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("one replica on the instance's one accelerator")
    assert main(["serve-point", "llama3-8b", "--instance-type", "g6e.xlarge", "--tensor", "2"]) == 2
    assert "--tensor 2: must divide the 1 rank of g6e.xlarge; allowed: 1" in capsys.readouterr().err


def test_a_deadline_missed_on_one_instance_says_instance_in_the_singular(tmp_path, capsys):
    f = _deadline_scenario(tmp_path / "d.yaml", "llama3-8b", 1.0e12, 4096, 1, 1)
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert "p5: 1 instance takes " in err and "1 instances" not in err, err
    (row,) = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    assert " h on 1 instance (" in row["layout_choice"], row["layout_choice"]


def test_workload_arch_of_a_file_that_is_no_architecture_lists_the_blocks_fields(tmp_path, capsys):
    """trial15 L5: a file that is neither a scenario nor an architecture was 'invalid architecture' with
    the scenario's fields as the ones allowed; a misspelt field listed them too."""
    f = tmp_path / "points.yaml"
    f.write_text("points:\n  - {id: a}\n")
    assert main(["workload", "--arch", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: not an architecture: none of its fields ('points') is one; allowed: a scenario (with a " \
           "workload), a mapping with an 'architecture' block, or the block's fields (" in err, err
    assert "layers, hidden_size, heads" in err and "configs" not in err, err
    for text, where in (("layers: 2\nhiden_size: 64\n", ""), ("architecture: {layers: 2, hiden_size: 64}\n",
                                                              "architecture: ")):
        f.write_text(text)
        assert main(["workload", "--arch", str(f)]) == 2
        err = capsys.readouterr().err
        assert f"{where}hiden_size: unknown field; did you mean 'hidden_size'? (allowed here: " in err, err
        assert "layers, hidden_size, heads" in err and "configs" not in err, err


@pytest.mark.parametrize("name,text,got", [
    ("a.yaml", "", "got an empty file"),
    ("a.yaml", "- 1\n- 2\n", "got a list"),
    ("config.json", "[1, 2]", "got a list"),
    ("config.json", "3", "got a single int value"),
])
def test_workload_of_a_file_that_is_no_mapping_says_what_it_got_in_words(tmp_path, capsys, name, text, got):
    """trial17: an empty YAML said 'expected a mapping (...), got NoneType' (Python's type name), and a
    config.json holding a list named the file twice ('c.json: c.json is not a JSON object')."""
    f = tmp_path / name
    f.write_text(text)
    for args in (["workload", str(f)], ["workload", "--arch", str(f)]) if name.endswith(".yaml") else \
            (["workload", str(f)],):
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"ecobench: error: {f}: ") and err.count(str(f)) == 1, err
        assert err.endswith(got) and "NoneType" not in err, err


def test_report_of_a_null_figure_names_the_row_and_field(tmp_path, capsys):
    """trial15 L6: a null energy_kwh in results.json gave exit 2 with Python's words ('TypeError:
    unsupported operand type(s) for *: 'NoneType' and 'float'') instead of the field."""
    run = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(run)]) == 0
    doc = json.loads((run / "results.json").read_text())
    doc["rows"][1]["energy_kwh"] = None
    (run / "results.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert (f"{run / 'results.json'}: not a complete results file; the report cannot be drawn from it: "
            "rows[1]: configuration 'gpu': energy_kwh is null; allowed: a number") in err, err
    assert "TypeError" not in err and "NoneType" not in err, err


@pytest.mark.parametrize("labels", ["0", "1", "1000001"])
def test_workload_num_labels_out_of_range_says_what_is_allowed(capsys, labels):
    """trial15 L7: '--num-labels 0: a classifier has at least 2 labels' had no 'allowed'; a count above
    the scenario's bound was accepted."""
    assert main(["workload", "bert-base", "--task", "classification", "--num-labels", labels]) == 2
    err = capsys.readouterr().err
    assert f"--num-labels {labels}: out of range; allowed: 2 to 1,000,000" in err, err


@pytest.mark.parametrize("args", [["bert-base"], ["llama3-8b", "--task", "pretrain"]])
def test_workload_num_labels_without_a_classification_task_is_bad_input(capsys, args):
    """trial18: --num-labels 3 with the pretrain task (the default) printed the pretrain head's counts,
    the labels silently dropped (exit 0)."""
    assert main(["workload", *args, "--num-labels", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--num-labels 3: counts only for a classification head" in err, err
    assert "the task here is pretrain; allowed: --task classification --num-labels 3" in err


def test_serve_point_int4_weight_precision_points_to_quantization(capsys):
    """trial15 L8: --weight-precision int4 was 'not a data type' with no word of --quantization int4."""
    assert main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--weight-precision",
                 "int4"]) == 2
    err = capsys.readouterr().err
    assert "--weight-precision 'int4': not a data type; allowed: fp32, tf32, bf16, fp16, fp8, int8; 4-bit " \
           "weights are --quantization int4" in err, err
    assert main(["serve-point", "llama3-8b", "--instance-type", "p5.48xlarge", "--quantization", "int4"]) == 0


def test_balanced_pick_lists_the_weighted_terms_then_the_others(tmp_path, capsys):
    """trial15 L9: a training run's balanced pick said 'the lowest sum of cost, CO2 and time ... weighted
    1/3 each: -51% cost, -43% CO2, -43% energy, -50% time': energy listed among the weighted terms."""
    scenario = str(SCENARIOS / "small_encoder_pretrain.yaml")
    assert main(["run", scenario, "-q", "--out", str(tmp_path / "r")]) == 0
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    (why,) = [r["reason"] for r in doc["recommendations"] if r["objective"] == "balanced"]
    head, weighted = why.split("weighted 1/3 each: ")
    assert "the lowest sum of cost, CO2 and time" in head, why
    terms, extra = weighted.split(" (not weighted: ")
    assert [t.split()[-1] for t in terms.split(", ")] == ["cost", "CO2", "time"], why
    assert extra.split(")")[0].endswith(" energy"), why


@pytest.mark.parametrize("given", ["SCENARIO", "config.json"])
def test_serve_point_given_a_file_says_it_takes_a_preset(tmp_path, capsys, given):
    """trial18: a scenario's path was 'unknown model preset '/long/path/llama3_8b_cha'...', cut at 40
    characters, as if a misspelt preset."""
    path = SCENARIOS / "llama3_8b_chat.yaml" if given == "SCENARIO" else tmp_path / given
    if given != "SCENARIO":
        path.write_text("{}")
    assert main(["serve-point", str(path), "--instance-type", "p5.48xlarge"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"model {path}: a file; serve-point takes a decoder preset" in err, err
    assert "allowed: gpt3-175b, llama2-7b" in err and "`ecobench run`" in err and "unknown model" not in err


def test_an_llm_is_not_served_on_inferentia_one(tmp_path, capsys):
    """trial18: inf1's catalog entry keeps activations on chip (an encoder's), so a decoder's weight
    reads were timed at zero (int4 Llama-3-8B at 4 ms a token on inf1.xlarge, faster than an A10G); no
    LLM serving stack runs on NeuronCore-v1."""
    assert main(["serve-point", "llama3-8b", "--instance-type", "inf1.xlarge"]) == 2
    err = capsys.readouterr().err
    assert "--instance-type inf1.xlarge: Inferentia (inf1) runs no LLM serving stack" in err, err
    s = yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text())
    s["configs"].append({"id": "inf1", "instance_type": "inf1.6xlarge", "precision": "bf16"})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(s))
    assert main(["run", str(path), "-q", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "inf1.6xlarge: Inferentia (inf1) runs no LLM serving stack" in err and "instance_type" in err, err


@pytest.mark.parametrize("command,backend", [("run", "analytic"), ("run", "emulated"),
                                             ("emulate", "emulated")])
def test_a_model_is_not_trained_on_inferentia_one(tmp_path, capsys, command, backend):
    """emu24: training on inf1 was planned (the emulated NeuronCore-v1 with ZeRO-3, which no Neuron
    library offers); Neuron trains on Trn1 and Trn2 only, Inf1's torch-neuron is inference only."""
    s = yaml.safe_load((SCENARIOS / "llama_emulated.yaml").read_text())
    s["configs"] = [{"id": "inf1", "instance_type": "inf1.24xlarge", "precision": "bf16", "instances": 4,
                     "parallelism": "auto", "backend": backend}]
    s["baseline"] = "inf1"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(s))
    assert main([command, str(path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "configs[0].instance_type: inf1.24xlarge: Inferentia (inf1) runs no training" in err, err
    assert "allowed: a trn1, trn2" in err and "Traceback" not in err, err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").rglob("results.json"))


@pytest.mark.parametrize("command,scenario", [("run", "layoutlm_realtime.yaml"),
                                              ("emulate", "layoutlm_realtime.yaml")])
def test_one_run_asks_for_its_directory_once(tmp_path, monkeypatch, command, scenario):
    """review: run and emulate called target_dir twice for one run (once to refuse a bad --out before the
    work, once more to write), drawing a second run id; now the first answer is the directory written."""
    import ecobench.io.rundir as rundir
    import ecobench.reports.emulation as emulation
    import ecobench.runner as runner

    calls = []
    real = rundir.target_dir

    def counted(*a):
        calls.append(real(*a))
        return calls[-1]

    for module in (rundir, runner, emulation):
        monkeypatch.setattr(module, "target_dir", counted)
    assert main([command, str(SCENARIOS / scenario), "-q" if command == "run" else "--format=json",
                 "--results", str(tmp_path)]) == 0
    assert len(calls) == 1 and calls[0].is_dir()
    assert [p.name for p in calls[0].parent.iterdir()] == [calls[0].name]  # no other run directory


@pytest.mark.parametrize("command", ["run", "emulate"])
def test_out_and_results_together_are_refused_before_any_work(tmp_path, capsys, command):
    """new-user try: run --out DIR --results ROOT wrote DIR and silently ignored ROOT."""
    assert main([command, str(SCENARIOS / "layoutlm_realtime.yaml"), "--out", str(tmp_path / "o"),
                 "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert f"{command}: --out {tmp_path / 'o'} and --results {tmp_path / 'r'} both given" in err
    assert "allowed: one of them" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_run_piped_to_head_still_says_where_it_wrote_and_exits_0(tmp_path):
    """new-user try: `ecobench run S | head -3` lost the 'wrote DIR/' line (the last of stdout), and a
    reader gone before the tables ended read as exit 141 though the run directory was complete."""
    out = tmp_path / "run"
    scenario = SCENARIOS / "layoutlm_realtime.yaml"
    proc = subprocess.Popen([sys.executable, "-m", "ecobench", "run", str(scenario), "-q", "--out", str(out)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader went away before the first table, as `| head` does at worst
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(timeout=120)
    assert proc.returncode == 0, err
    assert f"wrote {out}/ (scenario.yaml, results.csv, results.json, report.html)" in err
    assert "Traceback" not in err
    assert {p.name for p in out.iterdir()} == {"scenario.yaml", "results.csv", "results.json", "report.html"}
    head = subprocess.run(["bash", "-c", f"set -o pipefail; '{sys.executable}' -m ecobench run "
                           f"'{scenario}' -q --out '{tmp_path / 'again'}' | head -3"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert head.returncode == 0, head.stderr
    assert head.stdout.splitlines()[0].startswith("layoutlm_realtime: inference")
    assert f"wrote {tmp_path / 'again'}/" in head.stderr


def test_a_misspelt_baseline_id_names_the_nearest(tmp_path, capsys, scenario_dict):
    """new-user try: baseline: gpuu listed the ids but not the one meant."""
    scenario_dict["configs"][1]["id"] = "gpu"
    scenario_dict["baseline"] = "gpuu"
    _bad(tmp_path, capsys, scenario_dict, "baseline 'gpuu' is not a configuration id; did you mean 'gpu'?",
         "ids: a, gpu")


@pytest.mark.parametrize(("argv", "hint"), [
    (["run", "s.yaml", "--output", "x"], "unrecognized arguments: --output x; did you mean '--out'?"),
    (["run", "s.yaml", "--quite"], "unrecognized arguments: --quite; did you mean '--quiet'"),
    (["validate", "--fromat=json"], "unrecognized arguments: --fromat=json; did you mean '--format'?"),
    (["neuron-power", "--chip", "traineum"], "(or give --max-w); did you mean 'trainium', 'trainium2'?"),
    (["serve-point", "llama3-8b", "--instance-type", "inf2.48xlarge", "--precision", "bf61"],
     "allowed: fp32, tf32, bf16, fp16, fp8, int8; did you mean 'bf16'?"),
])
def test_a_misspelt_option_or_choice_names_the_nearest(capsys, argv, hint):
    """new-user try: --output (for --out) and --quite were 'unrecognized' with no hint; a misspelt
    --chip or --precision listed the choices but not the one meant."""
    assert exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and hint in err, err


def test_a_misspelt_export_format_names_the_nearest(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["check", str(run), "--baseline", str(run), "--export", "benchmark-actoin",
                 str(tmp_path / "b.json")]) == 2
    assert "allowed: benchmark-action, benchmark-action-bigger; did you mean 'benchmark-action'" in \
        capsys.readouterr().err


def _serving_scenario(tmp_path, serving):
    doc = {"schema_version": 2, "name": "t",
           "workload": {"model": "llama3-8b", "serving": {"requests_per_h": 36000, **serving}},
           "configs": [{"id": "p5", "instance_type": "p5.48xlarge", "precision": "bf16"}], "baseline": "p5"}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_workload_of_a_serving_scenario_prints_its_request_lengths(tmp_path, capsys):
    """new-user try: `ecobench workload chat.yaml` printed the model at 2048 tokens, 'task pretrain',
    and not a word of the 1,024-token prompts and 256-token answers it serves."""
    path = _serving_scenario(tmp_path, {"input_tokens": 1024, "output_tokens": 256, "input_tokens_cv": 0.5,
                                        "length_distribution": "lognormal"})
    assert main(["workload", str(path)]) == 0
    out = capsys.readouterr().out
    assert "serving (workload.serving):" in out
    assert re.search(r"input_tokens +1,024 tokens, mean +\(cv 0\.50, lognormal\)", out), out
    assert re.search(r"output_tokens +256 tokens, mean +\(every request this long\)", out), out
    assert "`--seq-len 1280`" in out
    assert main(["workload", str(path), "--format", "json"]) == 0
    serving = json.loads(capsys.readouterr().out)["serving"]
    assert serving["input"] == {"mean_tokens": 1024, "cv": 0.5, "distribution": "lognormal"}
    assert serving["requests_per_h"] == 36000 and serving["output"]["mean_tokens"] == 256


def test_workload_of_a_serving_scenario_reads_its_lengths_csv(tmp_path, capsys):
    (tmp_path / "lengths.csv").write_text("input_tokens,output_tokens,count\n100,50,3\n900,450,1\n")
    path = _serving_scenario(tmp_path, {"lengths_csv": "lengths.csv"})
    assert main(["workload", "--arch", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"serving (workload.serving from {tmp_path / 'lengths.csv'}):" in out
    assert re.search(r"input_tokens +300 tokens, mean +\(cv 1\.15, empirical; 100 to 900 over 4 requests\)",
                     out), out


def test_workload_of_a_preset_or_an_inference_scenario_has_no_serving_block(capsys):
    assert main(["workload", str(SCENARIOS / "layoutlm_realtime.yaml")]) == 0
    assert main(["workload", "llama3-8b"]) == 0
    assert "serving (" not in capsys.readouterr().out


@pytest.mark.parametrize("tty", [True, False])
def test_catalog_fits_a_terminal_and_leaves_piped_output_whole(monkeypatch, capsys, tty):
    """new-user try: `ecobench catalog inf2.xlarge` at 80 columns: 19 lines of 120-520 characters."""
    import os
    import shutil

    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    monkeypatch.delenv("COLUMNS", raising=False)  # it would set the width, piped too
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((80, 24)))
    assert main(["catalog", "inf2.xlarge"]) == 0
    assert main(["catalog"]) == 0
    lines = capsys.readouterr().out.splitlines()
    over = [line for line in lines if len(line) > 80 and max(map(len, line.split())) <= 40]
    assert bool(over) != tty, over  # a terminal: only a line with one unbreakable word (a link) is longer
