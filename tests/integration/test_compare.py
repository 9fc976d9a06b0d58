"""`ecobench compare`: rows matched on config_id, changes in %, added/removed rows, metadata that
differs, terminal width, markdown, HTML written once, exit 2 on bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ecobench.cli import main
from ecobench.reports.compare import change_pct, compare, load, markdown, meta_differences, terminal, value

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """layoutlm_realtime as shipped (A), and in eu-north-1 with the GPU in fp16, inf1 removed and
    inf2 added (B)."""
    root = tmp_path_factory.mktemp("cmp")
    s = yaml.safe_load((SCENARIOS / "layoutlm_realtime.yaml").read_text())
    s["region"] = "eu-north-1"
    s["configs"] = [{**c, "precision": "fp16"} for c in s["configs"] if c["id"] == "gpu"]
    s["configs"].append({"id": "inf2", "instance_type": "inf2.xlarge", "precision": "bf16"})
    (root / "b.yaml").write_text(yaml.safe_dump(s))
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(root / "a")]) == 0
    assert main(["run", str(root / "b.yaml"), "-q", "--out", str(root / "b")]) == 0
    return root / "a", root / "b"


def test_rows_matched_with_changes_and_metadata(runs: tuple[Path, Path]) -> None:
    a, b = (load(p) for p in runs)
    c = compare(a, b)
    assert [(r.config_id, r.status) for r in c.rows] == [("inf1", "removed"), ("gpu", "both"),
                                                         ("inf2", "added")]
    gpu = {r["config_id"]: r for r in a["rows"]}["gpu"], {r["config_id"]: r for r in b["rows"]}["gpu"]
    va, vb, ch = c.rows[1].values["co2_kg"]
    assert (va, vb) == (gpu[0]["co2_kg"], gpu[1]["co2_kg"])
    assert ch == pytest.approx((vb / va - 1) * 100) and ch < -50  # a cleaner grid and fewer instances
    assert c.rows[0].values["energy_kwh"][1:] == (None, None) and c.rows[2].values["energy_kwh"][0] is None
    assert "ttft_ms_p50" not in c.metrics and "cost_usd_per_million" in c.metrics
    meta = {k: (x, y) for k, x, y in c.meta}
    assert meta["scenario.region"] == ("us-east-1", "eu-north-1")
    assert meta["scenario.configs[gpu].precision"] == ("fp32", "fp16")
    assert meta["scenario.configs[inf1]"][1] == "(none)"
    assert "inf2.xlarge" in meta["scenario.configs[inf2]"][1]
    assert "ecobench_version" not in meta  # the same in both
    assert compare(a, a).meta == [] and all(r.values["energy_kwh"][2] == 0 for r in compare(a, a).rows)


def test_the_chips_default_lnc_or_a_field_an_older_file_lacks_is_no_change() -> None:
    """ux29: a run giving trn2 its default lnc (2) against one giving none read 'lnc: (none) -> 2', and a
    run written before the lnc field against a newer one 'lnc: (none) -> (none)' for every config."""
    def doc(*configs: dict) -> dict:
        return {"scenario": {"name": "s", "configs": list(configs)}}

    trn2 = {"id": "trn2", "instance_type": "trn2.48xlarge"}
    gpu = {"id": "gpu", "instance_type": "p5.48xlarge"}
    older = doc(trn2, gpu)  # no lnc field at all
    unset = doc({**trn2, "lnc": None}, {**gpu, "lnc": None})
    assert meta_differences(older, unset) == []
    assert meta_differences(unset, doc({**trn2, "lnc": 2}, {**gpu, "lnc": None})) == []
    assert meta_differences(older, doc({**trn2, "lnc": 2}, gpu)) == []
    changed = [("scenario.configs[trn2].lnc", "2", "1")]  # the setting planned at, given or not
    assert meta_differences(unset, doc({**trn2, "lnc": 1}, gpu)) == changed
    assert meta_differences(doc({**trn2, "lnc": 2}), doc({**trn2, "lnc": 1})) == changed


def test_change_pct_and_money_format() -> None:
    assert change_pct(10.0, 5.0) == -50.0 and change_pct(-2.0, -1.0) == 50.0
    assert change_pct(0.0, 0.0) == 0.0 and change_pct(0.0, 1.0) is None and change_pct(None, 1.0) is None
    assert value("cost_usd", 1.234e-5) == "0.00001234" and value("cost_usd", 400000.0) == "400,000"
    assert "e" not in value("cost_usd_per_million_output_tokens", 3e-7)


def test_terminal_fits_the_width(runs: tuple[Path, Path]) -> None:
    c = compare(*(load(p) for p in runs))
    for width in (60, 100, 250):
        text = terminal(c, width)
        table = text.split("\n\n")[1].splitlines()
        assert max(len(line) for line in table) <= width  # the 'not shown' note too (rec28: 223 at 80)
        assert "e+" not in text
    assert "not shown at this width" in terminal(c, 60) and "energy_kwh" in " ".join(terminal(c, 60).split())
    assert "not shown" not in terminal(c, 400)
    assert "1 configuration(s) only in B (added), 1 only in A (removed)" in terminal(c, 100)


def test_piped_compare_is_never_cut_and_columns_sets_the_width(runs: tuple[Path, Path], monkeypatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """ux29: piped output was cut at shutil's 80-column fallback (6 figures named 'not shown')."""
    import os
    import shutil

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((80, 24)))
    assert main(["compare", *map(str, runs)]) == 0  # capsys: stdout is not a terminal
    out = capsys.readouterr().out
    assert "not shown at this width" not in out and max(map(len, out.splitlines())) > 80
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["compare", *map(str, runs)]) == 0
    out = capsys.readouterr().out
    assert "not shown at this width" in out and max(map(len, out.split("\n\n")[1].splitlines())) <= 60


