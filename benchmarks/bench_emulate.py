"""Emulation speed: BF16-SR matmul against plain FP32 NumPy, `ecobench emulate` on the seeds and on
a Llama 2 70B training step (Trn1 at the published layout, Trn2 with its layout searched), and the
emulated NeuronCore's refit and holdout.

Usage: python benchmarks/bench_emulate.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

from ecobench.hardware.neuron.numerics import matmul

ROOT = Path(__file__).resolve().parents[1]
SR_TARGET = 1.5  # BF16-SR matmul over FP32 NumPy
STEP_TARGET_S = 2.0  # `ecobench emulate` of a 70B decoder training step


def _emulate(path: Path, tmp: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ecobench", "emulate", str(path), "--format", "json",
                    "--results", tmp], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    g = np.random.default_rng(0)
    a = g.normal(0, 1, (1024, 1024)).astype(np.float32)
    b = g.normal(0, 1, (1024, 1024)).astype(np.float32)
    rng = np.random.default_rng(1)
    n = 20
    plain = min(timeit.repeat(lambda: a @ b, number=n, repeat=5)) / n
    sr = min(timeit.repeat(lambda: matmul(a, b, "bf16_sr", rng), number=n, repeat=5)) / n
    print(f"1024^3 matmul: fp32 numpy {plain * 1e3:.1f} ms, emulated bf16-SR {sr * 1e3:.1f} ms, "
          f"ratio {sr / plain:.2f}x (target <= {SR_TARGET}x)")
    tmp = tempfile.mkdtemp()
    for seed in ("layoutlm_realtime", "bert_large_pretrain", "llama_emulated"):
        print(f"ecobench emulate {seed}: {_emulate(ROOT / 'scenarios' / f'{seed}.yaml', tmp):.2f} s")
    big = ROOT / "benchmarks" / "scenarios" / "llama2_70b_emulated.yaml"
    walls = [_emulate(big, tmp) for _ in range(3)]
    print(f"ecobench emulate llama2_70b_emulated (a 70B training step on Trn1 TP32 PP8 and on Trn2 with "
          f"its layout searched, process start included): best {min(walls):.2f} s of 3 "
          f"(target < {STEP_TARGET_S:g} s)")

    from ecobench.reports.emulation import emulate_scenario
    from ecobench.scenario.load import load_scenario

    s = load_scenario(big)
    emulate_scenario(s)  # warm: imports, the numeric check, the layout search's caches
    t0 = time.perf_counter()
    emulate_scenario(s)
    print(f"  in process, warm: {time.perf_counter() - t0:.3f} s")

    from ecobench.hardware.neuron import fit as F

    t0 = time.perf_counter()
    F.fit_all()
    t1 = time.perf_counter()
    F.holdout()
    print(f"emulated NeuronCore: fit {t1 - t0:.2f} s, leave-one-source-out holdout "
          f"{time.perf_counter() - t1:.2f} s")


if __name__ == "__main__":
    # no options: an unknown argument is refused (exit 2, with the usage) rather than ignored
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
