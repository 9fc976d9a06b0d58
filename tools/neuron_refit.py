"""Maintenance: refit the emulated NeuronCore's parameters and store them with the held-out errors,
and refit its serving correction.

Run ``python tools/neuron_refit.py`` after editing ``data/published_points.yaml`` (or the
engine model, or the analytic model whose held-out errors the disagreement check reads); tests
check the stored files against fresh fits.
"""

from __future__ import annotations

from pathlib import Path

from ecobench.hardware.neuron.fit import FIT_FILE, write_fit
from ecobench.hardware.neuron.serving import CORRECTION_FILE, write_correction


def main() -> None:
    """Fit and write ``hardware/data/neuron_fit.json`` and ``hardware/data/neuron_serving_fit.json``."""
    data = Path(__file__).resolve().parents[1] / "ecobench" / "hardware"
    fitted = write_fit(str(data / FIT_FILE))
    print(f"wrote {data / FIT_FILE}: {len(fitted.values)} parameters fitted on {len(fitted.points)} points")
    c = write_correction(str(data / CORRECTION_FILE))
    print(f"wrote {data / CORRECTION_FILE}: serving correction fitted on {len(c.points)} points")


if __name__ == "__main__":
    main()
