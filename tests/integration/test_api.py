"""The Python API (ecobench.api): ecobench.run on a path or a dict, Result, write and load_run."""

from __future__ import annotations

import ast
import json
import signal
import subprocess
import sys

import pytest

import ecobench
from ecobench.errors import EcobenchError, InputError
from ecobench.io.yamlio import load_yaml
from tests.conftest import SCENARIOS

SEED = SCENARIOS / "layoutlm_realtime.yaml"


def test_all_names_the_api_and_import_stays_cheap():
    assert {"run", "load_run", "Result", "__version__"} <= set(ecobench.__all__)
    for name in ecobench.__all__:
        assert getattr(ecobench, name) is not None
    code = ("import sys, ecobench; print(sorted(m for m in sys.modules "
            "if m.startswith(('ecobench', 'numpy', 'pandas', 'pydantic'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the API is imported when first used; the version module has no imports of its own
    assert out.stdout.strip() == "['ecobench', 'ecobench.version']"


def test_the_documented_error_classes_are_reachable_from_a_bare_import():
    """The README names ``ecobench.errors.InputError``: reachable without importing the submodule."""
    code = ("import ecobench; e = ecobench.errors; print(e.InputError.__name__, "
            "issubclass(e.InputError, e.EcobenchError), 'errors' in dir(ecobench))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["InputError", "True", "True"]


def test_run_a_path():
    result = ecobench.run(SEED)
    assert isinstance(result, ecobench.Result) and result.mode == "inference"
    df = result.to_pandas()
    assert list(df["config_id"]) == ["inf1", "gpu"] == [r["config_id"] for r in result.rows]
    assert list(df.columns[:2]) == ["config_id", "instance_type"]
    assert {"instances", "energy_kwh", "cost_usd", "co2_kg"} <= set(df.columns)
    assert result.recommendations and all({"objective", "config_id", "reason"} <= set(r)
                                          for r in result.recommendations)
    assert result.directory is None  # nothing written unless asked


def test_run_a_dict_equals_the_file_it_was_read_from(scenario_dict):
    from_file = ecobench.run(str(SEED))
    from_dict = ecobench.run(load_yaml(SEED, "scenario"))
    assert from_dict.rows == from_file.rows and from_dict.recommendations == from_file.recommendations
    assert ecobench.run(scenario_dict).scenario["name"] == "t"


def test_a_dict_that_fails_validation_raises_input_error_with_the_field_path(scenario_dict, capsys):
    scenario_dict["configs"][0]["precision"] = "fp7"
    scenario_dict["workload"]["inference"]["seq_len"] = -1
    with pytest.raises(InputError) as info:
        ecobench.run(scenario_dict)
    msg = str(info.value)
    assert msg.startswith("scenario: invalid scenario")
    assert "configs[0].precision" in msg and "workload.inference.seq_len" in msg
    assert isinstance(info.value, EcobenchError) and not isinstance(info.value, SystemExit)
    assert capsys.readouterr() == ("", "")  # raised, not printed


def test_the_error_is_the_one_the_cli_prints(scenario_dict, tmp_path, capsys):
    from ecobench.cli import main

    scenario_dict["configs"][1]["instance_type"] = "g4dn.xlargee"
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(scenario_dict), encoding="utf-8")
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 2
    cli = capsys.readouterr().err
    with pytest.raises(InputError) as from_path:
        ecobench.run(path)
    with pytest.raises(InputError) as from_dict:
        ecobench.run(scenario_dict)
    assert cli == f"ecobench: error: {from_path.value}\n"
    assert str(from_dict.value) == str(from_path.value).replace(str(path), "scenario", 1)
    assert "did you mean 'g4dn.xlarge'" in str(from_dict.value)


def test_not_a_scenario_raises_input_error():
    with pytest.raises(InputError, match="path to a YAML file or a dict"):
        ecobench.run(42)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="no-such.yaml"):
        ecobench.run("no-such.yaml")


