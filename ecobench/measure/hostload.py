"""How busy the rest of the host is while we measure, and whether a measurement can be trusted.

Other processes (a build, a second test run, another tenant's VM through steal time) slow the model
down and, under a machine-wide power model, add their power to ours. The figure used is the share
of the host's total CPU time that went to anything but this process:

    other % = 100 x (machine busy CPU-s - this process's CPU-s) / (wall s x logical CPUs)

with busy = user + nice + system + irq + softirq + steal (psutil's counters, /proc/stat on Linux).
It is read once for :data:`LOAD_PROBE_S` before warming up (nothing of ours runs then) and over
every measured window.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

from ecobench.units import LOAD_PROBE_S, MAX_OTHER_CPU_PCT, MAX_THROUGHPUT_CV_PCT

__all__ = ["CpuClock", "cv_pct", "other_cpu_pct", "probe_other_cpu_pct", "quality_warnings"]

_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")


@dataclass(frozen=True)
class CpuClock:
    """A reading of the wall clock, the machine's busy CPU time and this process's CPU time."""

    wall_s: float
    machine_busy_s: float
    own_s: float

    @classmethod
    def now(cls) -> CpuClock:
        import psutil

        t = psutil.cpu_times()
        busy = sum(getattr(t, f, 0.0) for f in _BUSY)
        own = psutil.Process().cpu_times()
        return cls(time.monotonic(), busy, own.user + own.system + own.children_user + own.children_system)


def other_cpu_pct(a: CpuClock, b: CpuClock) -> float:
    """Share of the host's CPU capacity used by other processes between two readings, in %."""
    import psutil

    wall = b.wall_s - a.wall_s
    cpus = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    if wall <= 0:
        return 0.0
    other = (b.machine_busy_s - a.machine_busy_s) - (b.own_s - a.own_s)
    return max(0.0, min(100.0, 100.0 * other / (wall * cpus)))


def probe_other_cpu_pct(seconds: float = LOAD_PROBE_S) -> float:
    """The other processes' CPU share over ``seconds`` while this process sleeps."""
    a = CpuClock.now()
    time.sleep(seconds)
    return other_cpu_pct(a, CpuClock.now())


def cv_pct(values: list[float] | tuple[float, ...]) -> float:
    """Coefficient of variation (sample standard deviation / mean), in %."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return 100.0 * statistics.stdev(values) / mean if mean else float("inf")


def quality_warnings(before_pct: float, during_pct: float, throughput_cv_pct: float) -> list[str]:
    """Why a measurement is not reproducible (empty when it is)."""
    out = []
    if before_pct > MAX_OTHER_CPU_PCT:
        out.append(f"other processes used {before_pct:.0f}% of the host's CPU before measuring "
                   f"(threshold {MAX_OTHER_CPU_PCT:g}%)")
    if during_pct > MAX_OTHER_CPU_PCT:
        out.append(f"other processes used {during_pct:.0f}% of the host's CPU while measuring "
                   f"(threshold {MAX_OTHER_CPU_PCT:g}%)")
    if throughput_cv_pct > MAX_THROUGHPUT_CV_PCT:
        out.append(f"throughput varied {throughput_cv_pct:.1f}% (CV) across the windows "
                   f"(threshold {MAX_THROUGHPUT_CV_PCT:g}%)")
    return out
