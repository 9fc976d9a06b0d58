"""The efficiency model's out-of-sample errors, as the throughput band every estimate carries.

``validate --mode holdout`` predicts each published point with a model fitted without its source.
The log errors, ``log(predicted / published)`` of a throughput, pooled by mode (training points
together, encoder inference points together, serving points together: their decode speed, the
inverse of the time per output token, sets a replica's capacity; mixture-of-experts training points,
which the efficiency model is not fitted on, in a pool of their own), are fitted by a Student-t (maximum
likelihood: heavy tails, as a few set-ups are far off); a prediction's 90% band is where the truth
lies if its error is drawn from that fit. For a held-out point the fit leaves out the point's own
source, so its band is out of sample too.

The training and inference pools (:data:`SOURCE_WEIGHTED_MODES`) are set by the sources, not the
points: a source's errors share its software, cluster and way of measuring, so a new set-up is
off by a new source's offset, which a fit weighting every point draws mostly from the three largest
sources (held out, 81% of those points fell inside such a band). Their 90% band is the symmetric
``exp(±q)``, ``q`` the split-conformal quantile of the pool's |log errors| with every source
weighted equally (:func:`source_weighted_halfwidth`; "CDF pooling", Dunn, Wasserman & Ramdas,
JASA 2023, arXiv:1809.07441), and the Monte Carlo draws a Student-t scaled to that band.

The errors are stored in ``data/holdout_residuals.json`` (written by ``python tools/refit.py``; a
slow test checks it equals a fresh holdout), so runs never refit.

The held-out predictions themselves (every figure of every point, of the analytic model and of the
emulated NeuronCore) are stored in ``data/holdout_predictions.json`` with a digest of what they
depend on (:data:`FIT_INPUTS`: the published points, the catalog and the code of both models), so
``validate --mode holdout`` reads them instead of refitting once per source (about 13
minutes of CPU on 2026-11-29); when the digest differs it refits (:func:`held_out`).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from ecobench.errors import StaleFitError

if TYPE_CHECKING:
    from ecobench.hardware.published import HoldoutRow

RESIDUALS_FILE = "data/holdout_residuals.json"
PREDICTIONS_FILE = "data/holdout_predictions.json"
QUANTILES = (0.05, 0.95)
BAND_LEVEL = QUANTILES[1] - QUANTILES[0]  # the share of true values a band is built to hold
# Pools whose band is the source-weighted conformal quantile (the others keep their Student-t fit).
SOURCE_WEIGHTED_MODES = ("training", "inference", "moe_training")
# What the held-out fits depend on, relative to the ecobench package: the published points, the
# catalog they are prepared with, and the modules both models' fits import (a module added to them
# belongs here: tests/unit/hardware/test_fit_inputs.py checks). The versions of numpy and scipy are
# left out: they move a fit within the optimizer's tolerance (1e-4 in log, checked by a slow test),
# not its answer.
FIT_INPUTS = ("hardware/data/published_points.yaml", "hardware/data/accelerators.yaml",
              "hardware/data/instances.yaml", "hardware/backends/efficiency.py", "hardware/published.py",
              "hardware/catalog.py", "hardware/cluster.py", "hardware/neuron/arch.py",
              "hardware/neuron/fit.py", "hardware/neuron/step.py", "hardware/neuron/timing.py",
              "hardware/neuron/work.py",
              "parallel/collectives.py", "parallel/context.py", "parallel/layout.py", "parallel/memory.py",
              "parallel/offload.py", "parallel/serving.py", "parallel/speculative.py", "parallel/step.py",
              "workloads/architecture.py", "workloads/kernels.py", "workloads/moe.py",
              "workloads/moe_blockwise.py", "workloads/ops.py", "workloads/presets.py",
              "workloads/transformer.py", "units.py")


def mode_of(kind: str) -> str:
    """The pool a kind of point belongs to: training, inference, serving, or the emulated backend's."""
    if kind == "emulated":
        return "emulated"
    if kind == "llm_serve":
        return "serving"
    if kind == "llm_serve_ttft":
        return "serving_ttft"
    if kind == "moe_train":
        return "moe_training"
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


