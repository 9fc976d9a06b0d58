"""Which overhead explains how much: the emulated NeuronCore with one mechanism removed at a time.

For every published Neuron point the stored fit's prediction is recomputed with one mechanism's
work set to zero (or one fitted parameter set to its ideal value), without refitting; the table
gives the median and range of the speed-up that removal buys, per kind of point. Also prints the
held-out table (every point: published, predicted out of sample, error).

Usage: python benchmarks/neuron_overheads.py
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

import numpy as np

from ecobench.hardware.neuron import fit as F
from ecobench.hardware.neuron.work import MECH_INDEX

MECHANISMS = {
    "layout transposes (TensorE)": [("tensor", "transpose")],
    "PSUM evacuation": [("vector", "evacuation"), ("scalar", "evacuation")],
    "vector/scalar instruction cost": [("vector", "instructions"), ("scalar", "instructions")],
    "elementwise passes": [("vector", "elementwise"), ("scalar", "elementwise"), ("gpsimd", "elementwise")],
    "weight streaming (DMA)": [("dma", "weights")],
    "activation spills and saves (DMA)": [("dma", "activations")],
    "run-time DMA transfers (descriptors)": [("dma", "transfers")],
}
PARAMS = {
    "partial engine overlap (exposed -> 0)": ("exposed", 1e-9),
    "TensorE utilisation limit (-> 1)": ("tensor_limit", 1.0),
    "semaphore sync per kernel (-> 0)": ("sync_s", 1e-12),
    "graph launch and host (-> 0)": ("launch_s", 1e-12),
    "collectives below link rate (-> 1)": ("collective", 1.0),
}


def _without(p: F.Prepared, cols: list[tuple[str, str]]) -> F.Prepared:
    sets = {}
    for name, (work, mult) in p.sets.items():
        w = work.copy()
        for c in cols:
            w[:, MECH_INDEX[c]] = 0.0
        sets[name] = (w, mult)
    return dataclasses.replace(p, sets=sets)


def _report(label: str, base: np.ndarray, new: np.ndarray, kinds: list[str]) -> None:
    gain = new / base - 1.0
    parts = []
    for kind in ("encoder_infer", "encoder_train", "llm_train"):
        g = [100 * x for x, k in zip(gain, kinds, strict=True) if k == kind]
        parts.append(f"{kind} {statistics.median(g):+6.1f}% [{min(g):+.0f}..{max(g):+.0f}]")
    print(f"  {label:<40} " + "  ".join(parts))


def main() -> None:
    """Print the ablation table, the held-out table and the fitted values."""
    prepared = list(F.prepared_points())
    f = F.current_fit()
    base = F.predict(prepared, f)
    kinds = [p.point.kind for p in prepared]
    print("speed-up of the in-sample prediction when one overhead is removed (median [range]):")
    for label, cols in MECHANISMS.items():
        _report(label, base, F.predict([_without(p, cols) for p in prepared], f), kinds)
    for label, (name, value) in PARAMS.items():
        values = dict(f.values)
        for k in values:
            if k == name:
                values[k] = value
            elif k.startswith(name + "."):
                values[k] = 1.0
        _report(label, base, F.predict(prepared, F.NeuronFit(values, f.points)), kinds)
    print("\nheld out (each source predicted by a fit without it):")
    print(f"  {'point':<40} {'published':>10} {'predicted':>10} {'error':>8}  source held out")
    rows = F.holdout()
    for r in rows:
        scale = r.point.seq_len if r.point.kind == "llm_train" else 1.0
        print(f"  {r.point.id:<40} {r.published * scale:>10.4g} {r.predicted * scale:>10.4g} "
              f"{r.error_pct:>+7.1f}%  {r.source}")
    errs = [abs(r.error_pct) for r in rows]
    print(f"  median |error| {statistics.median(errs):.1f}%, worst {max(errs):.1f}%, "
          f"within 25%: {sum(e <= 25 for e in errs)} of {len(errs)}")
    print("\nfitted:", {k: f"{v:.3g}" for k, v in f.values.items()})


if __name__ == "__main__":
    # no options: an unknown argument is refused (exit 2, with the usage) rather than ignored
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
