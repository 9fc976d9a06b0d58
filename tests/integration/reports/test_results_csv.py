"""results.csv as the csv module writes it: LF line ends, integers without a decimal point, shortest
round-trip floats, long repeated texts as keys into results.json's ``csv_sources``; runs written
before the keys (texts inline, CRLF) are still read by report, compare, check and load_run."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ecobench.cli import main
from ecobench.reports.columns import describe, json_type
from ecobench.reports.tables import CSV_SOURCES, KEYED_COLUMNS, expand_keys, key_texts
from ecobench.table import write_csv

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios"
OLD_RUN = ROOT / "tests" / "fixtures" / "runs" / "layoutlm_realtime_long_texts"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("csv") / "chat"
    assert main(["run", str(SCENARIOS / "llama3_8b_chat.yaml"), "-q", "--out", str(out)]) == 0
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_lf_line_ends_integers_and_keys(run: Path) -> None:
    raw = (run / "results.csv").read_bytes()
    assert b"\r" not in raw
    rows = _rows(run / "results.csv")
    assert all(describe(c) is not None for c in rows[0]), "every CSV column is in the data dictionary"
    for r in rows:
        for c, v in r.items():
            if json_type(c) == "integer" and v:
                assert v.lstrip("-").isdigit(), (c, v)
    doc = json.loads((run / "results.json").read_text())
    sources = doc[CSV_SOURCES]
    assert {r["price_source"] for r in rows} <= set(sources)
    assert all(len(r["method"]) <= 4 for r in rows)
    # the keys resolve to exactly the texts results.json's rows hold
    expanded = expand_keys(rows, sources)
    for e, j in zip(expanded, doc["rows"], strict=True):
        for c in KEYED_COLUMNS:
            if c in e:
                assert e[c] == (j.get(c) or ""), c


def test_floats_round_trip_in_shortest_form(tmp_path: Path) -> None:
    values = np.array([4019.76, 0.1 + 0.2, 1e-300, 3.0, np.nan, -2.5e16])
    t = {"config_id": np.array(list("abcdef"), dtype=object), "energy_kwh": values,
         "instances": np.array([3.0, 1.0, 2.0, np.nan, 4.0, 5.0]),
         "method": np.array(['a, "quoted"\ntext', None, "x", "x", "y", "a, \"quoted\"\ntext"], dtype=object)}
    keyed, sources = key_texts(t)
    write_csv(keyed, list(keyed), tmp_path / "t.csv", integers=["instances"])
    rows = _rows(tmp_path / "t.csv")
    assert [r["energy_kwh"] for r in rows] == [repr(v) if v == v else "" for v in values.tolist()]
    assert [r["instances"] for r in rows] == ["3", "1", "2", "", "4", "5"]
    assert [r["method"] for r in rows] == ["m1", "", "m2", "m2", "m3", "m1"]
    assert sources == {"m1": 'a, "quoted"\ntext', "m2": "x", "m3": "y"}
    assert [float(r["energy_kwh"]) for r in rows if r["energy_kwh"]] == [v for v in values.tolist() if v == v]


def _old_run(tmp_path: Path) -> Path:
    old = tmp_path / "old"
    shutil.copytree(OLD_RUN, old)
    return old


def test_runs_written_before_the_keys_are_still_read(run: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import ecobench

    old = _old_run(tmp_path)
    assert CSV_SOURCES not in json.loads((old / "results.json").read_text())
    assert b"\r\n" in (old / "results.csv").read_bytes()  # as written then
    assert main(["report", str(old)]) == 0 and (old / "report.html").is_file()
    new = tmp_path / "new"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(new)]) == 0
    assert main(["compare", str(old), str(new)]) == 0
    assert main(["check", str(old), "--baseline", str(old)]) == 0  # an old run gates against itself
    capsys.readouterr()
    # and today's run gates against it: compared figure by figure (the fitted power model changed the
    # energy since the fixture was written, so this may be a regression), never bad input
    assert main(["check", str(new), "--baseline", str(old)]) in (0, 1)
    assert "energy_kwh" in capsys.readouterr().out
    loaded = ecobench.load_run(old)
    rows = expand_keys(_rows(old / "results.csv"), loaded.document.get(CSV_SOURCES))
    assert rows[0]["price_source"].startswith("http")  # long texts pass through unchanged
    copy = loaded.write(tmp_path / "copy")
    assert (copy / "results.csv").read_bytes() == (old / "results.csv").read_bytes()
    capsys.readouterr()


def test_written_document_names_its_keys(run: Path) -> None:
    doc: dict[str, Any] = json.loads((run / "results.json").read_text())
    prefixes = tuple(KEYED_COLUMNS.values())
    assert doc[CSV_SOURCES] and all(k.startswith(prefixes) for k in doc[CSV_SOURCES])


def test_parquet_holds_every_row_with_texts(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "pq"
    assert main(["run", str(SCENARIOS / "layoutlm_sweep.yaml"), "-q", "--format", "parquet",
                 "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "results.json", "results.parquet",
                                                     "scenario.yaml"]
    df = pd.read_parquet(out / "results.parquet")
    doc = json.loads((out / "results.json").read_text())
    assert len(df) == doc["sweep"]["rows_in_csv"]
    assert str(df["instances"].dtype) == "int64" and df["price_source"].str.len().min() > 10
    assert all(describe(c) is not None for c in df.columns)
    import ecobench

    copy = ecobench.load_run(out).write(tmp_path / "copy")
    assert (copy / "results.parquet").read_bytes() == (out / "results.parquet").read_bytes()


def test_parquet_without_pyarrow_is_one_line_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    out = tmp_path / "pq"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--format", "parquet",
                 "--out", str(out), "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ecobench-ml[parquet]" in err and "Traceback" not in err
    assert "in a checkout pip install -e '.[parquet]'" in err  # ecobench-ml is not on PyPI yet
    assert list(tmp_path.iterdir()) == []


def test_the_reference_backend_without_torch_names_the_checkout_install_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A plain install running local_measure.yaml was told `pip install 'ecobench-ml[torch]'`, which
    finds no version while ecobench-ml is not published; the checkout's command is named too."""
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert main(["run", str(SCENARIOS / "local_measure.yaml"), "-q", "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "pip install 'ecobench-ml[torch]', or in a checkout pip install -e '.[torch]'" in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_readme_pandas_snippet_restores_every_keyed_column(run: Path, monkeypatch) -> None:
    """README "Results files": the snippet that maps results.csv's keys back to their texts, run as
    written in a serving run's directory. It mapped four of the keyed columns: layout_choice (keyed in
    every serving and training run) kept its keys ('l1', ...)."""
    pd = pytest.importorskip("pandas")
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Results files", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(run)
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md (Results files)", "exec"), scope)  # noqa: S102
    df = scope["df"]
    doc = json.loads((run / "results.json").read_text())
    assert "layout_choice" in df.columns
    for c in KEYED_COLUMNS:
        if c in df.columns:
            texts = [r.get(c) for r in doc["rows"]]
            assert [None if pd.isna(v) else v for v in df[c]] == [t or None for t in texts], c
