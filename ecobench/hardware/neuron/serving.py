"""LLM serving on the emulated NeuronCore: decode steps and prefills timed on the engine model.

A replica of ``tensor`` logical NeuronCores (the instance's ranks at its logical-NeuronCore setting:
Trn2's default LNC=2 makes a logical core of two physical ones, ``neuron/arch.py``) runs one rank's
share of every layer: the decode kernels over the cached context (the whole compiled length: Neuron
compiles static shapes) or a prefill's kernels, each timed by the engine model with the fitted
engine parameters (``neuron/fit.py``, fitted on throughput points only), plus one graph launch and
the tensor-parallel all-reduces at the fitted share of link bandwidth.

The engine model alone is 20-45% fast on the published Neuron serving tables (the serving stacks'
sampling, cache updates and host round trips it does not model), so each figure takes a multiplier
and a fixed time per step (decode) or per prefill, least squares on log(published / predicted)
over the fitted points (:data:`CORRECTION_FILE`; :func:`holdout` refits them without each source).
The step is timed at a grid of batch sizes and interpolated in between.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ecobench.hardware.neuron.arch import NeuronDeviceSpec
from ecobench.hardware.neuron.fit import current_fit
from ecobench.hardware.neuron.timing import time_kernels
from ecobench.parallel.collectives import all_reduce_s
from ecobench.parallel.serving import TP_ALL_REDUCES_PER_LAYER, ServeWorkload
from ecobench.parallel.step import Cluster
from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.transformer import decode_kernels, prefill_kernels

CORRECTION_FILE = "data/neuron_serving_fit.json"
FIGURES = ("tpot_ms", "ttft_ms")
BATCH_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Correction:
    """Per figure (``tpot_ms``: the decode step, ``ttft_ms``: a prefill) a multiplier of the engine
    model's time and a fixed time (ms) added to it."""

    scale: dict[str, float]
    fixed_ms: dict[str, float]
    points: tuple[str, ...] = ()

    def apply(self, figure: str, raw_s: Any) -> Any:
        """The corrected seconds of an uncorrected time."""
        return self.scale[figure] * np.asarray(raw_s) + 1e-3 * self.fixed_ms[figure]


def _all_reduces_s(w: ServeWorkload, cl: Cluster, tokens: float) -> float:
    nbytes = tokens * w.arch.hidden_size * BYTES_PER_DTYPE[w.dtype]
    share = current_fit().values.get("collective", 0.7)
    one = all_reduce_s(nbytes, w.tensor, cl.intra_gb_per_s * share, cl.intra_latency_s)
    return float(w.arch.layers * TP_ALL_REDUCES_PER_LAYER * one)


@functools.lru_cache(maxsize=4096)
def raw_decode_s(w: ServeWorkload, cl: Cluster, dev: NeuronDeviceSpec, batch: int) -> float:
    """One uncorrected decode step of ``batch`` sequences on one logical core, with launch and
    all-reduces."""
    p = current_fit().params(dev.core.generation)
    ks = decode_kernels(w.arch, w.context, batch, w.dtype, w.tensor, w.weight_dtype, w.kv_dtype)
    return sum(t.time_s for t in time_kernels(ks, dev, batch, p, w.arch.norm)) + p.launch_s + \
        _all_reduces_s(w, cl, batch)


@functools.lru_cache(maxsize=1024)
def raw_prefill_s(w: ServeWorkload, cl: Cluster, dev: NeuronDeviceSpec, prompts: int = 1) -> float:
    """One uncorrected prefill of ``prompts`` prompts on one logical core."""
    p = current_fit().params(dev.core.generation)
    ks = prefill_kernels(w.arch, w.prefill_tokens, prompts, w.dtype, w.tensor, w.weight_dtype)
    return sum(t.time_s for t in time_kernels(ks, dev, prompts, p, w.arch.norm)) + p.launch_s + \
        _all_reduces_s(w, cl, prompts * w.prefill_tokens)


@functools.cache
def current_correction() -> Correction:
    """The stored multipliers (:func:`fit_correction` on every published Neuron serving point)."""
    d = json.loads(resources.files("ecobench.hardware").joinpath(CORRECTION_FILE).read_text())
    return Correction(d["scale"], d["fixed_ms"], tuple(d["points"]))


