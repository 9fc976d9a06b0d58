"""One sweep group's evaluated cells, kept compact (arrays of the shapes the plan gave, not one value
per row), and their expansion into one value per written row (:func:`spread`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecobench.table import Columns


@dataclass
class GroupRows:
    """One group's evaluated cells, compact: ``row`` as the plan gave it (arrays of shape (headrooms,
    columns) or broadcastable, a column being one (price, region) pair; lists of one value per
    column; scalars), and where each written row comes from (``u``, ``c``: headroom and column)."""

    row: dict[str, Any]
    u: np.ndarray | None  # headroom of each written row; None: rows in (headroom, column) order
    c: np.ndarray | None  # column of each written row
    shape: tuple[int, int]
    ids: list[str]
    index: np.ndarray  # sweep_index of each written row
    sweep: dict[str, Any]  # sweep_<axis> -> per-column list ("per column"), per-headroom array or scalar

    @property
    def size(self) -> int:
        return len(self.ids)


class _Rows:
    """Rows ``start`` to ``stop`` of a group: where each comes from (headroom, column)."""

    def __init__(self, rec: GroupRows, start: int, stop: int) -> None:
        self.rec, self.start, self.stop, self.n = rec, start, stop, stop - start
        self.whole = start == 0 and stop == rec.size and rec.u is None
        if self.whole:
            self.u = self.c = None
        elif rec.u is not None and rec.c is not None:
            self.u, self.c = rec.u[start:stop], rec.c[start:stop]
        else:
            self.u, self.c = np.divmod(np.arange(start, stop), rec.shape[1])

    def gather(self, v: np.ndarray) -> np.ndarray:
        full = np.broadcast_to(v, self.rec.shape)
        return full.ravel() if self.u is None else full[self.u, self.c]


def _column(v: Any, at: _Rows) -> np.ndarray:
    """A compact value as one value per written row: an array broadcast over (headroom, column), a
    list of one value per column, or a constant."""
    if isinstance(v, np.ndarray) and v.ndim:
        return at.gather(v)
    if isinstance(v, list) and len(v) == at.rec.shape[1]:
        cell = np.empty(len(v), dtype=object)
        cell[:] = v
        return at.gather(cell[None, :])
    if isinstance(v, (bool, np.bool_)) or v is None or isinstance(v, (str, dict, list)):
        out = np.empty(at.n, dtype=object)
        out.fill(v)
        return out
    return np.full(at.n, float(v))


def spread(rec: GroupRows, names: Iterable[str] | None = None, start: int = 0,
           stop: int | None = None) -> Columns:
    """The group's rows (all, or ``start`` to ``stop``) as columns (all, or those in ``names``), in
    the order they are written."""
    want = None if names is None else set(names)
    at = _Rows(rec, start, rec.size if stop is None else min(stop, rec.size))
    cols: Columns = {}
    for k, v in rec.row.items():
        if want is not None and k not in want:
            continue
        if k == "config_id":
            ids = np.empty(at.n, dtype=object)
            ids[:] = rec.ids[at.start:at.stop]
            cols[k] = ids
        elif k == "is_baseline":
            cols[k] = _column(False, at)
        else:
            cols[k] = _column(v, at)
    if want is None or "sweep_index" in want:
        cols["sweep_index"] = rec.index[at.start:at.stop].astype(float)
    for k, v in rec.sweep.items():
        if want is None or k in want:
            cols[k] = _column(v, at)
    return cols
