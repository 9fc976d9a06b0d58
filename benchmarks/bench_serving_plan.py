"""Time serving plans: a Llama 3 8B chat load (36,000 requests/h, 1,024 in, 256 out, TTFT 1 s, TPOT
50 ms, p99 targets) planned on 10 configurations, each with automatic tensor degree and batch search
(every tensor degree that divides the instance's ranks, every batch up to what fits memory). Times
the planning alone (evaluate: backends, plans, power, cost) in a warm process. Target: under 1 s.
The whole `ecobench run` process, with its imports and report, is timed by bench_run.py.

Usage: python benchmarks/bench_serving_plan.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from ecobench.planning.evaluate import evaluate
from ecobench.scenario.model import scenario_from_dict

CONFIGS = [
    ("inf2_xl", "inf2.xlarge", {}), ("inf2_8xl", "inf2.8xlarge", {"weight_precision": "int8"}),
    ("inf2_24xl", "inf2.24xlarge", {}), ("inf2_48xl", "inf2.48xlarge", {}),
    ("trn1", "trn1.32xlarge", {}), ("g6e_xl", "g6e.xlarge", {}), ("g6e_12xl", "g6e.12xlarge", {}),
    ("g6_12xl", "g6.12xlarge", {}), ("p4de", "p4de.24xlarge", {}), ("p5", "p5.48xlarge", {}),
]
SCENARIO = {
    "schema_version": 2, "name": "bench_serving",
    "workload": {"model": "llama3-8b", "serving": {
        "requests_per_h": 36000, "input_tokens": 1024, "output_tokens": 256, "ttft_ms": 1000, "tpot_ms": 50,
        "ttft_p99_ms": 3000, "tpot_p99_ms": 150, "horizon_h": 720}},
    "configs": [{"id": i, "instance_type": t, "precision": "bf16", **kw} for i, t, kw in CONFIGS],
    "baseline": "p5",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    n = ap.parse_args().repeat
    s = scenario_from_dict(SCENARIO)
    evaluate(s)  # warm caches (catalog, fit, kernel tables) as a long-running process would
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        df = evaluate(s)
        times.append(time.perf_counter() - t0)
    cols = ["config_id", "instances", "tensor_parallel", "replicas", "batch", "ttft_ms", "tpot_ms",
            "energy_j_per_output_token", "cost_usd_per_million_output_tokens"]
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:,.3g}"))
    print(f"planned {len(CONFIGS)} serving configurations: median {statistics.median(times):.3f} s "
          f"(min {min(times):.3f}, max {max(times):.3f}, {n} runs)")


if __name__ == "__main__":
    main()
