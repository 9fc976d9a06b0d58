"""CSV and JSON writers for a results table."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecobench.version import install_extra

if TYPE_CHECKING:
    import pandas as pd

RESULTS_SCHEMA_VERSION = 1

# Columns every results.csv leads with, in this order.
CORE_COLUMNS = [
    "config_id", "instance_type", "backend", "provenance", "region", "instances",
    "throughput_per_instance_per_s", "duration_h", "power_w", "energy_kwh", "cost_usd",
    "co2_operational_kg", "co2_embodied_kg", "co2_kg", "energy_change_pct", "cost_change_pct",
    "co2_change_pct",
]
# nested: in results.json, not the CSV
JSON_ONLY = ["samples", "kernels", "engine_utilization", "profile", "energy_windows"]
INFERENCE_COLUMNS = ["energy_kwh_per_million", "cost_usd_per_million", "co2_kg_per_million"]
# Long texts repeated down a column: results.csv holds a short key (prefix and number, by first
# appearance), results.json's ``csv_sources`` the text of each key; results.json's rows keep the texts.
KEYED_COLUMNS = {"price_source": "p", "grid_source": "g", "method": "m", "draw_basis": "d",
                 "layout_choice": "l", "measurement_method": "mm", "power_method": "pm"}
CSV_SOURCES = "csv_sources"  # results.json's key for the key -> text table


def _core_first(names: list[str]) -> list[str]:
    first = [c for c in CORE_COLUMNS + INFERENCE_COLUMNS if c in names]
    return first + [c for c in names if c not in first]


def csv_columns(names: list[str]) -> list[str]:
    """The CSV's columns: the core ones first, nested ones (results.json only) left out."""
    return [c for c in _core_first(names) if c not in JSON_ONLY]


def csv_integers(names: list[str]) -> list[str]:
    """Columns results.csv writes as whole numbers: the data dictionary's integers, and swept fields
    (written whole where every value is)."""
    from ecobench.reports.columns import json_type

    return [c for c in names if json_type(c) == "integer" or c.startswith("sweep_")]


def key_texts(t: dict[str, Any], keys: dict[str, dict[str, str]] | None = None
              ) -> tuple[dict[str, Any], dict[str, str]]:
    """The table with each of ``KEYED_COLUMNS`` holding short keys instead of its texts, and the
    key -> text table (results.json's ``csv_sources``). Empty cells stay empty. ``keys``: the keys
    given so far (column -> text -> key), for a table keyed in parts of rows; filled in place."""
    import numpy as np

    out = dict(t)
    keys = {} if keys is None else keys
    for name, prefix in KEYED_COLUMNS.items():
        if name not in t or t[name].dtype.kind != "O":
            continue
        mine = keys.setdefault(name, {})
        cells = []
        for v in t[name].tolist():
            if not isinstance(v, str):
                cells.append(v)
                continue
            k = mine.get(v)
            if k is None:
                k = mine[v] = f"{prefix}{len(mine) + 1}"
            cells.append(k)
        col = np.empty(len(cells), dtype=object)
        col[:] = cells
        out[name] = col
    return out, {k: v for mine in keys.values() for v, k in mine.items()}


def expand_keys(rows: list[dict[str, Any]], sources: dict[str, str] | None) -> list[dict[str, Any]]:
    """results.csv rows (as ``csv.DictReader`` gives them) with keyed cells replaced by their texts
    from results.json's ``csv_sources``; a run written before the keys (long texts inline) passes
    through unchanged."""
    if not sources:
        return rows
    return [{k: sources.get(v, v) if k in KEYED_COLUMNS and isinstance(v, str) else v
             for k, v in r.items()} for r in rows]


PARQUET_EXTRA = install_extra("parquet")
TABLE_FORMATS = ("csv", "parquet")


def require_parquet() -> None:
    """Raise a one-line :class:`InputError` naming the extra to install when pyarrow is missing."""
    from ecobench.errors import InputError

    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise InputError(f"--format parquet needs pyarrow, which is not installed: {PARQUET_EXTRA}") from None


