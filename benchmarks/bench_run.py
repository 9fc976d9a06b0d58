"""Time `ecobench run` on the seed scenarios against `python -c "import pandas"` (the start-up yardstick).

Usage: python benchmarks/bench_run.py [--repeat N] [--from-source]

Each repetition runs the yardstick and then the run, and the ratio is taken pair by pair (a drift in
the machine's speed moves both); the medians are printed. As after `pip install`, ecobench's modules
are byte-compiled first (`compileall`, into the gitignored __pycache__ folders); --from-source
removes them and runs with PYTHONDONTWRITEBYTECODE=1, as an editable install in an environment that
sets it does. The data cache (ecobench.io.datacache) is a fresh folder for each scenario: the first
run, which fills it, is timed on its own.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import whole  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ["scenarios/layoutlm_realtime.yaml", "scenarios/bert_large_pretrain.yaml"]
YARDSTICK = [sys.executable, "-c", "import pandas"]


def _once(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT, env=env)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=whole(1, 100), default=15,
                    help="pairs per seed scenario, 1-100 (default 15)")
    ap.add_argument("--from-source", action="store_true", help="no byte-compiled ecobench modules")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.from_source:
        for cache in (ROOT / "ecobench").rglob("__pycache__"):
            shutil.rmtree(cache)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        how = "from source (no byte-compiled ecobench modules)"
    else:
        compileall.compile_dir(ROOT / "ecobench", quiet=1)
        how = "byte-compiled, as installed by pip"
    print(f"ecobench {how}; {args.repeat} pairs per scenario; medians")
    with tempfile.TemporaryDirectory() as tmp:
        for i, seed in enumerate(SEEDS):
            env["ECOBENCH_CACHE_DIR"] = str(Path(tmp) / f"cache{i}")  # empty: the first run fills it
            out = str(Path(tmp) / "results")
            run = [sys.executable, "-m", "ecobench", "run", seed, "-q", "--results", out]
            cold = _once(run, env)  # fills the data cache (first run after an install)
            pairs = [(_once(YARDSTICK, dict(os.environ)), _once(run, env)) for _ in range(args.repeat)]
            floor = statistics.median(b for b, _ in pairs)
            t = statistics.median(a for _, a in pairs)
            ratio = statistics.median(a / b for b, a in pairs)
            print(f"{Path(seed).name:<26} import pandas {floor * 1000:5.0f} ms  "
                  f"ecobench run {t * 1000:5.0f} ms  ratio {ratio:4.2f}x  "
                  f"(first run, filling the cache: {cold * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
