"""Time `ecobench run` on the 98,304-configuration sweep (12 instance types x 16 regions x 64 batch
sizes x 2 precisions x 4 headrooms) end to end, and report the size of what it writes.

Usage: python benchmarks/bench_sweep.py [--repeat N] [--scenario FILE] [--format csv|parquet]
Target (issue 14): under 10 s on a 2-core machine, report.html under 2 MB. Issue 23's scale target:
benchmarks/scenarios/layoutlm_sweep_1m.yaml (1,000,000 combinations) under 10 s, results under 20 MB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import whole  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "benchmarks" / "scenarios" / "layoutlm_sweep_98304.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=whole(1, 100), default=3, help="runs, 1-100 (default 3)")
    ap.add_argument("--scenario", type=Path, default=SCENARIO)
    ap.add_argument("--format", choices=["csv", "parquet"], default="csv", help="ecobench run --format")
    args = ap.parse_args()
    samples = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            out = Path(tmp) / f"run{i}"
            t0 = time.perf_counter()
            cmd = [sys.executable, "-m", "ecobench", "run", str(args.scenario), "-q", "--format", args.format,
                   "--out", str(out)]
            subprocess.run(cmd,
                           check=True, capture_output=True, cwd=ROOT)
            samples.append(time.perf_counter() - t0)
        sizes = {f.name: f.stat().st_size for f in sorted(out.iterdir())}
    print(f"{args.scenario.name} ({args.format}): median {statistics.median(samples):.2f} s over "
          f"{args.repeat} runs (min {min(samples):.2f}, max {max(samples):.2f})")
    for name, size in sizes.items():
        print(f"  {name:<14} {size / 1e6:8.2f} MB")


if __name__ == "__main__":
    main()
