"""The emulated NeuronCore's free parameters, fitted on the published Neuron points.

The engine model (``work.py``) takes its costs from the Neuron documentation; what the documents do
not give is left to five parameters (:class:`~ecobench.hardware.neuron.timing.EngineParams`):
``exposed`` (how much of the non-critical engines' time pipelining fails to hide),
``tensor_limit`` (TensorE's average utilisation limit: throttling, scheduling), ``sync_s`` (per
kernel: semaphore waits and pipeline fill), ``launch_s`` (per graph execution: runtime and host),
and ``collective`` (share of link bandwidth collectives reach). The first four belong to a core
generation: NeuronCore-v2's are fitted, v1's and v3's are v2's times a factor shrunk towards 1
(prior sigma :data:`GENERATION_SIGMA` in log space), so a generation with no published point (v3)
takes v2's values. ``collective`` is shared.

The fit is a maximum a-posteriori least squares on log(predicted / published) throughput (15%
assumed scatter, as the analytic model's fit), vectorised over every kernel of every point: the
engines' work does not depend on the parameters and is computed once. :func:`holdout` refits
without each source (or its ``group``) and predicts that source's points, as
``efficiency.holdout`` does for the analytic model.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ecobench.hardware.catalog import Catalog, load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.hardware.neuron.arch import DEVICES, NeuronDeviceSpec
from ecobench.hardware.neuron.step import optimizer_share, stage_work
from ecobench.hardware.neuron.timing import EngineParams, overlap
from ecobench.hardware.neuron.work import ENGINE_OF, MECHANISMS, WorkModel
from ecobench.hardware.published import HoldoutRow, PublishedPoint, PublishedPoints, load_points
from ecobench.parallel.layout import Layout
from ecobench.parallel.step import STAGE_SETS, Cases, Layouts, Workload, case_constants, combine
from ecobench.workloads.transformer import embedding_kernels, head_kernels, layer_kernels

FIT_FILE = "data/neuron_fit.json"
FIT_KINDS = ("encoder_infer", "encoder_train", "llm_train")  # throughput points (serving ones are latencies)
OBS_SIGMA = 0.15
GENERATION_SIGMA = 0.3
# The runtime and host path differ more between generations than the engines do (Inf1's runtime
# and framework integration predate the NeuronCore-v2 stack): the launch factor is left wide.
GENERATION_SIGMAS = {"launch_s": 2.0}
BASE_GENERATION = "v2"
ENGINE_PARAMS = ("exposed", "tensor_limit", "sync_s", "launch_s")
# (centre, sigma in log space, lower bound, upper bound)
PRIORS: dict[str, tuple[float, float, float, float]] = {
    "exposed": (0.5, 1.0, 0.01, 1.0),
    "tensor_limit": (0.8, 0.5, 0.1, 1.0),
    "sync_s": (1.3e-6, 1.5, 1e-8, 1e-4),  # the DMA guide's ~1300 ns semaphore-to-start latency
    "launch_s": (5e-5, 2.0, 1e-7, 1e-2),
    "collective": (0.7, 0.3, 0.05, 1.0),  # as the analytic model's network prior
}


@dataclass(frozen=True)
class NeuronFit:
    """Fitted parameter values by name (``exposed``, ``exposed.v1``, ..., ``collective``)."""

    values: dict[str, float]
    points: tuple[str, ...]

    def params(self, generation: str) -> EngineParams:
        """The engine parameters of a core generation (v2's for one the fit never saw)."""
        v = self.values

        def get(name: str) -> float:
            base = v.get(name, PRIORS[name][0])
            if generation == BASE_GENERATION:
                return base
            return min(PRIORS[name][3], base * v.get(f"{name}.{generation}", 1.0))

        return EngineParams(exposed=get("exposed"), sync_s=get("sync_s"), launch_s=get("launch_s"),
                            tensor_limit=get("tensor_limit"),
                            collective=v.get("collective", PRIORS["collective"][0]))


@dataclass(frozen=True)
class Prepared:
    """A published Neuron point with its parameter-independent work computed."""

    point: PublishedPoint
    generation: str
    published: float  # sequences per second (whole run; per instance for inference)
    sets: dict[str, tuple[np.ndarray, np.ndarray]]  # set -> (work rows, multiplicity)
    ramp_s: float
    ranks_x_batch: float = 0.0  # inference
    constants: dict[str, Any] | None = None  # training: the step model's fixed inputs
    memory_eff: float = 1.0


def _inference_work(wm: WorkModel, p: PublishedPoint) -> tuple[np.ndarray, np.ndarray]:
    a, b = p.arch, p.batch_size or 1
    emb = embedding_kernels(a, p.seq_len, p.precision)
    layer = layer_kernels(a, p.seq_len, b, p.precision, 0)
    head = head_kernels(a, p.seq_len, b, p.precision, "inference")
    ks = emb + layer + head
    mult = np.array([1.0] * len(emb) + [float(a.layers)] * len(layer) + [1.0] * len(head))
    work = np.array([wm.work(k, b) for k in ks]).reshape(len(ks), len(MECHANISMS))
    return work, mult


def prepare(p: PublishedPoint, pts: PublishedPoints, cat: Catalog) -> Prepared | None:
    """The point's work on the emulated core, or None if it is not a throughput point on a Neuron
    instance."""
    inst = cat.instances.get(p.instance_type or "")
    if inst is None or inst.spec.accelerator not in DEVICES or p.kind not in FIT_KINDS:
        return None
    dev: NeuronDeviceSpec = DEVICES[inst.spec.accelerator]
    gen, ramp = dev.core.generation, dev.core.throttle_ramp_s
    if p.kind == "encoder_infer":
        work, mult = _inference_work(WorkModel(dev, p.arch.norm), p)
        chips = p.accelerators or inst.spec.accelerator_count
        return Prepared(p, gen, p.throughput_per_s, {"forward": (work, mult)}, ramp,
                        ranks_x_batch=float(chips * dev.cores * (p.batch_size or 1)))
    lay = p.layout
    assert lay is not None and p.global_batch_size is not None
    cl = instance_cluster(cat, inst, p.precision)
    ranks = p.nodes * cl.ranks_per_node
    data = lay.data or ranks // (lay.tensor * lay.pipeline)
    layout = Layout(lay.tensor, lay.pipeline, data, lay.zero, lay.recompute, lay.microbatch, lay.virtual)
    w = Workload(p.arch, p.seq_len, p.global_batch_size, p.precision,
                 fused_attention=None if pts.sources[p.source].fused_attention else False)
    sw = stage_work(w, lay.tensor, lay.microbatch, dev)
    sets = {name: (work, np.ones(len(work))) for name, work in sw.sets.items()}
    return Prepared(p, gen, p.throughput_per_s, sets, ramp,
                    constants=case_constants(w, cl, Layouts.of([layout], p.nodes)),
                    memory_eff=optimizer_share(dev, cl))


@functools.cache
def prepared_points() -> tuple[Prepared, ...]:
    """Every published point on a Neuron instance, prepared."""
    pts, cat = load_points(), load_catalog()
    return tuple(q for p in pts.points if (q := prepare(p, pts, cat)) is not None)


def _names(prepared: list[Prepared]) -> list[str]:
    names = list(ENGINE_PARAMS)
    gens = sorted({p.generation for p in prepared} - {BASE_GENERATION})
    names += [f"{n}.{g}" for g in gens for n in ENGINE_PARAMS]
    if any(p.constants is not None for p in prepared):
        names.append("collective")
    return names


def _kind(name: str) -> str:
    return name.split(".", 1)[0]


SETS = ("forward", *STAGE_SETS)


class Batch:
    """Every point's prediction as one vectorised function of the log-parameters."""

    def __init__(self, prepared: list[Prepared], names: list[str]) -> None:
        idx = {n: i for i, n in enumerate(names)}
        self.n = len(prepared)
        nsets = len(SETS)
        works, mults, segs, kgen, ramps = [], [], [], [], []
        for i, p in enumerate(prepared):
            for name, (work, mult) in p.sets.items():
                works.append(work)
                mults.append(mult)
                segs.append(np.full(len(work), i * nsets + SETS.index(name)))
                kgen.append(np.full(len(work), i))
                ramps.append(np.full(len(work), p.ramp_s / 2))
        self.busy = np.concatenate(works) @ ENGINE_OF  # kernels x engines
        self.mult = np.concatenate(mults)
        self.seg = np.concatenate(segs)
        self.kpoint = np.concatenate(kgen)
        self.ramp = np.concatenate(ramps) * (self.busy[:, 0] > 0)
        self.active = self.busy.max(axis=1) > 0

        def cols(param: str) -> tuple[np.ndarray, np.ndarray]:
            base = np.full(self.n, idx[param])
            dev = np.array([idx.get(f"{param}.{p.generation}", -1) for p in prepared])
            return base, dev

        self.cols = {n: cols(n) for n in ENGINE_PARAMS}
        self.i_coll = idx.get("collective", -1)
        self.infer = np.array([p.constants is None for p in prepared])
        self.rxb = np.array([p.ranks_x_batch for p in prepared])
        self.train = np.flatnonzero(~self.infer)
        consts = [p.constants for p in prepared if p.constants is not None]
        self.static = {k: np.concatenate([np.atleast_1d(c[k]) for c in consts])
                       for k in (consts[0] if consts else {})}
        self.memory_eff = np.array([p.memory_eff for p in prepared])[self.train]
        self.upper = {n: PRIORS[n][3] for n in ENGINE_PARAMS}

    def point_params(self, x: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for n, (base, dev) in self.cols.items():
            v = x[base] * np.where(dev >= 0, x[np.maximum(dev, 0)], 1.0)
            out[n] = np.minimum(v, self.upper[n])
        return out

    def predict(self, z: np.ndarray) -> np.ndarray:
        """Sequences per second of every point at log-parameters ``z``."""
        x = np.exp(z)
        pp = self.point_params(x)
        k = self.kpoint
        busy = self.busy.copy()
        busy[:, 0] /= pp["tensor_limit"][k]
        nseg = self.n * len(SETS)
        totals = np.stack([np.bincount(self.seg, weights=busy[:, e] * self.mult, minlength=nseg)
                           for e in range(busy.shape[1])], axis=1)
        fixed = np.where(self.active, pp["sync_s"][k], 0.0) + self.ramp
        fixed_seg = np.bincount(self.seg, weights=fixed * self.mult, minlength=nseg)
        seg = (overlap(totals, np.repeat(pp["exposed"], len(SETS))) + fixed_seg).reshape(self.n, len(SETS))
        out = np.empty(self.n)
        inf = self.infer
        out[inf] = self.rxb[inf] / (seg[inf, 0] + pp["launch_s"][inf])
        if len(self.train):
            tr = self.train
            s = seg[tr]
            res = combine(Cases(**self.static, f=s[:, 1], g=s[:, 2], att=s[:, 3],
                                emb=s[:, 4] + s[:, 5] + pp["launch_s"][tr], head=s[:, 6] + s[:, 7],
                                network=x[self.i_coll], sharded_network=1.0, memory_eff=self.memory_eff))
            out[tr] = res.sequences_per_s
        return out


def fit(prepared: list[Prepared]) -> NeuronFit:
    """Maximum a-posteriori parameters for these points."""
    from scipy.optimize import least_squares

    names = _names(prepared)

    def prior(n: str) -> tuple[float, float, float, float]:
        if "." in n:  # a generation's factor on v2's value
            wide = GENERATION_SIGMAS.get(_kind(n), GENERATION_SIGMA)
            narrow = wide == GENERATION_SIGMA
            return 1.0, wide, 0.2 if narrow else 1e-3, 5.0 if narrow else 1e3
        return PRIORS[n]

    centre = np.log([prior(n)[0] for n in names])
    sigma = np.array([prior(n)[1] for n in names])
    lo = np.log([prior(n)[2] for n in names])
    hi = np.log([prior(n)[3] for n in names])
    pub = np.log([p.published for p in prepared])
    batch = Batch(prepared, names)

    def residuals(z: np.ndarray) -> np.ndarray:
        return np.concatenate([(np.log(batch.predict(z)) - pub) / OBS_SIGMA, (z - centre) / sigma])

    sol = least_squares(residuals, np.clip(centre, lo + 1e-9, hi - 1e-9), bounds=(lo, hi), x_scale=1.0,
                        diff_step=1e-4, ftol=1e-8, xtol=1e-8, gtol=1e-8)
    return NeuronFit(dict(zip(names, (float(v) for v in np.exp(sol.x)), strict=True)),
                     tuple(p.point.id for p in prepared))


def predict(prepared: list[Prepared], f: NeuronFit) -> np.ndarray:
    """Sequences per second of each point with the fitted values ``f``."""
    names = _names(prepared)
    z = np.log([f.values.get(n, PRIORS[n][0] if "." not in n else 1.0) for n in names])
    return Batch(prepared, names).predict(z)


def holdout(prepared: tuple[Prepared, ...] | None = None,
            progress: Callable[[str], None] | None = None) -> list[HoldoutRow]:
    """Leave-one-source-out: each source's points predicted by a fit on every other source;
    ``progress`` hears of each source in turn."""
    prepared = prepared or prepared_points()
    pts = load_points()
    group = {k: v.group or k for k, v in pts.sources.items()}
    rows = []
    sources = list(dict.fromkeys(group[p.point.source] for p in prepared))
    for i, src in enumerate(sources, 1):
        if progress:
            progress(f"holdout emulated: fit {i}/{len(sources)}, without {src}")
        train = [p for p in prepared if group[p.point.source] != src]
        test = [p for p in prepared if group[p.point.source] == src]
        pred = predict(test, fit(train))
        rows += [HoldoutRow(p.point, src, p.published, float(v), len(train))
                 for p, v in zip(test, pred, strict=True)]
    return rows


def fit_all() -> NeuronFit:
    """The fit on every published Neuron point (what the emulated backend uses)."""
    return fit(list(prepared_points()))


@functools.cache
def current_fit() -> NeuronFit:
    """The stored fit (``data/neuron_fit.json``, written by ``python tools/neuron_refit.py``);
    a test checks it equals a fresh fit."""
    doc: dict[str, Any] = json.loads(_fit_text())
    return NeuronFit(doc["values"], tuple(doc["points"]))


def _fit_text() -> str:
    return resources.files("ecobench.hardware").joinpath(FIT_FILE).read_text("utf-8")


def log_rms(errors_pct: list[float]) -> float:
    """Root-mean-square of log(predicted / published)."""
    if not errors_pct:
        return 0.0
    return math.sqrt(sum(math.log1p(e / 100) ** 2 for e in errors_pct) / len(errors_pct))


def summarize(errors_by_kind: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Count, log-RMS, median and worst |error| (percent) per kind of point."""
    import statistics

    out = {}
    for kind, errs in sorted(errors_by_kind.items()):
        a = [abs(e) for e in errs]
        out[kind] = {"count": len(errs), "rms_log": round(log_rms(errs), 4),
                     "median_abs_pct": round(statistics.median(a), 2), "worst_abs_pct": round(max(a), 2)}
    return out


def holdout_summary() -> dict[str, dict[str, dict[str, float]]]:
    """Held-out errors on the published Neuron points, per kind, of both backends: this model's
    (:func:`holdout`) and the analytic model's (``efficiency.holdout``, restricted to the same
    points). What the backend-disagreement check compares a difference with. Slow (the analytic
    holdout refits ~30 times): stored in ``data/neuron_fit.json``."""
    from ecobench.hardware.backends.efficiency import holdout as analytic_holdout

    ours = holdout()
    ids = {r.point.id for r in ours}
    groups: dict[str, dict[str, list[float]]] = {"emulated": {}, "analytic": {}}
    for r in ours:
        groups["emulated"].setdefault(r.point.kind, []).append(r.error_pct)
    for a in analytic_holdout(kinds={"llm_train", "encoder_train", "encoder_infer"}):
        if a.point.id in ids:
            groups["analytic"].setdefault(a.point.kind, []).append(a.error_pct)
    return {name: summarize(g) for name, g in groups.items()}


@functools.cache
def stored_holdout() -> dict[str, dict[str, dict[str, float]]]:
    """The held-out error summaries stored with the fit."""
    doc: dict[str, Any] = json.loads(_fit_text())
    return doc["holdout"]


def write_fit(path: str) -> NeuronFit:
    """Fit on every published Neuron point; store the parameters and both backends' held-out errors."""
    f = fit_all()
    doc = {"values": {k: round(v, 12) for k, v in f.values.items()}, "points": list(f.points),
           "holdout": holdout_summary()}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return f
