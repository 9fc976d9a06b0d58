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


def whole(least: int, most: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``least`` (to ``most``); anything else is refused
    with what is allowed (argparse then exits 2 with the usage)."""
    import argparse

    allowed = f"a whole number {least}-{most:,}" if most is not None else f"a whole number >= {least}"

    def parse(text: str) -> int:
        t = text.strip()
        if not t.isdigit() or int(t) < least or (most is not None and int(t) > most):
            raise argparse.ArgumentTypeError(f"{text!r}: allowed: {allowed}")
        return int(t)

    return parse


def at_least(least: float) -> Callable[[str], float]:
    """An argparse ``type``: a finite number of at least ``least`` (seconds, a share)."""
    import argparse
    import math

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or v < least:
            raise argparse.ArgumentTypeError(f"{text!r}: allowed: a number >= {least:g}")
        return v

    return parse
