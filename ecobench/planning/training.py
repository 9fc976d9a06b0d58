"""Training plans: the layout each configuration runs, checked against device memory, and the cluster
size that meets a deadline.

* No ``parallelism``: data parallelism over every rank, the scenario's micro-batch, no ZeRO, no
  recomputation (what version-1 scenarios meant).
* ``parallelism: {...}``: that layout (``data`` defaults to the remaining ranks).
* ``parallelism: auto``: every valid layout is evaluated with the analytic step model (or, for an
  emulated configuration, the emulated NeuronCore's); the fastest that fits device memory in every
  phase wins.
* No ``instances`` and ``training.deadline_h``: the fewest instances (up to
  ``training.max_instances``) whose best layout finishes in time.

A layout that does not fit, or a deadline no cluster meets, is bad input: the message names the
device memory, what the layout needs and the smallest changes that would fit, or the fastest time
reachable and what limits it.

Device memory is what the catalog (or ``device_memory_gib``) gives less ``memory_headroom_pct``
(default 10%, ``parallel/memory.py``); the recipe's optimizer, master weights and attention kernel
set the state and activation bytes. ``auto`` prefers, among layouts within
:data:`RECIPE_TOLERANCE_PCT` of the fastest, the one closest to a published recipe for a model of
that size (``planning/recipes.py``), and says when its pick is unlike any.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ecobench.errors import InputError
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.layout import (
    EXPERT_DISPATCHES,
    RECOMPUTE,
    SCHEDULES,
    SEARCHED_RECOMPUTE,
    Layout,
    divisors,
    nearest_divisor,
)
from ecobench.parallel.memory import (
    DEFAULT_MEMORY_HEADROOM_PCT,
    Recipe,
    memory_in_words,
    rank_word,
    with_headroom,
)
from ecobench.parallel.offload import HOST
from ecobench.parallel.search import (
    Evaluated,
    Phase,
    StepEvaluator,
    counts_text,
    enumerate_layouts,
    evaluate_phases,
    every_pipeline,
    filling_or_idle,
    fixes_that_fit,
    layout_problems,
    nearest_counts,
    tensor_options,
    with_offload,
    with_uneven_counts,
)
from ecobench.parallel.step import Cluster, Efficiency, Layouts, Workload
from ecobench.planning.recipes import prefer_published
from ecobench.scenario.model import HardwareConfig, ParallelismSpec, TrainingSpec
from ecobench.units import SECONDS_PER_HOUR
from ecobench.words import counted
from ecobench.workloads.architecture import Architecture


@dataclass(frozen=True)
class TrainingPlan:
    """What a configuration runs: the cluster size, the layout and how it was chosen."""

    instances: int
    layout: Layout
    choice: str  # "given", "data parallel (default)", "auto: fastest of N ...", "deadline: ..."
    memory_per_device_gib: float
    phase_global_batch: tuple[int, ...] = field(default_factory=tuple)


def recipe_of(cfg: HardwareConfig) -> Recipe:
    """The configuration's optimizer, master weights and attention kernel."""
    return Recipe(cfg.optimizer, cfg.master_weights, cfg.attention_kernel)


def phases_of(tr: TrainingSpec, arch: Architecture, dtype: str, recipe: Recipe | None = None) -> list[Phase]:
    """The scenario's phases as step-model workloads with their sequence counts."""
    decoder = arch.kind == "decoder"
    r = recipe or Recipe()
    return [Phase(Workload(arch, ph.seq_len, tr.global_batch(ph, decoder), dtype, tr.task, tr.num_labels,
                           r.fused_attention, r.optimizer, r.master_weights),
                  tr.phase_sequences(ph)) for ph in tr.phases]


def headroom_pct(cfg: HardwareConfig) -> float:
    """The configuration's memory headroom, percent of device memory."""
    return DEFAULT_MEMORY_HEADROOM_PCT if cfg.memory_headroom_pct is None else cfg.memory_headroom_pct