@dataclass(frozen=True)
class EmulatedServeTimer:
    """Decode steps and prefills of a replica on the emulated NeuronCore (the serving plan's timer)."""

    dev: NeuronDeviceSpec
    correction: Correction

    def decode_s(self, w: ServeWorkload, cl: Cluster, batch: Any) -> np.ndarray:
        """Seconds of a decode step at each batch (interpolated between :data:`BATCH_GRID`)."""
        b = np.asarray(batch, dtype=float)
        top = max(2, math.ceil(float(b.max())))
        grid = sorted({g for g in BATCH_GRID if g < top} | {top})
        times = [raw_decode_s(w, cl, self.dev, g) for g in grid]
        return np.asarray(self.correction.apply("tpot_ms", np.interp(b, grid, times)), dtype=float)

    def prefill_s(self, w: ServeWorkload, cl: Cluster) -> float:
        """Seconds to prefill one prompt."""
        return float(self.correction.apply("ttft_ms", raw_prefill_s(w, cl, self.dev, 1)))


# -- fitting and holding out on the published serving points -----------------------------------------


@dataclass(frozen=True)
class ServePoint:
    """A published Neuron serving point with the engine model's uncorrected figures."""

    point: Any  # hardware.published.PublishedPoint
    source: str
    raw: dict[str, float]  # figure -> uncorrected prediction (ms)


@functools.cache
def serve_points() -> tuple[ServePoint, ...]:
    """Every published ``llm_serve`` point on a Neuron instance, with its uncorrected figures (a
    static batch prefills together, then decodes together)."""
    from ecobench.hardware.catalog import load_catalog
    from ecobench.hardware.cluster import instance_cluster
    from ecobench.hardware.neuron.arch import DEVICES
    from ecobench.hardware.published import load_points

    pts, cat = load_points(), load_catalog()
    out = []
    for p in pts.points:
        if p.kind != "llm_serve" or not p.instance_type:
            continue
        inst = cat.instance(p.instance_type)
        acc = inst.spec.accelerator or ""
        if acc not in DEVICES:
            continue
        cl = instance_cluster(cat, inst, p.precision)
        w = ServeWorkload(p.arch, p.input_tokens, p.output_tokens, p.precision, p.tensor, p.weight_precision,
                          p.kv_cache_precision, static_cache=cat.accelerators[acc].static_kv_cache)
        b = int(p.batch_size or 1)
        raw = {"tpot_ms": 1e3 * raw_decode_s(w, cl, DEVICES[acc], b),
               "ttft_ms": 1e3 * raw_prefill_s(w, cl, DEVICES[acc], b)}
        out.append(ServePoint(p, p.source, {f: v for f, v in raw.items() if getattr(p, f, None)}))
    return tuple(out)


SCALES = np.geomspace(0.2, 5.0, 241)  # the multipliers searched
FIXED_MS = np.concatenate([[0.0], np.geomspace(0.01, 200.0, 241)])  # the fixed times searched


def fit_correction(points: tuple[ServePoint, ...] | list[ServePoint]) -> Correction:
    """Each figure's multiplier and fixed time: least squares on log(published / corrected) over a
    grid (both enter every point's time, so the search is exhaustive and cheap)."""
    scale, fixed = {}, {}
    for f in FIGURES:
        raw = np.array([s.raw[f] for s in points if f in s.raw])
        pub = np.array([getattr(s.point, f) for s in points if f in s.raw])
        if not len(raw):
            scale[f], fixed[f] = 1.0, 0.0
            continue
        pred = SCALES[:, None, None] * raw[None, None, :] + FIXED_MS[None, :, None]
        cost = (np.log(pub[None, None, :] / pred) ** 2).sum(axis=2)
        i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
        scale[f], fixed[f] = float(SCALES[i]), float(FIXED_MS[j])
    return Correction(scale, fixed, tuple(s.point.id for s in points))


@dataclass(frozen=True)
class HeldOut:
    """One figure of one point predicted with the correction fitted without its source."""

    point: Any
    source: str
    figure: str
    published: float
    predicted: float

    @property
    def error_pct(self) -> float:
        """Signed error of the prediction, percent."""
        return (self.predicted / self.published - 1.0) * 100.0


def holdout() -> list[HeldOut]:
    """Every Neuron serving figure predicted with the correction fitted on the other sources."""
    pts = serve_points()
    out = []
    for src in sorted({s.source for s in pts}):
        c = fit_correction([s for s in pts if s.source != src])
        for s in (s for s in pts if s.source == src):
            out += [HeldOut(s.point, src, f, getattr(s.point, f), 1e3 * float(c.apply(f, 1e-3 * v)))
                    for f, v in s.raw.items()]
    return out


def write_correction(path: str) -> Correction:
    """Fit on every point and write the stored multipliers."""
    c = fit_correction(serve_points())
    with open(path, "w") as fh:
        json.dump({"scale": c.scale, "fixed_ms": c.fixed_ms, "points": list(c.points),
                   "how": "least squares on log(published / corrected), ecobench/hardware/neuron/serving.py"},
                  fh, indent=1)
        fh.write("\n")
    return c
