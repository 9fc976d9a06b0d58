"""Conditional 90% bands of the serving figures (TTFT, TPOT, output tokens per second), split-conformal
by regime and calibrated out of sample.

Every published serving figure's held-out log error, ``log(predicted / published)`` (the analytic
model's and the emulated NeuronCore's, each predicted by a fit made without the point's source), is
stored with the regime it was measured in (:class:`Regime`: which model, accelerator vendor, tensor
degree, decode batch) in ``data/holdout_residuals.json`` (``python tools/refit.py``). A prediction's
band is ``value / f`` to ``value x f`` where ``log f`` is the quantile of the absolute log errors in
its regime's cell, each source weighted equally (split-conformal calibration, Vovk et al. 2005,
Lei et al. 2018, JASA 113:1094, with the source as the exchangeable unit, since a held-out point's
error is mostly its source's bias: the CDF pooling of Dunn, Wasserman & Ramdas, JASA 2023,
arXiv:1809.07441), taken at the finite-sample level ``0.9 x (S + 1) / S`` for the cell's S sources,
and the cell's largest error where that exceeds 1 (fewer than 9 sources): the rule of the training
and power bands (``residuals.source_weighted_halfwidth``). At the bare 0.9 level the pooled quantile
holds 90% of a new source's errors only as S grows, and a serving cell holds 3 to 5 sources
(docs/serving.md). With fewer than 9 sources even the largest error guarantees no 90% (a new source
beyond all S of them lies outside: about 1 / (S + 1) of sources where the error is all offset); it
is the widest band the cell's errors can tell. Cells go from the narrowest (model, vendor, tensor class, batch
class) to the widest of the vendor (model, vendor); the narrowest with at least :data:`MIN_RESIDUALS`
errors from :data:`MIN_SOURCES` sources is used, else from fewer sources. Only where the vendor's
cells hold fewer than :data:`MIN_RESIDUALS` errors does the band pool vendors (the model's cell, else
every error of the figure): another vendor's errors are another hardware's and stack's, not a wider
sample of this one's (Neuron's prompts, up to +150%, would set NVIDIA's TTFT band). TPOT and tokens
per second share their errors (both are set by the decode step); TTFT has its own.

For a published point (``validate --mode holdout``) the errors of the point's own source are left out
(leave-one-source-out: the band never sees the error it is scored on); for a scenario (``run``,
``serve-point``) every stored error is used. The quantiles are never written down: they are recomputed
from whatever errors the refit stored.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ecobench.errors import StaleFitError
from ecobench.hardware.backends.residuals import source_weighted_halfwidth

LEVEL = 0.90  # the band's nominal coverage
MIN_RESIDUALS = 20  # fewest errors a cell needs before its own quantile is used
MIN_SOURCES = 3  # ... from at least this many sources (one or two sources' biases are no regime's spread)
Z_95 = 1.6448536269514722  # standard normal 95th percentile: the Monte Carlo's draws hit the band at 5/95%
BATCH_CLASSES = ((1, "1"), (16, "2-16"))  # decode batch up to the bound -> class; above: "17+"
TENSOR_CLASSES = ((1, "1"), (2, "2"))  # tensor degree up to the bound -> class; above: "3+"
# The figures whose errors band each figure: decode speed sets TPOT and tokens per second alike.
FIGURE_POOLS: dict[str, tuple[str, ...]] = {"ttft_ms": ("ttft_ms",),
                                            "tpot_ms": ("tpot_ms", "output_tokens_per_s"),
                                            "output_tokens_per_s": ("tpot_ms", "output_tokens_per_s")}
SERVING_FIGURES = tuple(FIGURE_POOLS)
# Depths of Regime.cells() searched together, in turn: the cells of the regime's own vendor (its
# accelerators and software stacks, from MIN_SOURCES sources down to one), and only where the vendor
# has too few errors, the model's cell across vendors (NVIDIA's band never takes Neuron's errors).
FALLBACK_TIERS = ((0, 1, 2), (3,))
Model = Literal["analytic", "emulated"]


def _class_of(value: int, classes: tuple[tuple[int, str], ...], above: str) -> str:
    return next((name for bound, name in classes if value <= bound), above)


@dataclass(frozen=True)
class Regime:
    """What predicts the size of a serving figure's error."""

    model: Model  # the analytic serving model or the emulated NeuronCore
    vendor: str  # accelerator vendor (nvidia, aws, ...)
    tensor: int  # tensor-parallel degree of a replica
    batch: float  # decode batch (requests decoding together)

    def cells(self) -> tuple[tuple[str, ...], ...]:
        """The regime's cells, narrowest first."""
        t = _class_of(self.tensor, TENSOR_CLASSES, "3+")
        b = _class_of(math.ceil(self.batch - 1e-9), BATCH_CLASSES, "17+")
        return ((self.model, self.vendor, t, b), (self.model, self.vendor, t), (self.model, self.vendor),
                (self.model,))

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "vendor": self.vendor, "tensor": self.tensor, "batch": self.batch}


