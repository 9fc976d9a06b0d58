"""Maintenance: refit the emulated NeuronCore's parameters and store them with the held-out errors.

Run ``python tools/neuron_refit.py`` after editing ``data/published_points.yaml`` (or the
engine model, or the analytic model whose held-out errors the disagreement check reads); a test
checks the stored file against a fresh fit.
"""

from __future__ import annotations

from pathlib import Path

from ecobench.hardware.neuron.fit import FIT_FILE, write_fit


def main() -> None:
    """Fit and write ``hardware/data/neuron_fit.json``."""
    target = Path(__file__).resolve().parents[1] / "ecobench" / "hardware" / FIT_FILE
    fitted = write_fit(str(target))
    print(f"wrote {target}: {len(fitted.values)} parameters fitted on {len(fitted.points)} points")


if __name__ == "__main__":
    main()
