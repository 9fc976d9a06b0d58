"""A results table as columns (name -> numpy array), so sweeps of many thousand rows are built,
compared and written without a row-by-row pass, and the run path needs no pandas."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Columns = dict[str, np.ndarray]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def column(values: Sequence[Any]) -> np.ndarray:
    """Numbers (None as NaN) become a float array, anything else an object array."""
    if values and all(v is None or _is_number(v) for v in values) and any(v is not None for v in values):
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def from_rows(rows: Sequence[dict[str, Any]]) -> Columns:
    """Row dicts -> columns (the union of their keys, in order of first appearance)."""
    names = list(dict.fromkeys(k for r in rows for k in r))
    return {k: column([r.get(k) for r in rows]) for k in names}


def length(t: Columns) -> int:
    return len(next(iter(t.values()))) if t else 0


def concat(parts: Iterable[Columns]) -> Columns:
    """Tables one after another; a column missing from a part is empty (NaN or None) there."""
    parts = [p for p in parts if p]
    names = list(dict.fromkeys(k for p in parts for k in p))
    out: Columns = {}
    for k in names:
        pieces = []
        for p in parts:
            if k in p:
                pieces.append(p[k])
            else:
                pieces.append(np.full(length(p), np.nan) if all(p2[k].dtype.kind == "f" for p2 in parts
                                                               if k in p2) else np.full(length(p), None))
        if any(x.dtype.kind == "O" for x in pieces) or len({x.dtype.kind for x in pieces}) > 1:
            pieces = [x.astype(object) for x in pieces]
        out[k] = np.concatenate(pieces)
    return out


def merged_kind(head: str | None, swept: str | None) -> str:
    """The dtype kind ``concat`` gives a column whose parts have the kinds ``head`` and ``swept``
    (None: that part lacks it): float where every part that has it is float, the one kind where
    every part has it, else object."""
    kinds = {k for k in (head, swept) if k is not None}
    if kinds == {"f"}:
        return "f"
    if len(kinds) == 1 and head is not None and swept is not None:
        return kinds.pop()
    return "O"


class ColumnStats:
    """What deciding a column's written type needs, gathered part by part: the dtype kinds of the
    parts that have it, how many have it, the types of its values as an object column would hold
    them (NaN floats and None left out) and whether every finite float is whole."""

    def __init__(self) -> None:
        self.kinds: dict[str, set[str]] = {}
        self.present: dict[str, int] = {}
        self.types: dict[str, set[type]] = {}
        self.whole: dict[str, bool] = {}

    @staticmethod
    def of(values: Any) -> tuple[set[type], bool]:
        """(types of the values, every finite float whole) of an array or a scalar."""
        a = np.asarray(values) if not isinstance(values, np.ndarray) else values
        if a.dtype.kind == "f":
            finite = a[np.isfinite(a)]
            has = bool(np.any(~np.isnan(a))) if a.size else False
            return ({float} if has else set()), bool(np.all(finite == np.round(finite)))
        if a.dtype.kind == "b":
            return {bool}, True
        if a.dtype.kind in "iu":
            return {int}, True
        types = set()
        whole = True
        for v in a.ravel().tolist() if a.dtype.kind == "O" else a.astype(object).ravel().tolist():
            if v is None or (type(v) is float and v != v):
                continue
            types.add(type(v))
            if type(v) is float and math.isfinite(v) and not v.is_integer():
                whole = False
        return types, whole

    def _add(self, name: str, kind: str, types: set[type], whole: bool) -> None:
        self.kinds.setdefault(name, set()).add(kind)
        self.present[name] = self.present.get(name, 0) + 1
        self.types.setdefault(name, set()).update(types)
        if kind == "f":
            self.whole[name] = self.whole.get(name, True) and whole

    def _settled(self, name: str, kind: str) -> bool:
        """Whether another float part can change nothing but the counts (float seen, not all whole)."""
        return kind == "f" and self.whole.get(name, True) is False and float in self.types.get(name, ())

    def _count(self, name: str, kind: str) -> None:
        self.kinds.setdefault(name, set()).add(kind)
        self.present[name] = self.present.get(name, 0) + 1

    def add_column(self, name: str, col: np.ndarray) -> None:
        """One part's column."""
        self._add(name, col.dtype.kind, *self.of(col))

    def add_compact(self, rec: Any, names: list[str]) -> None:
        """A sweep group's compact columns (``planning.sweep.GroupRows``), without spreading them."""
        width = rec.shape[1]
        for name in names:
            if name == "config_id":
                self._add(name, "O", {str}, True)
                continue
            if name == "is_baseline":
                self._add(name, "O", {bool}, True)
                continue
            if name == "sweep_index":
                self._add(name, "f", {float}, True)
                continue
            v = rec.sweep[name] if name in rec.sweep else rec.row[name]
            if isinstance(v, np.ndarray) and v.ndim:
                if self._settled(name, v.dtype.kind):
                    self._count(name, "f")
                else:
                    self._add(name, v.dtype.kind, *self.of(v))
            elif isinstance(v, list) and len(v) == width:
                types = set(map(type, v))
                types.discard(type(None))
                if float in types and all(x != x for x in v if type(x) is float):
                    types.discard(float)
                self._add(name, "O", types, True)
            elif isinstance(v, (bool, np.bool_)) or v is None or isinstance(v, (str, dict, list)):
                self._add(name, "O", set() if v is None else {type(v)}, True)
            elif self._settled(name, "f"):
                self._count(name, "f")
            else:
                x = float(v)
                self._add(name, "f", set() if x != x else {float}, not math.isfinite(x) or x.is_integer())

    def merged(self, name: str, parts: int) -> str | None:
        """The kind ``concat`` gives the column over ``parts`` parts (None: no part has it)."""
        kinds = self.kinds.get(name)
        if not kinds:
            return None
        if kinds == {"f"}:
            return "f"
        if len(kinds) == 1 and self.present[name] == parts:
            return next(iter(kinds))
        return "O"