def regime_of(row: Mapping[str, Any]) -> Regime:
    return Regime(row["model"], row["vendor"], int(row["tensor"]), float(row["batch"]))


def conformal_log_factor(abs_errors: Iterable[float], sources: Iterable[str] | None = None,
                         level: float = LEVEL) -> float:
    """The split-conformal half-width of absolute log errors meant to hold ``level`` of a new
    source's errors: their quantile with each source weighted equally (``sources``: the source of each
    error; None: one weight per error) at ``level x (S + 1) / S`` for S sources, the largest error
    where that exceeds 1 (:func:`residuals.source_weighted_halfwidth`). A source, not a row, is the
    unit a held-out point's band must generalise to: one large source would otherwise set the band by
    itself, and the bare ``level`` quantile of S sources falls short of ``level`` for a new one."""
    e = np.abs(np.asarray(list(abs_errors), dtype=float))
    if e.size == 0:
        raise ValueError("no errors to calibrate a band on")
    src = np.asarray(list(sources) if sources is not None else range(e.size))
    return source_weighted_halfwidth(e, src, level)


@dataclass(frozen=True)
class Band:
    """A figure's 90% band: ``value / factor`` to ``value x factor``; ``cell``: the regime cell its
    errors came from, ``n``: how many."""

    factor: float
    cell: tuple[str, ...]
    n: int

    def describe(self) -> str:
        """The cell in words: ``analytic, nvidia, tensor 1, batch 2-16 (40 errors)``."""
        names = ("", "", "tensor ", "batch ")
        return ", ".join(f"{k}{v}" for k, v in zip(names, self.cell, strict=False)) + f" ({self.n} errors)"

    def around(self, value: float) -> tuple[float, float]:
        return value / self.factor, value * self.factor

    def multipliers(self, z: np.ndarray) -> np.ndarray:
        """Truth / prediction at standard-normal draws: log-normal, 5th and 95th percentiles at the
        band's edges."""
        return np.exp(math.log(self.factor) * z / Z_95)


def band_of(rows: Iterable[Mapping[str, Any]], figure: str, regime: Regime,
            exclude_source: str | None = None) -> Band:
    """The band of ``figure`` in ``regime`` from ``rows`` (stored serving errors), leaving out
    ``exclude_source``'s."""
    return _band_in_cells(tuple((regime_of(r).cells(), r) for r in rows), figure, regime.cells(),
                          exclude_source)


