"""Never overwrite an earlier result: every file a user names (validate --html, check --markdown /
--junit / --export, baseline --to, compare --out / --html) is refused when it exists (exit 2, one line
naming it), and replaced with --force, except a file of a run directory (never)."""

import pytest

from ecobench.cli import main
from tests.conftest import SCENARIOS


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("noov") / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(out)]) == 0
    return out


def _refused(capsys, flag, path):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag} {path}: already exists" in err, err
    assert "pass --force to replace it" in err and "Traceback" not in err


def test_validate_html_is_not_overwritten_without_force(tmp_path, capsys):
    page = tmp_path / "v.html"
    page.write_text("kept")
    assert main(["validate", "--mode", "replay", "-q", "--html", str(page)]) == 2
    _refused(capsys, "--html", page)
    assert page.read_text() == "kept"
    assert main(["validate", "--mode", "replay", "-q", "--html", str(page), "--force"]) == 0
    assert "<svg" in page.read_text()


@pytest.mark.parametrize("name", ["report.html", "results.json", "scenario.yaml"])
def test_a_runs_file_is_not_overwritten_even_with_force(tmp_path, capsys, run_dir, name):
    """`validate --html RUN/report.html --force` replaced the run's report with the validation page
    (the refusal's own hint, --force, led there); a run is never overwritten, as `run` never does."""
    target = run_dir / name
    before = target.read_bytes()
    for force in ([], ["--force"]):
        assert main(["validate", "--mode", "replay", "-q", "--html", str(target), *force]) == 2
        err = capsys.readouterr().err
        assert err == (f"ecobench: error: --html {target}: is a file of the run directory {run_dir}, and "
                       "runs are never overwritten (not even with --force); allowed: a new file outside "
                       "it\n"), err
    page = run_dir / "report.html"
    assert main(["compare", str(run_dir), str(run_dir), "--html", str(page), "--force"]) == 2
    assert "is a file of the run directory" in capsys.readouterr().err
    assert target.read_bytes() == before


@pytest.mark.parametrize("flag", ["--markdown", "--junit", "--export"])
def test_check_outputs_are_not_overwritten_without_force(tmp_path, capsys, monkeypatch, run_dir, flag):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    target = tmp_path / "earlier"
    target.write_text("kept")
    other = tmp_path / "other.xml"  # a new output beside it is not written either
    named = ["--export", "benchmark-action", str(target)] if flag == "--export" else [flag, str(target)]
    extra = ["--junit", str(other)] if flag != "--junit" else ["--markdown", str(other)]
    args = ["check", str(run_dir), "--baseline", str(run_dir), *named, *extra]
    assert main(args) == 2
    _refused(capsys, flag if flag != "--export" else "--export benchmark-action", target)
    assert target.read_text() == "kept" and not other.exists()
    assert "not gated (exit 2)" in summary.read_text() and "already exists" in summary.read_text()
    assert main([*args, "--force"]) == 0
    assert target.read_text() != "kept" and other.exists()


def test_baseline_to_an_existing_file(tmp_path, capsys, run_dir):
    to = tmp_path / "b.json"
    to.write_text("kept")
    assert main(["baseline", str(run_dir), "--to", str(to)]) == 2
    _refused(capsys, "--to", to)
    assert to.read_text() == "kept"
    assert main(["baseline", str(run_dir), "--to", str(to), "--force"]) == 0
    assert to.read_text().startswith("{")


def test_compare_writes_neither_file_when_one_exists(tmp_path, capsys, run_dir):
    md, page = tmp_path / "c.md", tmp_path / "c.html"
    md.write_text("kept")
    assert main(["compare", str(run_dir), str(run_dir), "--html", str(page), "--out", str(md)]) == 2
    _refused(capsys, "--out", md)
    assert not page.exists() and md.read_text() == "kept"


@pytest.mark.parametrize("flags", [["compare", "--out"], ["compare", "--html"], ["check", "--markdown"],
                                   ["check", "--junit"]])
