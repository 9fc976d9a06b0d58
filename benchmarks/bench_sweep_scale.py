"""Run `ecobench run` on 1,000,000-combination sweeps and print, for each, the wall time, the CPU time,
the peak resident memory (the child's own, from wait4) and the size of the results file.

Usage: python benchmarks/bench_sweep_scale.py [--case NAME ...] [--keep DIR] [--checkout DIR]

Cases (each 1,000,000 combinations):
  1m-parquet, 1m-csv   benchmarks/scenarios/layoutlm_sweep_1m.yaml (10 instance types x 10 regions x 100
                       batch sizes x 2 precisions x 50 headrooms), --format parquet and csv
  batch-price          issue 24's reproducer: 1,000 batch sizes x 1,000 prices (g4dn.2xlarge), parquet
  region-headroom      issue 24's reproducer: 5 instance types x 20 regions x 10,000 headrooms, parquet
Targets (issues 23 and 24): under 10 s wall on a 2-core machine, results under 20 MB (parquet), peak
resident memory under 3 GB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_1M = ROOT / "benchmarks" / "scenarios" / "layoutlm_sweep_1m.yaml"
REGIONS = ["us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "eu-west-1", "eu-west-2",
           "eu-west-3", "eu-central-1", "eu-north-1", "eu-south-1", "ap-south-1", "ap-southeast-1",
           "ap-southeast-2", "ap-northeast-1", "ap-northeast-2", "ap-east-1", "sa-east-1", "me-south-1",
           "af-south-1"]


def _reproducer(name: str, sweep: dict) -> dict:
    base = yaml.safe_load(SCENARIO_1M.read_text())
    return {**base, "name": name, "sweep": sweep}


def scenarios(tmp: Path) -> dict[str, tuple[Path, str]]:
    """Case name -> (scenario file, format)."""
    batch_price = _reproducer("sweep_batch_price_1m", {
        "batch_size": list(range(1, 1001)),
        "price_usd_per_h": [round(0.5 + 0.005 * i, 3) for i in range(1000)]})
    region_headroom = _reproducer("sweep_region_headroom_1m", {
        "instance_type": ["inf1.xlarge", "inf2.xlarge", "g4dn.xlarge", "g5.xlarge", "g6.xlarge"],
        "region": REGIONS,
        "max_utilization": [round(0.01 + 0.000099 * i, 6) for i in range(10_000)]})
    out = {"1m-parquet": (SCENARIO_1M, "parquet"), "1m-csv": (SCENARIO_1M, "csv")}
    for case, doc in (("batch-price", batch_price), ("region-headroom", region_headroom)):
        path = tmp / f"{doc['name']}.yaml"
        path.write_text(yaml.safe_dump(doc, default_flow_style=None, width=120))
        out[case] = (path, "parquet")
    return out


def run_case(scenario: Path, fmt: str, out: Path, checkout: Path = ROOT) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS GB, results file bytes) of one `ecobench run` of ``checkout``."""
    cmd = [sys.executable, "-m", "ecobench", "run", str(scenario), "-q", "--format", fmt, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    err = child.stderr.read().decode() if child.stderr else ""
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{scenario.name}: exit {child.returncode}: {err.strip()[-500:]}")
    size = (out / f"results.{fmt}").stat().st_size
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1e6, size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", help="run only these cases (default: all)")
    ap.add_argument("--keep", type=Path, help="write the run directories here (default: a temporary folder)")
    ap.add_argument("--checkout", type=Path, default=ROOT,
                    help="run the ecobench of this checkout (e.g. an older one, for a before and after)")
    args = ap.parse_args()
    if not (args.checkout / "ecobench" / "__init__.py").is_file():
        ap.error(f"--checkout {args.checkout}: no ecobench/__init__.py there; allowed: the root of an "
                 "ecobench checkout")
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        cases = scenarios(Path(tmp))
        unknown = set(args.case or []) - set(cases)
        if unknown:
            ap.error(f"--case: unknown {', '.join(sorted(unknown))}; allowed: {', '.join(cases)}")
        print(f"{'case':<16} {'wall s':>7} {'CPU s':>7} {'peak RSS GB':>12} {'results MB':>11}  "
              f"(load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)")
        for case, (scenario, fmt) in cases.items():
            if args.case and case not in args.case:
                continue
            wall, cpu, rss, size = run_case(scenario, fmt, where / case, args.checkout.resolve())
            print(f"{case:<16} {wall:7.2f} {cpu:7.2f} {rss:12.2f} {size / 1e6:11.1f}  results.{fmt}")


if __name__ == "__main__":
    main()