def parquet_type(name: str, kind: str, types: set[type], whole: bool) -> str:
    """How a column is written to Parquet, given its dtype kind, the types of its values as an
    object column holds them (NaN and None left out) and whether its finite floats are all whole:
    ``bool``, ``int`` (the data dictionary's integers and swept fields, where every value is whole),
    ``float``, ``null:<dictionary type>`` (no value in any row), ``float_object``, ``bool_object``
    or ``text``."""
    import numpy as np

    from ecobench.reports.columns import json_type

    if kind == "b":
        return "bool"
    if kind == "f":
        return "int" if (json_type(name) == "integer" or name.startswith("sweep_")) and whole else "float"
    if not types:
        return f"null:{json_type(name)}"
    if types <= {bool, np.bool_}:
        return "bool_object"
    if types <= {int, float}:
        return "float_object"
    return "text" if types == {str} else "text_any"


def _parquet_array(col: Any, how: str) -> Any:
    import numpy as np
    import pyarrow as pa

    empty = {"number": pa.float64(), "integer": pa.int64(), "boolean": pa.bool_()}
    if how == "bool":
        return pa.array(col)
    if how in ("int", "float"):
        finite = np.isfinite(col)
        if how == "int":
            return pa.array(np.where(finite, col, 0).astype(np.int64), mask=~finite)
        return pa.array(col, mask=~finite)
    if how.startswith("null:"):
        return pa.nulls(len(col), type=empty.get(how[5:], pa.string()))
    if how == "bool_object":
        return pa.array(col, type=pa.bool_(), from_pandas=True)
    if how == "float_object":
        return pa.array(np.array(col, dtype=float), from_pandas=True)
    texts = col if how == "text" else np.array(
        [v if v is None or v != v else str(v) for v in col.tolist()], dtype=object)
    return pa.array(texts, type=pa.string(), from_pandas=True)


def write_parquet(t: dict[str, Any], names: list[str], path: Path) -> None:
    """The named columns as Parquet (zstd; text columns dictionary-encoded, so the long repeated
    texts are stored once and kept as texts): numbers as float64, the data dictionary's integer
    columns as int64 where every value is whole, True/False as bool, text as string; an empty cell
    is null. Text columns go to pyarrow whole (converted in C), not value by value."""
    from ecobench.table import ColumnStats

    hows = {}
    for name in names:
        types, whole = ColumnStats.of(t[name])
        hows[name] = parquet_type(name, t[name].dtype.kind, types, whole)
    write_parquet_parts([t], names, path, hows)


def write_parquet_parts(parts: Any, names: list[str], path: Path, hows: dict[str, str]) -> None:
    """``write_parquet`` of a table given in parts of rows (each holding every named column in its
    final type), each column written as ``hows`` says (``parquet_type``); a row group per part."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # dictionary pages for the texts only: numbers are smaller and written faster without (3.3 MB
    # and 0.9 s against 4.4 MB and 2.5 s for 760,000 rows)
    strings = [n for n in names if hows[n].startswith("text")
               or (hows[n].startswith("null:") and hows[n][5:] not in ("number", "integer", "boolean"))]
    writer = None
    try:
        for t in parts:
            table = pa.table([_parquet_array(t[n], hows[n]) for n in names], names=names)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="zstd", use_dictionary=strings)
            writer.write_table(table, row_group_size=max(1, table.num_rows))
    finally:
        if writer is not None:
            writer.close()


def ordered(df: pd.DataFrame) -> pd.DataFrame:
    """The table with the core columns first."""
    return df[_core_first([str(c) for c in df.columns])]


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN -> null)."""
    from ecobench.table import clean

    return [{str(k): clean(v) for k, v in row.items()} for row in ordered(df).to_dict("records")]