def test_write_then_load_run_round_trips(tmp_path):
    from ecobench.cli import main

    result = ecobench.run(SEED)
    out = result.write(tmp_path / "api")
    assert out == tmp_path / "api" == result.directory
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "results.csv", "results.json",
                                                     "scenario.yaml"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind
    loaded = ecobench.load_run(out)
    assert loaded.rows == result.rows and loaded.recommendations == result.recommendations
    assert loaded.document == result.document and loaded.document["run_id"] == "api"
    assert loaded.to_pandas().equals(result.to_pandas())
    # The same files as `ecobench run --out` (results.json differs in its run id and time only).
    assert main(["run", str(SEED), "-q", "--out", str(tmp_path / "cli")]) == 0
    for name in ("scenario.yaml", "results.csv"):
        assert (out / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    cli = ecobench.load_run(tmp_path / "cli" / "results.json")
    assert cli.rows == loaded.rows and cli.recommendations == loaded.recommendations
    # A loaded run writes a copy of itself.
    copy = loaded.write(tmp_path / "copy")
    assert (copy / "results.csv").read_bytes() == (out / "results.csv").read_bytes()
    assert ecobench.load_run(copy).rows == loaded.rows


def test_write_to_an_existing_directory_is_refused(tmp_path):
    result = ecobench.run(SEED)
    (tmp_path / "taken").mkdir()
    with pytest.raises(InputError, match="already exists"):
        result.write(tmp_path / "taken")
    assert list((tmp_path / "taken").iterdir()) == []
    with pytest.raises(InputError, match="already exists"):  # checked before evaluating
        ecobench.run(SEED, out=tmp_path / "taken")
    assert ecobench.run(SEED, out=tmp_path / "new").directory == tmp_path / "new"
    assert (tmp_path / "new" / "report.html").is_file()


def test_load_run_refuses_what_is_not_a_run(tmp_path):
    with pytest.raises(InputError, match="no such run directory"):
        ecobench.load_run(tmp_path / "missing")
    (tmp_path / "b.json").write_text(json.dumps({"kind": "ecobench-baseline", "rows": []}), encoding="utf-8")
    with pytest.raises(InputError, match="not a run directory"):
        ecobench.load_run(tmp_path / "b.json")


def test_the_callers_signal_handlers_are_left_alone():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    ecobench.run(SEED)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_the_readme_python_example_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's API example, executed from a directory holding `scenarios/` as a checkout does:
    its paths, field names, calls and round-trip assert hold."""
    readme = (SCENARIOS.parent / "README.md").read_text()
    section = readme.split("## Python API", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "scenarios").symlink_to(SCENARIOS)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md (Python API)", "exec"), {})  # noqa: S102
    assert (tmp_path / "results" / "layoutlm_small" / "results.json").is_file()
    assert "cost inf1 inf1: inf1.2xlarge in us-east-1 (bf16):" in capsys.readouterr().out


def test_the_readme_python_example_shows_the_table_it_prints():
    """The README's commented table under ``result.to_pandas()[...]`` is what that line prints: it
    had gone stale (0.183512 kWh shown, 0.183488 printed). After a change of model outputs, paste
    the printed table into the README."""
    readme = (SCENARIOS.parent / "README.md").read_text()
    code = readme.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    lines = code.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("result.to_pandas()["))
    shown = []
    for line in lines[at + 1:]:
        if not line.startswith("# "):
            break
        shown.append(line[2:])
    columns = ast.literal_eval(lines[at].removeprefix("result.to_pandas()"))[0]
    printed = ecobench.run(SEED).to_pandas()[columns].to_string()
    assert shown == printed.splitlines(), f"README shows:\n{chr(10).join(shown)}\nthe code prints:\n{printed}"


@pytest.mark.parametrize("call,words", [
    (lambda: ecobench.run(SEED, out=5), "ecobench.run: out must be a path (a str or os.PathLike), got int"),
    (lambda: ecobench.run(SEED, progress=5),
     "ecobench.run: progress must be a callable taking one str (print, for one), got int"),
    (lambda: ecobench.load_run(None), "ecobench.load_run: directory must be a path (a str or os.PathLike), "
                                      "got NoneType"),
    (lambda: ecobench.serve_point("llama3-8b", "p5.48xlarge", batch=2.5),
     "ecobench.serve_point: batch 2.5: allowed: an integer from 1 to 1,048,576"),
    (lambda: ecobench.serve_point("llama3-8b", "p5.48xlarge", input_tokens=True),
     "ecobench.serve_point: input_tokens True: allowed: an integer from 1 to 16,777,216"),
    (lambda: ecobench.serve_point("llama3-8b", "p5.48xlarge", backend=None),
     "ecobench.serve_point: backend must be a str, got NoneType"),
])
def test_an_argument_of_the_wrong_type_raises_input_error_naming_it(call, words):
    """These were pathlib's TypeError naming no argument, or a TypeError from inside the evaluation
    (``progress``), after the scenario was loaded."""
    with pytest.raises(InputError) as info:
        call()
    assert str(info.value) == words


@pytest.mark.parametrize("name", ["layoutlm_realtime.yaml", "llama3_8b_chat.yaml"])
def test_to_pandas_has_the_integer_columns_of_results_csv(tmp_path, name):
    """docs/results.md types ``instances`` as an integer and results.csv writes ``2``; to_pandas gave
    2.0 (float64) for inference rows."""
    import pandas as pd

    from ecobench.reports.columns import JSON_TYPES

    result = ecobench.run(SCENARIOS / name)
    df = result.to_pandas()
    assert df["instances"].dtype == "int64"
    csv = pd.read_csv(result.write(tmp_path / "run") / "results.csv")
    for c in df.columns:
        if JSON_TYPES.get(c) == "integer" and c in csv.columns:
            assert df[c].dtype == csv[c].dtype, c


def test_a_dicts_missing_relative_file_says_where_it_was_looked_for(tmp_path, monkeypatch):
    """llama3_8b_finetune.yaml names models/llama3-8b/config.json relative to scenarios/; read into a
    dict and run from elsewhere, the error said only 'no such file'."""
    from ecobench.io.yamlio import load_yaml

    d = load_yaml(SCENARIOS / "llama3_8b_finetune.yaml", "scenario")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as info:
        ecobench.run(d)
    msg = str(info.value)
    assert "models/llama3-8b/config.json: no such file" in msg
    assert msg.endswith(f"; a dict's relative paths are read from the working directory ({tmp_path}), not "
                        "from the folder of a YAML file it was read from")


def test_every_name_the_readme_api_table_lists_exists(tmp_path):
    """Each `Result.x` / `.x` / `ecobench.f` in the README's API table is there, on a run evaluated now
    and on one read back."""
    import re

    readme = (SCENARIOS.parent / "README.md").read_text()
    section = readme.split("## Python API", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| `")]
    names = {n for line in table for n in re.findall(r"`(?:Result)?\.(\w+)", line.split(" | ")[0])}
    functions = {n for line in table for n in re.findall(r"`ecobench\.(\w+)\(", line)}
    assert {"rows", "to_pandas", "write", "directory"} <= names
    assert functions == {"run", "load_run", "serve_point"}
    result = ecobench.run(SEED)
    assert result.directory is None
    loaded = ecobench.load_run(result.write(tmp_path / "run"))
    for r in (result, loaded):
        for n in names:
            assert hasattr(r, n), n
        assert r.directory == tmp_path / "run"
    assert all(callable(getattr(ecobench, f)) for f in functions)


def test_run_issues_the_warnings_the_cli_prints(tmp_path, capsys):
    """`ecobench run` printed 'ecobench: warning: ...' for a deprecated target name and a latency
    target no batch meets; ecobench.run said nothing at all, so a notebook planned a service that
    misses its p99 target without a word. Now each line is an EcobenchWarning from the caller's line."""
    from ecobench.cli import main
    from ecobench.errors import EcobenchWarning

    doc = load_yaml(SCENARIOS / "llama3_8b_chat.yaml", "scenario")
    serving = doc["workload"]["serving"]
    serving["ttft_ms"] = serving.pop("median_ttft_ms")  # deprecated name of the median target
    serving["p99_ttft_ms"] = 100  # below what g6e.xlarge reaches at batch 1
    with pytest.warns(EcobenchWarning) as caught:
        ecobench.run(doc)
    api = [str(w.message) for w in caught]
    assert {w.filename for w in caught} == {__file__}  # the caller's line, not ecobench's
    assert api[0].startswith("workload.serving.ttft_ms is deprecated (read as median_ttft_ms")
    assert any(m.startswith("g6e: no batch meets p99_ttft_ms 100 on g6e.xlarge") for m in api)
    f = tmp_path / "s.yaml"
    f.write_text(json.dumps(doc))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 0
    cli = [line.removeprefix("ecobench: warning: ") for line in capsys.readouterr().err.splitlines()
           if line.startswith("ecobench: warning: ")]
    assert cli == api


def test_a_run_with_nothing_to_say_issues_no_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ecobench.run(SEED)


@pytest.mark.parametrize("args,options", [
    ([], {}),
    (["--batch", "8", "--input-tokens", "1024", "--output-tokens", "256", "--tensor", "2"],
     {"batch": 8, "input_tokens": 1024, "output_tokens": 256, "tensor": 2}),
    (["--backend", "emulated", "--batch", "4"], {"backend": "emulated", "batch": 4}),
])
def test_serve_point_is_the_dict_the_command_prints(args, options, capsys):
    from ecobench.cli import main

    instance = "trn1.32xlarge" if options.get("backend") == "emulated" else "p5.48xlarge"
    assert main(["serve-point", "llama3-8b", "--instance-type", instance, "--format", "json", *args]) == 0
    assert ecobench.serve_point("llama3-8b", instance, **options) == json.loads(capsys.readouterr().out)


def test_serve_point_raises_the_commands_bad_input():
    with pytest.raises(InputError, match="p5.48xlarge has no NeuronCore"):
        ecobench.serve_point("llama3-8b", "p5.48xlarge", backend="emulated")
    with pytest.raises(InputError, match="must divide the 8 ranks of p5.48xlarge"):
        ecobench.serve_point("llama3-8b", "p5.48xlarge", tensor=3)
