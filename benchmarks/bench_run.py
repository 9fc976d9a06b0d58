"""Time `ecobench run` on the seed scenarios against `python -c "import pandas"` (start-up floor).

Usage: python benchmarks/bench_run.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ["scenarios/layoutlm_realtime.yaml", "scenarios/bert_large_pretrain.yaml"]


def _time(cmd: list[str], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    n = ap.parse_args().repeat
    floor = _time([sys.executable, "-c", "import pandas"], n)
    print(f"python -c 'import pandas'      median {floor * 1000:7.0f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in SEEDS:
            t = _time([sys.executable, "-m", "ecobench", "run", seed, "-q", "--results", tmp], n)
            print(f"ecobench run {Path(seed).name:<26} median {t * 1000:7.0f} ms  ratio {t / floor:4.2f}x")


if __name__ == "__main__":
    main()
