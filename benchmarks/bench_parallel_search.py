"""Time the layout search over every cluster of 1 to 2,048 instances, with context parallelism and
offload among the axes:

* GPT-3 175B (300B tokens, 2,048-token sequences, 1,536-sequence batches) on p4d.24xlarge,
  p5.48xlarge and trn1n.32xlarge (the search of version 1).
* Llama 3.1 405B (126 layers, hidden 16,384, 128 heads, 8 key/value heads; Dubey et al. 2024,
  Table 3) pre-trained on 1T tokens in two phases, 8,192 tokens (90%) and 131,072 tokens (10%),
  16M-token batches, on p5.48xlarge, trn2.48xlarge and p4d.24xlarge: every valid (tensor, context,
  pipeline, data, ZeRO, recompute, micro-batch) layout of every size, plus the offloaded variants
  of those that do not fit (p5 and p4d: the instances with host-link figures).
* DeepSeek-V3 671B (mixture-of-experts: 256 routed experts, 8 per token, MLA) pre-trained on 1T
  tokens of 4,096-token sequences in 15,360-sequence batches (DeepSeek-V3 report, arXiv 2412.19437),
  on the same three types: expert-parallel degrees among the axes.

Each search evaluates the step model for every layout and phase and keeps the fastest fitting
layout per cluster size. Target: under 2 s for the 405B searches together, and for the 671B ones.
The CPU time is printed beside the wall time: on a shared machine the wall time includes waiting for
a core.

Usage: python benchmarks/bench_parallel_search.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.memory import DEFAULT_MEMORY_HEADROOM_PCT, usable_gib
from ecobench.parallel.search import Phase, enumerate_layouts, evaluate_phases, with_offload
from ecobench.parallel.step import Workload
from ecobench.workloads import preset
from ecobench.workloads.architecture import Architecture

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import timed_passes, whole  # noqa: E402

MAX_INSTANCES = 2048
LLAMA31_405B = Architecture("llama3.1-405b", layers=126, hidden_size=16384, heads=128,
                            intermediate_size=53248, vocab_size=128256, max_position_embeddings=131072,
                            kind="decoder", kv_heads=8, ffn="swiglu", tied_embeddings=False, norm="rmsnorm",
                            position="rotary", bias=False, type_vocab_size=0)
BATCH_TOKENS = 16 * 1024 * 1024
CASES = {
    "gpt3-175b": (["p4d.24xlarge", "p5.48xlarge", "trn1n.32xlarge"],
                  [Phase(Workload(preset("gpt3-175b"), 2048, 1536, "bf16"), 3e11 / 2048)], 336.0),
    "llama3.1-405b": (["p5.48xlarge", "trn2.48xlarge", "p4d.24xlarge"],
                      [Phase(Workload(LLAMA31_405B, s, BATCH_TOKENS // s, "bf16"), 1e12 * f / s)
                       for s, f in ((8192, 0.9), (131072, 0.1))], 2000.0),
    "deepseek-v3": (["p5.48xlarge", "trn2.48xlarge", "p4d.24xlarge"],
                    [Phase(Workload(preset("deepseek-v3"), 4096, 15360, "bf16"), 1e12 / 4096)], 2000.0),
}


def search(model: str) -> dict[str, tuple[int, int, int, str]]:
    """Per instance type: (layouts evaluated, cluster sizes with a fitting layout, fewest instances
    for the deadline, the layout there)."""
    cat = load_catalog()
    types, phases, deadline_h = CASES[model]
    out = {}
    for name in types:
        inst = cat.instance(name)
        cl = instance_cluster(cat, inst, "bf16")
        cl = type(cl)(**{**cl.__dict__, "memory_gib": usable_gib(cl.memory_gib, DEFAULT_MEMORY_HEADROOM_PCT)})
        eff = current_fit().efficiency(cat.accelerators[inst.spec.accelerator or ""].vendor, "training",
                                       inst.spec.accelerator)
        L = enumerate_layouts(phases, cl.ranks_per_node, None, MAX_INSTANCES, cl.max_zero_stage)
        ev = with_offload(evaluate_phases(phases, cl, L, eff), phases, cl, eff)
        sizes = np.unique(ev.layouts.nodes[ev.fits])
        meets = ev.fits & (ev.total_s <= deadline_h * 3600)
        if meets.any():
            n = int(ev.layouts.nodes[meets].min())
            i = ev.best(meets & (ev.layouts.nodes == n))
            assert i is not None
            out[name] = (len(ev.layouts), len(sizes), n, ev.layouts.layout(i).describe())
        else:
            out[name] = (len(ev.layouts), len(sizes), -1, "")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=whole(1, 100), default=5, help="timed passes, 1-100 (default 5)")
    n = ap.parse_args().repeat
    for model in CASES:
        res, times, cpu = timed_passes(lambda: search(model), n)  # noqa: B023 (called inside the loop)
        deadline = CASES[model][2]
        for name, (layouts, sizes, fewest, lay) in res.items():
            print(f"{model:<14} {name:<15} {layouts:>8,} layouts, {sizes:>4} sizes fit, "
                  f"fewest for {deadline:g} h: {fewest} ({lay})")
        print(f"{model}: search over 1-{MAX_INSTANCES} instances x {len(res)} types: "
              f"median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}, "
              f"{n} runs; "
              f"CPU time median {statistics.median(cpu):.2f} s)")


if __name__ == "__main__":
    main()
