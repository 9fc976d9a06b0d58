"""A sweep's results table, streamed: each group's compact rows are pickled to an unnamed temporary
file as they are evaluated, and only the columns the decisions read (ids, objectives, targets, the
swept coordinates) stay in memory, one value per row. The table is read back in chunks of rows, every
column in its final type, to be written (results.csv or results.parquet) without holding it whole.

``SweepTable`` is a read-only mapping of column name -> values: an in-memory column is returned as
is, any other is gathered from the spill file (for tests and small sweeps).
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterator, Mapping
from typing import IO

import numpy as np

from ecobench.planning.sweep_rows import GroupRows, spread
from ecobench.table import CHANGE_METRICS, Columns, ColumnStats, change_pct, concat, merged_kind

CHUNK_ROWS = 131_072  # rows a chunk holds when read back (about 100 MB of columns)
_CHANGES = ["throughput_ratio", *(f"{short}_change_pct" for short in CHANGE_METRICS.values())]


class SweepTable(Mapping[str, np.ndarray]):
    """The configurations' rows (``head``), then every evaluated combination of the sweep."""

    def __init__(self, head: Columns, light: list[str], baseline: str) -> None:
        self.head = head
        self.head_baseline = baseline
        self.light_names = list(dict.fromkeys(["config_id", "sweep_index", *light]))
        self._spill: IO[bytes] | None = tempfile.TemporaryFile(prefix="ecobench-sweep-")  # noqa: SIM115
        self._pieces_by_group: list[Columns] = []
        self._places: list[tuple[int, int]] = []  # (offset, length) of each group's pickle
        self._end = 0
        self._light: Columns = {}
        self.stats = ColumnStats()  # of the sweep's columns (the head's are read from it)
        self.sweep_names: list[str] = []  # in order of first appearance
        self._seen: set[str] = set()
        self.groups = 0
        self.rows = len(head["config_id"])
        self.added: Columns = {}  # columns set after the sweep, full length (pareto, pareto_rank)
        self.sparse: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # bands: name -> (rows, values)

    # -- filling ---------------------------------------------------------------------------------
    def append(self, rec: GroupRows) -> None:
        """One group's rows: spilled whole, their light columns kept."""
        assert self._spill is not None
        data = pickle.dumps(rec, protocol=pickle.HIGHEST_PROTOCOL)
        self._places.append((self._end, len(data)))
        self._spill.write(data)
        self._end += len(data)
        names = _compact_names(rec)
        for name in names:
            if name not in self._seen:
                self._seen.add(name)
                self.sweep_names.append(name)
        self.stats.add_compact(rec, names)
        want = [n for n in names if n in self.light_names or n.startswith("sweep_")]
        self._pieces_by_group.append(spread(rec, want))
        self.groups += 1
        self.rows += rec.size

    def close(self) -> None:
        """The light columns joined (as ``ecobench.table.concat`` joins the head and the groups)."""
        swept = concat(self._pieces_by_group)
        head = {k: self.head[k] for k in self.head if k in swept or k in self.light_names}
        self._light = concat([head, swept]) if swept else dict(head)
        self._pieces_by_group = []
        if self._spill is not None:
            self._spill.flush()

    def sweep_ids(self) -> list[str]:
        """Every combination's id so far."""
        return [c for piece in self._pieces_by_group for c in piece["config_id"].tolist()]

    def set_column(self, name: str, values: np.ndarray) -> None:
        """A column of every row, set after the sweep (``pareto``, ``pareto_rank``)."""
        self.added[name] = values

    def set_rows(self, name: str, rows: np.ndarray, values: np.ndarray) -> None:
        """A float column empty (NaN) but at ``rows`` (the bands of the rows shown)."""
        self.sparse[name] = (np.asarray(rows, dtype=int), np.asarray(values, dtype=float))

    # -- reading ---------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Every column, in the order of the table today's concat would build."""
        first = list(self.head) + [n for n in self.sweep_names if n not in self.head]
        if self.groups:
            first += [c for c in _CHANGES if c not in first and c in self.head]
        return first + [n for n in self.added if n not in first] + \
            [n for n in self.sparse if n not in first and n not in self.added]

    def kind(self, name: str) -> str:
        """The column's final dtype kind."""
        if name in self.added:
            return self.added[name].dtype.kind
        if name in self.sparse or (self.groups and name in _CHANGES):
            return "f"
        head = self.head[name].dtype.kind if name in self.head else None
        if not self.groups:
            assert head is not None
            return head
        return merged_kind(head, self.stats.merged(name, self.groups))

    def column_types(self, name: str) -> set[type]:
        """The types of the column's values as an object column holds them (NaN floats left out)."""
        if name in self.added:
            return ColumnStats.of(self.added[name])[0]
        if name in self.sparse or (self.groups and name in _CHANGES):
            return {float}
        types = set(self.stats.types.get(name, set()))
        if name in self.head:
            types |= ColumnStats.of(self.head[name])[0]
        return types

    def whole(self, name: str) -> bool:
        """Every finite value of a float column is a whole number."""
        if name in self.added:
            return ColumnStats.of(self.added[name])[1]
        if name in self.sparse:
            return ColumnStats.of(self.sparse[name][1])[1]
        if self.groups and name in _CHANGES:
            return False  # numbers (the data dictionary's), never written as integers
        ok = self.stats.whole.get(name, True)
        if name in self.head and self.head[name].dtype.kind == "f":
            ok = ok and ColumnStats.of(self.head[name])[1]
        return ok

    def _records(self) -> Iterator[GroupRows]:
        """The groups' compact rows back from the spill file, in order (read by offset, so two
        readings may go on at once)."""
        if self._spill is None or not self.groups:
            return
        self._spill.flush()
        fd = self._spill.fileno()
        for start, size in self._places:
            yield pickle.loads(os.pread(fd, size, start))  # noqa: S301 (our own file, written above)

    def chunks(self, names: list[str] | None = None, rows: int = CHUNK_ROWS) -> Iterator[Columns]:
        """The table's rows in order, about ``rows`` at a time, every column (or
        those in ``names``) in its final type: the changes against the baseline, the Pareto columns
        and the bands filled in."""
        names = self.names if names is None else names
        kinds = {n: self.kind(n) for n in names}
        base = self._baseline()
        start = 0
        yield self._finish(dict(self.head), names, kinds, base, start, head=True)
        start = len(self.head["config_id"])
        batch: list[Columns] = []
        size = 0
        for rec in self._records():
            for a in range(0, rec.size, rows):  # a large group in slices
                part = spread(rec, None, a, a + rows)
                batch.append(part)
                size += len(part["config_id"])
                if size >= rows:
                    yield self._finish(_stack(batch), names, kinds, base, start)
                    start += size
                    batch, size = [], 0
        if batch:
            yield self._finish(_stack(batch), names, kinds, base, start)

    def _baseline(self) -> dict[str, float]:
        b = int(np.flatnonzero(self.head["config_id"] == self.head_baseline)[0])
        return {col: float(self.head[col].astype(float)[b])
                for col in ["throughput_per_instance_per_s", *CHANGE_METRICS] if col in self.head}

    def _finish(self, t: Columns, names: list[str], kinds: dict[str, str], base: dict[str, float],
                start: int, head: bool = False) -> Columns:
        n = len(t["config_id"])
        if base and self.groups:
            thr = t["throughput_per_instance_per_s"].astype(float)
            t["throughput_ratio"] = thr / base["throughput_per_instance_per_s"]
            for col, short in CHANGE_METRICS.items():
                if col in t and col in base:
                    t[f"{short}_change_pct"] = change_pct(t[col].astype(float), base[col])
        out: Columns = {}
        for name in names:
            if name in self.added:
                out[name] = self.added[name][start:start + n]
                continue
            if name in self.sparse:
                col = np.full(n, np.nan)
                rows, values = self.sparse[name]
                mine = (rows >= start) & (rows < start + n)
                col[rows[mine] - start] = values[mine]
                out[name] = col
                continue
            col = t.get(name)
            if col is None:
                col = np.full(n, np.nan) if self._fill_nan(name, head) else np.full(n, None, dtype=object)
            kind = kinds[name]
            if kind == "O" and col.dtype.kind != "O":
                col = col.astype(object)
            out[name] = col
        return out

    def _fill_nan(self, name: str, head: bool) -> bool:
        """What an empty cell of a column a part lacks holds: NaN where the other parts' columns are
        float, else None (as concat fills)."""
        if head:
            return self.stats.merged(name, self.groups) == "f"
        if name not in self.stats.kinds:
            return self.head[name].dtype.kind == "f"
        return self.stats.kinds[name] == {"f"}

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.added:
            return self.added[name]
        if name in self._light and name not in _CHANGES:
            return self._light[name]
        if name not in self.names:
            raise KeyError(name)
        parts = [c[name] for c in self.chunks([name])]
        return np.concatenate(parts) if parts else np.empty(0)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names

    def columns(self) -> Columns:
        """The whole table in memory (small sweeps, tests)."""
        return {k: self[k] for k in self.names}

    def __del__(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None


def _compact_names(rec: GroupRows) -> list[str]:
    return [*rec.row, "sweep_index", *rec.sweep]


def _stack(batch: list[Columns]) -> Columns:
    """Groups' columns one after another (concat's rules: a column a group lacks is empty there)."""
    return batch[0] if len(batch) == 1 else concat(batch)