def source_weighted_halfwidth(errors: Any, groups: Any, level: float = BAND_LEVEL) -> float:
    """Half-width ``q`` of the band ``[-q, q]`` of log errors meant to hold ``level`` of a new
    group's errors: the quantile of |error| with each group (a source) weighing the same, each of its
    points 1 / its size (the pooled CDF of Dunn, Wasserman & Ramdas, JASA 2023), at the
    split-conformal level ``level x (S + 1) / S`` for S groups; the largest |error| where that
    exceeds 1 (fewer than 9 groups at 90%: the pool cannot tell a tighter band)."""
    e = np.abs(np.asarray(errors, dtype=float))
    g = np.asarray(groups)
    if e.size == 0 or e.shape != g.shape:
        raise ValueError("source_weighted_halfwidth needs one group per error and at least one error")
    s = len(np.unique(g))
    return group_weighted_quantile(e, g, min(1.0, level * (s + 1) / s))


def group_weighted_quantile(abs_errors: np.ndarray, groups: np.ndarray, q: float) -> float:
    """The smallest of ``abs_errors`` whose cumulative weight reaches ``q``, each group weighing the
    same (each of its errors 1 / its size): the quantile of the pooled CDF."""
    names, index, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    order = np.argsort(abs_errors, kind="stable")
    cum = np.cumsum(1.0 / sizes[index[order]]) / len(names)
    at = int(np.searchsorted(cum, q - 1e-12))
    return float(abs_errors[order][min(at, abs_errors.size - 1)])


def scaled_fit(errors: Any, groups: Any, level: float = BAND_LEVEL) -> ErrorFit:
    """A centred Student-t whose central ``level`` interval is the source-weighted band
    ``[-q, q]`` (:func:`source_weighted_halfwidth`), its degrees of freedom the pool's
    maximum-likelihood fit's (the tails the Monte Carlo draws beyond the band)."""
    from scipy import stats

    q = source_weighted_halfwidth(errors, groups, level)
    df = fit_errors(errors).df
    return ErrorFit(df, 0.0, q / float(stats.t.ppf(0.5 + level / 2, df)), len(np.asarray(errors)))


def pool_fit(mode: str, rows: list[dict[str, Any]]) -> ErrorFit:
    """The fit of a pool's stored errors (``rows``: id, kind, source, log_error): source-weighted
    for :data:`SOURCE_WEIGHTED_MODES`, else maximum-likelihood."""
    errs = [e["log_error"] for e in rows]
    if mode in SOURCE_WEIGHTED_MODES:
        return scaled_fit(errs, [e["source"] for e in rows])
    return fit_errors(errs)


def holdout_errors(rows: list[HoldoutRow] | None = None) -> list[dict[str, Any]]:
    """Every published point's out-of-sample log error, with its kind and the source held out (of
    ``rows``, the analytic model's held-out predictions; a fresh holdout when not given)."""
    from ecobench.hardware.backends.efficiency import holdout

    rows = holdout() if rows is None else rows
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


def emulated_errors(rows: list[HoldoutRow] | None = None) -> list[dict[str, Any]]:
    """The emulated NeuronCore's log error on every published Neuron point, each predicted by the
    emulator's overheads fitted without the point's source (``hardware/neuron/fit.py``; of ``rows``
    when given)."""
    from ecobench.hardware.neuron import fit as nfit

    rows = nfit.holdout() if rows is None else rows
    return [{"id": r.point.id, "kind": "emulated", "source": r.source,
             "log_error": math.log(r.predicted / r.published)} for r in rows]


