"""How big a scenario's ``sweep:`` block is: its combinations, its groups (one backend evaluation
each: ``scenario/sweep.py`` groups the axes the planner evaluates together as arrays) and what they
will take, from the per-group and per-row costs in ``ecobench.bounds``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Sweep = Mapping[str, Sequence[Any]] | None  # a scenario's ``sweep`` (field -> values), None without one
GRID_AXES = ("region", "price_usd_per_h", "max_utilization")  # evaluated together, as numpy arrays


def combinations(sweep: Sweep) -> int:
    """How many configurations the sweep expands to (0 without a sweep)."""
    return math.prod(len(v) for v in sweep.values()) if sweep else 0


def group_count(sweep: Sweep) -> int:
    """How many groups (one backend evaluation each) the sweep expands to (0 without a sweep)."""
    if not sweep:
        return 0
    return math.prod(len(v) for k, v in sweep.items() if k not in GRID_AXES)


@dataclass(frozen=True)
class Estimate:
    """What a sweep will take: seconds and resident memory (GiB), from the counts of groups and rows
    and the per-group, per-row costs in ``ecobench.bounds``."""

    seconds: float
    memory_gib: float


def estimate(sweep: Sweep, cheap: bool, mode: str = "inference") -> Estimate:
    """The sweep's estimated time and memory; ``cheap``: every configuration's backend is cheap to
    ask (``Capabilities.cheap``), and then a group costs what one of workload ``mode`` (inference,
    serving or training) does, else a group costs as the emulated backend's."""
    from ecobench import bounds as b

    rows = combinations(sweep)
    group_s = b.SWEEP_GROUP_S_CHEAP[mode] if cheap else b.SWEEP_GROUP_S
    largest = math.prod(len(v) for k, v in (sweep or {}).items() if k in GRID_AXES)
    groups = group_count(sweep)
    seconds = groups * group_s + rows * b.SWEEP_ROW_S
    kept = rows * b.SWEEP_ROW_BYTES + groups * b.SWEEP_GROUP_BYTES[mode] + largest * b.SWEEP_GROUP_CELL_BYTES
    memory = b.SWEEP_BASE_GIB + kept / 2**30
    return Estimate(seconds, memory)