def _band_in_cells(keyed: tuple[tuple[tuple[tuple[str, ...], ...], Mapping[str, Any]], ...], figure: str,
                   cells: tuple[tuple[str, ...], ...], exclude_source: str | None) -> Band:
    """:func:`band_of` on rows that carry their cells."""
    every = [(c, r) for c, r in keyed if r["figure"] in FIGURE_POOLS[figure]]
    pool = [(c, r) for c, r in every if r["source"] != exclude_source]
    # the vendor's cells first, from however few sources; the model's across vendors only without them
    chosen = next(filter(None, (_narrowest(pool, cells, depths) for depths in FALLBACK_TIERS)), None)
    if chosen is None:  # not even the model's cell: every error of the figure
        chosen = ("all",), [r for _, r in (pool or every)]
    cell, sel = chosen
    q = conformal_log_factor([r["log_error"] for r in sel], [r["source"] for r in sel])
    return Band(math.exp(q), cell, len(sel))


def _narrowest(pool: list[tuple[tuple[tuple[str, ...], ...], Mapping[str, Any]]],
               cells: tuple[tuple[str, ...], ...],
               depths: tuple[int, ...]) -> tuple[tuple[str, ...], list[Mapping[str, Any]]] | None:
    """The narrowest of ``cells`` at ``depths`` holding :data:`MIN_RESIDUALS` errors of ``pool``
    from :data:`MIN_SOURCES` sources (fewer sources only where no cell has more), with its errors."""
    for min_sources in range(MIN_SOURCES, 0, -1):
        for depth in depths:
            sel = [r for c, r in pool if c[depth] == cells[depth]]
            if len(sel) >= MIN_RESIDUALS and len({r["source"] for r in sel}) >= min_sources:
                return cells[depth], sel
    return None


def stored_serving_errors() -> tuple[dict[str, Any], ...]:
    """Every stored serving figure's held-out log error with its regime."""
    from ecobench.hardware.backends.residuals import _stored

    return tuple(_stored().get("serving", ()))


@functools.cache
def _stored_keyed() -> tuple[tuple[tuple[tuple[str, ...], ...], Mapping[str, Any]], ...]:
    return tuple((regime_of(r).cells(), r) for r in stored_serving_errors())


@functools.cache
def _stored_band(figure: str, cells: tuple[tuple[str, ...], ...], exclude_source: str | None) -> Band:
    return _band_in_cells(_stored_keyed(), figure, cells, exclude_source)


def serving_band(figure: str, regime: Regime, exclude_source: str | None = None) -> Band:
    """The stored errors' band of a serving figure in a regime (``exclude_source``: a published
    point's own source, left out); one computation per figure and cell."""
    return _stored_band(figure, regime.cells(), exclude_source)


def point_band(point_id: str, figure: str, model: Model = "analytic") -> Band:
    """A published serving point's out-of-sample band: its regime's errors from the other sources."""
    row = next((r for r in stored_serving_errors() if r["id"] == point_id and r["model"] == model), None)
    if row is None:
        raise StaleFitError(point_id)
    return serving_band(figure, regime_of(row), row["source"])


def serving_errors(analytic: Iterable[Any], emulated: Iterable[Any]) -> list[dict[str, Any]]:
    """The stored rows: every held-out serving figure (``HoldoutRow`` of the analytic model, the
    emulated NeuronCore's ``HeldOut``) with its regime and log error."""
    from ecobench.hardware.catalog import load_catalog
    from ecobench.hardware.published import load_points

    pts, cat = load_points(), load_catalog()

    def vendor(p: Any) -> str:
        acc = (pts.systems[p.system].accelerator if p.system
               else cat.instance(p.instance_type).spec.accelerator)
        return str(cat.accelerators[acc].vendor)

    out = []
    for model, rows in (("analytic", analytic), ("emulated", emulated)):
        for r in rows:
            p = r.point
            if model == "analytic" and p.kind != "llm_serve":
                continue
            reg = Regime(model, vendor(p), int(p.tensor or 1), float(p.batch_size or 1))  # type: ignore[arg-type]
            out.append({"id": p.id, "source": r.source, "figure": r.figure, **reg.to_dict(),
                        "log_error": math.log(r.predicted / r.published)})
    return out
