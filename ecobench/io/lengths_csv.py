"""A serving workload's request lengths from a CSV (``workload.serving.lengths_csv``): columns
``input_tokens`` and ``output_tokens``, one row per request, or a histogram with a third column
``count``. Read through the bounded reader (a regular file, at most ``MAX_BYTES``); bad rows are bad
input naming the file, row and field."""

from __future__ import annotations

import csv
import functools
import io
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ecobench.bounds import MAX_SEQUENCES, MAX_TOKENS, number_text
from ecobench.errors import InputError
from ecobench.words import did_you_mean, shown

MAX_ROWS = 1_000_000
MAX_BYTES = 32 << 20  # a million rows of three whole numbers fit in about 20 MB
MAX_SAMPLES = 100_000  # a histogram's bins become at most this many samples, weighted by their count
# name, least and most value allowed (bounds.py: a sequence's tokens; a bin's requests, so that the
# counts' sum stays finite)
COLUMNS = (("input_tokens", 1, MAX_TOKENS), ("output_tokens", 1, MAX_TOKENS), ("count", 0, MAX_SEQUENCES))


def read_lengths_csv(path: Path, where: str, max_tokens: int | None = None,
                     model: str = "the model") -> tuple[np.ndarray, np.ndarray]:
    """(input lengths, output lengths) as samples, one per request (a histogram's bins repeated by
    their count); :class:`InputError` naming ``where`` (the scenario field that names the file), the
    file and what is wrong otherwise. With ``max_tokens`` (the model's context), a request longer
    than it is bad input too. A file is parsed once while it is unchanged (:func:`file_stamp`)."""
    stamp = file_stamp(path)
    values = (_rows if stamp is None else _rows_cached)(str(path), where, stamp)
    if max_tokens is not None:
        over = (values[:, 2] > 0) & (values[:, 0] + values[:, 1] > max_tokens)
        if over.any():
            i = int(np.argmax(over))
            raise InputError(f"{where}: {path}: line {_file_line(path, i)}: input_tokens + output_tokens "
                             f"{values[i, 0] + values[i, 1]:.0f} exceeds {model}'s max_position_embeddings "
                             f"({max_tokens}); allowed: requests of at most {max_tokens} tokens, as the "
                             "server would refuse longer ones")
    c = values[:, 2]
    keep = c > 0
    reps = np.maximum(1, np.round(c[keep] * min(1.0, MAX_SAMPLES / c.sum()))).astype(int)
    return np.repeat(values[keep, 0], reps), np.repeat(values[keep, 1], reps)


def file_stamp(path: str | Path) -> tuple[int, int, int] | None:
    """What tells a regular file's versions apart (inode, size, modification time); None for anything
    else (what is wrong with it is for the reader to say)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def _rows(path: str, where: str, stamp: tuple[int, int, int] | None) -> np.ndarray:
    """The file's rows as (input_tokens, output_tokens, count), read-only; bad input names the row.
    ``stamp`` is not read: it keys :data:`_rows_cached` to the file's version."""
    from ecobench.io.bounded import read_text

    def bad(msg: str) -> InputError:
        return InputError(f"{where}: {path}: {msg}")

    try:
        text = read_text(path, MAX_BYTES, "lengths CSV")
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    values = _fast_rows(text)
    if values is None:
        values = _checked_rows(text, bad)
    if values[:, 2].sum() <= 0:
        raise bad("every count is 0: no request to read lengths from")
    values.flags.writeable = False
    return values


_rows_cached = functools.lru_cache(maxsize=4)(_rows)


def _fast_rows(text: str) -> np.ndarray | None:
    """The rows of a plain, valid file (whole numbers, no quotes, a header of known columns), parsed
    at once; None for anything else, which :func:`_checked_rows` reads cell by cell to name what is
    wrong (or reads as it would have: a result here is always the one it gives)."""
    text = text.replace("\r\n", "\n")  # a spreadsheet's line ends, as the csv module reads them
    head, _, body = text.partition("\n")
    names = head.split(",")
    known = [c for c, _, _ in COLUMNS]
    if '"' in text or "\r" in text or len(set(names)) != len(names) or not set(names) <= set(known) \
            or not {"input_tokens", "output_tokens"} <= set(names):
        return None
    lines = [line for line in body.split("\n") if line]
    commas = sum(line.count(",") for line in lines)
    if not lines or len(lines) > MAX_ROWS or commas != len(lines) * (len(names) - 1):
        return None
    try:
        cells = np.array(",".join(lines).split(","), dtype=float).reshape(len(lines), len(names))
    except ValueError:
        return None
    values = np.ones((len(lines), len(COLUMNS)))
    for j, (col, least, most) in enumerate(COLUMNS):
        if col in names:
            v = cells[:, names.index(col)]
            if not (np.isfinite(v).all() and (v >= least).all() and (v <= most).all()
                    and (v == np.trunc(v)).all()):
                return None
            values[:, j] = v
    return values


