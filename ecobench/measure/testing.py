"""Test doubles for the meters, so tests of the measurement path need no GPU and no Zeus.

- :class:`ReplayZeusMonitor` replays recorded GPU windows through ``ZeusMonitor``'s
  ``begin_window`` / ``end_window``, like Zeus's own ``ReplayZeusMonitor`` replays its log files.
  Give it the energies (J) of each window, or read a Zeus log file (``ZeusMonitor(log_file=...)``:
  ``start_time,window_name,elapsed_time,gpu0_energy,...``) with :meth:`ReplayZeusMonitor.from_log`.
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ecobench.errors import InputError
from ecobench.io.bounded import snippet

__all__ = ["ReplayMeasurement", "ReplayZeusMonitor"]


@dataclass(frozen=True)
class ReplayMeasurement:
    """A window as ``zeus.monitor.Measurement`` reports it: time (s), energy per GPU index (J)."""

    time: float
    gpu_energy: dict[int, float]

    @property
    def total_energy(self) -> float:
        """All GPUs' energy (J)."""
        return sum(self.gpu_energy.values())


@dataclass
class ReplayZeusMonitor:
    """Replays ``windows`` in order, one per ``end_window``: each a GPU energy in J (GPU 0) or
    {GPU index: J}. ``times_s`` gives each window's recorded length; without it a window lasts as
    long as the code between ``begin_window`` and ``end_window`` ran. ``keys`` lists the windows
    ended, in order."""

    windows: Sequence[float | Mapping[int, float]]
    times_s: Sequence[float] | None = None
    keys: list[str] = field(default_factory=list)
    _open: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.times_s is not None and len(self.times_s) != len(self.windows):
            raise ValueError(f"{len(self.times_s)} times for {len(self.windows)} windows")

    @classmethod
    def from_log(cls, path: str | Path) -> ReplayZeusMonitor:
        """The windows of a ``ZeusMonitor`` log file, with their recorded lengths."""
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        gpus = [c for c in (rows[0].keys() if rows else ()) if c.startswith("gpu") and c.endswith("_energy")]
        if not rows or not gpus or "elapsed_time" not in rows[0]:
            raise InputError(f"{path}: not a Zeus log (needed: a header start_time,window_name,"
                             "elapsed_time,gpu<i>_energy,... and one row per window)")
        for c in gpus:
            if not c[3:-7].isdigit():
                raise InputError(f"{path}: column {snippet(c)}; allowed: gpu<i>_energy with i a GPU index "
                                 "(gpu0_energy, gpu1_energy, ...)")
        # line 1 is the header; a window's length must be > 0 s, its energy >= 0 J, both finite
        windows = [{int(c[3:-7]): _number(r, c, path, line, "J", 0.0) for c in gpus}
                   for line, r in enumerate(rows, start=2)]
        return cls(windows, [_number(r, "elapsed_time", path, line, "s", None)
                             for line, r in enumerate(rows, start=2)])

    def begin_window(self, key: str, sync_execution: bool = True) -> None:
        """Start the window ``key`` (an open key is an error, as in Zeus)."""
        if key in self._open:
            raise ValueError(f"Measurement window '{key}' already exists")
        self._open[key] = time.monotonic()

    def end_window(self, key: str, sync_execution: bool = True) -> ReplayMeasurement:
        """The next recorded window."""
        try:
            start = self._open.pop(key)
        except KeyError:
            raise ValueError(f"Measurement window '{key}' does not exist") from None
        i = len(self.keys)
        if i >= len(self.windows):
            raise ValueError(f"window {i + 1} asked for, {len(self.windows)} recorded")
        self.keys.append(key)
        w = self.windows[i]
        energy = dict(w) if isinstance(w, Mapping) else {0: float(w)}
        elapsed = self.times_s[i] if self.times_s is not None else time.monotonic() - start
        return ReplayMeasurement(elapsed, energy)


def _number(row: Mapping[str, str | None], name: str, path: str | Path, line: int, unit: str,
            least: float | None) -> float:
    """Field ``name`` of a Zeus log row: a finite number, at least ``least`` (None: above 0)."""
    text = row.get(name)
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        value = math.nan
    low_ok = value > 0 if least is None else value >= least
    if not (math.isfinite(value) and low_ok):
        allowed = "a number above 0" if least is None else f"a number >= {least:g}"
        raise InputError(f"{path}: line {line}: field {name} is {snippet(text or '')}; allowed: "
                         f"{allowed} ({unit}), finite")
    return value