def test_an_output_in_a_folder_not_made_yet_is_written_there(tmp_path, capsys, run_dir, flags):
    """trial17: compare --out/--html into a new folder was exit 4 ('cannot write: No such file or
    directory') after the comparison, and check --markdown/--junit a warning with no file, where run
    --out, baseline --to and examples --to make the folder."""
    command, flag = flags
    target = tmp_path / "reports" / "new" / "out.txt"
    args = [command, str(run_dir), "--baseline", str(run_dir)] if command == "check" else \
        [command, str(run_dir), str(run_dir)]
    assert main([*args, flag, str(target)]) == 0
    assert target.read_text() and "cannot write" not in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["compare", "--out"], ["check", "--markdown"], ["validate", "--html"]])
def test_an_output_under_a_file_is_bad_input_before_any_work(tmp_path, capsys, run_dir, flags, monkeypatch):
    """A file where a folder of the output's path should be is bad input (exit 2), said before the
    work (validate: minutes of it), as for run --out and baseline --to."""
    import ecobench.validation.validate as v

    monkeypatch.setattr(v, "validate", lambda *a, **k: pytest.fail("validated before the path was checked"))
    command, flag = flags
    (tmp_path / "file").write_text("kept")
    target = tmp_path / "file" / "out.txt"
    args = {"check": ["check", str(run_dir), "--baseline", str(run_dir)],
            "compare": ["compare", str(run_dir), str(run_dir)], "validate": ["validate", "-q"]}[command]
    assert main([*args, flag, str(target)]) == 2
    err = capsys.readouterr().err
    assert f"{flag} {target}: {tmp_path / 'file'} is a file, not a folder" in err, err
    assert (tmp_path / "file").read_text() == "kept"


@pytest.mark.parametrize("flags", [["check", "--markdown", "--junit"], ["check", "--junit", "--export"],
                                   ["check", "--export", "--export"], ["compare", "--html", "--out"]])
def test_two_outputs_naming_one_file_are_bad_input_before_any_work(tmp_path, capsys, run_dir, flags):
    """trial18: check --markdown F --junit F wrote both to F (the markdown lost, exit 0); compare
    --html F --out F wrote the page, then refused --out as existing (exit 2, the page left)."""
    command, first, second = flags
    same = tmp_path / "same.txt"
    named = {"--markdown": ["--markdown", str(same)], "--junit": ["--junit", str(same)],
             "--out": ["--out", str(same)], "--html": ["--html", str(same)]}
    exports = iter(["benchmark-action", "benchmark-action-bigger"])
    outs = [x for f in (first, second)
            for x in (["--export", next(exports), str(same)] if f == "--export" else named[f])]
    args = [command, str(run_dir), "--baseline", str(run_dir)] if command == "check" else \
        [command, str(run_dir), str(run_dir)]
    for force in ([], ["--force"]):
        assert main([*args, *outs, *force]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "the same file as" in err and "Traceback" not in err, err
        assert "allowed: a different file for each output" in err and not same.exists()


@pytest.mark.parametrize("flags", [["check", "--markdown", "baseline"], ["check", "--junit", "run"],
                                   ["compare", "--out", "run"], ["compare", "--html", "baseline"],
                                   ["baseline", "--to", "run"]])
def test_an_output_naming_an_input_is_refused_even_with_force(tmp_path, capsys, run_dir, flags):
    """trial18: with --force, check --markdown BASELINE replaced the baseline with the verdict, and
    baseline --to RUN/results.json or compare --out RUN/results.json replaced the run's results."""
    import shutil

    command, flag, which = flags
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    base = tmp_path / "base.json"
    assert main(["baseline", str(run), "--to", str(base)]) == 0
    capsys.readouterr()
    before = {p: p.read_text() for p in (run / "results.json", base)}
    target = run / "results.json" if which == "run" else base
    args = {"check": ["check", str(run), "--baseline", str(base)],
            "compare": ["compare", str(run), str(base)], "baseline": ["baseline", str(run)]}[command]
    assert main([*args, flag, str(target), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag} {target}: is " in err and "Traceback" not in err, err
    assert "which this command reads" in err
    assert "allowed: a file this command does not read" in err
    assert {p: p.read_text() for p in before} == before
