"""One convention for every command that writes a file or folder: a `wrote PATH` line on stderr, through
cli._wrote; stdout holds only the table, JSON or YAML, so `| head`, `> file` and pipes stay clean.
(compare, check and validate --html have their own tests: test_compare, test_gate, test_validate.)"""

import inspect
import json
import re

import pytest

from ecobench import cli
from ecobench.cli import main
from tests.conftest import SCENARIOS


def _wrote_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("wrote ")]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("wrote") / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(out)]) == 0
    return out


def test_run_names_its_directory_on_stderr_only(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(out)]) == 0
    stdout, err = capsys.readouterr()
    assert "wrote" not in stdout and stdout.startswith("layoutlm_realtime: inference")
    assert _wrote_lines(err) == [f"wrote {out}/ (scenario.yaml, results.csv, results.json, report.html)"]


def test_report_names_its_page_on_stderr_not_stdout(run_dir, capsys):
    """new-user try: `ecobench report RUN` printed `wrote RUN/report.html` on stdout, where run,
    compare, check and validate keep only their tables."""
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 0
    stdout, err = capsys.readouterr()
    assert stdout == "" and err == f"wrote {run_dir / 'report.html'}\n"


def test_baseline_names_its_file_on_stderr_not_stdout(run_dir, tmp_path, capsys):
    """new-user try: `ecobench baseline RUN --to F` printed `wrote baseline F (...)` on stdout, and its
    word `baseline` stood where every other command's line has the path."""
    to = tmp_path / "b.json"
    capsys.readouterr()
    assert main(["baseline", str(run_dir), "--to", str(to)]) == 0
    stdout, err = capsys.readouterr()
    rows = len(json.loads(to.read_text())["rows"])
    assert stdout == ""
    assert err == f"wrote {to} (baseline: {rows} configuration(s) from 1 run(s): {run_dir})\n"


def test_examples_to_names_every_file_on_stderr_not_stdout(tmp_path, capsys):
    """new-user try: `ecobench examples NAME --to DIR` printed `wrote A, B` and its `run it:` hint on
    stdout; now one `wrote` line per file, the hint after them, all on stderr."""
    assert main(["examples", "llama3_8b_finetune", "--to", str(tmp_path)]) == 0
    stdout, err = capsys.readouterr()
    yaml_file = tmp_path / "llama3_8b_finetune.yaml"
    config = tmp_path / "models" / "llama3-8b" / "config.json"
    assert stdout == ""
    assert err.splitlines() == [f"wrote {yaml_file}", f"wrote {config}", f"run it: ecobench run {yaml_file}"]
    assert yaml_file.is_file() and config.is_file()


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_emulate_names_its_directory_on_stderr_in_either_format(tmp_path, capsys, fmt):
    """new-user try: `ecobench emulate S --out D` printed `wrote D/` on stdout after the breakdown, and
    with --format json said nothing of where it wrote."""
    out = tmp_path / "e"
    assert main(["emulate", str(SCENARIOS / "bert_large_pretrain.yaml"), "--format", fmt, "--out",
                 str(out)]) == 0
    stdout, err = capsys.readouterr()
    assert "wrote" not in stdout
    if fmt == "json":
        assert json.loads(stdout)["configs"]
    assert _wrote_lines(err) == [f"wrote {out}/ (emulation.json, kernels.csv)"]
    assert {p.name for p in out.iterdir()} == {"emulation.json", "kernels.csv"}


def test_emulate_whose_reader_went_away_still_says_where_it_wrote(tmp_path, capsys, monkeypatch):
    """`ecobench emulate S | head -1`: the breakdown's reader gone, the run directory is complete: exit 0
    and the `wrote` line on stderr (it was exit 141 and no line), as run does."""
    import ecobench.reports.emulation as emulation

    def gone(report):
        raise BrokenPipeError

    monkeypatch.setattr(emulation, "print_breakdown", gone)
    out = tmp_path / "e"
    assert main(["emulate", str(SCENARIOS / "bert_large_pretrain.yaml"), "--out", str(out)]) == 0
    assert _wrote_lines(capsys.readouterr().err) == [f"wrote {out}/ (emulation.json, kernels.csv)"]


def test_every_wrote_line_of_the_cli_goes_through_the_one_helper():
    """The line is spelt once, in _wrote (stderr); a command printing its own `wrote` would drift (two
    commands printed theirs on stdout)."""
    source = inspect.getsource(cli)
    helper = inspect.getsource(cli._wrote)
    spelt = [m.group() for m in re.finditer(r"""f?["'][^"'\n]*\bwrote \{[^"'\n]*["']""", source)]
    assert spelt == [m.group() for m in re.finditer(r"""f?["'][^"'\n]*\bwrote \{[^"'\n]*["']""", helper)]
    assert len(spelt) == 1


def test_the_readme_states_the_convention_for_every_command_that_writes():
    readme = " ".join((SCENARIOS.parent / "README.md").read_text(encoding="utf-8").split())
    said = readme.split("`wrote PATH` line per file or folder on stderr (", 1)[1].split(")", 1)[0]
    for command in ("run", "emulate", "examples --to", "report", "baseline", "compare --out",
                    "check --markdown", "validate --html"):
        assert f"`{command}" in said, command
