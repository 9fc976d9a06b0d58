"""What the 90% bands cost: the Monte Carlo of a 10-configuration scenario at 1,000 draws, alone and as
the difference between a whole evaluation with and without it (target: under 0.1 s).

Usage: python benchmarks/bench_uncertainty.py [--repeat N] [--draws N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from ecobench.hardware.backends import BACKENDS
from ecobench.hardware.catalog import load_catalog
from ecobench.planning.configs import evaluate_config
from ecobench.planning.evaluate import evaluate
from ecobench.power.uncertainty import bands
from ecobench.scenario.load import scenario_from_dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import whole  # noqa: E402

INSTANCES = ["inf1.2xlarge", "inf2.xlarge", "trn1.2xlarge", "g4dn.xlarge", "g4dn.2xlarge", "g5.xlarge",
             "g6.xlarge", "inf1.xlarge", "inf2.8xlarge", "g6e.xlarge"]


def scenario(draws: int) -> object:
    configs = [{"id": f"c{i}", "instance_type": name,
                "precision": "bf16" if name.startswith(("inf", "trn")) else "fp16",
                "region": "us-east-1" if i % 2 or name.startswith("trn") else "eu-central-1"}
               for i, name in enumerate(INSTANCES)]
    return scenario_from_dict({
        "schema_version": 2, "name": "bench", "baseline": "c4",
        "workload": {"model": "bert-base", "inference": {"rate_per_h": 1e6, "seq_len": 128, "batch_size": 4}},
        "configs": configs, "uncertainty": {"draws": draws, "seed": 0}})


def _median(f, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=whole(1, 100), default=9, help="timed passes, 1-100 (default 9)")
    ap.add_argument("--draws", type=whole(1, 100_000), default=1000,
                    help="Monte Carlo draws, 1-100,000 (default 1,000)")
    args = ap.parse_args()
    s = scenario(args.draws)
    cat = load_catalog()
    mcs = []
    for i, cfg in enumerate(s.configs):  # type: ignore[attr-defined]
        mcs.append(evaluate_config(s, cfg, cat, BACKENDS, i).mc)  # type: ignore[arg-type]
    bands(mcs, "c4", args.draws, 0)  # warm: the held-out error fits are cached after the first call
    mc = _median(lambda: bands(mcs, "c4", args.draws, 0), args.repeat)
    with_bands = _median(lambda: evaluate(s), args.repeat)  # type: ignore[arg-type]
    without = _median(lambda: evaluate(scenario(0)), args.repeat)  # type: ignore[arg-type]
    print(f"Monte Carlo, {len(mcs)} configurations x {args.draws} draws: median {mc * 1000:6.1f} ms")
    print(f"evaluate with bands {with_bands * 1000:6.1f} ms, without {without * 1000:6.1f} ms: "
          f"+{(with_bands - without) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
