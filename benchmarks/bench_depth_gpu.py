"""Reference backend on a GPU: the depth extrapolation against direct full-depth measurements.

Two workloads, each measured alternately at full depth and at a few of its layers (extrapolated),
``--repeats`` times each: BERT-large pre-training steps (512 tokens, batch 8, fp16; 3 of 24 layers)
and training steps of a Llama-2-7B-shaped decoder cut to 8 layers (2,048 tokens, batch 2, bf16; 2 of 8
layers). Prints each pair's ratio (extrapolated / direct rate), their mean and spread, and the
identical full-depth runs' CV. Needs a CUDA GPU (``--device cuda``, the default); ``--device cpu
--tiny`` runs the same code on a small model anywhere.

Usage: python benchmarks/bench_depth_gpu.py [--repeats 3] [--device cuda] [--tiny]
"""

from __future__ import annotations

import argparse
import statistics
import time

from ecobench.planning.evaluate import evaluate
from ecobench.scenario.model import scenario_from_dict

MEASURE = {"warmup_s": 1.0, "min_window_s": 1.0, "min_batches": 2, "repetitions": 4, "gemm_s": 0.5,
           "track_energy": False}
LLAMA8 = {"kind": "decoder", "layers": 8, "hidden_size": 4096, "heads": 32, "kv_heads": 32,
          "intermediate_size": 11008, "ffn": "swiglu", "vocab_size": 32000, "tied_embeddings": False,
          "max_position_embeddings": 4096}
CASES = {
    "bert-large pre-training, fp16, 3 of 24 layers": (
        {"model": "bert-large", "training": {"total_sequences": 100_000, "batch_size": 8,
                                             "global_batch_size": 8,
                                             "phases": [{"seq_len": 512, "fraction": 1.0}]}},
        {"precision": "fp16", "instances": 1}, 3),
    "Llama-2-7B-shaped 8-layer training, bf16, 2 of 8 layers": (
        {"architecture": LLAMA8, "training": {"total_sequences": 100_000, "batch_size": 2,
                                              "global_batch_size": 2,
                                              "phases": [{"seq_len": 2048, "fraction": 1.0}]}},
        {"precision": "bf16", "instances": 1}, 2),
}
TINY = {"kind": "decoder", "layers": 4, "hidden_size": 256, "heads": 4, "kv_heads": 2,
        "intermediate_size": 688, "ffn": "swiglu", "vocab_size": 1000, "tied_embeddings": False,
        "max_position_embeddings": 256}


def scenario(work: dict, config: dict, device: str, layers: int | None) -> object:
    c = {"id": "h", "instance_type": "local", "backend": "reference", "device": device} | config
    if layers:
        c["layers"] = layers
    return scenario_from_dict({"schema_version": 1, "name": "depth_gpu", "baseline": "h", "workload": work,
                               "configs": [c], "measurement": MEASURE})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="a small decoder instead (a check of the script)")
    ap.add_argument("--only", default="", help="run only the workloads whose name contains this")
    args = ap.parse_args()
    cases = ({"tiny decoder training, fp32, 1 of 4 layers": (
        {"architecture": TINY, "training": {"total_sequences": 1000, "batch_size": 2, "global_batch_size": 2,
                                            "phases": [{"seq_len": 64, "fraction": 1.0}]}},
        {"precision": "fp32", "instances": 1}, 1)} if args.tiny else CASES)
    for name, (work, config, layers) in cases.items():
        if args.only not in name:
            continue
        direct, ratios = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            d = evaluate(scenario(work, config, args.device, None)).iloc[0].throughput_per_instance_per_s
            t1 = time.perf_counter()
            e = evaluate(scenario(work, config, args.device, layers)).iloc[0].throughput_per_instance_per_s
            t2 = time.perf_counter()
            direct.append(d)
            ratios.append(e / d)
            print(f"{name}: direct {d:.2f}/s ({t1 - t0:.0f} s), extrapolated {e:.2f}/s ({t2 - t1:.0f} s), "
                  f"ratio {e / d:.3f}", flush=True)
        cv = 100 * statistics.stdev(direct) / statistics.fmean(direct) if len(direct) > 1 else 0.0
        print(f"{name}: extrapolated/direct mean {statistics.fmean(ratios):.3f}, range {min(ratios):.3f}-"
              f"{max(ratios):.3f}; direct runs CV {cv:.1f}%", flush=True)


if __name__ == "__main__":
    main()
