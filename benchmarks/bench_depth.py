"""Reference backend: bias of the depth extrapolation on this host (issue figures, not a timed test).

The model of tests/integration/hardware/backends/test_torch_ref.py's depth test (4 layers, hidden
256), measured at full depth and at ``--layers`` of 4 layers (extrapolated), alternately, ``--repeats``
times each, on one intra-op thread. Prints each pair's ratio (extrapolated / direct full-depth rate),
their mean, standard deviation and range, the median ratio the test asserts on, the identical
full-depth runs' CV, and what each measurement cost (s, model building included).

``--steps N`` instead times single steps of the 0-, 1-, 2- and 4-layer models interleaved, N rounds
in each of ``--repeats`` blocks: each block's median 4-layer step set against the estimates from
shallower steps of the same block, the old one (no layers and 1 layer: t0 + 4 (t1 - t0)) and the
paired one (1 layer times the median of 1 + 3 (t2 - t1) / t1 over alternated pairs). The host's
drift hits all of them alike, so this is the extrapolation's own bias, without the windows' noise.

``--blocks`` instead runs, in one process, ``--repeats`` blocks of back-to-back windows as the
backend measures them (0.5 s each): the 4-layer model (direct), the 1-layer model, the model
without layers, and the 1- and 2-layer steps alternated; each block's direct rate set against the
old extrapolation (no layers and 1 layer: t0 + 4 (t1 - t0)) and the paired one, from that block's
windows. Drift between blocks cancels; what a continuous window does that alternated steps do not
(caches) stays in.

``--workload`` measures other models the same way (repeatable; default ``small``, the test's model):
``bert-large`` (pre-training steps, 512 tokens, batch 8, fp16; 3 of 24 layers), ``llama-8layer``
(training steps of a Llama-2-7B-shaped decoder cut to 8 layers, 2,048 tokens, batch 2, bf16; 2 of 8
layers), both for a GPU (``--device cuda``; 3 repeats), and ``tiny-decoder`` (decoder training, fp32,
1 of 4 layers: the training path anywhere). ``--steps`` and ``--blocks`` time the small model on the CPU.

Usage: python benchmarks/bench_depth.py [--repeats 8] [--layers 1] [--steps 0] [--blocks]
       [--device cpu|cuda] [--workload small|bert-large|llama-8layer|tiny-decoder]...
(about 2 minutes on 2 cores; --steps 100: about 1 minute)
e.g. on a GPU: python benchmarks/bench_depth.py --device cuda --workload bert-large --workload llama-8layer
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import whole  # noqa: E402

ARCH = {"layers": 4, "hidden_size": 256, "heads": 4, "intermediate_size": 1024, "vocab_size": 1000,
        "max_position_embeddings": 128}
MEASURE = {"warmup_s": 0.2, "min_window_s": 0.5, "min_batches": 2, "repetitions": 4, "gemm_s": 0,
           "track_energy": False}
GPU_MEASURE = {"warmup_s": 1.0, "min_window_s": 1.0, "min_batches": 2, "repetitions": 4, "gemm_s": 0.5,
               "track_energy": False}
LLAMA8 = {"kind": "decoder", "layers": 8, "hidden_size": 4096, "heads": 32, "kv_heads": 32,
          "intermediate_size": 11008, "ffn": "swiglu", "vocab_size": 32000, "tied_embeddings": False,
          "max_position_embeddings": 4096}
TINY = {"kind": "decoder", "layers": 4, "hidden_size": 256, "heads": 4, "kv_heads": 2,
        "intermediate_size": 688, "ffn": "swiglu", "vocab_size": 1000, "tied_embeddings": False,
        "max_position_embeddings": 256}


def _training(seqs: int, batch: int, seq_len: int) -> dict[str, Any]:
    return {"total_sequences": seqs, "batch_size": batch, "global_batch_size": batch,
            "phases": [{"seq_len": seq_len, "fraction": 1.0}]}


@dataclass(frozen=True)
class Workload:
    """A model measured at full depth and at ``layers`` of its layers (extrapolated)."""

    name: str
    work: dict[str, Any]  # the scenario's workload block
    config: dict[str, Any]  # configuration fields beyond the reference backend's
    layers: int
    measure: dict[str, Any]
    repeats: int


WORKLOADS = {w.name: w for w in (
    Workload("small", {"architecture": ARCH,
                       "inference": {"rate_per_h": 36000, "seq_len": 64, "batch_size": 4}},
             {}, 1, MEASURE, 8),
    Workload("bert-large", {"model": "bert-large", "training": _training(100_000, 8, 512)},
             {"precision": "fp16", "instances": 1}, 3, GPU_MEASURE, 3),
    Workload("llama-8layer", {"architecture": LLAMA8, "training": _training(100_000, 2, 2048)},
             {"precision": "bf16", "instances": 1}, 2, GPU_MEASURE, 3),
    Workload("tiny-decoder", {"architecture": TINY, "training": _training(1000, 2, 64)},
             {"precision": "fp32", "instances": 1}, 1, GPU_MEASURE, 3),
)}


def scenario(layers: int | None, w: Workload = WORKLOADS["small"], device: str = "cpu") -> object:
    config = {"id": "h", "instance_type": "local", "backend": "reference", "device": device} | w.config
    if layers:
        config["layers"] = layers
    return scenario_from_dict({
        "schema_version": 1, "name": "depth", "baseline": "h", "workload": w.work,
        "configs": [config], "measurement": w.measure})


def timed(s: object) -> tuple[float, float, float]:
    """(samples/s, seconds the evaluation took, other processes' CPU % during)."""
    t0 = time.perf_counter()
    row = evaluate(s).iloc[0]
    return row.throughput_per_instance_per_s, time.perf_counter() - t0, row.host_other_cpu_pct_during


def step_bias(repeats: int, rounds: int) -> None:
    """The extrapolations' own bias: single steps of every depth interleaved (see the docstring)."""
    import dataclasses

    from ecobench.hardware.backends.base import Job
    from ecobench.hardware.backends.torch_ref import make_step

    job = Job(arch=scenario(None).workload.arch(), mode="inference", seq_len=64, batch_size=4, dtype="fp32",
              device="cpu")
    depths = (0, 1, 2, ARCH["layers"])
    steps = {d: make_step(dataclasses.replace(job, layers=d), "cpu")[0] for d in depths}
    for _ in range(20):
        for d in depths:
            steps[d]()
    old, paired = [], []
    for _ in range(repeats):
        t: dict[int, list[float]] = {d: [] for d in depths}
        for r in range(rounds):
            for d in depths if r % 2 == 0 else depths[::-1]:
                t0 = time.perf_counter()
                steps[d]()
                t[d].append(time.perf_counter() - t0)
        med = {d: statistics.median(t[d]) for d in depths}
        full = med[ARCH["layers"]]
        extra = ARCH["layers"] - 1
        old.append(full / (med[0] + ARCH["layers"] * (med[1] - med[0])))
        paired.append(full / (med[1] * statistics.median(1 + extra * (b - a) / a
                                                         for a, b in zip(t[1], t[2], strict=True))))
        print("steps ms: " + ", ".join(f"{d} layers {1e3 * med[d]:.2f}" for d in depths)
              + f"; rate ratio old {old[-1]:.3f}, paired {paired[-1]:.3f}", flush=True)
    for name, r in (("old (0, 1 layer)", old), ("paired (1, 2 layers)", paired)):
        print(f"{name}: extrapolated/direct rate mean {statistics.fmean(r):.3f}, "
              f"sd {statistics.stdev(r):.3f}, range {min(r):.3f}-{max(r):.3f}")


def window_bias(repeats: int) -> None:
    """The extrapolations' bias against direct windows, block by block (see the docstring)."""
    import dataclasses
    from types import SimpleNamespace

    from ecobench.hardware.backends.base import Job
    from ecobench.hardware.backends.torch_ref import _window, extrapolate_depth, make_step, paired_steps

    spec = SimpleNamespace(**MEASURE | {"repetitions": 1, "min_window_s": 0.5})
    job = Job(arch=scenario(None).workload.arch(), mode="inference", seq_len=64, batch_size=4, dtype="fp32",
              device="cpu")
    full_layers = ARCH["layers"]
    steps = {d: make_step(dataclasses.replace(job, layers=d), "cpu")[0] for d in (0, 1, 2, full_layers)}
    for d in steps:
        _window(steps[d], 4, spec)
    old, paired = [], []
    for _ in range(repeats):
        direct = _window(steps[full_layers], 4, spec)
        r1 = _window(steps[1], 4, spec)
        r0 = _window(steps[0], 4, spec)
        pairs = paired_steps(steps[1], steps[2], 4, SimpleNamespace(**vars(spec) | {"warmup_s": 0.0}), "")
        old.append((1 / r0 + full_layers * (1 / r1 - 1 / r0)) ** -1 / direct)
        paired.append(extrapolate_depth([r1], pairs, (1, 2), 1, full_layers)[0][0] / direct)
        print(f"direct {direct:6.1f}/s, 1 layer {r1:6.1f}/s, no layers {r0:7.1f}/s; ratio old {old[-1]:.3f}, "
              f"paired {paired[-1]:.3f} ({len(pairs)} pairs)", flush=True)
    for name, r in (("old (0, 1 layer)", old), ("paired (1, 2 layers)", paired)):
        print(f"{name}: extrapolated/direct rate mean {statistics.fmean(r):.3f}, "
              f"sd {statistics.stdev(r):.3f}, range {min(r):.3f}-{max(r):.3f}")


def alternate(w: Workload, device: str, repeats: int, layers: int) -> None:
    """Full depth and ``layers`` of the model (extrapolated) alternately; their ratios (see the docstring)."""
    full, part = scenario(None, w, device), scenario(layers, w, device)
    timed(full)  # first-call imports and allocator warm-up
    rows: list[tuple[float, float, float, float, float, float]] = []
    for i in range(repeats):
        f, tf, lf = timed(full)
        p, tp, lp = timed(part)
        rows.append((f, p, tf, tp, lf, lp))
        print(f"{i + 1}: full {f:7.1f}/s ({tf:4.1f} s, others {lf:3.0f}%)  extrapolated from {layers} "
              f"{p:7.1f}/s ({tp:4.1f} s, others {lp:3.0f}%)  ratio {p / f:.3f}", flush=True)
    ratios = [p / f for f, p, *_ in rows]
    fulls = [r[0] for r in rows]
    parts = [r[1] for r in rows]
    print(f"ratio extrapolated/direct: mean {statistics.fmean(ratios):.3f}, "
          f"sd {statistics.stdev(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}; median/median (the test's) "
          f"{statistics.median(parts) / statistics.median(fulls):.3f}")
    print(f"identical full-depth runs: {min(fulls):.1f}-{max(fulls):.1f}/s, CV "
          f"{100 * statistics.stdev(fulls) / statistics.fmean(fulls):.1f}%; extrapolated runs CV "
          f"{100 * statistics.stdev(parts) / statistics.fmean(parts):.1f}%")
    print(f"cost per evaluation: full depth {statistics.fmean(r[2] for r in rows):.1f} s, "
          f"{layers} layer(s) + extrapolation {statistics.fmean(r[3] for r in rows):.1f} s")


def main(argv: list[str] | None = None) -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=whole(2, 1000),
                    help="pairs per workload, 2-1,000 (default: small 8, the others 3)")
    ap.add_argument("--layers", type=whole(1, 1000),
                    help="layers measured for the extrapolation (default: small 1, bert-large 3, "
                         "llama-8layer 2, tiny-decoder 1)")
    ap.add_argument("--steps", type=whole(0, 100_000), default=0,
                    help="interleaved single steps, 0-100,000 (default 0: whole evaluations)")
    ap.add_argument("--blocks", action="store_true")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--workload", action="append", choices=list(WORKLOADS),
                    help="model to measure, repeatable (default: small)")
    args = ap.parse_args(argv)
    names = args.workload or ["small"]
    if args.repeats is not None and args.repeats < 2:
        ap.error("--repeats: at least 2 (a spread needs two)")
    if (args.steps or args.blocks) and (args.device != "cpu" or names != ["small"]):
        ap.error("--steps and --blocks time the small model on the CPU")
    if args.device == "cpu":
        torch.set_num_threads(1)
    if args.blocks:
        window_bias(args.repeats or 8)
        return
    if args.steps:
        step_bias(args.repeats or 8, args.steps)
        return
    for name in names:
        w = WORKLOADS[name]
        if len(names) > 1:
            print(f"{name} on {args.device}:", flush=True)
        alternate(w, args.device, args.repeats or w.repeats, args.layers or w.layers)


if __name__ == "__main__":
    main()
