"""Timed passes shared by the benchmarks: wall and CPU seconds of each call after one warm-up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed_passes(fn: Callable[[], T], repeat: int) -> tuple[T, list[float], list[float]]:
    """Call ``fn`` once to warm caches (catalog, fit, kernel tables) as a long-running process would,
    then ``repeat`` times: (the last result, wall seconds of each pass, CPU seconds of each pass)."""
    result = fn()
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return result, times, cpu
