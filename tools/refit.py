"""Maintenance: refit the efficiency model on the published points and store it.

Run ``python tools/refit.py`` after editing ``data/published_points.yaml``; the test suite
checks that the stored parameters and held-out errors equal fresh ones, so a stale file cannot go
unnoticed.
"""

from __future__ import annotations

from pathlib import Path

from ecobench.hardware.backends.efficiency import FIT_FILE, write_fit
from ecobench.hardware.backends.residuals import RESIDUALS_FILE, write_residuals


def main() -> None:
    """Fit and write ``data/efficiency_fit.json``; hold every source out and write the errors to
    ``data/holdout_residuals.json`` (the throughput bands)."""
    here = Path(__file__).resolve().parent
    fitted = write_fit(str(here / FIT_FILE))
    print(f"wrote {here / FIT_FILE}: {len(fitted.values)} parameters fitted on {len(fitted.points)} points")
    rows = write_residuals(str(here / RESIDUALS_FILE))
    print(f"wrote {here / RESIDUALS_FILE}: {len(rows)} out-of-sample errors")


if __name__ == "__main__":
    main()