def given_layout(spec: ParallelismSpec | None, tr: TrainingSpec, arch: Architecture, cfg: HardwareConfig,
                 ranks: int) -> Layout:
    """The layout a configuration states (or the data-parallel default)."""
    micro = cfg.batch_size or tr.microbatch(arch.kind == "decoder")
    gbs = [tr.global_batch(ph, arch.kind == "decoder") for ph in tr.phases]
    if spec is None:
        return Layout(1, 1, data_degree(ranks, gbs, micro), 0, "none", micro)
    t, p, c = spec.tensor, spec.pipeline, spec.context
    mb = spec.microbatch or micro
    data = spec.data if spec.data is not None else data_degree(ranks // (t * p * c), gbs, mb)
    return Layout(t, p, data, spec.zero, spec.recompute, mb, spec.virtual_stages, spec.schedule,
                  expert=spec.expert, context=c, context_comm=spec.context_comm, offload=spec.offload,
                  expert_tensor=spec.expert_tensor, expert_dispatch=spec.expert_dispatch,
                  expert_overlap=spec.expert_overlap)


def data_degree(most: int, global_batches: list[int], micro: int) -> int:
    """The data-parallel degree over at most ``most`` replicas: all of them when every global batch
    is a multiple of ``most x micro``, else the largest degree that keeps it so (the other ranks stay
    idle); ``most`` itself when none does (the layout's check then says why)."""
    if most < 1 or all(g % (most * micro) == 0 for g in global_batches):
        return max(1, most)
    ok = [d for d in range(most, 0, -1) if all(g % (d * micro) == 0 for g in global_batches)]
    return ok[0] if ok else most


def _memory_message(cl: Cluster, need_gib: float, inst: Instance, n: int, layout: Layout,
                    fixes: list[str], fixed_data: bool = False) -> str:
    keep = f" (keeping data {layout.data})" if fixed_data else ""
    fix = ("; it fits with " + ", or ".join(fixes) + keep) if fixes else (
        "; no single change of tensor, pipeline, context, zero, offload, recompute or microbatch fits"
        + f"{keep}: use {'another data degree' if fixed_data else 'more instances'}, a device with more "
        "memory, or parallelism: auto")
    ranks = n * cl.ranks_per_node
    if layout.ranks < ranks:  # trial: "DP16 ... on 3x p4d.24xlarge" hid that 8 of the 24 ranks idle
        where = (f"uses {layout.ranks} of the {ranks} ranks of {n}x {inst.name} ({ranks - layout.ranks} stay "
                 f"idle) and needs {need_gib:.1f} GiB per {rank_word(cl)}")
    else:
        where = f"needs {need_gib:.1f} GiB per {rank_word(cl)} on {n}x {inst.name}"
    return f"{layout.describe()} {where}, which has {memory_in_words(cl)}{fix}"


def planning_cluster(cat: Catalog, inst: Instance, cfg: HardwareConfig) -> Cluster:
    """The instance's cluster figures with the configuration's memory headroom taken off."""
    return with_headroom(instance_cluster(cat, inst, cfg.precision), headroom_pct(cfg))


def _check_spec(spec: ParallelismSpec, phases: list[Phase], cl: Cluster, inst: Instance,
                vendor: str = "nvidia") -> None:
    """A stated context degree that does not divide a phase, offload without host figures, or per-op
    selective checkpointing off NVIDIA GPUs."""
    if spec.recompute == "selective_op" and vendor != "nvidia":
        raise InputError(f"recompute selective_op (PyTorch per-op selective checkpointing, as torchtitan "
                         f"runs it on NVIDIA GPUs) is not modelled for {inst.name}'s {vendor} devices; "
                         f"use none, selective or full").in_config("parallelism.recompute")
    c = spec.context
    for ph in phases:
        s = ph.workload.seq_len
        if c > 1 and s % c:
            raise InputError(f"context {c} must divide every phase's seq_len; the {s}-token phase "
                             f"is not a multiple of it (nearest valid: context "
                             f"{nearest_divisor(s, c)})").in_config("parallelism.context")
    if spec.offload != "none" and not np.isfinite(cl.host_link_gb_per_s):
        raise InputError(f"offload {spec.offload}: the catalog has no sourced host-link, host-memory and "
                         f"NVMe figures for {inst.name} (instances with them: "
                         f"{', '.join(sorted(HOST))}); use offload: none").in_config("parallelism.offload")


def plan(tr: TrainingSpec, arch: Architecture, cfg: HardwareConfig, inst: Instance,
         cat: Catalog, eff: Efficiency | StepEvaluator) -> TrainingPlan:
    """Resolve a configuration's layout (and instance count, for a deadline). Its errors are about
    the configuration's ``parallelism`` or ``instances`` (``EcobenchError.in_config``)."""
    cl = planning_cluster(cat, inst, cfg)
    phases = phases_of(tr, arch, cfg.precision, recipe_of(cfg))
    gbs = tuple(ph.workload.global_batch for ph in phases)
    if isinstance(cfg.parallelism, ParallelismSpec):
        _check_spec(cfg.parallelism, phases, cl, inst, _vendor(cat, inst))
    if cfg.instances is None:
        return _for_deadline(tr, cfg, inst, cl, phases, eff, gbs, _vendor(cat, inst))
    n = cfg.instances
    ranks = n * cl.ranks_per_node
    if cfg.parallelism == "auto":
        L = enumerate_layouts(phases, cl.ranks_per_node, n, max_zero_stage=cl.max_zero_stage)
        ev = with_offload(evaluate_phases(phases, cl, L, eff), phases, cl, eff) if len(L) else None
        i = ev.best() if ev is not None else None
        unfilled = ev is None or i is None
        fills = len(L) > 0  # some layout with even stages fills every rank (but none fits memory)
        if unfilled:  # no layout fills the ranks and fits: uneven stages, or some ranks idle
            L = filling_or_idle(phases, cl.ranks_per_node, n, cl.max_zero_stage)
            ev = with_offload(evaluate_phases(phases, cl, L, eff), phases, cl, eff) if len(L) else ev
            i = ev.best() if ev is not None and len(L) else None
        if ev is None or i is None:
            near = nearest_counts(phases, cl, n, eff, offload=True)
            raise InputError(_no_fit_message(inst, n, cl, ev) + counts_text(near)).in_config("parallelism")
        i, note = prefer_published(ev, i, arch, ev.fits, _vendor(cat, inst))
        lay = ev.layouts.layout(i)
        idle = unfilled_note(arch.layers, lay, ranks, gbs, fills) if unfilled else ""
        return TrainingPlan(n, lay, f"auto: fastest of {int(ev.fits.sum())} layouts that fit "
                                    f"({len(ev.layouts)} valid){note}{idle}", _memory(ev, i), gbs)
    lay = given_layout(cfg.parallelism if cfg.parallelism != "auto" else None, tr, arch, cfg, ranks)
    where = "parallelism" if cfg.parallelism is not None else "instances"
    fixed_data = isinstance(cfg.parallelism, ParallelismSpec) and cfg.parallelism.data is not None
    bad = layout_problems(phases, lay, cl.ranks_per_node, n, cl.max_zero_stage)
    supplied = cfg.parallelism is None and cfg.measured_throughput_per_s is not None
    if bad and supplied:
        return _supplied_auto(tr, arch, cfg, inst, cat, eff,
                              f"{lay.describe()} cannot run ({'; '.join(bad)})")
    if bad:
        near = nearest_counts(phases, cl, n, eff, _same_data(lay, fixed_data), like=lay) if any(
            "ranks" in b or "global batch" in b for b in bad) else (None, None)
        raise InputError(f"{lay.describe()} cannot run on {n}x {inst.name} "
                         f"({ranks} ranks): " + "; ".join(bad) + counts_text(near)
                         ).in_config(where, cause="; ".join(bad))
    ev = evaluate_phases(phases, cl, Layouts.of([lay], n), eff)
    if not np.isfinite(ev.total_s[0]):
        raise InputError(f"the catalog has no device-link figure for {inst.name}, which this "
                         "layout's collectives need").in_config(where)
    if not ev.fits[0] and supplied:
        return _supplied_auto(tr, arch, cfg, inst, cat, eff,
                              f"{lay.describe()} needs {_memory(ev, 0):.1f} GiB per {rank_word(cl)}, "
                              f"which has {memory_in_words(cl)}")
    if not ev.fits[0]:
        fixes = fixes_that_fit(phases, cl, lay, n, eff, fixed_data)
        near = nearest_counts(phases, cl, n, eff, _same_data(lay, fixed_data), like=lay)
        shape = f"this layout (data {lay.data})" if fixed_data else "this layout"
        raise InputError(_memory_message(cl, _memory(ev, 0), inst, n, lay, fixes, fixed_data)
                         + counts_text(near).replace("do:", f"fit {shape}:")).in_config(where)
    choice = "given" if cfg.parallelism is not None else "data parallel (default)"
    if lay.ranks < ranks:
        choice += "; " + _idle_note(phases, cl, inst, n, lay, eff, fixed_data)
    return TrainingPlan(n, lay, choice, _memory(ev, 0), gbs)


def _supplied_auto(tr: TrainingSpec, arch: Architecture, cfg: HardwareConfig, inst: Instance, cat: Catalog,
                   eff: Efficiency | StepEvaluator, why: str) -> TrainingPlan:
    """A supplied throughput without ``parallelism`` whose data-parallel default cannot run: the run
    it measures did, so the layout its draw is modelled at is ``auto``'s, and the choice says why."""
    p = plan(tr, arch, cfg.model_copy(update={"parallelism": "auto"}), inst, cat, eff)
    return replace(p, choice=f"supplied throughput (measured_throughput_per_s), no parallelism given: the "
                             f"data-parallel default {why}; the draw is modelled at {p.choice}")


def unfilled_note(layers: int, lay: Layout, ranks: int, global_batches: tuple[int, ...],
                  fills: bool = False) -> str:
    """What ``auto`` says when no layout whose pipeline degree divides the layers fills every rank
    (or, with ``fills``, none that does fits memory): the uneven stages of the layout that fills them,
    or the ranks left idle and the global batches nearest the scenario's that would fill them at the
    layout's tensor, context, pipeline and micro-batch."""
    why = (f"; no layout whose pipeline degree divides the {layers} layers "
           + ("and fills every rank fits device memory" if fills else "fills every rank"))
    if lay.ranks == ranks:
        if layers % lay.pipeline == 0:
            return ""
        q = layers // lay.pipeline
        return f"{why}: pipeline {lay.pipeline} splits them unevenly ({q} or {q + 1} layers a stage)"
    return f"{why}, so {ranks - lay.ranks} stay idle" + batch_hint(lay, ranks, global_batches)


def batch_hint(lay: Layout, ranks: int, global_batches: tuple[int, ...]) -> str:
    """``; global_batch_size 1,008 or 1,032 (multiples of data 24 x microbatch 1) would fill them``,
    for a single global batch and a tensor x context x pipeline that divides the ranks (else empty)."""
    tcp = lay.tensor * lay.context * lay.pipeline
    if len(set(global_batches)) != 1 or ranks % tcp:
        return ""
    data = ranks // tcp
    step = data * lay.microbatch
    below = global_batches[0] // step * step
    sizes = [f"{x:,}" for x in (below, below + step) if x > 0]
    return (f"; global_batch_size {' or '.join(sizes)} (multiples of data {data} x microbatch "
            f"{lay.microbatch}) would fill them")


IDLE_NOTE = "{given} uses {used} of the {ranks} ranks of {n}x {inst}; {idle} stay idle, drawing idle power"


def _idle_note(phases: list[Phase], cl: Cluster, inst: Instance, n: int, lay: Layout,
               eff: Efficiency | StepEvaluator, fixed_data: bool = False) -> str:
    """What a layout that leaves ranks idle uses, and the valid layout that fits memory, uses every
    rank and is most like it (the fewest of tensor, pipeline, data, context, expert, ZeRO stage,
    recompute and micro-batch changed; then the fastest); with ``fixed_data``, one of its data
    degree."""
    ranks = n * cl.ranks_per_node
    note = IDLE_NOTE.format(given=lay.describe(), used=lay.ranks, ranks=ranks, n=n, inst=inst.name,
                            idle=ranks - lay.ranks)
    ev = None
    for pipelines in (None, every_pipeline(phases[0].workload.arch.layers)):  # uneven stages if need be
        L = enumerate_layouts(phases, cl.ranks_per_node, n, max_zero_stage=cl.max_zero_stage,
                              pipelines=pipelines)
        if fixed_data:
            L = L.select(L.data == lay.data)
        ev = evaluate_phases(phases, cl, L, eff) if len(L) else None
        if ev is not None and ev.fits.any():
            break
    if ev is None or not ev.fits.any():
        if fixed_data:
            return note + f" (no valid layout of data {lay.data} that fits memory uses every rank)"
        gbs = tuple(ph.workload.global_batch for ph in phases)
        return note + " (no valid layout that fits memory uses every rank)" + batch_hint(lay, ranks, gbs)
    L = ev.layouts
    recompute = RECOMPUTE.index(lay.recompute)
    unlike = ((L.tensor != lay.tensor).astype(int) + (L.pipeline != lay.pipeline) + (L.data != lay.data)
              + (L.context != lay.context) + (L.expert != lay.expert) + (L.zero != lay.zero)
              + (L.recompute != recompute) + (L.microbatch != lay.microbatch))
    unlike = np.where(ev.fits, unlike, np.iinfo(np.int64).max)
    cand = np.flatnonzero(unlike == unlike.min())
    best = L.layout(int(cand[np.argmin(ev.total_s[cand])]))
    return note + f": {best.describe()} uses them all"


def _vendor(cat: Catalog, inst: Instance) -> str:
    acc = cat.accelerator_of(inst)
    return acc.vendor if acc else ""


def _same_data(lay: Layout, fixed_data: bool = False) -> Callable[[Layouts], np.ndarray] | None:
    """Candidates with ``lay``'s data degree where the configuration fixes it (else None: any)."""
    return (lambda L: L.data == lay.data) if fixed_data else None


def _memory(ev: Evaluated, i: int) -> float:
    return float(max(r.memory_gib[i] for r in ev.results))


def _no_fit_message(inst: Instance, n: int, cl: Cluster, ev: Evaluated | None) -> str:
    if ev is None:
        return (f"no valid layout of {n}x {inst.name} ({n * cl.ranks_per_node} ranks): the "
                "global batch, the layers and the heads leave no tensor x pipeline x data split")
    least = float(min(np.min(r.memory_gib) for r in ev.results))
    per = f" per {rank_word(cl)}"
    return (f"no layout of {n}x {inst.name} fits: the smallest needs {least:.1f} GiB{per}, "
            f"which has {memory_in_words(cl).removesuffix(per)}; use more instances or a device "
            "with more memory")


def _for_deadline(tr: TrainingSpec, cfg: HardwareConfig, inst: Instance, cl: Cluster,
                  phases: list[Phase], eff: Efficiency | StepEvaluator, gbs: tuple[int, ...],
                  vendor: str = "") -> TrainingPlan:
    """The fewest instances whose best layout finishes within the deadline."""
    assert tr.deadline_h is not None
    deadline_s = tr.deadline_h * SECONDS_PER_HOUR
    if isinstance(cfg.parallelism, ParallelismSpec) and cfg.parallelism.data is not None:
        raise InputError("with a deadline the data-parallel degree follows the instance count; remove it") \
            .in_config("parallelism.data")
    sp = cfg.parallelism if isinstance(cfg.parallelism, ParallelismSpec) else None
    if sp is not None:
        moe = phases[0].workload.arch.moe
        _check_deadline_spec(sp, gbs, cl.max_zero_stage, moe.experts if moe else 1)
    L = enumerate_layouts(phases, cl.ranks_per_node, None, tr.max_instances, cl.max_zero_stage,
                          context=sp.context if sp else (1 if cfg.parallelism is None else None),
                          pipelines=[sp.pipeline] if sp is not None else None,
                          # a given layout's own micro-batch, recomputation and ZeRO stage, not only
                          # those the search tries (mb 3, selective_op and ZeRO-1 at one replica run)
                          microbatches=[sp.microbatch] if sp is not None and sp.microbatch else None,
                          recomputes=(sp.recompute,) if sp is not None else SEARCHED_RECOMPUTE,
                          zeros=(sp.zero,) if sp is not None else None)
    if sp is not None:
        arch = phases[0].workload.arch
        found = layout_problems(phases, Layout(sp.tensor, sp.pipeline, 1, 0, sp.recompute, 1,
                                               sp.virtual_stages, sp.schedule),
                                cl.ranks_per_node, 1 << 30, cl.max_zero_stage)
        bad = [b for b in found if "layers" in b]
        if bad:
            raise InputError(f"{arch.layers} layers: " + "; ".join(bad)).in_config("parallelism")
        split = [b for b in found if b.startswith("tensor ")]  # no instance count mends these
        if split:
            valid = ", ".join(map(str, tensor_options(phases[0].workload, cl.ranks_per_node)))
            raise InputError("; ".join(split) + f"; allowed: tensor {valid}").in_config("parallelism.tensor")
        mask = (L.tensor == sp.tensor) & (L.pipeline == sp.pipeline) & (L.zero == sp.zero)
        mask &= L.recompute == RECOMPUTE.index(sp.recompute)
        if sp.microbatch is not None:
            mask &= L.microbatch == sp.microbatch
        mask &= L.expert == sp.expert
        L = L.select(mask)
        L.virtual[:] = sp.virtual_stages
        L.schedule = np.full(len(L), SCHEDULES.index(sp.schedule), dtype=np.int64)
        L.context_comm = np.full(len(L), ("ring", "all_to_all").index(sp.context_comm), dtype=np.int64)
        L.offload = np.full(len(L), ("none", "cpu", "nvme").index(sp.offload), dtype=np.int64)
        L.expert_tensor = L.tensor.copy() if sp.expert_tensor is None else np.full(len(L), sp.expert_tensor,
                                                                                     dtype=np.int64)
        L.expert_dispatch = np.full(len(L), EXPERT_DISPATCHES.index(sp.expert_dispatch), dtype=np.int64)
        L.expert_overlap = np.full(len(L), int(sp.expert_overlap), dtype=np.int64)
    elif cfg.parallelism is None:
        micro = cfg.batch_size or tr.microbatch(phases[0].workload.arch.kind == "decoder")
        mask = ((L.tensor == 1) & (L.pipeline == 1) & (L.zero == 0) & (L.recompute == 0)
                & (L.microbatch == micro) & (L.expert == 1))
        L = L.select(mask)
    if not len(L):
        raise InputError(f"no valid layout of up to {tr.max_instances}x {inst.name} for "
                         "this model and global batch").in_config("instances")
    ev = evaluate_phases(phases, cl, L, eff)
    if cfg.parallelism == "auto":  # uneven stages only matter below the fewest even layouts need
        ev = with_offload(ev, phases, cl, eff)
        even = ev.fits & (ev.total_s <= deadline_s)
        ev = with_uneven_counts(ev, phases, cl, eff,
                                int(ev.layouts.nodes[even].min()) - 1 if even.any() else tr.max_instances)
        L = ev.layouts
    meets = ev.fits & (ev.total_s <= deadline_s)
    if not meets.any():
        i = ev.best()
        if i is None:  # nothing fits memory: no time to report
            msg = _deadline_message(tr, inst, cl, phases, ev)
            if cfg.parallelism == "auto":
                raise InputError(msg).in_config("instances")
            # the configuration's layout is what does not fit, not the instance bound
            held = (f"the given layout (only its data degree follows the instance count; "
                    f"{_stated(sp)})" if sp is not None else
                    "data parallelism over every rank (no parallelism given: TP1 PP1 ZeRO-0, "
                    "recompute none)")
            raise InputError(f"{msg} with {held}; change it, or use parallelism: auto"
                             ).in_config("parallelism")
        # The fastest reachable, as a row that does not meet the deadline (meets_deadline false).
        return TrainingPlan(int(L.nodes[i]), L.layout(i), _deadline_message(tr, inst, cl, phases, ev),
                            _memory(ev, i), gbs)
    n = int(L.nodes[meets].min())
    i = ev.best(meets & (L.nodes == n))
    assert i is not None
    note = ""
    if cfg.parallelism == "auto":
        i, note = prefer_published(ev, i, phases[0].workload.arch, meets & (L.nodes == n), vendor)
    lay = L.layout(i)
    below = ev.fits & (L.nodes < n)
    why = ""
    if below.any():  # the next smaller size with a fitting layout, and how long it takes
        m = int(L.nodes[below].max())
        j = ev.best(below & (L.nodes == m))
        assert j is not None
        gap = f"; no valid layout between {m} and {n}" if n - m > 1 else ""
        why = f"; {m} take {ev.total_s[j] / SECONDS_PER_HOUR:.1f} h{gap}"
        k = ev.best(below)  # uneven stages can make a smaller count slower than a yet smaller one
        if k is not None and int(L.nodes[k]) != m and ev.total_s[k] < ev.total_s[j]:
            why += f"; the fastest below {n}: {int(L.nodes[k])} in {ev.total_s[k] / SECONDS_PER_HOUR:.1f} h"
    layers = phases[0].workload.arch.layers
    if cfg.parallelism == "auto" and layers % lay.pipeline:
        q = layers // lay.pipeline
        note += (f"; pipeline {lay.pipeline} splits the {layers} layers unevenly ({q} or {q + 1} a stage): "
                 f"no pipeline degree dividing them fills {n} instances")
    return TrainingPlan(n, lay, f"deadline {tr.deadline_h:g} h: fewest instances that finish in time "
                                f"({ev.total_s[i] / SECONDS_PER_HOUR:.1f} h{why}){note}", _memory(ev, i), gbs)


def _check_deadline_spec(spec: ParallelismSpec, global_batches: tuple[int, ...], max_zero_stage: int,
                         experts: int) -> None:
    """Bad input where a given layout's ZeRO stage, micro-batch or expert degree runs at no instance
    count (the deadline search sets the data degree): the field and what is allowed, not "no valid
    layout of up to N instances"."""
    if spec.zero > max_zero_stage:
        allowed = ", ".join(map(str, range(max_zero_stage + 1)))
        raise InputError(f"zero {spec.zero}: this platform's training libraries offer ZeRO stages up to "
                         f"{max_zero_stage}; allowed: {allowed}").in_config("parallelism.zero")
    g = math.gcd(*global_batches)
    per_step = " and ".join(f"{b:,}" for b in dict.fromkeys(global_batches))
    mb = spec.microbatch or 1
    if spec.microbatch is not None and g % mb:
        ok = divisors(g)
        raise InputError(f"microbatch {mb} must divide the global batch ({per_step} sequences a step), "
                         f"whatever the data degree; allowed: {_listed(ok)} (nearest valid: "
                         f"{nearest_divisor(g, mb)})").in_config("parallelism.microbatch")
    if spec.expert > 1 and (g // mb) % spec.expert:
        ok = [e for e in divisors(experts) if (g // mb) % e == 0]
        raise InputError(f"expert {spec.expert} must divide the data-parallel degree, which must divide the "
                         f"global batch ({per_step} sequences) over microbatch {mb}: no instance count "
                         f"runs it; allowed: expert {_listed(ok)}, or a smaller microbatch"
                         ).in_config("parallelism.expert")


def _stated(spec: ParallelismSpec) -> str:
    """``tensor 1, pipeline 1, zero 0, recompute none, microbatch 3`` as a deadline search holds them."""
    held = (f"tensor {spec.tensor}, pipeline {spec.pipeline}, context {spec.context}, zero {spec.zero}, "
            f"recompute {spec.recompute}, offload {spec.offload}")
    return held + (f", microbatch {spec.microbatch}" if spec.microbatch else "")


def _listed(values: list[int]) -> str:
    """``1, 2, 3, ... 1536`` for a long list."""
    return ", ".join(map(str, values)) if len(values) <= 12 else (
        ", ".join(map(str, values[:11])) + f", ... {values[-1]}")


def _deadline_message(tr: TrainingSpec, inst: Instance, cl: Cluster, phases: list[Phase],
                      ev: Evaluated) -> str:
    """Why no cluster meets the deadline: the fastest time reachable and what bounds it."""
    i = ev.best()
    if i is None:
        least = float(min(np.min(r.memory_gib) for r in ev.results))
        return (f"training.deadline_h {tr.deadline_h:g} cannot be met: no layout of up to "
                f"{tr.max_instances}x {inst.name} fits device memory (the smallest needs {least:.1f} GiB "
                f"per device, which has {cl.memory_gib:.1f} GiB)")
    L = ev.layouts
    lay, n = L.layout(i), int(L.nodes[i])
    r = ev.results[0].row(i)
    limits = []
    if any(lay.data * lay.microbatch == ph.workload.global_batch for ph in phases):
        limits.append("the global batch (data x microbatch already equals it: more instances add no "
                      "data parallelism)")
    if n * 2 > tr.max_instances:
        limits.append(f"training.max_instances ({tr.max_instances})")
    comm = r["comm_exposed_s"] / r["step_s"]
    if comm > 0.3:
        limits.append(f"communication ({comm:.0%} of each step)")
    if r["bubble_s"] / r["step_s"] > 0.2:
        limits.append(f"the pipeline bubble ({r['bubble_s'] / r['step_s']:.0%} of each step)")
    why = "; limited by " + ", ".join(limits) if limits else ""
    return (f"training.deadline_h {tr.deadline_h:g} cannot be met on {inst.name}: the fastest "
            f"reachable is {ev.total_s[i] / SECONDS_PER_HOUR:,.1f} h on {counted(n, 'instance')} "
            f"({lay.describe()}){why}")


def instances_for_supplied(tr: TrainingSpec, arch: Architecture, cfg: HardwareConfig) -> int:
    """Instances a supplied per-instance throughput needs to finish by the deadline."""
    assert tr.deadline_h is not None and cfg.measured_throughput_per_s is not None
    seqs = sum(tr.phase_sequences(ph) for ph in tr.phases)
    return max(1, math.ceil(seqs / (cfg.measured_throughput_per_s * tr.deadline_h * SECONDS_PER_HOUR)))
