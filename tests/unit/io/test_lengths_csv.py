"""The lengths CSV reader alone: rows as samples, a histogram's bins repeated by their count."""

import numpy as np
import pytest

from ecobench.errors import InputError
from ecobench.io.lengths_csv import MAX_SAMPLES, read_lengths_csv


def test_rows_are_samples_and_a_histogram_weighs_its_bins(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("input_tokens,output_tokens\n100,10\n300,30\n")
    li, lo = read_lengths_csv(p, "f")
    assert li.tolist() == [100, 300] and lo.tolist() == [10, 30]
    p.write_text("input_tokens,output_tokens,count\n100,10,3\n300,30,1\n500,50,0\n")
    li, lo = read_lengths_csv(p, "f")
    assert np.mean(li) == pytest.approx(150) and np.mean(lo) == pytest.approx(15)


def test_a_huge_histogram_is_scaled_to_the_sample_cap_keeping_its_shape(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text(f"input_tokens,output_tokens,count\n100,10,{10 * MAX_SAMPLES}\n200,20,{10 * MAX_SAMPLES}\n")
    li, _ = read_lengths_csv(p, "f")
    assert len(li) == MAX_SAMPLES and np.mean(li) == pytest.approx(150)


def test_every_count_zero_is_bad_input_naming_the_field(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("input_tokens,output_tokens,count\n100,10,0\n")
    with pytest.raises(InputError, match=r"^workload\.serving\.lengths_csv: .*every count is 0"):
        read_lengths_csv(p, "workload.serving.lengths_csv")


def test_the_fast_reading_of_a_plain_file_is_the_cell_by_cell_one():
    """Whatever file the whole-file parse accepts, the csv module's cell-by-cell reading gives the same
    rows (spaces, exponents, decimals, blank lines, CRLF, empty counts, columns in any order): what it
    cannot vouch for it hands to the cell-by-cell reader."""
    import random

    from ecobench.io.lengths_csv import _checked_rows, _fast_rows

    cells = ["1", "12", " 12", "12 ", "1e3", "1.0", "1.5", "0", "-3", "", "nan", "inf", "1_000", "+4", "  ",
             "1e400", "007", "1.", "12\t", "٣"]
    headers = [["input_tokens", "output_tokens"], ["output_tokens", "input_tokens", "count"],
               ["input_tokens", "output_tokens", "count"], ["input_tokens", "input_tokens"]]
    rng = random.Random(1)
    fast = 0
    for _ in range(3000):
        cols = rng.choice(headers)
        rows = [",".join(rng.choice(cells) if rng.random() < 0.3 else str(rng.randint(1, 50)) for _ in cols)
                for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.2:
            rows.insert(1, "")
        text = rng.choice(["\n", "\r\n"]).join([",".join(cols), *rows]) + rng.choice(["", "\n"])
        got = _fast_rows(text)
        if got is None:
            continue
        fast += 1
        assert np.array_equal(got, _checked_rows(text, InputError)), text
    assert fast > 500


def test_a_file_is_parsed_once_while_unchanged_and_again_when_it_changes(tmp_path, monkeypatch):
    import os

    import ecobench.io.bounded as bounded

    reads = []
    real = bounded.read_text
    monkeypatch.setattr(bounded, "read_text", lambda *a: reads.append(a) or real(*a))
    p = tmp_path / "l.csv"
    p.write_text("input_tokens,output_tokens\n100,10\n300,30\n")
    for _ in range(3):
        li, _ = read_lengths_csv(p, "f", max_tokens=4096)
    assert len(reads) == 1 and li.tolist() == [100, 300]
    p.write_text("input_tokens,output_tokens\n500,10\n")
    os.utime(p, ns=(1, 1))  # a new modification time even on a coarse clock
    li, _ = read_lengths_csv(p, "f")
    assert len(reads) == 2 and li.tolist() == [500]
    with pytest.raises(InputError, match="line 2: input_tokens \\+ output_tokens 510 exceeds"):
        read_lengths_csv(p, "f", max_tokens=300)


@pytest.mark.parametrize("text", ["input_tokens,output_tokens\n", "input_tokens,output_tokens,count\r\n"])
def test_a_header_without_rows_says_it_has_no_rows(tmp_path, text):
    """It was told it 'needs a header with input_tokens and output_tokens', which it has."""
    p = tmp_path / "l.csv"
    p.write_text(text)
    with pytest.raises(InputError, match=r"a header and no rows; allowed: the header, then one row per "):
        read_lengths_csv(p, "workload.serving.lengths_csv")


@pytest.mark.parametrize(("row", "field", "allowed"), [
    ("100,5,1e308\n200,50,1e308", "count", r"from 0 to 10\^15"),
    ("20000000,5,1", "input_tokens", "from 1 to 16,777,216"),
    ("100,100000000000000000000,1", "output_tokens", "from 1 to 16,777,216"),
])
def test_a_cell_above_its_bound_is_bad_input_naming_row_field_and_range(tmp_path, row, field, allowed):
    """Counts whose sum overflows to infinity (numpy warned, and the plan went on) and lengths beyond
    any context are refused, as the scenario's bounds refuse them (bounds.py)."""
    p = tmp_path / "l.csv"
    p.write_text(f"input_tokens,output_tokens,count\n{row}\n")
    expected = rf"^f: .*l\.csv: line 2, {field}: .* is not allowed; allowed: a whole number {allowed}$"
    with pytest.raises(InputError, match=expected):
        read_lengths_csv(p, "f")


@pytest.mark.parametrize("header, says", [
    ("input_tokens,output_tokens,counts", r"column 'counts': unknown column; did you mean 'count'\?"),
    ("input_tokens,output_tokens,request_id", r"column 'request_id': unknown column \(allowed: input_tokens, "
                                              r"output_tokens, count"),
    ("input_tokens,output_tokens,count,count", r"column 'count' appears 2 times in the header"),
    ("input_tokens,output_tokens,", r"the header has an unnamed column"),
])
def test_a_column_other_than_the_three_is_bad_input_not_passed_over(tmp_path, header, says):
    """A misspelt count column was passed over: every bin read as one request, so the means (and the
    plan) were those of the bins, not of the requests (1,050 input tokens instead of 1,998 here)."""
    p = tmp_path / "l.csv"
    p.write_text(f"{header}\n100,10,1\n2000,500,1000\n")
    with pytest.raises(InputError, match=rf"^workload\.serving\.lengths_csv: .*l\.csv: {says}"):
        read_lengths_csv(p, "workload.serving.lengths_csv")


def test_a_header_without_the_two_lengths_is_named_in_the_message(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("input_tokens, output_tokens\n100, 10\n")
    with pytest.raises(InputError, match=r"needs a header with input_tokens and output_tokens .*"
                                         r"its first line is 'input_tokens, output_tokens'$"):
        read_lengths_csv(p, "f")


@pytest.mark.parametrize(("text", "max_tokens", "says"), [
    # a bad cell after blank lines: the checked reader counted data rows (it said row 4, then row 3)
    ("input_tokens,output_tokens\n100,10\n\n200,20\n300,-1\n", None, r"line 5, output_tokens: -1 is not"),
    ("input_tokens,output_tokens\r\n100,10\r\n\r\n200,0\r\n", None, r"line 4, output_tokens: 0 is not"),
    # a valid file (the fast path) whose request exceeds the context: it said row 4, the third data row
    ("input_tokens,output_tokens\n100,10\n\n\n200,20\n300,9000\n", 8192, r"line 6: input_tokens \+ output"),
])
def test_a_bad_row_is_named_by_its_line_in_the_file_blank_lines_counted(tmp_path, text, max_tokens, says):
    """The line an editor shows: the blank lines the CSV reader skips are counted, so the user is
    sent to the bad row, not to one that is fine."""
    p = tmp_path / "l.csv"
    p.write_bytes(text.encode())
    with pytest.raises(InputError, match=says):
        read_lengths_csv(p, "f", max_tokens=max_tokens)
