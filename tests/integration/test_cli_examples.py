"""`ecobench examples`: the example scenarios shipped in the package, listed and written into a folder
where `ecobench run` works without a checkout; never over an existing file (exit 2)."""

import json
from pathlib import Path

import pytest

from ecobench.cli import main
from ecobench.scenario import examples
from ecobench.scenario.load import load_scenario
from tests.conftest import SCENARIOS


def test_examples_lists_every_shipped_scenario_with_one_line(capsys):
    assert main(["examples"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()[:len(examples.names())]}
    assert sorted(listed) == sorted(p.stem for p in SCENARIOS.glob("*.yaml"))
    assert listed["layoutlm_realtime"].startswith("LayoutLM-base document understanding")
    assert listed["layoutlm_sweep"].startswith("LayoutLM at 1M inferences/hour")  # no description: comment
    assert "ecobench examples NAME --to DIR" in out


def test_a_written_example_runs_from_its_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as the README says: --to . then run it by its bare name
    assert main(["examples", "layoutlm_realtime", "--to", "."]) == 0
    out, err = capsys.readouterr()  # the written file and the hint are status lines: stdout holds none
    assert out == "" and err == "wrote layoutlm_realtime.yaml\nrun it: ecobench run layoutlm_realtime.yaml\n"
    written = tmp_path / "layoutlm_realtime.yaml"
    assert not written.is_symlink()
    assert written.read_bytes() == (SCENARIOS / "layoutlm_realtime.yaml").read_bytes()
    assert main(["run", "layoutlm_realtime.yaml", "-q", "--out", "run"]) == 0
    rows = {r["config_id"]: r for r in json.loads((tmp_path / "run" / "results.json").read_text())["rows"]}
    assert set(rows) == {"inf1", "gpu"} and rows["inf1"]["instances"] >= 1


@pytest.mark.parametrize("name", examples.names())
def test_every_example_written_out_loads_from_its_own_copy(tmp_path, name):
    """Every file an example reads is written beside it, and the written scenario reads those copies
    (its resolved paths are in the folder, not in the package)."""
    assert main(["examples", name, "--to", str(tmp_path / "ex")]) == 0
    s = load_scenario(tmp_path / "ex" / f"{name}.yaml")

    def paths(v):
        if isinstance(v, dict):
            return [p for x in v.values() for p in paths(x)]
        if isinstance(v, list):
            return [p for x in v for p in paths(x)]
        return [v] if isinstance(v, str) and v.startswith("/") else []

    for p in paths(s.model_dump()):
        assert Path(p).is_relative_to(tmp_path / "ex"), p


def test_the_config_json_of_a_local_model_is_written_beside_it(tmp_path):
    assert main(["examples", "llama3_8b_finetune", "--to", str(tmp_path)]) == 0
    assert (tmp_path / "models" / "llama3-8b" / "config.json").is_file()
    arch = load_scenario(tmp_path / "llama3_8b_finetune.yaml").workload.architecture
    assert arch is not None and arch.from_hf_config == str(tmp_path / "models" / "llama3-8b" / "config.json")


@pytest.mark.parametrize("existing", ["llama3_8b_finetune.yaml", "models/llama3-8b/config.json"])
def test_an_existing_file_is_never_overwritten_and_nothing_is_written(tmp_path, capsys, existing):
    (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / existing).write_text("kept")
    assert main(["examples", "llama3_8b_finetune", "--to", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"--to {tmp_path}: {tmp_path / existing} already exists; not overwritten" in err
    assert (tmp_path / existing).read_text() == "kept"
    files = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()]
    assert files == [existing]


def test_an_unknown_example_exits_2_listing_the_known_ones(tmp_path, capsys):
    assert main(["examples", "layoutlm_realtim", "--to", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown example 'layoutlm_realtim'; did you mean 'layoutlm_realtime'" in err
    assert all(n in err.split("(known: ", 1)[1] for n in examples.names())
    assert list(tmp_path.iterdir()) == []


def test_a_half_command_says_what_is_missing(capsys):
    assert main(["examples", "--to", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--to x: give the NAME of the example to write" in err


def test_an_example_without_to_prints_its_yaml(tmp_path, capsys, monkeypatch):
    """`ecobench examples NAME` refused ('give --to DIR'); `ecobench examples NAME > my.yaml` now
    writes a scenario that runs, and nothing is written to the folder."""
    monkeypatch.chdir(tmp_path)
    assert main(["examples", "layoutlm_realtime"]) == 0
    out, err = capsys.readouterr()
    assert out == (SCENARIOS / "layoutlm_realtime.yaml").read_text(encoding="utf-8") and err == ""
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "my.yaml").write_text(out, encoding="utf-8")
    assert load_scenario(tmp_path / "my.yaml").name == "layoutlm_realtime"


def test_a_printed_example_that_reads_a_file_says_so_on_stderr(capsys):
    assert main(["examples", "llama3_8b_finetune"]) == 0
    out, err = capsys.readouterr()
    assert out == (SCENARIOS / "llama3_8b_finetune.yaml").read_text(encoding="utf-8")
    assert err.count("\n") == 1 and "reads models/llama3-8b/config.json beside it" in err
    assert "ecobench examples llama3_8b_finetune --to DIR" in err


def test_an_example_named_by_its_file_name_is_that_example(tmp_path, capsys):
    """`ecobench examples layoutlm_realtime.yaml` was an unknown example (the listing names them without
    the .yaml their files in scenarios/ have)."""
    assert main(["examples", "layoutlm_realtime.yaml"]) == 0
    assert capsys.readouterr().out == (SCENARIOS / "layoutlm_realtime.yaml").read_text(encoding="utf-8")
    assert main(["examples", "layoutlm_realtime.yaml", "--to", str(tmp_path)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["layoutlm_realtime.yaml"]
    assert main(["examples", "layoutlm_realtim.yaml"]) == 2
    assert "unknown example 'layoutlm_realtim.yaml'" in capsys.readouterr().err


def test_an_unknown_example_to_print_exits_2(capsys):
    assert main(["examples", "layoutlm_realtim"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "unknown example 'layoutlm_realtim'; did you mean 'layoutlm_realtime'" in err


def test_examples_help_says_it_prints_one(capsys):
    with pytest.raises(SystemExit):
        main(["examples", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "print one's YAML (`ecobench examples layoutlm_realtime > my.yaml`)" in out
    assert "the example to print (its YAML on stdout) or, with --to, to write" in out


def test_a_file_in_place_of_the_folder_is_bad_input(tmp_path, capsys):
    (tmp_path / "f").write_text("a file")
    assert main(["examples", "layoutlm_realtime", "--to", str(tmp_path / "f")]) == 2
    assert f"--to {tmp_path / 'f'}: {tmp_path / 'f'} is a file, not a folder" in capsys.readouterr().err
