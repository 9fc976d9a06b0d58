"""Measure what one sweep group (one backend evaluation and its plan) costs, per workload mode, with the
analytic backend: the CPU and wall time of `ecobench run` on two sweeps that differ only in their number of
groups, divided by that difference (so start-up and the rows' own costs cancel out). These are the
figures behind ``ecobench.bounds.SWEEP_GROUP_S_CHEAP``.

Usage: python benchmarks/bench_sweep_group.py [--mode inference|serving|training ...] [--repeat N]
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

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import whole  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REGIONS = ["us-east-1", "eu-north-1", "us-west-2"]


def scenario(mode: str, values: int) -> dict:
    """A sweep of ``mode`` whose groups number ``values`` x a few (regions are grid axes: not groups)."""
    if mode == "inference":
        base = yaml.safe_load((ROOT / "scenarios" / "layoutlm_sweep.yaml").read_text())
        base["sweep"] = {"instance_type": ["inf2.xlarge", "g5.xlarge", "g6.xlarge"], "region": REGIONS,
                         "batch_size": list(range(1, values + 1))}
    elif mode == "serving":
        base = {"schema_version": 2, "name": "serving_groups", "baseline": "base",
                "workload": {"model": "llama3-8b", "serving": {
                    "requests_per_h": 18000, "input_tokens": 1024, "output_tokens": 256, "p99_ttft_ms": 2000,
                    "horizon_h": 720}},
                "configs": [{"id": "base", "instance_type": "g6e.xlarge", "precision": "bf16"}],
                "sweep": {"instance_type": ["inf2.48xlarge", "g6e.xlarge", "p4d.24xlarge"], "region": REGIONS,
                          "max_batch": list(range(1, values + 1))}}
    else:
        base = yaml.safe_load((ROOT / "scenarios" / "llama3_8b_finetune.yaml").read_text())
        base["workload"]["architecture"]["from_hf_config"] = str(ROOT / "scenarios" / "models" / "llama3-8b"
                                                                 / "config.json")
        base["sweep"] = {"instance_type": ["p4de.24xlarge", "trn1.32xlarge", "p5.48xlarge"],
                         "region": REGIONS, "instances": list(range(1, values + 1))}
    return base


def cpu_s(doc: dict, tmp: Path, tag: str) -> tuple[float, float]:
    """(CPU seconds (user + system), wall seconds) of one `ecobench run` of ``doc``."""
    path = tmp / f"{tag}.yaml"
    path.write_text(yaml.safe_dump(doc))
    cmd = [sys.executable, "-m", "ecobench", "run", str(path), "-q", "--out", str(tmp / tag)]
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        err = child.stderr.read().decode() if child.stderr else ""
        raise SystemExit(f"{tag}: {err.strip()[-500:]}")
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - t0


def per_group_s(mode: str, small: int, large: int, repeat: int, tmp: Path) -> list[tuple[float, float]]:
    """(CPU, wall) seconds a group, from ``repeat`` pairs of runs with ``small`` and ``large`` values."""
    groups = 3 * (large - small)  # 3 instance types x the extra values
    out = []
    for i in range(repeat):
        a = cpu_s(scenario(mode, small), tmp, f"{mode}_s{i}")
        b = cpu_s(scenario(mode, large), tmp, f"{mode}_l{i}")
        out.append(((b[0] - a[0]) / groups, (b[1] - a[1]) / groups))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", action="append", choices=["inference", "serving", "training"])
    ap.add_argument("--repeat", type=whole(1, 100), default=3, help="runs, 1-100 (default 3)")
    ap.add_argument("--small", type=whole(1, 10_000), default=10,
                    help="swept values of the smaller run, 1-10,000")
    ap.add_argument("--large", type=whole(1, 10_000), default=110,
                    help="swept values of the larger run, 1-10,000")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.mode or ["inference", "serving", "training"]:
            s = per_group_s(mode, args.small, args.large, args.repeat, Path(tmp))
            cpu, wall = [c for c, _ in s], [w for _, w in s]
            print(f"{mode:<10} {statistics.median(cpu) * 1e3:6.1f} ms CPU, "
                  f"{statistics.median(wall) * 1e3:6.1f} ms wall a group "
                  f"(medians of {len(s)}; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
