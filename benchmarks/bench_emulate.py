"""Emulation speed: BF16-SR matmul against plain FP32 NumPy, and `ecobench emulate` on the seeds.

Usage: python benchmarks/bench_emulate.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

from ecobench.hardware.neuron.numerics import matmul

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    g = np.random.default_rng(0)
    a = g.normal(0, 1, (1024, 1024)).astype(np.float32)
    b = g.normal(0, 1, (1024, 1024)).astype(np.float32)
    rng = np.random.default_rng(1)
    n = 20
    plain = min(timeit.repeat(lambda: a @ b, number=n, repeat=5)) / n
    sr = min(timeit.repeat(lambda: matmul(a, b, "bf16_sr", rng), number=n, repeat=5)) / n
    print(f"1024^3 matmul: fp32 numpy {plain * 1e3:.1f} ms, emulated bf16-SR {sr * 1e3:.1f} ms, "
          f"ratio {sr / plain:.2f}x (target < 2x)")
    tmp = tempfile.mkdtemp()
    for seed in ("layoutlm_realtime", "bert_large_pretrain"):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ecobench", "emulate", f"scenarios/{seed}.yaml",
                        "--format", "json", "--results", tmp], cwd=ROOT, check=True, capture_output=True)
        print(f"ecobench emulate {seed}: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