def clean(v: Any) -> Any:
    """A JSON-safe scalar: numpy scalars as Python ones, NaN and infinities as None."""
    if hasattr(v, "item") and not isinstance(v, np.ndarray):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def row(t: Columns, i: int) -> dict[str, Any]:
    """Row ``i`` as a JSON-safe dict."""
    return {k: clean(col[i]) for k, col in t.items()}


def take(t: Columns, index: Any) -> Columns:
    """The rows at ``index`` (an integer array or a boolean mask)."""
    return {k: col[index] for k, col in t.items()}


def _quoted(text: str) -> str:
    """``text`` as one CSV field, quoted as the csv module quotes it (minimal: where it holds the
    delimiter, a quote or a line break)."""
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow([text])  # a CR or LF in the text is quoted too
    return buf.getvalue()[:-2] if text else ""


def _cells(col: np.ndarray, integer: bool = False, whole_column: bool | None = None) -> list[str]:
    """A column as CSV fields: numbers in shortest round-trip form (``repr``; an integer column's
    whole numbers without a decimal point, where every value of the column, ``whole_column`` when the
    column is written in parts, is whole), NaN and None empty, text quoted by the csv module."""
    if col.dtype.kind == "f":  # formatting is the cost (about 1 us a number): format each value once
        values, where = np.unique(col, return_inverse=True)
        finite = np.isfinite(values)
        whole = integer and (bool(np.all(values[finite] == np.round(values[finite])))
                             if whole_column is None else whole_column)
        shown = np.array([(str(int(v)) if whole else repr(v)) if ok else "" for v, ok
                          in zip(values.tolist(), finite.tolist(), strict=True)], dtype=object)
        return list(shown[where.ravel()].tolist())
    seen: dict[tuple[type, Any], str] = {}  # keyed by type too: True == 1 == 1.0

    def cell(x: Any) -> str:
        x = clean(x)
        if x is None:
            return ""
        if isinstance(x, float) and integer and x.is_integer():
            return str(int(x))
        return repr(x) if isinstance(x, float) else _quoted(str(x))

    out: list[str] = []
    for x in col.tolist():
        try:
            key = (type(x), x)
            found = seen.get(key)
            if found is None:
                found = seen[key] = cell(x)
        except TypeError:  # unhashable
            found = cell(x)
        out.append(found)
    return out


def write_csv(t: Columns, names: Sequence[str], path: Path, integers: Iterable[str] = ()) -> None:
    """The named columns as CSV with LF line ends, as the csv module writes it (minimal quoting),
    each distinct value formatted and quoted once, column by column (the csv module's writer, cell by
    cell, takes 2.5 s more on 70,000 rows of 110 columns); the columns named in ``integers`` are
    written as whole numbers where every value is one."""
    write_csv_parts([t], names, path, integers)


