"""The efficiency model's out-of-sample errors, as the throughput band every estimate carries.

``validate --mode holdout`` predicts each published point with a model fitted without its source.
The log errors, ``log(predicted / published)`` of a throughput, pooled by mode (training points
together, encoder inference points together, serving points together: their decode speed, the
inverse of the time per output token, sets a replica's capacity), are fitted by a Student-t (maximum
likelihood: heavy tails, as a few set-ups are far off); a prediction's 90% band is where the truth
lies if its error is drawn from that fit. For a held-out point the fit leaves out the point's own
source, so its band is out of sample too. The errors are stored in ``data/holdout_residuals.json``
(written by ``python tools/refit.py``; a slow test checks it equals a fresh holdout), so
runs never refit.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

RESIDUALS_FILE = "data/holdout_residuals.json"
QUANTILES = (0.05, 0.95)


def mode_of(kind: str) -> str:
    """The pool a kind of point belongs to: training, inference, serving, or the emulated backend's."""
    if kind == "emulated":
        return "emulated"
    if kind == "llm_serve":
        return "serving"
    if kind == "llm_serve_ttft":
        return "serving_ttft"
    return "inference" if kind.endswith("infer") else "training"


@dataclass(frozen=True)
class ErrorFit:
    """Student-t fit of log errors (predicted / published)."""

    df: float
    loc: float
    scale: float
    n: int

    def quantile(self, q: float) -> float:
        from scipy import stats

        return float(stats.t.ppf(q, self.df, self.loc, self.scale))

    def band(self, predicted: float) -> tuple[float, float]:
        """90% band of the true value around a prediction: truth = predicted x exp(-error)."""
        lo_e, hi_e = (self.quantile(q) for q in QUANTILES)
        return predicted * math.exp(-hi_e), predicted * math.exp(-lo_e)

    def multipliers(self, t_draws: np.ndarray) -> np.ndarray:
        """Truth / prediction at standard-t draws of ``df`` degrees of freedom."""
        return np.exp(-(self.loc + self.scale * t_draws))


def fit_errors(errors: Any) -> ErrorFit:
    """Maximum-likelihood Student-t of log errors."""
    from scipy import stats

    e = np.asarray(errors, dtype=float)
    df, loc, scale = stats.t.fit(e)
    return ErrorFit(float(df), float(loc), float(scale), len(e))


def holdout_errors() -> list[dict[str, Any]]:
    """Every published point's out-of-sample log error, with its kind and the source held out."""
    from ecobench.hardware.backends.efficiency import holdout

    rows = holdout()
    has_tpot = {r.point.id for r in rows if r.figure == "tpot_ms"}
    out = []
    for r in rows:
        kind: str = r.point.kind
        if kind == "llm_serve" and r.figure == "ttft_ms":
            kind = "llm_serve_ttft"  # the prefill's speed: a pool of its own
        elif kind == "llm_serve" and r.figure != ("tpot_ms" if r.point.id in has_tpot
                                                  else "output_tokens_per_s"):
            continue  # serving: the decode speed (1 / TPOT; tokens/s where no TPOT is published)
        err = math.log(r.predicted / r.published)
        out.append({"id": r.point.id, "kind": kind, "source": r.source,
                    "log_error": -err if r.figure in ("tpot_ms", "ttft_ms") else err})
    return out


def emulated_errors() -> list[dict[str, Any]]:
    """The emulated NeuronCore's log error on every published Neuron point, each predicted by the
    emulator's overheads fitted without the point's source (``hardware/neuron/fit.py``)."""
    from ecobench.hardware.neuron import fit as nfit

    return [{"id": r.point.id, "kind": "emulated", "source": r.source,
             "log_error": math.log(r.predicted / r.published)} for r in nfit.holdout()]


def fits_of(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The Student-t fit of every pool, as stored (runs read it: no scipy on the run path)."""
    out = {}
    for mode in ("training", "inference", "serving", "serving_ttft", "emulated"):
        f = fit_errors([e["log_error"] for e in rows if mode_of(e["kind"]) == mode])
        out[mode] = {"df": f.df, "loc": f.loc, "scale": f.scale, "n": f.n}
    return out


def write_residuals(path: str) -> list[dict[str, Any]]:
    rows = holdout_errors() + emulated_errors()
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"fits": fits_of(rows), "errors": rows}, fh, indent=1)
        fh.write("\n")
    return rows


@functools.cache
def _stored() -> dict[str, Any]:
    text = resources.files("ecobench.hardware").joinpath(RESIDUALS_FILE).read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


def stored_errors() -> tuple[dict[str, Any], ...]:
    return tuple(_stored()["errors"])


def error_fit(mode: str) -> ErrorFit:
    """The stored fit of every error of a mode (for scenarios, which are no published point)."""
    f = _stored()["fits"][mode]
    return ErrorFit(float(f["df"]), float(f["loc"]), float(f["scale"]), int(f["n"]))


@functools.cache
def fit_without(mode: str, source: str) -> ErrorFit:
    """The fit of a mode's stored errors, leaving one source out."""
    return fit_errors([e["log_error"] for e in stored_errors()
                       if mode_of(e["kind"]) == mode and e["source"] != source])


def holdout_band(point_id: str, emulated: bool = False, ttft: bool = False) -> tuple[float, float]:
    """(low, high) factors on a published point's out-of-sample prediction of a speed (the analytic
    model's held out, or the emulated NeuronCore's; ``ttft``: a serving point's prefill), from the
    errors of the other sources of its pool. A time's band is the inverse."""
    rows = stored_errors()
    kinds = ("emulated",) if emulated else ("llm_serve_ttft",) if ttft else None
    me = next(e for e in rows if e["id"] == point_id
              and (e["kind"] in kinds if kinds else e["kind"] not in ("emulated", "llm_serve_ttft")))
    return fit_without(mode_of(me["kind"]), me["source"]).band(1.0)