def _file_line(path: Path, row: int) -> int | str:
    """The line of the file that holds data row ``row`` (0: the first after the header), counting the
    blank lines the reader skips, as an editor numbers them; ``row + 2`` where the file cannot be
    read again."""
    from ecobench.io.bounded import read_text

    try:
        reader = csv.reader(io.StringIO(read_text(path, MAX_BYTES, "lengths CSV")))
        next(reader, None)  # the header
        i = 0
        for r in reader:
            if not r:  # a blank line: no row (csv.DictReader skips it too)
                continue
            if i == row:
                return reader.line_num
            i += 1
    except (InputError, csv.Error):
        pass
    return row + 2


def _checked_rows(text: str, bad: Callable[[str], InputError]) -> np.ndarray:
    """The rows, cell by cell: the first bad one is bad input naming its row and field."""
    try:
        reader = csv.DictReader(io.StringIO(text))
        rows, lines = [], []
        for r in reader:  # each row's line in the file: blank lines, which the reader skips, count
            rows.append(r)
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise bad(f"not a readable CSV ({exc})") from None
    header = list(reader.fieldnames or ())
    if header and not {"input_tokens", "output_tokens"} <= set(header):
        found = ",".join(header)
        raise bad("a lengths CSV needs a header with input_tokens and output_tokens (and optionally count), "
                  f"then one row per request or histogram bin; its first line is {shown(found)!r}")
    _check_header(header, bad)
    if not rows and header:
        raise bad("a header and no rows; allowed: the header, then one row per request or histogram bin")
    if not rows:
        raise bad("a lengths CSV needs a header with input_tokens and output_tokens (and optionally count), "
                  "then one row per request or histogram bin")
    if len(rows) > MAX_ROWS:
        raise bad(f"{len(rows):,} rows; at most {MAX_ROWS:,} allowed")
    width = len(reader.fieldnames or [])
    values = np.empty((len(rows), len(COLUMNS)))
    for i, r in enumerate(rows):
        line = lines[i]
        if None in r:
            raise bad(f"line {line}: more fields than the header's {width} columns; allowed: one value per "
                      "column")
        if any(v is None for v in r.values()):
            raise bad(f"line {line}: fewer fields than the header's {width} columns; allowed: one value per "
                      "column (a count left empty is 1)")
        for j, (col, least, most) in enumerate(COLUMNS):
            values[i, j] = _value(r.get(col), col, least, most, line, bad)
    return values


def _check_header(header: list[str], bad: Callable[[str], InputError]) -> None:
    """Every column is a known one, named once: a misspelt ``count`` (``counts``, ``Count``) would
    otherwise be passed over and every bin read as one request."""
    known = [c for c, _, _ in COLUMNS]
    for name in header:
        if header.count(name) > 1:
            raise bad(f"column {shown(name)!r} appears {header.count(name)} times in the header; allowed: "
                      f"each of {', '.join(known)} once")
        if name in known:
            continue
        if not name.strip():
            raise bad(f"the header has an unnamed column (a trailing or doubled comma?); allowed: "
                      f"{', '.join(known)}, comma-separated")
        raise bad(f"column {shown(name)!r}: unknown column{did_you_mean(name.strip(), known)} "
                  f"(allowed: {', '.join(known)}; count is optional)")


def _value(raw: str | None, col: str, least: int, most: float, line: int,
           bad: Callable[[str], InputError]) -> float:
    """One cell: a whole number from ``least`` to ``most`` (a missing cell, or an empty count, is 1)."""
    if raw is None or (col == "count" and raw == ""):
        return 1.0
    try:
        v = float(raw)
    except ValueError:
        raise bad(f"line {line}, {col}: {raw[:40]!r} is not a number; allowed: a whole number >= {least}") \
            from None
    if not math.isfinite(v) or v < least or v != int(v):
        nearest = max(least, round(v)) if math.isfinite(v) else least
        raise bad(f"line {line}, {col}: {raw[:40]} is not allowed; allowed: a whole number >= {least} "
                  f"(nearest valid: {nearest})")
    if v > most:
        raise bad(f"line {line}, {col}: {raw[:40]} is not allowed; allowed: a whole number from {least} to "
                  f"{number_text(most)}")
    return v
