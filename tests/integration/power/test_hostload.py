"""Reading the host's background load and judging a measurement."""

import time

import pytest

from ecobench.measure.hostload import CpuClock, cv_pct, other_cpu_pct, quality_warnings
from ecobench.units import MAX_OTHER_CPU_PCT, MAX_THROUGHPUT_CV_PCT


def test_own_work_is_not_counted_as_other_processes():
    import psutil

    a = CpuClock.now()
    t_end = time.monotonic() + 0.5
    while time.monotonic() < t_end:  # busy in this process
        pass
    b = CpuClock.now()
    assert b.own_s - a.own_s > 0.25  # our own busy time is seen as ours (whatever else runs)...
    cpus = psutil.cpu_count(logical=True)
    others_s = (b.machine_busy_s - a.machine_busy_s) - (b.own_s - a.own_s)
    expected = 100.0 * others_s / ((b.wall_s - a.wall_s) * cpus)
    assert other_cpu_pct(a, b) == pytest.approx(max(0.0, min(100.0, expected)))  # ...and taken out


def test_other_process_load_is_seen():
    import subprocess
    import sys

    busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()+3\nwhile time.time()<t: pass"])
    try:
        time.sleep(0.5)
        a = CpuClock.now()
        time.sleep(1.0)
        seen = other_cpu_pct(a, CpuClock.now())
    finally:
        busy.kill()
        busy.wait()
    import os

    assert seen > 0.5 * 100.0 / (os.cpu_count() or 1)  # one busy core of this host


def test_quality_warnings_name_what_and_the_threshold():
    assert quality_warnings(1.0, 2.0, 1.0) == []
    w = quality_warnings(MAX_OTHER_CPU_PCT + 30, 45.0, MAX_THROUGHPUT_CV_PCT + 2)
    assert len(w) == 3 and "before measuring" in w[0] and "while measuring" in w[1] and "CV" in w[2]
    assert f"threshold {MAX_OTHER_CPU_PCT:g}%" in w[0]


def test_cv():
    assert cv_pct([10.0, 10.0]) == 0.0
    assert round(cv_pct([9.0, 11.0]), 3) == 14.142