def fits_of(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Every pool's fit (:func:`pool_fit`), as stored (runs read it: no scipy on the run path)."""
    out = {}
    for mode in ("training", "inference", "serving", "serving_ttft", "emulated", "moe_training"):
        f = pool_fit(mode, [e for e in rows if mode_of(e["kind"]) == mode])
        out[mode] = {"df": f.df, "loc": f.loc, "scale": f.scale, "n": f.n}
    return out


def write_residuals(path: str, analytic: list[HoldoutRow], emulated: list[HoldoutRow],
                    serving: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Store every held-out log error and each pool's fit (of the given held-out predictions), and
    ``serving``, every serving figure's error with its regime (``serve_bands.serving_errors``)."""
    rows = holdout_errors(analytic) + emulated_errors(emulated)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"fits": fits_of(rows), "errors": rows, "serving": serving}, fh, indent=1)
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
    return pool_fit(mode, [e for e in stored_errors()
                           if mode_of(e["kind"]) == mode and e["source"] != source])


def holdout_band(point_id: str, emulated: bool = False, ttft: bool = False) -> tuple[float, float]:
    """(low, high) factors on a published point's out-of-sample prediction of a speed (the analytic
    model's held out, or the emulated NeuronCore's; ``ttft``: a serving point's prefill), from the
    errors of the other sources of its pool. A time's band is the inverse."""
    rows = stored_errors()
    kinds = ("emulated",) if emulated else ("llm_serve_ttft",) if ttft else None
    me = next((e for e in rows if e["id"] == point_id
               and (e["kind"] in kinds if kinds else e["kind"] not in ("emulated", "llm_serve_ttft"))), None)
    if me is None:
        raise StaleFitError(point_id)
    return fit_without(mode_of(me["kind"]), me["source"]).band(1.0)


def inputs_digest() -> str:
    """SHA-256 of every file in :data:`FIT_INPUTS` (path and content, line ends as LF)."""
    import hashlib

    root = resources.files("ecobench")
    h = hashlib.sha256()
    for name in FIT_INPUTS:
        data = root.joinpath(name).read_bytes().replace(b"\r\n", b"\n")
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def _row(r: HoldoutRow) -> dict[str, Any]:
    return {"id": r.point.id, "source": r.source, "figure": r.figure, "published": r.published,
            "predicted": r.predicted, "fitted_on": r.fitted_on}


def write_predictions(path: str, analytic: list[HoldoutRow], emulated: list[HoldoutRow]) -> None:
    """Store both models' held-out predictions with the digest of their inputs."""
    doc = {"inputs_sha256": inputs_digest(), "analytic": [_row(r) for r in analytic],
           "emulated": [_row(r) for r in emulated]}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


def stored_predictions() -> dict[str, Any] | None:
    """The stored held-out predictions, or None when the file is absent."""
    node = resources.files("ecobench.hardware").joinpath(PREDICTIONS_FILE)
    if not node.is_file():
        return None
    doc: dict[str, Any] = json.loads(node.read_text(encoding="utf-8"))
    return doc


def held_out(model: str, progress: Callable[[str], None] | None = None) -> list[HoldoutRow]:
    """Every published point predicted by ``model`` (``analytic`` or ``emulated``) fitted without
    its source: the stored predictions when their inputs are unchanged (:func:`inputs_digest`),
    else a fresh leave-one-source-out holdout, reported to ``progress`` source by source."""
    from ecobench.hardware.published import HoldoutRow, load_points

    say = progress or (lambda _msg: None)
    doc = stored_predictions()
    if doc is not None and doc.get("inputs_sha256") == inputs_digest():
        say(f"holdout {model}: stored held-out predictions ({PREDICTIONS_FILE}; inputs unchanged)")
        points = {p.id: p for p in load_points().points}
        return [HoldoutRow(points[r["id"]], r["source"], r["published"], r["predicted"], r["fitted_on"],
                           r["figure"]) for r in doc[model]]
    why = "none stored" if doc is None else "the published points or the model changed since they were stored"
    say(f"holdout {model}: refitting once per source ({why}; `python tools/refit.py` stores them)")
    if model == "analytic":
        from ecobench.hardware.backends.efficiency import holdout

        return holdout(progress=progress)
    from ecobench.hardware.neuron import fit as nfit

    return nfit.holdout(progress=progress)