def write_json(doc: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def read_results(path: Path, what: str = "results") -> dict[str, Any]:
    """A run directory's results.json, or a baseline file (the one reader of both: report, compare,
    load_run, the gate); a clear error if it is neither, or if an energy, cost or CO2 figure in it is
    not a finite number, 0 or more (a file edited by hand). ``what`` names the file in errors."""
    from ecobench.errors import InputError
    from ecobench.io.rundir import results_file
    from ecobench.io.yamlio import load_json

    f = results_file(path)
    doc = load_json(f, what)
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise InputError(f"{f}: has no 'rows'; not a results or baseline file")
    _check_footprint(doc["rows"], f)
    return doc


# Number columns a run leaves null where they do not apply (the report draws them only when set).
NULL_WHEN_UNSET = frozenset({"numeric_error", "spot_interruption_pct_per_month"})


def null_figure(rows: list[Any]) -> str:
    """The first number a run writes that a hand-edited ``rows`` holds as null, said for a message
    (``rows[0]: configuration 'gpu': energy_kwh is null; allowed: a number``); '' if none."""
    from ecobench.reports.columns import describe, json_type

    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        for name, v in row.items():
            if v is None and name not in NULL_WHEN_UNSET and json_type(name) == "number" \
                    and not name.startswith("sweep_") and describe(name) is not None:
                cid = row.get("config_id")
                which = f"configuration {cid[:40]!r}: " if isinstance(cid, str) else ""
                return f"rows[{i}]: {which}{name} is null; allowed: a number (as ecobench run wrote it)"
    return ""


def _check_footprint(rows: list[Any], f: Path) -> None:
    """Every energy, cost and CO2 figure of ``rows`` (``columns.is_footprint``) null or a finite number,
    0 or more; otherwise bad input naming the file, the row, its configuration and the figure."""
    import math

    from ecobench.errors import InputError
    from ecobench.reports.columns import is_footprint

    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            continue  # the readers' own checks name a row that is not an object
        for name, v in row.items():
            if v is None or not is_footprint(name):
                continue
            number = isinstance(v, int | float) and not isinstance(v, bool)
            if number and math.isfinite(v) and v >= 0:
                continue
            cid = row.get("config_id")
            which = f"configuration {cid[:40]!r}: " if isinstance(cid, str) else ""
            raise InputError(f"{f}: rows[{i}]: {which}{name} is {repr(v)[:40]}; allowed: a finite number, "
                             "0 or more (or null where the figure is unknown)")


# a row read from a sweep's results.csv (not among the rows its results.json shows)
FROM_CSV = "_from_results_csv"


def _cell(text: str) -> Any:
    """A results.csv cell as results.json holds it: '' null, True/False, an integer, a number, a text."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def sweep_csv_rows(f: Path, meta: dict[str, Any], shown: Iterable[str], ids: Iterable[str]
                   ) -> list[dict[str, Any]]:
    """The rows of ``ids`` not in ``shown`` (the rows of results.json ``f``, whose top level is ``meta``)
    from the results.csv beside it, where ``f`` is a sweep run's (its results.json holds the rows the
    run shows; every combination is in results.csv), as results.json holds rows, each with
    ``FROM_CSV``; none where it is no sweep, a baseline file, or has no results.csv."""
    import csv

    from ecobench.version import BASELINE_KIND

    sweep = meta.get("sweep")
    in_csv = sweep.get("rows_in_csv") if isinstance(sweep, dict) else None
    shown = set(shown)
    wanted = {c for c in ids if c not in shown}
    table = f.parent / "results.csv"
    if meta.get("kind") == BASELINE_KIND or not wanted or not isinstance(in_csv, int) \
            or in_csv <= len(shown) or not table.is_file():
        return []
    found: dict[str, dict[str, Any]] = {}
    try:
        with table.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                if row.get("config_id") in wanted:
                    cells = {k: _cell(v) for k, v in row.items() if k and isinstance(v, str)}
                    found[row["config_id"]] = cells | {FROM_CSV: True}
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        from ecobench.errors import InputError

        raise InputError(f"{table}: cannot read the sweep's rows ({exc})") from None
    sources = meta.get("csv_sources")  # results.csv's short keys of long texts (p1, g1, ...)
    return expand_keys(list(found.values()), sources if isinstance(sources, dict) else None)