def write_csv_parts(parts: Iterable[Columns], names: Sequence[str], path: Path, integers: Iterable[str] = (),
                    whole: Mapping[str, bool] | None = None) -> None:
    """``write_csv`` of a table given in parts of rows (each holding every named column, in its
    final type); ``whole``: whether each float column is whole over all parts (else per part)."""
    ints = set(integers)
    with path.open("w", newline="", encoding="utf-8") as f:
        f.write(",".join(_quoted(n) for n in names) + "\n")
        for t in parts:
            columns = [_cells(t[k], k in ints, None if whole is None else whole.get(k)) for k in names]
            f.writelines(",".join(cells) + "\n" for cells in zip(*columns, strict=True))


MIN_CUT_TEXT = 16  # a text column cut to fit keeps at least this many characters, else it is left out


NO_LIMIT = 1_000_000  # the width of output that is not cut (piped or redirected, COLUMNS unset)


def terminal_width() -> int:
    """The width every command fits its output to, one rule: COLUMNS when set (a positive whole number);
    else the terminal's width where stdout is one; else :data:`NO_LIMIT` (piped or redirected output is
    never cut)."""
    import os
    import shutil
    import sys

    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else NO_LIMIT


def note_lines(text: str, width: int) -> list[str]:
    """A note under a table, wrapped at ``width`` (a word never split; one line when it fits)."""
    import textwrap

    return textwrap.wrap(text, width, subsequent_indent=" ", break_long_words=False,
                         break_on_hyphens=False) or [text]


def cut(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters, ending in '...' where it was cut."""
    return text if len(text) <= room else text[:max(room - 3, 0)].rstrip() + "..."


def cut_middle(name: str, room: int) -> str:
    """An identifier in at most ``room`` characters, its middle replaced by '...' where it was cut: the
    start and the end kept (names that share a long prefix differ at their end)."""
    if len(name) <= room:
        return name
    head = max(room - 3, 0) - max(room - 3, 0) // 2
    tail = max(room - 3, 0) - head
    return name[:head] + "..." + (name[-tail:] if tail else "")


def text_table(rows: Sequence[dict[str, Any]], names: Sequence[str], fmt: Any,
               width: int | None = None) -> str:
    """Rows as a right-aligned text table, numbers through ``fmt``; a column that would overflow
    ``width`` (default: the terminal's) is left out and named below the table, but a text column is
    cut to the room left where that keeps :data:`MIN_CUT_TEXT` characters (and its header)."""
    width = terminal_width() if width is None else width
    cells = [[str(n) for n in names]]
    texts = set()
    for r in rows:
        values = [r.get(n) for n in names]
        texts |= {i for i, v in enumerate(values) if not (_is_number(v) or v is None)}
        cells.append([fmt(v) if _is_number(v) or v is None else str(v) for v in values])
    widths = [max(len(c[i]) for c in cells) for i in range(len(names))]
    keep, used, cuts = [], 0, []
    for i, w in enumerate(widths):
        room = width - used - (2 if i else 0)
        if i and w > room:
            if i not in texts or room < max(MIN_CUT_TEXT, len(names[i])):
                continue
            widths[i] = w = room
            cuts.append(names[i])
        keep.append(i)
        used += w + (2 if i else 0)
    lines = ["  ".join(cut(c[i], widths[i]).rjust(widths[i]) for i in keep) for c in cells]
    left = [names[i] for i in range(len(names)) if i not in keep]
    if left or cuts:
        said = ([f"not shown at this width: {', '.join(left)}"] if left else []) + \
               ([f"cut at this width: {', '.join(cuts)}"] if cuts else [])
        lines += note_lines(f"({'; '.join(said)}; every column is in results.csv)", width)
    return "\n".join(lines)


# Every change against the baseline: figure -> the short name of its ``<short>_change_pct`` column.
CHANGE_METRICS = {"energy_kwh": "energy", "cost_usd": "cost", "co2_kg": "co2",
                  "instances": "instances", "duration_h": "duration",
                  "co2_operational_kg": "co2_operational", "co2_embodied_kg": "co2_embodied",
                  "energy_it_kwh": "energy_it", "energy_accelerator_kwh": "energy_accelerator",
                  "co2_it_kg": "co2_it", "co2_accelerator_kg": "co2_accelerator"}


def change_pct(value: Any, baseline: Any) -> Any:
    """The change of ``value`` against ``baseline`` in percent: NaN where the baseline is 0 (a float
    for floats; elementwise for arrays: a column of rows, or the Monte Carlo's draws)."""
    import numpy as np

    v, b = np.asarray(value, dtype=float), np.asarray(baseline, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(b != 0, (v / np.where(b != 0, b, 1.0) - 1.0) * 100.0, np.nan)
    return float(out) if out.ndim == 0 else out
