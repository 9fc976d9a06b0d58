"""Maintenance: refit the efficiency model on the published points and store it.

Run ``python tools/refit.py`` after editing ``data/published_points.yaml``; the test suite
checks that the stored parameters and held-out errors equal fresh ones, so a stale file cannot go
unnoticed. ``python tools/refit.py --serving`` (after refitting the emulated NeuronCore's serving
correction, ``tools/neuron_refit.py``, while the fit inputs are unchanged) rewrites only the serving
figures' errors: the held-out predictions are read from the stored file, and only the emulated
serving holdout is run again (seconds instead of 13 minutes).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ecobench.hardware.backends.efficiency import FIT_FILE, holdout, write_fit
from ecobench.hardware.backends.residuals import (
    PREDICTIONS_FILE,
    RESIDUALS_FILE,
    held_out,
    inputs_digest,
    stored_predictions,
    write_predictions,
    write_residuals,
)
from ecobench.hardware.backends.serve_bands import serving_errors
from ecobench.hardware.neuron import fit as nfit
from ecobench.hardware.neuron import serving as nserving


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def serving_only() -> int:
    """Rewrite ``data/holdout_residuals.json`` from the stored held-out predictions and a fresh
    emulated serving holdout; 3 when the stored predictions are stale (a full refit is needed)."""
    here = Path(__file__).resolve().parents[1] / "ecobench" / "hardware"
    doc = stored_predictions()
    if doc is None or doc.get("inputs_sha256") != inputs_digest():
        print("refit --serving: the stored held-out predictions are stale; run python tools/refit.py",
              file=sys.stderr)
        return 3
    analytic, emulated = held_out("analytic"), held_out("emulated")
    rows = write_residuals(str(here / RESIDUALS_FILE), analytic, emulated,
                           serving_errors(analytic, nserving.holdout()))
    print(f"wrote {here / RESIDUALS_FILE}: {len(rows)} out-of-sample errors (stored) and every serving "
          "figure's (the emulated ones held out again)")
    return 0


def main() -> None:
    """Fit and write ``data/efficiency_fit.json``; hold every source out (analytic model and emulated
    NeuronCore) and write the errors to ``data/holdout_residuals.json`` (the throughput bands, and the
    serving figures' conditional bands of ``serve_bands.py``) and
    the predictions, with the digest of their inputs, to ``data/holdout_predictions.json`` (what
    ``validate --mode holdout`` reads while the inputs are unchanged)."""
    here = Path(__file__).resolve().parents[1] / "ecobench" / "hardware"
    fitted = write_fit(str(here / FIT_FILE))
    print(f"wrote {here / FIT_FILE}: {len(fitted.values)} parameters fitted on {len(fitted.points)} points")
    analytic, emulated = holdout(progress=_progress), nfit.holdout(progress=_progress)
    serving = serving_errors(analytic, nserving.holdout())
    rows = write_residuals(str(here / RESIDUALS_FILE), analytic, emulated, serving)
    print(f"wrote {here / RESIDUALS_FILE}: {len(rows)} out-of-sample errors and every serving figure's")
    write_predictions(str(here / PREDICTIONS_FILE), analytic, emulated)
    print(f"wrote {here / PREDICTIONS_FILE}: {len(analytic)} + {len(emulated)} held-out predictions")


if __name__ == "__main__":
    if sys.argv[1:] == ["--serving"]:
        sys.exit(serving_only())
    main()
