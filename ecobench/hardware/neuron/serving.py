"""LLM serving on the emulated NeuronCore: decode steps and prefills timed on the engine model.

A replica of ``tensor`` logical NeuronCores (the instance's ranks at its logical-NeuronCore setting:
Trn2's default LNC=2 makes a logical core of two physical ones, ``neuron/arch.py``) runs one rank's
share of every layer: the decode kernels over the cached context (the whole compiled length: Neuron
compiles static shapes) or a prefill's kernels, each timed by the engine model with the fitted
engine parameters (``neuron/fit.py``, fitted on throughput points only), plus one graph launch and
the tensor-parallel all-reduces at the fitted share of link bandwidth.

The engine model alone is 20-45% fast on the published Neuron serving tables (the serving stacks'
sampling, cache updates and host round trips it does not model), so each figure takes a multiplier
and a fixed time per step (decode) or per prefill, least absolute deviations of log(published /
predicted) over the fitted points (:data:`CORRECTION_FILE`; :func:`holdout` refits them without each
source). The step is timed at a grid of batch sizes and interpolated in between.

Those points are mostly transformers-neuronx's (Neuron 2.18 tables, 78 of 93 prefills). The stacks
built on NeuronX Distributed (NxD Inference, vLLM Neuron, optimum-neuron and its TGI and vLLM servers:
:data:`NXD_STACKS`) prefill faster than that correction: held out by source, their prompts came out
+34% (Inferentia2) and +41% (Trainium2) slow at the median. A prefill on such a stack therefore takes
one more multiplier, the median ratio of those stacks' published to corrected prefill times
(:attr:`Correction.nxd_scale`; a stack left unnamed is NxD Inference, as for mixture-of-experts
prefills, ``workloads/moe_blockwise.py``). Decode steps take none: held out the same way, such a
factor moved Trainium2's median TPOT error from 2.7% to 10.8% (docs/serving.md).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from ecobench.hardware.neuron.arch import NeuronDeviceSpec, logical_core_size
from ecobench.hardware.neuron.fit import current_fit
from ecobench.hardware.neuron.timing import time_kernels
from ecobench.parallel.collectives import all_reduce_s
from ecobench.parallel.serving import (
    TP_ALL_REDUCES_PER_LAYER,
    ServeWorkload,
    compiled_graph_tokens,
    prefill_fused_attention,
    tp_ring_gb_per_s,
)
from ecobench.parallel.step import Cluster
from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.moe_blockwise import NXD_DEFAULT_STACK, NXD_MOE_STACKS
from ecobench.workloads.transformer import decode_kernels, prefill_kernels

CORRECTION_FILE = "data/neuron_serving_fit.json"
FIGURES = ("tpot_ms", "ttft_ms")
NXD_STACKS = NXD_MOE_STACKS  # the serving stacks built on NeuronX Distributed (moe_blockwise.py's sources)
NXD_FIGURES = ("ttft_ms",)  # the figures an NxD stack's own multiplier applies to
MIN_NXD_POINTS = 3  # fewest NxD-stack points of a figure before their multiplier is fitted (else 1)


def on_nxd(stack: str | None) -> bool:
    """Whether a replica of ``stack`` (None: NxD Inference, the default) runs on NeuronX Distributed."""
    return (stack or NXD_DEFAULT_STACK) in NXD_STACKS


BATCH_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def collectives(w: ServeWorkload) -> int:
    """Tensor-parallel all-reduces in one decode step or prefill (none on one core)."""
    return w.arch.layers * TP_ALL_REDUCES_PER_LAYER if w.tensor > 1 else 0


@dataclass(frozen=True)
class Correction:
    """Per figure (``tpot_ms``: the decode step, ``ttft_ms``: a prefill) a multiplier of the engine
    model's time, a fixed time (ms) added to it, and a time (ms) per tensor-parallel all-reduce of
    the step: what each collective costs beyond its transfer (runtime synchronisation of every rank,
    which the engine model's hop latency leaves out; it shows in decode steps, where the transfers
    are small); and per figure of :data:`NXD_FIGURES` the further multiplier of a stack built on
    NeuronX Distributed (:func:`on_nxd`)."""

    scale: dict[str, float]
    fixed_ms: dict[str, float]
    points: tuple[str, ...] = ()
    per_collective_ms: dict[str, float] = field(default_factory=dict)
    nxd_scale: dict[str, float] = field(default_factory=dict)

    def apply(self, figure: str, raw_s: Any, n_collectives: Any = 0, stack: str | None = None) -> Any:
        """The corrected seconds of an uncorrected time of a step with ``n_collectives`` all-reduces on
        ``stack`` (None: NxD Inference)."""
        shared = self.scale[figure] * np.asarray(raw_s) + 1e-3 * (
            self.fixed_ms[figure] + self.per_collective_ms.get(figure, 0.0) * np.asarray(n_collectives))
        return shared * self.stack_scale(figure, stack)

    def stack_scale(self, figure: str, stack: str | None) -> float:
        """The stack's own multiplier of ``figure`` (an NxD stack's, :attr:`nxd_scale`; else 1)."""
        return self.nxd_scale.get(figure, 1.0) if on_nxd(stack) else 1.0


def _all_reduces_s(w: ServeWorkload, cl: Cluster, tokens: float) -> float:
    nbytes = tokens * w.arch.hidden_size * BYTES_PER_DTYPE[w.dtype]
    share = current_fit().values.get("collective", 0.7)
    one = all_reduce_s(nbytes, w.tensor, tp_ring_gb_per_s(cl) * share, cl.intra_latency_s)
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
def raw_prefill_s(w: ServeWorkload, cl: Cluster, dev: NeuronDeviceSpec, prompts: int = 1,
                  tokens: int | None = None) -> float:
    """One uncorrected prefill of ``prompts`` prompts of ``tokens`` each (the padded bucket; default:
    the prompt's uncached tokens) on one logical core."""
    p = current_fit().params(dev.core.generation)
    n = tokens or w.prefill_tokens
    ks = prefill_kernels(w.arch, n, prompts, w.dtype, w.tensor, w.weight_dtype,
                         None if w.fused_attention else False)
    return sum(t.time_s for t in time_kernels(ks, dev, prompts, p, w.arch.norm)) + p.launch_s + \
        _all_reduces_s(w, cl, prompts * n)


@functools.cache
def current_correction() -> Correction:
    """The stored multipliers (:func:`fit_correction` on every published Neuron serving point)."""
    d = json.loads(resources.files("ecobench.hardware").joinpath(CORRECTION_FILE).read_text())
    return Correction(d["scale"], d["fixed_ms"], tuple(d["points"]), d.get("per_collective_ms", {}),
                      d.get("nxd_scale", {}))


@dataclass(frozen=True)
class EmulatedServeTimer:
    """Decode steps and prefills of a replica on the emulated NeuronCore (the serving plan's timer)
    running ``stack`` (None: NxD Inference)."""

    dev: NeuronDeviceSpec
    correction: Correction
    stack: str | None = None

    def decode_s(self, w: ServeWorkload, cl: Cluster, batch: Any) -> np.ndarray:
        """Seconds of a decode step at each batch (interpolated between :data:`BATCH_GRID`)."""
        b = np.asarray(batch, dtype=float)
        top = max(2, math.ceil(float(b.max())))
        grid = sorted({g for g in BATCH_GRID if g < top} | {top})
        times = [raw_decode_s(w, cl, self.dev, g) for g in grid]
        step = self.correction.apply("tpot_ms", np.interp(b, grid, times), collectives(w), self.stack)
        return np.asarray(step, dtype=float)

    def prefill_s(self, w: ServeWorkload, cl: Cluster, prompts: int = 1) -> float:
        """Seconds to prefill ``prompts`` prompts as one context-encoding graph (a static batch's), each
        padded to its bucket (:attr:`ServeWorkload.prefill_compute_tokens`)."""
        raw = raw_prefill_s(w, cl, self.dev, prompts, w.prefill_compute_tokens)
        return float(self.correction.apply("ttft_ms", raw, collectives(w), self.stack))


# -- fitting and holding out on the published serving points -----------------------------------------


@dataclass(frozen=True)
class ServePoint:
    """A published Neuron serving point with the engine model's uncorrected figures."""

    point: Any  # hardware.published.PublishedPoint
    source: str  # the source's group (sources of one benchmark campaign are held out together)
    raw: dict[str, float]  # figure -> uncorrected prediction (ms)
    collectives: int = 0  # tensor-parallel all-reduces of its decode step and of its prefill
    stack: str | None = None  # the serving stack it ran (the point's, else its source's)


@functools.cache
def serve_points() -> tuple[ServePoint, ...]:
    """Every published ``llm_serve`` point on a Neuron instance of a dense model, with its
    uncorrected figures (a static batch prefills together, then decodes together). Mixture-of-experts
    models are left to the analytic backend: the engine model times a matmul from its dims, which for
    an expert layer carry every local expert (``workloads/moe.py``), so it would time the layer as
    dense."""
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
        if acc not in DEVICES or p.arch.moe is not None:
            continue
        cl = instance_cluster(cat, inst, p.precision)
        stack = p.stack or pts.sources[p.source].stack
        w = ServeWorkload(p.arch, p.input_tokens, p.output_tokens, p.precision, p.tensor, p.weight_precision,
                          p.kv_cache_precision, static_cache=cat.accelerators[acc].static_kv_cache,
                          prefill_bucket_tokens=p.prefill_bucket_tokens(),
                          graph_tokens=compiled_graph_tokens(cat.accelerators[acc].static_kv_cache, stack,
                                                             p.seq_len),
                          fused_attention=prefill_fused_attention(
                              stack, logical_core_size(acc),
                              p.prefill_bucket_tokens() or p.input_tokens,
                              pts.sources[p.source].fused_attention))
        b = int(p.batch_size or 1)
        raw = {"tpot_ms": 1e3 * raw_decode_s(w, cl, DEVICES[acc], p.decode_batch),
               "ttft_ms": 1e3 * raw_prefill_s(w, cl, DEVICES[acc], b, w.prefill_compute_tokens)}
        group = pts.sources[p.source].group or p.source
        figures = {f: v for f, v in raw.items() if getattr(p, f, None)}
        if not figures:  # only a tokens/s (pytorch_blog_inf2_llama2): nothing the correction predicts
            continue
        out.append(ServePoint(p, group, figures, collectives(w), stack))
    return tuple(out)


# The search: a coarse grid of (multiplier, fixed time, time per all-reduce), then Powell's method
# (no derivatives: the absolute deviations are not smooth) from its best cell, within the bounds,
# polished by iteratively reweighted least squares.
BOUNDS = ((0.2, 0.0, 0.0), (5.0, 200.0, 0.5))  # multiplier; fixed ms; ms per all-reduce
COARSE_STEPS, IRLS_ROUNDS, IRLS_FLOOR = 17, 20, 1e-4


def _l1_search(raw: np.ndarray, pub_log: np.ndarray, n: np.ndarray) -> tuple[float, float, float]:
    """(multiplier, fixed ms, ms per all-reduce) minimising sum |log published - log corrected|."""
    from scipy.optimize import least_squares, minimize

    def cost(x: np.ndarray) -> float:
        return float(np.abs(pub_log - np.log(x[0] * raw + x[1] + x[2] * n)).sum())

    (lo_a, _, _), (hi_a, hi_b, hi_c) = BOUNDS
    a, b, c = np.meshgrid(np.geomspace(lo_a, hi_a, COARSE_STEPS),
                          np.concatenate([[0.0], np.geomspace(1e-2, hi_b, COARSE_STEPS)]),
                          np.concatenate([[0.0], np.geomspace(1e-3, hi_c, COARSE_STEPS)]),
                          indexing="ij", sparse=True)
    grid = np.abs(pub_log - np.log(a[..., None] * raw + b[..., None] + c[..., None] * n)).sum(axis=-1)
    i, j, k = np.unravel_index(int(np.argmin(grid)), grid.shape)
    start = np.array([a[i, 0, 0], b[0, j, 0], c[0, 0, k]], dtype=float)
    res = minimize(cost, start, method="Powell", bounds=list(zip(*BOUNDS, strict=True)),
                   options={"xtol": 1e-10, "ftol": 1e-12, "maxfev": 20000})
    best = res.x if cost(res.x) <= cost(start) else start
    x = np.clip(best, np.array(BOUNDS[0]) + 1e-12, np.array(BOUNDS[1]) - 1e-12)
    for _ in range(IRLS_ROUNDS):  # polish: |r| = r^2 / |r|, least squares weighted by the last residuals
        w = 1.0 / np.sqrt(np.maximum(np.abs(pub_log - np.log(x[0] * raw + x[1] + x[2] * n)), IRLS_FLOOR))
        x = least_squares(lambda p, w=w: w * (pub_log - np.log(p[0] * raw + p[1] + p[2] * n)), x,
                          bounds=BOUNDS, x_scale=(1.0, 10.0, 0.05), ftol=1e-10, xtol=1e-10).x
        if cost(x) < cost(best) - 1e-12:
            best = x.copy()
        else:
            break
    return float(best[0]), float(best[1]), float(best[2])


def fit_correction(points: tuple[ServePoint, ...] | list[ServePoint]) -> Correction:
    """Each figure's multiplier, fixed time and time per all-reduce: least absolute deviations of
    log(published / corrected), searched on grids (:func:`_l1_search`). Absolute rather than squared
    deviations: the fit is then a median one, as the target is, and a few published rows far from
    the rest of their table (Neuron 2.18.0's long prompts of 7-13B models prefill 2-5 times slower
    than the same table's Llama-3 rows) do not pull every other prediction towards them. Then, per
    figure of :data:`NXD_FIGURES`, the NxD stacks' multiplier: the median of published / corrected
    over their points (the least-absolute-deviations offset given the shared fit), 1 with fewer than
    :data:`MIN_NXD_POINTS`."""
    scale, fixed, per, nxd = {}, {}, {}, {}
    for f in FIGURES:
        sel = [s for s in points if f in s.raw]
        if not sel:
            scale[f], fixed[f], per[f] = 1.0, 0.0, 0.0
            continue
        scale[f], fixed[f], per[f] = _l1_search(np.array([s.raw[f] for s in sel]),
                                                np.log([getattr(s.point, f) for s in sel]),
                                                np.array([s.collectives for s in sel], dtype=float))
    shared = Correction(scale, fixed, (), per)
    for f in NXD_FIGURES:
        sel = [s for s in points if f in s.raw and on_nxd(s.stack)]
        if len(sel) >= MIN_NXD_POINTS:
            nxd[f] = float(np.exp(np.median([math.log(getattr(s.point, f) / (
                1e3 * float(shared.apply(f, 1e-3 * s.raw[f], s.collectives))))
                for s in sel])))
    return Correction(scale, fixed, tuple(s.point.id for s in points), per, nxd)


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
            out += [HeldOut(s.point, src, f, getattr(s.point, f),
                            1e3 * float(c.apply(f, 1e-3 * v, s.collectives, s.stack)))
                    for f, v in s.raw.items()]
    return out


def write_correction(path: str) -> Correction:
    """Fit on every point and write the stored multipliers."""
    c = fit_correction(serve_points())
    with open(path, "w") as fh:
        json.dump({"scale": c.scale, "fixed_ms": c.fixed_ms, "per_collective_ms": c.per_collective_ms,
                   "nxd_scale": c.nxd_scale, "points": list(c.points),
                   "how": "least absolute deviations of log(published / corrected), "
                          "ecobench/hardware/neuron/serving.py"},
                  fh, indent=1)
        fh.write("\n")
    return c
