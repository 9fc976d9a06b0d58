"""A team's own measured watts in the fit: ``ecobench calibrate POINTS.yaml``.

The file has the corpus's format (``sources`` and ``points``, ``power/corpus.py``). Its points are
checked against the catalog (a device draw below the chip's idle or above 1.2x its maximum is a data
error) and their layout against their devices; a throughput far from what the chip can give is kept
with a warning (a wrong unit more likely than a measurement). The points are predicted by the
packaged model (out of sample: the fit never saw them), and the model is refitted with them. The
answer gives the held-out error of the corpus and of the user's points with and without their points
in the fit, and the refitted draws.
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ecobench.errors import InputError
from ecobench.hardware.catalog import Catalog, load_catalog
from ecobench.power.corpus import (
    MAX_OVER_LIMIT,
    PowerCorpus,
    PowerPoint,
    PowerSource,
    corpus_chips,
    load_corpus,
    parse_corpus,
)
from ecobench.power.fit import (
    HOST_SCALE_MAX,
    Features,
    PowerFit,
    chip_figures,
    features_of,
    fit,
    fit_with_ranges,
    fitting,
    holdout,
    refits_without_each_group,
    roofline_fraction,
)
from ecobench.power.fit import _host_w as host_w
from ecobench.power.params import PowerModel, power_model
from ecobench.scenario.messages import Schema, describe_model, did_you_mean, error_lines
from ecobench.units import BYTES_PER_DTYPE
from ecobench.words import shown

_POINT = re.compile(r"^points\[(\d+)\]")


def _with_id(line: str, doc: dict[str, Any]) -> str:
    """A message line about ``points[3]`` as ``points[3] (its id)``."""
    m = _POINT.match(line)
    if m is None:
        return line
    i, pts = int(m[1]), doc.get("points") or []
    pid = pts[i].get("id", "?") if i < len(pts) and isinstance(pts[i], dict) else "?"
    return f"{m[0]} ({pid}){line[m.end():]}"


def _schema(doc: dict[str, Any]) -> Schema:
    """What the scenario's messages (:func:`error_lines`) read of a calibration file: each source's
    fields under its key and each point's, for the nearest and allowed names and a missing field's
    description."""
    sources = doc["sources"] if isinstance(doc.get("sources"), dict) else {}
    rows = [r for k in sources for r in describe_model(PowerSource, f"sources.{k}.")]
    rows += describe_model(PowerPoint, "points[].")
    return Schema(lambda: rows, {})


_ARCH_COUNTS = ("layers", "hidden_size", "heads", "intermediate_size", "vocab_size",
                "max_position_embeddings", "kv_heads", "head_dim_override")


def check_model(p: PowerPoint, where: str) -> None:
    """The point's ``model`` is a preset and its inline ``architecture`` builds one (exit 2 naming the
    field, not a crash when the fit reads it)."""
    from pydantic import TypeAdapter

    from ecobench.workloads.architecture import Architecture

    if p.model is not None:
        try:
            p.arch  # noqa: B018 - the preset lookup, with the nearest names
        except InputError as exc:
            raise InputError(f"{where}.model: {exc}") from None
        return
    if p.architecture is None:
        return
    fields = {f.name: f for f in dataclasses.fields(Architecture) if f.name != "name"}
    required = [n for n, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    for key in p.architecture:
        if key not in fields:
            raise InputError(f"{where}.architecture.{key}: unknown field (allowed: {', '.join(fields)})")
    for key in required:
        if key not in p.architecture:
            raise InputError(f"{where}.architecture.{key}: required (an inline architecture needs "
                             f"{', '.join(required)})")
    for key in _ARCH_COUNTS:
        v = p.architecture.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InputError(f"{where}.architecture.{key}: {v!r} is not allowed; allowed: a whole number "
                             ">= 1")
    try:
        TypeAdapter(Architecture).validate_python({"name": p.id, **p.architecture})
    except ValidationError as exc:
        e = exc.errors()[0]
        at = "".join(f".{x}" for x in e["loc"])
        msg = str(e.get("ctx", {}).get("error", e["msg"])) if e["type"] == "value_error" else e["msg"]
        raise InputError(f"{where}.architecture{at}: {msg}") from None
    try:
        p.arch  # noqa: B018 - the dataclass's own checks (heads divide hidden_size, ...)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}.architecture: {exc}") from None


# the layout keys the fit reads (data, pipeline, microbatch, num_microbatches) and those the corpus
# records beside them; any other key (``tp``, ``dp``) would be ignored without a word
LAYOUT_KEYS = ("tensor", "pipeline", "data", "context", "microbatch", "num_microbatches")
# the ways a layout splits the devices over: their product is the device count
PARALLEL_KEYS = ("tensor", "pipeline", "data", "context")
# A throughput this far from what its devices can give by the roofline (fit.roofline_fraction) is more
# likely in a wrong unit (tokens/s given as sequences/s, a node's figure per device) than measured: kept,
# with a warning. The packaged corpus's fitted points lie within 0.014-1.59 of their roofline
# (2026-11-29, tests/integration/power/test_calibrate.py; the slowest is ecobench's own eager BERT-Large
# at batch 1 on an H200, launch-bound: 0.019 on the H100, the slowest until that point was measured);
# the limits are 10x beyond the roofline itself and 10x below the slowest of them.
PLAUSIBLE_ROOFLINE_FRACTION = (0.0013, 10.0)
# the data types a point may name: the compute and storage types of units.py, and the corpus's fp4
PRECISIONS = tuple(sorted(set(BYTES_PER_DTYPE) | {"fp4"}))


def _check_names(p: PowerPoint, cat: Catalog, where: str) -> None:
    """The point's instance type (and that it carries the point's chip), layout keys and data types are
    ones ecobench knows: a misspelt one would be ignored by the fit, not refused."""
    if p.instance_type is not None:
        inst = cat.instance(p.instance_type, f"{where}.instance_type")
        acc = inst.spec.accelerator
        if p.gpu != "other" and acc != p.gpu:
            raise InputError(f"{where}.instance_type: {p.instance_type} carries {acc or 'no accelerator'}, "
                             f"not the point's gpu {p.gpu!r}; allowed: an instance type with that chip, or "
                             "no instance_type")
    for key in p.layout or {}:
        if key not in LAYOUT_KEYS:
            raise InputError(f"{where}.layout.{key}: unknown field (allowed: {', '.join(LAYOUT_KEYS)})")
    for field in ("precision", "weight_precision"):
        v = getattr(p, field)
        if v is not None and v not in PRECISIONS:
            raise InputError(f"{where}.{field}: {v!r} is not allowed; allowed: {', '.join(PRECISIONS)}")


def _check_layout(p: PowerPoint, where: str) -> None:
    """The layout's ways (``layout.tensor`` etc., or the point's ``tensor`` and ``pipeline``) multiply to
    the devices the throughput is divided over (``devices`` x ``nodes`` for a node's meter, ``devices``
    for a device's: ``fit._rates``); without ``data`` they divide it (data parallelism is the rest)."""
    layout, ways = p.layout or {}, {}
    for key in PARALLEL_KEYS:
        v, top = layout.get(key), getattr(p, key, None)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InputError(f"{where}.layout.{key}: {v!r} is not allowed; allowed: a whole number >= 1")
        if v is not None and top is not None and v != top:
            raise InputError(f"{where}.layout.{key}: {v}, but {key}: {top}; allowed: the same in both, or "
                             "one of them")
        if v is not None or top is not None:
            ways[key] = v if v is not None else top
    if not ways:
        return
    dev = p.devices * p.nodes if p.power_per == "node" else p.devices
    product = math.prod(ways.values())
    if product == dev or ("data" not in ways and dev % product == 0):
        return
    split = " x ".join(f"{k} {v}" for k, v in ways.items())
    count = f"devices {p.devices} x nodes {p.nodes}" if p.power_per == "node" else f"devices {p.devices}"
    allowed = f"ways whose product is {dev}" + ("" if "data" in ways else f" (without data: ways that divide "
                                                 f"{dev}, data parallel being the rest)")
    raise InputError(f"{where}.layout: {split} = {product} devices, but the point ran on {dev} ({count}, "
                     f"power_per {p.power_per}); allowed: {allowed}")


def throughput_warning(p: PowerPoint, cat: Catalog) -> str | None:
    """A warning naming the point when its throughput is implausible against what its devices can
    give by the roofline (``PLAUSIBLE_ROOFLINE_FRACTION``); None when plausible or not readable."""
    fraction = roofline_fraction(p, cat)
    lo, hi = PLAUSIBLE_ROOFLINE_FRACTION
    if fraction is None or lo <= fraction <= hi:
        return None
    field = {"power_serve": "output_tokens_per_s", "power_infer": "samples_per_s"}.get(
        p.kind, "tokens_per_s" if p.tokens_per_s is not None else "samples_per_s")
    times = f"{fraction:.3g}x" if math.isfinite(fraction) else "far beyond"  # 1e300 tokens/s: inf
    how = (f"{times} the most its devices can give by the chip's peak FLOP/s and memory bandwidth"
           if fraction > hi else
           f"{fraction:.2g} of what its devices can give at most, 10x below the slowest packaged point")
    unit = ("tokens/s given as sequences/s, or the run's figure over fewer devices" if fraction > hi
            else "sequences/s given as tokens/s, or the figure of one device over the run's devices")
    return f"{p.id}: {field} {getattr(p, field):g} is {how}; kept: check the unit ({unit})"


def check_point(p: PowerPoint, cat: Catalog, where: str) -> list[str]:
    """Data errors (raised) and warnings (returned) of one point against its chip's idle and maximum."""
    check_model(p, where)
    _check_layout(p, where)
    if p.gpu not in cat.accelerators and p.gpu != "other":
        raise InputError(f"{where}.gpu: unknown chip {p.gpu!r}; allowed: "
                         f"{', '.join(sorted(cat.accelerators))} or 'other' (evidence only, not fitted, "
                         f"unless chip names one of {', '.join(sorted(corpus_chips()))})")
    _check_names(p, cat, where)
    chip = chip_figures(p, cat)
    if chip is None:
        return []
    if p.power_limit_w is not None and not chip.idle_w < p.power_limit_w <= chip.max_w:
        raise InputError(f"{where}.power_limit_w: {p.power_limit_w:g} W is outside {chip.idle_w:g}-"
                         f"{chip.max_w:g} W ({chip.name}: above its idle, at most its maximum)")
    if p.power_per == "device":
        lo, hi = chip.idle_w, MAX_OVER_LIMIT * chip.max_w
        if not lo <= p.power_w <= hi:
            raise InputError(f"{where}.power_w: {p.power_w:g} W per device is outside {lo:g}-{hi:g} W "
                             f"({chip.name}: idle {chip.idle_w:g} W to 1.2x its {chip.max_w:g} W maximum)")
    elif p.power_w < p.devices * chip.idle_w:
        raise InputError(f"{where}.power_w: {p.power_w:g} W per node is below {p.devices} idle "
                         f"{chip.name} ({p.devices * chip.idle_w:g} W)")
    elif (host := host_w(p, cat)) is not None:
        # a node's figure is its devices and its host: at most the devices at 1.2x their maximum and
        # the largest host the fit allows (HOST_SCALE_MAX x ecobench's CPU and memory draw)
        devices_w = p.devices * MAX_OVER_LIMIT * chip.max_w
        hi = devices_w + HOST_SCALE_MAX * host
        if p.power_w > hi:
            raise InputError(f"{where}.power_w: {p.power_w:g} W per node is above {hi:g} W ({p.devices} "
                             f"{chip.name} at 1.2x their {chip.max_w:g} W maximum and {HOST_SCALE_MAX:g}x "
                             f"ecobench's {host:.0f} W host draw of the node); allowed: "
                             f"{p.devices * chip.idle_w:g}-{hi:g} W, the whole node at its meter")
    return []


def node_device_share(f: Features, model: PowerFit) -> float:
    """What a node-metered point's devices draw as a share of their chip's idle-to-maximum range once
    ``model``'s host draw of the node is taken off its figure."""
    device_w = (f.measured_w - f.host_w * model.host["host_scale"]) / f.devices
    return (device_w - f.idle_w) / (f.max_w - f.idle_w)


def _check_ids_and_sources(doc: dict[str, Any], path: str | Path) -> None:
    """Each point's id once and its source among ``sources``, named by the point's place (the corpus's
    own check says neither where nor what is allowed)."""
    points, sources = doc.get("points"), doc.get("sources") or {}
    if not isinstance(points, list) or not isinstance(sources, dict):
        return
    seen: dict[str, int] = {}
    for i, p in enumerate(points):
        if not isinstance(p, dict):
            continue
        pid, src = p.get("id"), p.get("source")
        where = f"{path}: points[{i}] ({pid})"
        if isinstance(pid, str):
            if pid in seen:
                raise InputError(f"{where}.id: {pid!r} is also points[{seen[pid]}]'s id; allowed: each id "
                                 "once")
            seen[pid] = i
        if isinstance(src, str) and src not in sources:
            raise InputError(f"{where}.source: unknown source {src!r}; allowed: "
                             + (", ".join(map(str, sources)) if sources else "a key of sources (none given)"))


def _kind(value: object) -> str:
    """What a YAML value is, in words: 'a list', 'text', 'a number'."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else "a value"


def load_points(path: str | Path) -> PowerCorpus:
    """The user's points file, validated (exit 2 with the file, the field and what is allowed)."""
    from ecobench.io.yamlio import load_yaml

    doc = load_yaml(path, "calibration points")
    if isinstance(doc, dict):  # a misspelt top-level key ('pointz') is named, with the nearest
        for key in doc:
            if key not in ("sources", "points"):
                raise InputError(f"{path}: {shown(str(key))}: unknown field"
                                 f"{did_you_mean(str(key), ['sources', 'points'])} (allowed here: sources, "
                                 "points; the format of ecobench/power/data/measured/*.yaml)")
    if not isinstance(doc, dict) or "points" not in doc:
        what = ("empty (no YAML document)" if doc is None else "points: missing" if isinstance(doc, dict)
                else f"{_kind(doc)}, not a mapping")
        raise InputError(f"{path}: {what}; allowed: a mapping with 'sources' and 'points' (the format of "
                         "ecobench/power/data/measured/*.yaml)")
    if not isinstance(doc["points"], list) or not doc["points"]:
        raise InputError(f"{path}: points: {'empty' if doc['points'] in (None, []) else 'not a list'}; "
                         "allowed: a list of at least one measured point")
    sources = doc.get("sources")
    if not isinstance(sources, dict):
        got = "missing" if sources is None else f"{_kind(sources)}, not a mapping"
        raise InputError(f"{path}: sources: {got}; allowed: a mapping of each source's name to its "
                         "citation, url, as_of, group, metered, method and not_stated")
    _check_ids_and_sources(doc, path)
    try:
        corpus = parse_corpus([doc])
    except ValidationError as exc:
        lines = [_with_id(line, doc) for line in error_lines(exc.errors(), _schema(doc))]  # type: ignore[arg-type]
        raise InputError(f"{path}: invalid calibration points\n  " + "\n  ".join(lines)) from None
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    _check_own_names(corpus, str(path), load_corpus())
    cat = load_catalog()
    for i, p in enumerate(corpus.points):
        where = f"{path}: points[{i}] ({p.id})"
        check_point(p, cat, where)
        if p.power_per == "node" and corpus.metered(p) == "device":
            # the fit reads a node's figure as its devices plus the host: a device meter has no host
            raise InputError(f"{where}.power_per: node, but source {p.source!r} is metered: device (NVML, "
                             "neuron-monitor), which covers no host; allowed: power_per device (the mean "
                             "per device), or a source metered: node (at the wall)")
    return corpus


def _check_own_names(user: PowerCorpus, where: str, base: PowerCorpus) -> None:
    """Bad input where a source or point of ``user`` (read from ``where``) has a name of ``base``, the
    packaged corpus (the held-out error is by source group and the refit keys points by id)."""
    for name in user.sources:
        if name in base.sources:
            raise InputError(f"{where}: sources.{name}: {name!r} is already a source of the packaged corpus; "
                             "allowed: a name of your own")
    ids = {p.id for p in base.points}
    for i, p in enumerate(user.points):
        if p.id in ids:
            raise InputError(f"{where}: points[{i}] ({p.id}).id: {p.id!r} is already a point of the packaged "
                             "corpus; allowed: a name of your own")


@dataclass(frozen=True)
class Calibration:
    points: int  # the user's points
    fitted: int  # of them, with a catalog chip and a throughput of the same run
    unfitted: list[str]  # ids the fit cannot use, with why
    before: PowerFit
    after: PowerFit
    user_error_before_pct: list[float]  # the user's points, predicted by the packaged fit
    corpus_median_before_pct: float  # the corpus held out by group, without the user's points
    corpus_median_after_pct: float  # and with them in every fit
    warnings: list[str]
    # each fitted point of the user's: (id, measured W, W the packaged fit predicts), as power_per says
    user_predicted: tuple[tuple[str, float, float], ...] = ()
    # kind -> the corpus's held-out |error| of that kind without and with the user's points
    by_kind: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        errs = [abs(e) for e in self.user_error_before_pct]
        med = statistics.median(errs) if errs else None
        return {"points": self.points, "fitted": self.fitted, "not_fitted": self.unfitted,
                "draws_before": self.before.draws, "draws_after": self.after.draws,
                "host_before": self.before.host, "host_after": self.after.host,
                "your_points_median_abs_error_pct_before": med,
                "your_points": [{"id": i, "power_w": m, "predicted_power_w": w,
                                 "error_pct": (w / m - 1) * 100} for i, m, w in self.user_predicted],
                "corpus_holdout_median_abs_error_pct_before": self.corpus_median_before_pct,
                "corpus_holdout_median_abs_error_pct_after": self.corpus_median_after_pct,
                "corpus_holdout_by_kind": self.by_kind,
                "warnings": self.warnings}


def calibrate(user: PowerCorpus, base: PowerCorpus | None = None) -> Calibration:
    """Refit the draw model with the user's points and say what changed, out of sample."""
    base = load_corpus() if base is None else base
    _check_own_names(user, "calibration points", base)  # a corpus built in Python, not read by load_points
    cat = load_catalog()
    theirs: list[Features] = []
    unfitted = []
    for p in user.points:
        f = fitting(p, user, cat)
        if isinstance(f, str):
            unfitted.append(f"{p.id}: {f}")
        else:
            theirs.append(f)
    # the user's groups are held out together, apart from any packaged group of the same name
    theirs = [Features(f.point, f"yours:{f.group}", f.shares, f.idle_w, f.max_w, f.per_node, f.devices,
                       f.measured_w, f.host_w) for f in theirs]
    ours = features_of(base, cat)
    refits = refits_without_each_group(ours)
    before, after = fit(list(ours)), fit([*ours, *theirs])
    ranges = fit_with_ranges(ours, refits)
    # the family's range: from the lowest state draw (stalls, sourced) to the highest (compute, fitted)
    lo = min([r["low"] for k, r in ranges.items() if k in before.draws] + [power_model().draw.stall.low])
    hi = max(r["high"] for k, r in ranges.items() if k in before.draws)
    warnings = [w for p in user.points if (w := throughput_warning(p, cat))]
    for f in theirs:
        if f.per_node:  # the devices' part of a node's figure: less the packaged fit's host draw
            implied = node_device_share(f, before)
            if not lo <= implied <= hi:
                host = f.host_w * before.host["host_scale"]
                warnings.append(f"{f.point.id}: its devices draw {implied:.2f} of their chip's "
                                f"idle-to-maximum range once ecobench's host draw of the node ({host:.0f} W) "
                                f"is taken off, outside the fitted {lo:.2f}-{hi:.2f}; kept: check what the "
                                "meter covers")
            continue
        implied = (f.measured_w - f.idle_w) / (f.max_w - f.idle_w)
        if not lo <= implied <= hi:
            warnings.append(f"{f.point.id}: draws {implied:.2f} of its chip's idle-to-maximum range, outside "
                            f"the fitted {lo:.2f}-{hi:.2f}; kept: check what the meter covers")
    med = lambda rows: statistics.median([abs(r.error_pct) for r in rows])  # noqa: E731
    base_ids = {p.id for p in base.points}
    with_them = [r for r in holdout((*ours, *theirs)) if r.id in base_ids]
    without = holdout(ours, refits)
    by_kind = {}
    for kind in sorted({r.kind for r in without}):
        b = [abs(r.error_pct) for r in without if r.kind == kind]
        a = [abs(r.error_pct) for r in with_them if r.kind == kind]
        by_kind[kind] = {"points": len(b), "median_abs_error_pct_before": statistics.median(b),
                         "median_abs_error_pct_after": statistics.median(a),
                         "worst_abs_error_pct_before": max(b), "worst_abs_error_pct_after": max(a)}
    return Calibration(len(user.points), len(theirs), unfitted, before, after,
                       [(before.predict_w(f) / f.measured_w - 1) * 100 for f in theirs],
                       med(without), med(with_them), warnings,
                       tuple((f.point.id, f.measured_w, before.predict_w(f)) for f in theirs), by_kind)


# the power model's blocks the refit replaces (power_model.yaml), by the fit's names
_REFIT_BLOCKS = {"compute": ("draw", "compute_bound"), "memory": ("draw", "memory_bound"),
                 "sync": ("draw", "sync"), "host_scale": (None, "host_scale")}


def calibrated_model(path: str | Path) -> PowerModel:
    """The packaged power model with its fitted draws and host scale refitted with the points of
    ``path`` (a scenario's ``power_points``): each the refit's central value and the lowest and highest
    of its leave-one-group-out refits, as the packaged values are; the stall draw, the host model and
    the PUE stay. Its ``version`` says what was refitted and the held-out error with and without the
    points, for the rows and the summary."""
    from ecobench.power.params import Ranged, packaged_power_model

    user = load_points(path)
    result = calibrate(user)
    if not result.fitted:
        raise InputError(f"{path}: none of its {result.points} points can be fitted ("
                         + "; ".join(result.unfitted) + "); allowed: points with a catalog chip and a "
                         "throughput of the same run (`ecobench calibrate` says what each one lacks)")
    cat = load_catalog()
    theirs = [f for p in user.points if not isinstance(f := fitting(p, user, cat), str)]
    theirs = [dataclasses.replace(f, group=f"yours:{f.group}") for f in theirs]
    ranges = fit_with_ranges((*features_of(load_corpus(), cat), *theirs))
    pm = packaged_power_model()
    as_of = max(str(s.as_of) for s in user.sources.values())
    blocks: dict[str | None, dict[str, Ranged]] = {"draw": {}, None: {}}
    for key, (block, name) in _REFIT_BLOCKS.items():
        r = ranges[key]
        if r["low"] <= 0:
            raise InputError(f"{path}: the refit with these points puts the {key} draw at {r['low']:g} in a "
                             "fit without one group; allowed: points that leave every fitted draw above 0 "
                             "(`ecobench calibrate` shows the refit)")
        was = getattr(pm.draw, name) if block == "draw" else pm.host_scale
        blocks[block][name] = Ranged(
            central=r["central"], low=r["low"], high=r["high"], as_of=as_of,
            source=f"refitted with the {result.fitted} fitted points of {path} (power_points) beside the "
                   f"packaged corpus; the packaged value: {was.central:g} ({was.source[:80]}...)",
            inferred_from="ecobench/power/calibrate.py calibrated_model: the packaged fit's rule "
                          "(power/fit.py) on the packaged points and these; low and high: the lowest and "
                          "highest leave-one-group-out refits")
    d = result.as_dict()
    errs = d["your_points_median_abs_error_pct_before"]
    draws = ", ".join(f"{k} {result.before.draws[k]:.3f} -> {ranges[k]['central']:.3f}"
                      for k in ("compute", "memory", "sync"))
    host = f"{result.before.host['host_scale']:.3f} -> {ranges['host_scale']['central']:.3f}"
    corpus = (f"{d['corpus_holdout_median_abs_error_pct_before']:.1f}% without them, "
              f"{d['corpus_holdout_median_abs_error_pct_after']:.1f}% with them")
    version = (f"refitted with {result.fitted} of the {result.points} points of {path} (power_points): "
               f"{draws}, host scale {host}; your points by the packaged fit (out of sample): median "
               f"|error| {errs:.1f}%; the packaged corpus held out by group: median |error| {corpus}")
    return pm.model_copy(update={
        "version": version,
        "draw": pm.draw.model_copy(update=blocks["draw"]),
        "host_scale": blocks[None]["host_scale"]})
