"""Maintenance: fit the draw model on the measured-power corpus and print the values for
ecobench/power/data/power_model.yaml (draw.compute_bound, draw.memory_bound, draw.sync, host_scale;
draw.stall is sourced, not fitted).

    python tools/power_refit.py

Run it after editing ecobench/power/data/measured/; tests/unit/power/test_power_fit.py checks that the
YAML's central values equal a fresh fit, and its ranges the leave-one-group-out refits.
"""

from __future__ import annotations

from ecobench.power.fit import corpus_features, fit_with_ranges

YAML_KEYS = {"compute": "draw.compute_bound", "memory": "draw.memory_bound", "sync": "draw.sync",
             "host_scale": "host_scale"}


def main() -> None:
    feats = corpus_features()
    groups = sorted({f.group for f in feats})
    print(f"{len(feats)} fitted points from {len(groups)} groups: {', '.join(groups)}")
    for k, v in fit_with_ranges(feats).items():
        print(f"{YAML_KEYS[k]:20s} central {v['central']:.4f}  low {v['low']:.4f}  high {v['high']:.4f}")


if __name__ == "__main__":
    main()
