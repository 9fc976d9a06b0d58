"""Why Trainium rounds stochastically: a small MLP trained with weights held in FP32, BF16-RNE and
BF16-SR. With round-to-nearest-even, an update smaller than half a BF16 ulp of its weight is lost;
stochastic rounding keeps it in expectation, so BF16-SR tracks the FP32 loss curve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecobench.hardware.neuron.numerics import round_bf16_rne, round_bf16_sr

MODES = ("fp32", "bf16_rne", "bf16_sr")


@dataclass(frozen=True)
class DemoConfig:
    steps: int = 400
    batch: int = 64
    inputs: int = 32
    hidden: int = 64
    lr: float = 0.001
    seed: int = 0


def _teacher(cfg: DemoConfig) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(cfg.seed)
    return g.normal(0, 1, (cfg.inputs, cfg.hidden)), g.normal(0, 1, (cfg.hidden, 1))


def train(mode: str, cfg: DemoConfig = DemoConfig()) -> list[float]:
    """Loss per step of a 2-layer tanh MLP fitting a random teacher MLP, SGD, weights stored in
    ``mode`` (compute in FP32 from the stored weights; each update is rounded into storage)."""
    t1, t2 = _teacher(cfg)
    g = np.random.default_rng(cfg.seed + 1)
    sr_rng = np.random.default_rng(cfg.seed + 2)
    store = {"fp32": lambda w: w.astype(np.float32), "bf16_rne": round_bf16_rne,
             "bf16_sr": lambda w: round_bf16_sr(w, sr_rng)}[mode]
    # weights start near 1 in magnitude so BF16's ulp (2**-7 at 1) dwarfs lr x gradient
    w1 = store(g.normal(0, 1, (cfg.inputs, cfg.hidden)).astype(np.float32) + 1.0)
    w2 = store(g.normal(0, 1, (cfg.hidden, 1)).astype(np.float32) / np.sqrt(cfg.hidden))
    data = np.random.default_rng(cfg.seed + 3)
    losses = []
    for _ in range(cfg.steps):
        x = data.normal(0, 1, (cfg.batch, cfg.inputs)).astype(np.float32) / np.sqrt(cfg.inputs)
        y = np.tanh(x @ t1) @ t2 / np.sqrt(cfg.hidden)
        h = np.tanh(x @ w1)
        pred = h @ w2
        err = pred - y
        losses.append(float(np.mean(err**2)))
        g_pred = 2 * err / cfg.batch
        g_w2 = h.T @ g_pred
        g_h = g_pred @ w2.T * (1 - h**2)
        g_w1 = x.T @ g_h
        w1 = store(w1 - cfg.lr * g_w1)
        w2 = store(w2 - cfg.lr * g_w2)
    return losses


def run_demo(cfg: DemoConfig = DemoConfig()) -> dict[str, object]:
    """Loss curves for the three storage modes, and the final loss of each (mean of last 20 steps)."""
    curves = {m: train(m, cfg) for m in MODES}
    final = {m: float(np.mean(c[-20:])) for m, c in curves.items()}
    return {"final_loss": final, "initial_loss": {m: c[0] for m, c in curves.items()},
            "steps": cfg.steps, "lr": cfg.lr, "loss_curves": curves,
            "note": "weights stored in the mode; updates rounded into storage every step"}