def test_a_narrow_table_keeps_the_figures_that_changed(tmp_path: Path) -> None:
    """A change of region moves cost and CO2, not instances or energy; at 80 columns the table showed
    instances, energy and cost and left CO2, the figure that moved most (-68%), under 'not shown'."""
    s = yaml.safe_load((SCENARIOS / "layoutlm_realtime.yaml").read_text())
    s["region"] = "eu-north-1"
    (tmp_path / "eu.yaml").write_text(yaml.safe_dump(s))
    for name, scenario in (("a", SCENARIOS / "layoutlm_realtime.yaml"), ("b", tmp_path / "eu.yaml")):
        assert main(["run", str(scenario), "-q", "--out", str(tmp_path / name)]) == 0
    text = terminal(compare(load(tmp_path / "a"), load(tmp_path / "b")), 80)
    header = text.split("\n\n")[1].splitlines()[0]
    assert "CO2 kg A" in header and "cost USD A" in header and "instances" not in header, text
    note = " ".join(text.split("not shown at this width: ", 1)[1].split("(see", 1)[0].split())
    assert "unchanged: instances, energy_kwh," in note, note


def test_cli_markdown_is_a_table(runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    assert main(["compare", str(a), str(b), "--markdown"]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("|")]
    header = table[0]
    assert all(line.endswith("|") for line in table)
    cells = header.count(" | ") + 1
    rows = table[2:2 + 3]
    assert set(table[1].strip("|").split("|")) <= {"---", "---:"} and table[1].count("|") == cells + 1
    assert [r.split(" | ")[0] for r in rows] == ["| inf1 (removed)", "| gpu", "| inf2 (added)"]
    assert all(r.count(" | ") + 1 == cells for r in rows)
    # text from the files is inert markdown: every punctuation character escaped
    assert "| scenario\\.region | us\\-east\\-1 | eu\\-north\\-1 |" in out


def test_markdown_escapes_text_from_files(runs: tuple[Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A description with HTML, a link and an ESC sequence is printed inert (issue 24)."""
    import json

    a, b = runs
    doc = json.loads((b / "results.json").read_text())
    doc["scenario"]["description"] = "<img src=x onerror=alert(1)> [l](http://e) @team \x1b[31mred"
    (tmp_path / "b.json").write_text(json.dumps(doc))
    assert main(["compare", str(a), str(tmp_path / "b.json"), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "<img" not in out and "](" not in out and "\x1b" not in out and " @team" not in out
    assert "&lt;img src\\=x" in out and "\\x1b" in out


def test_cli_writes_html_and_markdown_once(runs: tuple[Path, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    page, md = tmp_path / "c.html", tmp_path / "c.md"
    assert main(["compare", str(a), str(b), "--html", str(page), "--out", str(md)]) == 0
    html = page.read_text()
    assert "<style>" in html and "eu-north-1" in html and "inf2" in html and "<script" not in html
    assert md.read_text().startswith("A: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.html", "c.md"]  # no temporary file left
    capsys.readouterr()
    page.write_text("kept")
    assert main(["compare", str(a), str(b), "--html", str(page)]) == 2
    assert "already exists" in capsys.readouterr().err and page.read_text() == "kept"
    assert main(["compare", str(a), str(b), "--html", str(page), "--force"]) == 0
    assert page.read_text() != "kept"


def test_html_is_escaped(runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = (load(p) for p in runs)
    b["rows"][0]["config_id"] = "<b>x</b>"
    from ecobench.reports.compare import html

    page = html(compare(a, b, "A<script>", "B"))
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page and "A<script>" not in page


@pytest.mark.parametrize("bad", [
    "missing", "{not json", json.dumps({"rows": "x"}), json.dumps({"rows": [{"energy_kwh": 1}]}),
    json.dumps({"rows": [{"config_id": "a"}, {"config_id": "a"}]})])
def test_bad_input_exits_2(runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           bad: str) -> None:
    f = tmp_path / "results.json"
    if bad != "missing":
        f.write_text(bad)
    assert main(["compare", str(runs[0]), str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err or str(tmp_path) in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_folder_of_runs_names_the_newest(tmp_path, capsys):
    from ecobench.cli import main

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "layoutlm_realtime.yaml"
    assert main(["run", str(scenario), "-q", "--results", str(tmp_path)]) == 0
    capsys.readouterr()
    folder = tmp_path / "layoutlm_realtime"
    run = next(folder.iterdir())
    assert main(["compare", str(folder), str(run)]) == 2
    err = capsys.readouterr().err
    assert f"a folder holding 1 run, not a run: give that run ({run})" in err
    assert main(["run", str(scenario), "-q", "--results", str(tmp_path)]) == 0  # a second run: "runs"
    capsys.readouterr()
    newest = sorted(folder.iterdir())[-1]
    assert main(["compare", str(folder), str(run)]) == 2
    assert f"a folder of 2 runs, not a run: give one of them (newest: {newest})" in capsys.readouterr().err


def test_a_sweep_says_only_its_results_json_rows_are_compared(tmp_path: Path, runs: tuple[Path, Path],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """trial15 L10: compare on a sweep counted its 14 results.json rows while results.csv holds all 16,
    and never said which it compared; a run that is no sweep gets no such line."""
    sweep = tmp_path / "sweep"
    assert main(["run", str(SCENARIOS / "layoutlm_sweep.yaml"), "-q", "--out", str(sweep)]) == 0
    doc = load(sweep)
    shown, in_csv = len(doc["rows"]), doc["sweep"]["rows_in_csv"]
    assert shown < in_csv == len((sweep / "results.csv").read_text().splitlines()) - 1
    capsys.readouterr()
    assert main(["compare", str(sweep), str(runs[0])]) == 0
    out = capsys.readouterr().out
    assert (f"compared: the rows of each results.json (A: {shown} of its sweep's {in_csv}; a sweep's other "
            "rows are only in its results.csv)") in out, out
    assert main(["compare", *map(str, runs)]) == 0
    assert "compared:" not in capsys.readouterr().out


def test_runs_of_different_modes_are_refused(runs: tuple[Path, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A serving run against a training run matched trn1 and p5 on their ids and showed energy -99%,
    time 720 h -> 4.72 h, exit 0: the figures of the two modes are not the same quantities (a month
    of serving, one training job). Refused, naming both files and modes; nothing written."""
    training = tmp_path / "training"
    assert main(["run", str(SCENARIOS / "small_encoder_pretrain.yaml"), "-q", "--out", str(training)]) == 0
    capsys.readouterr()
    page = tmp_path / "c.html"
    assert main(["compare", str(runs[0]), str(training), "--html", str(page)]) == 2
    err = capsys.readouterr().err
    assert f"{runs[0]} is an inference run and {training} a training run" in err
    assert "allowed: two runs of one mode" in err
    assert "Traceback" not in err and err.count("\n") == 1 and not page.exists()


def test_two_service_modes_are_refused_for_their_own_reason(runs: tuple[Path, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """An inference run against a serving run was refused with the reason for a training run ("energy
    of a service against those of a training job"), though neither is one."""
    serving = tmp_path / "serving"
    assert main(["run", str(SCENARIOS / "llama3_8b_chat.yaml"), "-q", "--out", str(serving)]) == 0
    capsys.readouterr()
    assert main(["compare", str(runs[0]), str(serving)]) == 2
    err = capsys.readouterr().err
    assert f"{runs[0]} is an inference run and {serving} a serving run" in err
    assert ("(the first's are a service's, per inference, the second's a service's, per output token, "
            "against latency targets); allowed: two runs of one mode") in err, err
    assert "training" not in err


@pytest.mark.parametrize("doc,why", [({"rows": []}, "has no rows"),
                                     ({"rows": [{"config_id": "gpu"}]}, "mode is missing"),
                                     ({"mode": "sweep", "rows": [{"config_id": "gpu"}]}, "mode is 'sweep'")])
def test_a_results_file_without_rows_or_mode_is_bad_input(runs: tuple[Path, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str], doc: dict,
                                                          why: str) -> None:
    """{"rows": []} was compared as a run (every configuration 'removed', 'mode: inference -> (none)'),
    exit 0: no run or baseline ecobench writes lacks its mode or rows."""
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc))
    assert main(["compare", str(runs[0]), str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ecobench: error: {f}: {why}") and "not a results or baseline file" in err, err


def test_a_figure_an_ulp_apart_is_unchanged(runs: tuple[Path, Path]) -> None:
    """The USD per million of layoutlm_realtime at 1.5 M/h is 0.7239999999999999 (0.724 at 1 M/h): the
    same price, computed by another route, was shown as a change of -0.0%."""
    assert change_pct(0.724, 0.7239999999999999) == 0.0 and change_pct(0.724, 0.7239) < 0
    a, b = load(runs[0]), load(runs[0])
    b["rows"][0]["cost_usd_per_million"] = math.nextafter(b["rows"][0]["cost_usd_per_million"], 0)
    assert "-0.0%" not in markdown(compare(a, b)) and "+0.0%" in markdown(compare(a, b))


def test_a_failed_out_leaves_no_html_behind(runs: tuple[Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--html was written, then --out failed (exit 4: a folder that cannot be made, a full disk): the
    page was left behind, as if the comparison had been written; nothing is, as documented."""
    from ecobench.errors import OutputError
    from ecobench.io import rundir

    real = rundir.write_text_atomic

    def failing(path: Path, text: str) -> None:
        if path.suffix == ".md":
            raise OutputError(f"{path}: cannot write: No space left on device (disk full)")
        real(path, text)

    monkeypatch.setattr(rundir, "write_text_atomic", failing)
    page, md = tmp_path / "c.html", tmp_path / "c.md"
    assert main(["compare", *map(str, runs), "--html", str(page), "--out", str(md)]) == 4
    assert "disk full" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_row_only_one_results_json_shows_is_read_from_the_other_results_csv(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The T4 drawing 2 kW pushes g4dn.xlarge_fp16_eu-north-1 off the rows B's results.json shows:
    compare listed it as '(removed)' though B's results.csv holds it, 16 times the energy."""
    from tests.conftest import HOT_SWEEP_ROW as cid
    from tests.conftest import sweep_runs_with_a_hot_t4

    a, b = sweep_runs_with_a_hot_t4(tmp_path)
    assert cid not in {r["config_id"] for r in load(b)["rows"]}
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--markdown"]) == 0
    out = capsys.readouterr().out
    from ecobench.io.textsafe import markdown as escaped

    row = next(line for line in out.splitlines() if line.startswith(f"| {escaped(cid)}"))
    assert "(removed)" not in row and "(B: from results.csv)" in row, row
    ea, eb = (float(pd.read_csv(run / "results.csv").set_index("config_id").loc[cid, "energy_kwh"])
              for run in (a, b))
    assert f"{(eb - ea) / ea * 100:+.1f}%" in row.split("|")[7]  # energy_kwh's change
    assert main(["compare", str(a), str(b), "--html", str(tmp_path / "c.html")]) == 0
    assert "B: from results.csv" in (tmp_path / "c.html").read_text()


def test_each_file_written_is_said_on_stderr_and_markdown_decides_stdout_whatever_out_says(
        runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """new-user try: compare --out/--html wrote their files without run's `wrote PATH` line, and
    --markdown with --out printed the terminal table: --out is the markdown table's file, --markdown
    what stdout holds."""
    a, b = runs
    page, md = tmp_path / "c.html", tmp_path / "c.md"
    assert main(["compare", str(a), str(b), "--markdown", "--html", str(page), "--out", str(md)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [f"wrote {page}", f"wrote {md}"]
    assert out.rstrip("\n") == md.read_text().rstrip("\n")  # the markdown, as the file holds it
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "d.md")]) == 0
    out, err = capsys.readouterr()
    assert err == f"wrote {tmp_path / 'd.md'}\n"
    assert out.rstrip("\n") != (tmp_path / "d.md").read_text().rstrip("\n")  # the terminal table
