"""Time serving plans: a Llama 3 8B chat load (36,000 requests/h; gamma lengths of mean 1,024 in and
256 out with CV 1 and 1.5, bursty arrivals of CV 1.5; median TTFT 20 s and TPOT 100 ms, p99 TTFT 120 s and
TPOT 300 ms: loose enough for static batches on the smallest instances) planned on 100
configurations: 10 instance types x 5 scheduler settings (continuous with the default chunk budget,
with 2,048 tokens, unchunked; static; disaggregated, or on Neuron's static caches continuous with
4,096) x 2 weight types, each with automatic tensor degree and batch search
(every tensor degree that divides the instance's ranks, every batch up to what fits memory). Times
the planning alone (evaluate: backends, plans, power, cost) in a warm process. Target: under 2 s.
The whole `ecobench run` process, with its imports and report, is timed by bench_run.py.

Usage: python benchmarks/bench_serving_plan.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from ecobench.errors import EcobenchError
from ecobench.planning import tpot_dist
from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import timed_passes  # noqa: E402

INSTANCES = ["inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge", "trn1.32xlarge", "g6e.xlarge",
             "g6e.12xlarge", "g6.12xlarge", "p4de.24xlarge", "p5.48xlarge"]
NEURON = ("inf2", "trn1")  # static key/value caches: no disaggregated scheduler
SCHEDULERS = [{}, {"max_num_batched_tokens": 2048}, {"chunked_prefill": False}, {"scheduler": "static"},
              {"scheduler": "disaggregated"}]
CONFIGS = [(f"{t.replace('.', '_')}_{i}_{w or 'bf16'}", t,
            ({"max_num_batched_tokens": 4096}
             if t.startswith(NEURON) and kw.get("scheduler") == "disaggregated" else kw)
            | ({"weight_precision": w} if w else {}))
           for t in INSTANCES for i, kw in enumerate(SCHEDULERS) for w in (None, "int8")]
SCENARIO = {
    "schema_version": 2, "name": "bench_serving",
    "workload": {"model": "llama3-8b", "serving": {
        "requests_per_h": 36000, "input_tokens": 1024, "output_tokens": 256, "input_tokens_cv": 1.0,
        "output_tokens_cv": 1.5, "arrival_cv": 1.5, "median_ttft_ms": 20000, "median_tpot_ms": 100,
        "p99_ttft_ms": 120000, "p99_tpot_ms": 300, "horizon_h": 720}},
    "configs": [{"id": i, "instance_type": t, "precision": "bf16", **kw} for i, t, kw in CONFIGS],
    "baseline": "p5_48xlarge_0_bf16",
}


def _repeat(text: str) -> int:
    """``--repeat``: a whole number of passes, 1-100."""
    if not text.isdigit() or not 1 <= int(text) <= 100:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: a whole number 1-100")
    return int(text)


def _planned(s: object) -> object:
    """One pass: the solved quantiles kept from the last pass are dropped first (each pass solves its
    own, sharing them between its configurations only), as the figures before that memo were taken."""
    tpot_dist.clear_quantiles_memo()
    return evaluate(s)


def main(argv: list[str] | None = None) -> int:
    """Plan the scenario ``--repeat`` times and print its median time; a scenario the planner refuses
    (e.g. a model that fits no configuration after a change): one line and its exit code (2), as the
    CLI gives."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=_repeat, default=5, metavar="N", help="timed passes, 1-100 (default 5)")
    n = ap.parse_args(argv).repeat
    try:
        s = scenario_from_dict(SCENARIO)
        df, times, cpu = timed_passes(lambda: _planned(s), n)
    except EcobenchError as exc:
        print(f"bench_serving_plan: error: {os.path.relpath(__file__)}: SCENARIO: {exc}", file=sys.stderr)
        return exc.exit_code
    cols = ["config_id", "scheduler", "instances", "tensor_parallel", "replicas", "batch", "ttft_ms_p99",
            "tpot_ms_p99",
            "energy_j_per_output_token", "cost_usd_per_million_output_tokens"]
    print(df[cols].head(12).to_string(index=False, float_format=lambda v: f"{v:,.3g}"))
    print(f"planned {len(CONFIGS)} serving configurations: median {statistics.median(times):.3f} s "
          f"(min {min(times):.3f}, max {max(times):.3f}, {n} runs); CPU time median "
          f"{statistics.median(cpu):.3f} s (what a loaded machine's wall clock overstates)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
