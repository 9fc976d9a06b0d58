"""Time a serving workload's lengths CSV: a file of N requests (default 1,000,000, the most a file may
have; lengths drawn uniformly, 16-4,000 tokens in and 1-2,000 out) read cold (parsed, not from the
cache), and a scenario that names it loaded and planned on two configurations (the file parsed once:
the scenario's means, the context check of every row and the plan's distributions share it).

Usage: python benchmarks/bench_lengths_csv.py [--rows N] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from ecobench.io import lengths_csv
from ecobench.planning import tpot_dist
from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import load_scenario

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import timed_passes  # noqa: E402

SCENARIO = """schema_version: 2
name: bench_lengths_csv
workload:
  model: llama3-8b
  serving: {requests_per_h: 36000, lengths_csv: lengths.csv, median_ttft_ms: 20000, median_tpot_ms: 100,
            horizon_h: 720}
configs:
  - {id: g6e, instance_type: g6e.xlarge, precision: bf16}
  - {id: p5, instance_type: p5.48xlarge, precision: bf16}
baseline: p5
"""


def _whole(text: str, least: int) -> int:
    if not text.isdigit() or int(text) < least:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: a whole number >= {least}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=lambda t: min(_whole(t, 1), lengths_csv.MAX_ROWS), default=1_000_000,
                    metavar="N", help="requests in the file (default and most 1,000,000)")
    ap.add_argument("--repeat", type=lambda t: _whole(t, 1), default=3, metavar="N",
                    help="timed passes (default 3)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lengths.csv"
        ins, outs = rng.integers(16, 4000, args.rows), rng.integers(1, 2000, args.rows)
        path.write_text("input_tokens,output_tokens\n" + "\n".join(map("{},{}".format, ins, outs)) + "\n")
        (Path(tmp) / "s.yaml").write_text(SCENARIO)

        def cold_read() -> int:
            lengths_csv._rows_cached.cache_clear()
            return len(lengths_csv.read_lengths_csv(path, "lengths_csv")[0])

        def load_and_plan() -> int:
            lengths_csv._rows_cached.cache_clear()
            tpot_dist.clear_quantiles_memo()  # each pass solves its own quantiles
            return len(evaluate(load_scenario(Path(tmp) / "s.yaml")))

        mb = path.stat().st_size / 1e6
        n, read_s, _ = timed_passes(cold_read, args.repeat)
        _, plan_s, _ = timed_passes(load_and_plan, args.repeat)
    print(f"lengths CSV of {n:,} requests ({mb:.1f} MB): read cold in median "
          f"{statistics.median(read_s):.3f} s; scenario loaded and planned (2 configurations) in median "
          f"{statistics.median(plan_s):.3f} s ({args.repeat} runs each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
