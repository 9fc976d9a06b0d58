"""Column tables: building, joining, CSV and the terminal table."""

import csv
import math
import os
import shutil
import sys

import numpy as np
import pytest

from ecobench.table import NO_LIMIT, concat, from_rows, row, terminal_width, text_table, write_csv


def test_rows_to_columns_and_back():
    t = from_rows([{"a": 1.0, "b": "x"}, {"a": None, "c": True}])
    assert t["a"].dtype.kind == "f" and math.isnan(t["a"][1])
    assert t["b"].tolist() == ["x", None]
    assert row(t, 1) == {"a": None, "b": None, "c": True}


def test_concat_fills_missing_columns():
    t = concat([{"a": np.array([1.0, 2.0])}, {"a": np.array([3.0]), "s": np.array(["y"], dtype=object)}])
    assert t["a"].tolist() == [1.0, 2.0, 3.0]
    assert t["s"].tolist() == [None, None, "y"]


def test_csv_round_trips_numbers_quotes_text_and_leaves_nan_empty(tmp_path):
    values = np.array([0.1, 1 / 3, np.nan, 1e-12, 123456789.125])
    text = np.array(['a,b', 'say "hi"', None, "line\nbreak", "cr\rhere"], dtype=object)
    flags = np.array([True, False, True, False, True], dtype=object)
    path = tmp_path / "t.csv"
    write_csv({"v": values, "t": text, "f": flags}, ["v", "t", "f"], path)
    with path.open(newline="") as f:
        got = list(csv.reader(f))
    assert got[0] == ["v", "t", "f"]
    assert [r[0] for r in got[1:]] == ["0.1", repr(1 / 3), "", "1e-12", "123456789.125"]
    assert [r[1] for r in got[1:]] == ['a,b', 'say "hi"', "", "line\nbreak", "cr\rhere"]
    assert path.read_bytes().count(b"\n") == 7 and b"\r\n" not in path.read_bytes()  # LF ends
    assert [r[2] for r in got[1:]] == ["True", "False", "True", "False", "True"]


def test_text_table_fits_the_width_and_names_what_it_left_out():
    rows = [{"config_id": "a", "cost_usd": 1234567.0, "long_column_name": 1.0}]
    out = text_table(rows, ["config_id", "cost_usd", "long_column_name"], lambda v: f"{v:,.0f}", width=30)
    assert all(len(line) <= 30 for line in out.splitlines()[:2])
    assert "1,234,567" in out
    assert "not shown at this width: long_column_name" in " ".join(out.split())  # the note wrapped at 30


def test_text_table_cuts_a_wide_text_column_to_the_room_left_and_wraps_its_note():
    """new-user try: at 80 columns the layouts table left out layout_choice whole and its note was one
    170-character line the terminal broke mid-word; a text column is now cut to the room left (at least
    16 characters) and the note wrapped at the width."""
    choice = "auto: fastest of 975 layouts that fit (2355 valid)"
    rows = [{"config_id": "p4d", "mfu": 0.5, "layout_choice": choice}]
    out = text_table(rows, ["config_id", "mfu", "layout_choice"], lambda v: f"{v:g}", width=40)
    lines = out.splitlines()
    assert all(len(line) <= 40 for line in lines), lines
    assert lines[1].endswith("auto: fastest of 975...") and len(lines[1]) == 40, lines
    assert "cut at this width: layout_choice" in " ".join(out.split()) and len(lines) > 3
    narrow = text_table(rows, ["config_id", "mfu", "layout_choice"], lambda v: f"{v:g}", width=25)
    assert "not shown at this width: layout_choice" in " ".join(narrow.split())  # under 16: left out
    assert "auto" not in narrow.splitlines()[1]


@pytest.mark.parametrize(("columns", "tty", "width"), [
    ("60", False, 60), ("60", True, 60),  # COLUMNS set: it, piped or not
    (None, True, 120),  # a terminal: its width
    (None, False, NO_LIMIT), ("", False, NO_LIMIT), ("wide", False, NO_LIMIT),  # piped: never cut
])
def test_terminal_width_is_one_rule_columns_then_the_terminal_then_no_limit(monkeypatch, columns, tty,
                                                                            width):
    """ux29: the CLI's own reader ignored COLUMNS where output was piped and table.terminal_width used
    it; `compare` read shutil's 80-column fallback and cut piped output."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((120 if tty else 80, 24)))
    assert terminal_width() == width
