"""Search layouts: every valid (tensor, pipeline, data, ZeRO, recompute, micro-batch) for a cluster,
or for every cluster size up to a bound, evaluated at once with the step model.

Valid means: tensor divides the heads, the feed-forward size and the ranks of one instance (and is
compatible with the key/value heads); pipeline divides the layers; expert (mixture-of-experts only)
divides the experts and the data-parallel degree; tensor x context x pipeline x data is the
cluster's ranks; data x micro-batch divides every phase's global batch. Micro-batches are powers of
two up to :data:`MAX_MICROBATCH`. The fastest layout that fits device memory wins. On a cluster whose
ranks no such split fills (or none that fills fits), the search also takes pipeline degrees that do not
divide the layers (uneven stages: 3 x 8 ranks of p4d fill with pipeline 3 over Llama 2's 32 layers)
and, for each (tensor, context, pipeline) dividing them, the largest data degree that fits in the
ranks and divides the global batch, leaving the other ranks idle (:func:`filling_or_idle`). The
search runs the 1F1B schedule.

Context parallelism (ring) is searched at powers of two that divide every phase's sequence and leave
each rank at least :data:`MIN_CONTEXT_CHUNK` tokens of the longest phase (Llama 3 405B's
131k-token stage ran context 16 over 8,192-token chunks; shorter chunks leave the ring's key/value
exchange uncovered by attention compute), so scenarios whose phases are all under 16,384 tokens
search no context parallelism; a configuration's ``parallelism.context`` sets any degree. Offload
is slower than the same layout without it, so it is searched only for the layouts that do not fit
without it (:func:`with_offload`), on instances with host figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ecobench.parallel.context import CONTEXT_COMMS
from ecobench.parallel.layout import (
    EXPERT_DISPATCHES,
    RECOMPUTE,
    RECOMPUTE_BY_MEMORY,
    SCHEDULES,
    SEARCHED_RECOMPUTE,
    ZERO_STAGES,
    Layout,
    divisors,
    problems,
)
from ecobench.parallel.offload import OFFLOADS
from ecobench.parallel.step import Cluster, Efficiency, Layouts, StepResult, Workload, evaluate

MAX_MICROBATCH = 64
# Tokens per context-parallel rank, the search's smallest chunk: Llama 3 405B's 131,072-token stage
# ran context 16, 8,192 tokens a rank (Dubey et al., "The Llama 3 Herd of Models", 2024, §3.3.2).
MIN_CONTEXT_CHUNK = 8192
MAX_CONTEXT = 32
# The most stages the search gives uneven splits: twice the 64 of Megatron-LM's 1T-parameter run
# (Narayanan et al., SC'21, arXiv 2104.04473, Table 1); it bounds the layouts a deadline search adds
# (a 997-layer model up to 100,000 instances: 2.7 GB and 16 s with every degree up to the layers).
MAX_UNEVEN_PIPELINE = 128


@dataclass
class Phase:
    """One sequence-length phase: its workload and how many sequences it processes."""

    workload: Workload
    sequences: float


@dataclass
class Evaluated:
    """Candidate layouts and, per phase, their step results; totals over the phases."""

    layouts: Layouts
    results: list[StepResult]
    total_s: np.ndarray  # time to process every phase's sequences
    fits: np.ndarray

    def best(self, mask: np.ndarray | None = None) -> int | None:
        """Index of the fastest fitting layout (within ``mask``), or None."""
        ok = self.fits if mask is None else (self.fits & mask)
        if not ok.any():
            return None
        return int(np.argmin(np.where(ok, self.total_s, np.inf)))


def tensor_options(w: Workload, ranks_per_node: int) -> list[int]:
    """Tensor-parallel degrees valid for the model inside one instance."""
    a = w.arch
    return [t for t in divisors(ranks_per_node)
            if a.heads % t == 0 and a.intermediate_size % t == 0 and (a.kv % t == 0 or t % a.kv == 0)
            and (a.moe is None or a.moe.expert_intermediate_size % t == 0)]


def context_options(phases: list[Phase], context: int | None = None) -> list[int]:
    """Context-parallel degrees the search tries (``context``: only that one)."""
    if context is not None:
        return [context]
    seqs = [ph.workload.seq_len for ph in phases]
    g, longest = int(np.gcd.reduce(seqs)), max(seqs)
    return [c for c in (2**k for k in range(6)) if c <= MAX_CONTEXT and g % c == 0
            and (c == 1 or longest // c >= MIN_CONTEXT_CHUNK)]


def enumerate_layouts(phases: list[Phase], ranks_per_node: int, nodes: int | None,
                      max_nodes: int = 1, max_zero_stage: int = 3, context: int | None = None,
                      pipelines: list[int] | None = None, idle: bool = False,
                      microbatches: list[int] | None = None, recomputes: tuple[str, ...] = SEARCHED_RECOMPUTE,
                      zeros: tuple[int, ...] | None = None) -> Layouts:
    """Every valid layout on ``nodes`` instances, or on any count from 1 to ``max_nodes`` (context
    parallelism at :func:`context_options`; no offload: see :func:`with_offload`); pipeline degrees
    from ``pipelines`` (default: the divisors of the layers). With ``idle`` (and ``nodes``), layouts
    that leave ranks idle: the largest data degree that fits and divides the global batch.
    ``microbatches``, ``recomputes`` and ``zeros`` replace the search's own sets (powers of two up to
    :data:`MAX_MICROBATCH`; :data:`SEARCHED_RECOMPUTE`; the platform's ZeRO stages, 0 alone on one
    replica) with a configuration's stated values: a deadline search over a given layout's sizes."""
    w = phases[0].workload
    batches = [ph.workload.global_batch for ph in phases]
    g = int(np.gcd.reduce(batches))
    rows: list[tuple[int, ...]] = []
    experts = divisors(w.arch.moe.experts) if w.arch.moe is not None else [1]
    for c in context_options(phases, context):
        for t in tensor_options(w, ranks_per_node):
            for p in pipelines or divisors(w.arch.layers):
                tcp = t * c * p
                if nodes is not None:
                    ranks = nodes * ranks_per_node
                    if idle:
                        fit = [d for d in divisors(g) if tcp * d <= ranks]
                        datas = fit[-1:]
                    elif ranks % tcp:
                        continue
                    else:
                        datas = [ranks // tcp]
                else:
                    datas = [d for d in divisors(g) if (tcp * d) % ranks_per_node == 0
                             and (tcp * d) // ranks_per_node <= max_nodes]
                for d in datas:
                    n = nodes if nodes is not None and idle else tcp * d // ranks_per_node
                    if n < 1 or g % d:
                        continue
                    for b in microbatches or [2**k for k in range(7)]:
                        if (microbatches is None and b > MAX_MICROBATCH) or (g // d) % b:
                            continue
                        for z in zeros or (ZERO_STAGES[:max_zero_stage + 1] if d * c > 1 else (0,)):
                            for rc in (RECOMPUTE.index(r) for r in recomputes):
                                for e in experts:
                                    if d % e == 0:
                                        rows.append((t, p, d, z, rc, b, 1, n, e, c))
    arr = np.array(rows, dtype=np.int64).reshape(-1, 10)
    cols = dict(zip(("tensor", "pipeline", "data", "zero", "recompute", "microbatch", "virtual", "nodes",
                     "expert", "context"), arr.T, strict=True))
    return Layouts(**cols)


def every_pipeline(layers: int) -> list[int]:
    """The pipeline degrees dividing the layers and those up to :data:`MAX_UNEVEN_PIPELINE` that do not
    (their stages hold ``layers // p`` layers or one more: ``layout.stage_layers``)."""
    return [p for p in range(1, layers + 1) if layers % p == 0 or p <= MAX_UNEVEN_PIPELINE]


def filling_or_idle(phases: list[Phase], ranks_per_node: int, nodes: int, max_zero_stage: int = 3) -> Layouts:
    """The layouts for a cluster whose ranks no pipeline degree dividing the layers fills (with a data
    degree dividing the global batch): those that fill every rank with uneven stages, and those
    that leave ranks idle (:func:`enumerate_layouts` with ``idle``); the search takes the fastest."""
    layers = phases[0].workload.arch.layers
    full = enumerate_layouts(phases, ranks_per_node, nodes, max_zero_stage=max_zero_stage,
                             pipelines=every_pipeline(layers))
    idle = enumerate_layouts(phases, ranks_per_node, nodes, max_zero_stage=max_zero_stage, idle=True)
    return joined(full, idle)


def joined(*parts: Layouts) -> Layouts:
    """Layouts one after the other."""
    return Layouts(*(np.concatenate([getattr(x, f) for x in parts]) for f in Layouts.FIELDS))


def with_offload(ev: Evaluated, phases: list[Phase], cl: Cluster, eff: Efficiency | StepEvaluator,
                 offloads: tuple[str, ...] = ("cpu", "nvme")) -> Evaluated:
    """``ev`` and, for each of its layouts that does not fit, the same layout with its optimizer state
    offloaded (cpu: ZeRO 1-3; nvme: ZeRO-3), where the instance has host figures."""
    if not np.isfinite(cl.host_link_gb_per_s):
        return ev
    L = ev.layouts
    extra = []
    for name in offloads:
        k = OFFLOADS.index(name)
        ok = ~ev.fits & ((L.zero == 3) if name == "nvme" else (L.zero >= 1))
        if ok.any():
            sub = L.select(ok)
            sub.offload = np.full(len(sub), k, dtype=np.int64)
            extra.append(sub)
    if not extra:
        return ev
    return joined_evaluations(ev, evaluate_phases(phases, cl, joined(*extra), eff))


def joined_evaluations(a: Evaluated, b: Evaluated) -> Evaluated:
    """Two evaluations of the same phases, ``b``'s layouts after ``a``'s."""
    results = [StepResult(*(np.concatenate([getattr(x, f), getattr(y, f)]) for f in _RESULT_ARRAYS),
                          _joined_parts(x.parts, y.parts, len(x.step_s), len(y.step_s)))
               for x, y in zip(a.results, b.results, strict=True)]
    return Evaluated(joined(a.layouts, b.layouts), results, np.concatenate([a.total_s, b.total_s]),
                     np.concatenate([a.fits, b.fits]))


def with_uneven_counts(ev: Evaluated, phases: list[Phase], cl: Cluster, eff: Efficiency | StepEvaluator,
                       max_nodes: int) -> Evaluated:
    """``ev`` and, at the instance counts up to ``max_nodes`` where none of its layouts fits, the
    layouts whose pipeline degree does not divide the layers (uneven stages, :func:`every_pipeline`),
    with offload where they need it: 3 p4d run Llama 2 7B as TP1 PP3 DP8, a count no even split fills."""
    layers = phases[0].workload.arch.layers
    uneven = [p for p in every_pipeline(layers) if layers % p]
    if not uneven:
        return ev
    U = enumerate_layouts(phases, cl.ranks_per_node, None, max_nodes, cl.max_zero_stage, pipelines=uneven)
    U = U.select(~np.isin(U.nodes, ev.layouts.nodes[ev.fits]))
    if not len(U):
        return ev
    return joined_evaluations(ev, with_offload(evaluate_phases(phases, cl, U, eff), phases, cl, eff))


def _joined_parts(a: dict[str, np.ndarray], b: dict[str, np.ndarray], na: int,
                  nb: int) -> dict[str, np.ndarray]:
    """Two evaluations' step parts, one after the other; a part only one of them has is 0 in the
    other (``ep_comm_s`` exists only where some layout has expert parallelism: the offloaded subset
    of a mixture-of-experts search may have none, which was a KeyError, exit 3)."""
    return {k: np.concatenate([np.broadcast_to(a.get(k, 0.0), na), np.broadcast_to(b.get(k, 0.0), nb)])
            for k in dict.fromkeys([*a, *b])}


_RESULT_ARRAYS = ("step_s", "compute_s", "comm_exposed_s", "bubble_s", "memory_gib", "fits", "mfu",
                  "sequences_per_s")


def nearest_counts(phases: list[Phase], cl: Cluster, nodes: int, eff: Efficiency | StepEvaluator,
                   accept: Callable[[Layouts], np.ndarray] | None = None,
                   offload: bool = False, like: Layout | None = None) -> tuple[int | None, int | None]:
    """The nearest instance counts below and above ``nodes`` (up to twice it, or 64) with a layout
    that fills their ranks, fits device memory and passes ``accept`` (a mask over the layouts); with
    ``offload``, a layout that fits only with its optimizer state offloaded, or only with uneven stages,
    counts (as ``auto`` plans).
    With ``like`` (a given layout), only that layout at other data degrees: what the configuration
    runs at another count (its tensor, context, pipeline, ZeRO stage, recompute, micro-batch, expert
    degree, schedule and offload kept)."""
    most = max(2 * nodes, 64)
    if like is None:
        L = enumerate_layouts(phases, cl.ranks_per_node, None, most, cl.max_zero_stage)
    else:
        L = shaped_like(enumerate_layouts(phases, cl.ranks_per_node, None, most, cl.max_zero_stage,
                                          context=like.context, pipelines=[like.pipeline]), like)
    if not len(L):
        return None, None
    ev = evaluate_phases(phases, cl, L, eff)
    if offload:  # as auto plans: offload, and uneven stages at counts no even split fits
        ev = with_uneven_counts(with_offload(ev, phases, cl, eff), phases, cl, eff, most)
        L = ev.layouts
    ok = ev.fits
    if accept is not None:
        ok &= accept(L)
    counts = np.unique(L.nodes[ok])
    below, above = counts[counts < nodes], counts[counts > nodes]
    return (int(below.max()) if len(below) else None, int(above.min()) if len(above) else None)


def shaped_like(L: Layouts, like: Layout) -> Layouts:
    """The layouts of ``L`` with ``like``'s tensor, context, pipeline, ZeRO stage, recompute,
    micro-batch and expert degree, given its schedule, virtual stages, offload and expert options."""
    keep = ((L.tensor == like.tensor) & (L.context == like.context) & (L.pipeline == like.pipeline)
            & (L.zero == like.zero) & (L.recompute == RECOMPUTE.index(like.recompute))
            & (L.microbatch == like.microbatch) & (L.expert == like.expert))
    out = L.select(keep)
    n = len(out)
    out.virtual = np.full(n, like.virtual, dtype=np.int64)
    out.schedule = np.full(n, SCHEDULES.index(like.schedule), dtype=np.int64)
    out.context_comm = np.full(n, CONTEXT_COMMS.index(like.context_comm), dtype=np.int64)
    out.offload = np.full(n, OFFLOADS.index(like.offload), dtype=np.int64)
    out.expert_tensor = np.full(n, like.tensor if like.expert_tensor is None else like.expert_tensor,
                                dtype=np.int64)
    out.expert_dispatch = np.full(n, EXPERT_DISPATCHES.index(like.expert_dispatch), dtype=np.int64)
    out.expert_overlap = np.full(n, int(like.expert_overlap), dtype=np.int64)
    return out


def counts_text(near: tuple[int | None, int | None]) -> str:
    """``; the nearest instance counts that do: 96 and 128`` (empty when none is known)."""
    found = [str(n) for n in near if n is not None]
    return f"; the nearest instance counts that do: {' and '.join(found)}" if found else ""


# A backend's own step model (the emulated NeuronCore's) in place of the fitted efficiencies.
StepEvaluator = Callable[[Workload, Cluster, Layouts], StepResult]


def evaluate_phases(phases: list[Phase], cl: Cluster, L: Layouts,
                    eff: Efficiency | StepEvaluator) -> Evaluated:
    """Step results of every layout in every phase, and the total time over the phases."""
    results = [eff(ph.workload, cl, L) if callable(eff) else evaluate(ph.workload, cl, L, eff)
               for ph in phases]
    total = sum(ph.sequences / r.sequences_per_s for ph, r in zip(phases, results, strict=True))
    fits = np.logical_and.reduce([r.fits & np.isfinite(r.step_s) for r in results])
    return Evaluated(L, results, np.asarray(total, dtype=float), fits)


def layout_problems(phases: list[Phase], layout: Layout, ranks_per_node: int, nodes: int,
                    max_zero_stage: int = 3) -> list[str]:
    """Why a layout cannot run (every phase's global batch checked)."""
    out: list[str] = []
    for ph in phases:
        for msg in problems(layout, ph.workload.arch, nodes * ranks_per_node, ranks_per_node,
                            ph.workload.global_batch, max_zero_stage, ph.workload.seq_len):
            if msg not in out:
                out.append(msg)
    return out


def fixes_that_fit(phases: list[Phase], cl: Cluster, layout: Layout, nodes: int,
                   eff: Efficiency | StepEvaluator, fixed_data: bool = False) -> list[str]:
    """The smallest single changes to ``layout`` that fit memory, e.g. ``tensor >= 8``, ``zero: 3``.
    A larger tensor, pipeline or context degree takes the ranks left over as data; with
    ``fixed_data`` (the configuration states its data degree) it keeps ``layout.data``, and a change
    that then needs more ranks than the cluster has is no fix."""
    ranks = nodes * cl.ranks_per_node
    w = phases[0].workload
    trials: list[tuple[str, Layout]] = []
    c0 = layout.context

    def grown(label: str, tensor: int, pipeline: int, context: int) -> None:
        tcp = tensor * context * pipeline
        if fixed_data:
            trials.append((label, _with(layout, tensor=tensor, pipeline=pipeline, context=context)))
        elif ranks % tcp == 0:
            trials.append((label, _with(layout, tensor=tensor, pipeline=pipeline, context=context,
                                        data=ranks // tcp)))

    for t in tensor_options(w, cl.ranks_per_node):
        if t > layout.tensor:
            grown(f"tensor >= {t}", t, layout.pipeline, c0)
    for p in divisors(w.arch.layers):
        if p > layout.pipeline:
            grown(f"pipeline >= {p}", layout.tensor, p, c0)
    for z in ZERO_STAGES[:cl.max_zero_stage + 1]:
        if z > layout.zero and layout.data * layout.context > 1:
            trials.append((f"zero: {z}", _with(layout, zero=z)))
    for c in context_options(phases):
        if c > layout.context:
            grown(f"context >= {c}", layout.tensor, layout.pipeline, c)
    if np.isfinite(cl.host_link_gb_per_s) and layout.offload == "none":
        label = "offload: cpu" + ("" if layout.zero else " with zero: 1")
        trials.append((label, _with(layout, offload="cpu", zero=max(1, layout.zero))))
    for rc in [r for r in RECOMPUTE_BY_MEMORY[RECOMPUTE_BY_MEMORY.index(layout.recompute) + 1:]
               if r in SEARCHED_RECOMPUTE]:  # the modes that keep less, as the search tries them
        trials.append((f"recompute: {rc}", _with(layout, recompute=rc)))
    for m in reversed([d for d in divisors(layout.microbatch) if d < layout.microbatch]):
        trials.append((f"microbatch: {m}", _with(layout, microbatch=m)))  # the largest that fits first
    trials = [(label, lay) for label, lay in trials
              if not layout_problems(phases, lay, cl.ranks_per_node, nodes, cl.max_zero_stage)]
    if not trials:
        return []
    ev = evaluate_phases(phases, cl, Layouts.of([lay for _, lay in trials], nodes), eff)
    found: dict[str, str] = {}
    for i, (label, _) in enumerate(trials):
        kind = label.split()[0].rstrip(":")
        if ev.fits[i] and kind not in found:
            found[kind] = label
    return list(found.values())


def _with(layout: Layout, **changes: object) -> Layout:
    from dataclasses import replace

    return replace(layout, **changes)  # type: ignore[arg-type]
