"""Decisions over a results table: the Pareto front over cost, CO2 and time or latency (rows within
the SLA or deadline), and one recommended configuration per objective with its reason in words.

A latency target the scenario sets (serving's TTFT and TPOT, inference's p99) is a constraint: rows
that miss it are not eligible, and the balanced pick does not reward beating it (it weighs cost, CO2
and energy, as for a scenario without a target); the latency pick still names the fastest row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ecobench.power.scopes import change_column, co2_column, energy_column

if TYPE_CHECKING:
    from ecobench.scenario.model import Scenario
    from ecobench.table import Columns

BALANCED_WEIGHTS = {"cost": 1 / 3, "co2": 1 / 3, "third": 1 / 3}  # the third: time (training) or energy
TARGET_TOLERANCE = 1e-9  # relative: a row planned exactly at a target meets it


@dataclass(frozen=True)
class Objective:
    name: str  # cost, co2, energy, time, latency
    column: str
    words: str  # as a reason says it


def objectives(s: Scenario, t: Columns) -> list[Objective]:
    """What is minimised: cost and CO2 (headline scope) always, and training time, serving time per
    output token, or inference p99 latency when the scenario sets a latency target."""
    out = [Objective("cost", "cost_usd", "cost"), Objective("co2", co2_column(s.headline_scope), "CO2")]
    mode = s.workload.mode
    if mode == "training":
        out.append(Objective("time", "duration_h", "time"))
    elif mode == "serving":
        out.append(Objective("latency", "tpot_ms_p50", "time per output token"))
    elif "latency_p99_ms" in t:
        out.append(Objective("latency", "latency_p99_ms", "p99 latency"))
    return out


def columns_read(s: Scenario) -> list[str]:
    """Every column the front and the recommendations read (a streamed sweep keeps these in memory)."""
    out = ["config_id", "cost_usd", co2_column(s.headline_scope), energy_column(s.headline_scope),
           "duration_h", "tpot_ms", "latency_p99_ms", "meets_deadline", "instance_type", "region",
           "precision", *_DESCRIBED]
    return list(dict.fromkeys(out + list(latency_targets(s))))


def basis(s: Scenario, t: Columns) -> dict[str, Any]:
    """What the front is over, as results.json's ``pareto`` states it: the objective columns (each
    minimised; ``pareto_rank`` orders the front by them in turn), the statistic compared, the latency
    targets a row must meet (column -> ms) and which rows count."""
    return {"objectives": [o.column for o in objectives(s, t)],
            "statistic": "central values (the point estimates; the 90% bands do not enter the front)",
            "latency_targets": latency_targets(s),
            "eligible": "rows with every objective known (a sourced price), meets_deadline not false and "
                        "every latency target met"}


def latency_targets(s: Scenario) -> dict[str, float]:
    """Column -> the scenario's latency target on it (serving: TTFT and TPOT, median and p99 where set;
    inference: the p99 latency where set). Targets are constraints, not objectives."""
    w = s.workload
    if w.mode == "serving" and w.serving is not None:
        sp = w.serving
        from ecobench.planning.serving import STAT_LABEL

        named = {f"{m}_ms_{STAT_LABEL[q]}": v for m, q, v, _ in sp.targets}
    elif w.mode == "inference" and w.inference is not None:
        named = {"latency_p99_ms": w.inference.latency_ms_p99}
    else:
        named = {}
    return {k: float(v) for k, v in named.items() if v is not None}


def eligible(t: Columns, objs: list[Objective], s: Scenario | None = None) -> np.ndarray:
    """Rows that count: every objective known (a row without a sourced price has no cost), the
    training deadline met and, given the scenario, every latency target met (a row without the
    figure is not held to it)."""
    ok = np.ones(len(t["config_id"]), dtype=bool)
    for o in objs:
        ok &= np.isfinite(t[o.column].astype(float))
    if "meets_deadline" in t:
        ok &= t["meets_deadline"] != False  # noqa: E712 (None: no deadline)
    if s is not None:
        for col, target in latency_targets(s).items():
            if col in t:
                ok &= ~(t[col].astype(float) > target * (1 + TARGET_TOLERANCE))
    return ok


def front(points: np.ndarray) -> np.ndarray:
    """Mask of the non-dominated rows of ``points`` (rows: candidates, columns: objectives to
    minimise). A row is dominated when another is no worse in every objective and better in one;
    identical rows are both kept.

    The rows are sorted (by the first objective, then the next ...) and identical ones share a
    verdict; a row can then only be dominated by one before it, which for two objectives means a
    lower second objective than every row before it (a running minimum), and for more is checked
    against the front found so far."""
    n, m = points.shape if points.ndim == 2 else (len(points), 1)
    mask = np.zeros(n, dtype=bool)
    if n == 0:
        return mask
    order = np.lexsort(points.T[::-1])
    sp = points[order]
    new = np.ones(n, dtype=bool)
    new[1:] = np.any(sp[1:] != sp[:-1], axis=1)
    first = np.flatnonzero(new)  # the distinct rows, in order
    u = sp[first]
    if m == 1:
        keep = np.zeros(len(u), dtype=bool)
        keep[0] = True
    elif m == 2:
        before = np.empty(len(u))
        before[0] = np.inf
        before[1:] = np.minimum.accumulate(u[:-1, 1])
        keep = u[:, 1] < before
    else:
        keep = _front_sorted(u)
    mask[order] = keep[np.cumsum(new) - 1]
    return mask


def _front_sorted(u: np.ndarray) -> np.ndarray:
    """Non-dominated rows of distinct rows ``u`` sorted lexicographically: a row is on the front when
    no row of the front before it is no worse in every objective."""
    n, m = u.shape
    keep = np.zeros(n, dtype=bool)
    alive = np.ones(n, dtype=bool)  # cheap pre-filter: rows the best of each objective dominates
    for j in range(m):
        best = u[np.lexsort(np.roll(u, -j, axis=1).T[::-1])[0]]
        alive &= ~(np.all(u >= best, axis=1) & np.any(u > best, axis=1))
    found = np.empty((0, m))
    size = 0
    for i in np.flatnonzero(alive):
        p = u[i]
        if size and np.any(np.all(found[:size] <= p, axis=1)):
            continue
        keep[i] = True
        if size == len(found):
            found = np.resize(found, (max(16, 2 * size), m))
        found[size] = p
        size += 1
    return keep


def pareto_columns(s: Scenario, t: Columns) -> tuple[np.ndarray, np.ndarray]:
    """``pareto`` (bool) and ``pareto_rank`` (1 = cheapest on the front, then by the next objective;
    rows equal in every objective share the rank of the first of them, 1, 1, 3; NaN off the front)."""
    objs = objectives(s, t)
    ok = eligible(t, objs, s)
    pts = np.column_stack([t[o.column].astype(float)[ok] for o in objs])
    flags = np.zeros(len(ok), dtype=bool)
    flags[np.flatnonzero(ok)[front(pts)]] = True
    rank = np.full(len(ok), np.nan)
    on = np.flatnonzero(flags)
    values = np.column_stack([t[o.column].astype(float)[on] for o in objs])
    order = np.lexsort(values.T[::-1])  # by cost, then the next objective
    sp = values[order]
    new = np.ones(len(on), dtype=bool)  # a row unlike the one before it takes its own position
    new[1:] = np.any(sp[1:] != sp[:-1], axis=1)
    rank[on[order]] = np.maximum.accumulate(np.where(new, np.arange(1, len(on) + 1), 0))
    return flags, rank


_DESCRIBED = ("sweep_batch_size", "sweep_max_utilization", "sweep_pricing")  # named in a pick's reason


def _describe(t: Columns, i: int) -> str:
    parts = [str(t["instance_type"][i]), f"in {t['region'][i]}", f"({t['precision'][i]}"]
    for extra in _DESCRIBED:
        v = t[extra][i] if extra in t else None
        if v is not None and v == v:
            parts[-1] += f", {extra.removeprefix('sweep_')} {v:g}" if isinstance(v, float) \
                else f", {extra.removeprefix('sweep_')} {v}"
    parts[-1] += ")"
    return f"{t['config_id'][i]}: " + " ".join(parts)


def _change(v: float, base: float) -> str:
    if not np.isfinite(v) or not np.isfinite(base) or base == 0:
        return "n/a"
    pct = (v / base - 1) * 100
    return f"{pct:+.0f}%" if abs(pct) >= 0.5 else "same"


def recommendations(s: Scenario, t: Columns) -> list[dict[str, Any]]:
    """One pick per objective (cost, CO2, energy, time or latency) and a balanced pick (cost, CO2 and
    time or energy, each relative to the baseline, equally weighted; a met latency target is not
    scored), among eligible rows, each with its reason; one ``all`` entry instead when the baseline
    is the pick of every objective."""
    objs = objectives(s, t)
    ok = eligible(t, objs, s)
    if not ok.any():
        return []
    base = int(np.flatnonzero(t["config_id"] == s.baseline)[0])
    energy = Objective("energy", energy_column(s.headline_scope), "energy")
    picks = [*objs[:2], energy, *objs[2:]]
    cols = {o.name: t[o.column].astype(float) for o in picks}
    tiebreak = [cols[o.name] for o in objs][::-1]
    out = []

    bands = _change_bands(s, t)

    def reason(i: int, lead: Objective) -> str:
        if i == base:  # "same cost for same CO2 ... against the baseline" reads as nonsense
            return f"{_describe(t, i)}: the baseline {s.baseline} already has the lowest {lead.words}"
        others = [o for o in picks if o.name != lead.name]
        changes = ", ".join(f"{_change(cols[o.name][i], cols[o.name][base])} {o.words}" for o in others)
        return (f"{_describe(t, i)}: {_change(cols[lead.name][i], cols[lead.name][base])} {lead.words} "
                f"for {changes} against the baseline {s.baseline}{_basis_note(t, i, base)}"
                + _uncertain_gain(bands, i, lead))

    idx = np.flatnonzero(ok)
    for o in picks:
        values = cols[o.name][idx]
        best = idx[_lexfirst(values, tiebreak_at(tiebreak, idx))]
        out.append({"objective": o.name, "config_id": str(t["config_id"][best]),
                    "reason": reason(int(best), o)})
    third = objs[2] if len(objs) > 2 and objs[2].name == "time" else energy
    score = np.zeros(len(idx))
    for name, w in (("cost", BALANCED_WEIGHTS["cost"]), ("co2", BALANCED_WEIGHTS["co2"]),
                    (third.name, BALANCED_WEIGHTS["third"])):
        score += w * cols[name][idx] / _scale(cols[name], base, idx)
    best = int(idx[_lexfirst(score, tiebreak_at(tiebreak, idx))])
    if best == base:
        why = (f"the baseline {s.baseline} already has the lowest sum of cost, CO2 and {third.words}, each "
               "relative to the baseline, weighted 1/3 each")
    else:
        weighted = [o for name in ("cost", "co2", third.name) for o in picks if o.name == name]
        extras = [o for o in picks if o not in weighted]  # shown, not scored

        def changes(objs: list[Objective]) -> str:
            return ", ".join(f"{_change(cols[o.name][best], cols[o.name][base])} {o.words}" for o in objs)

        also = f" (not weighted: {changes(extras)})" if extras else ""
        why = (f"the lowest sum of cost, CO2 and {third.words}, each relative to the baseline {s.baseline}, "
               f"weighted 1/3 each: {changes(weighted)}{also}{_basis_note(t, best, base)}")
    out.append({"objective": "balanced", "config_id": str(t["config_id"][best]),
                "reason": f"{_describe(t, best)}: {why}"})
    if all(r["config_id"] == s.baseline for r in out):
        names = ", ".join(o.words for o in picks)
        return [{"objective": "all", "config_id": s.baseline,
                 "reason": f"{_describe(t, base)}: the baseline is the best on every objective ({names}, "
                           "and balanced); no configuration improves on it"
                           + _could_gain(t, bands, idx, base)}]
    return out


def _change_bands(s: Scenario, t: Columns) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """Objective -> (its words, the 90% band's low and high of its change against the baseline, in %),
    for the objectives whose change has a band in ``t`` (cost, CO2 and energy at the headline scope;
    not in a sweep's streamed columns)."""
    out = {}
    for name, words, col in (("cost", "cost", "cost_change_pct"),
                             ("co2", "CO2", change_column("co2", s.headline_scope)),
                             ("energy", "energy", change_column("energy", s.headline_scope))):
        if f"{col}_low" in t and f"{col}_high" in t:
            out[name] = (words, t[f"{col}_low"].astype(float), t[f"{col}_high"].astype(float))
    return out


def _band_text(lo: float, hi: float) -> str:
    return f"{lo:+.0f}% to {hi:+.0f}%"


def _uncertain_gain(bands: dict[str, tuple[str, np.ndarray, np.ndarray]], i: int, lead: Objective) -> str:
    """Where the 90% band of the pick's change in its own objective reaches above 0: the gain the
    central values show may not be one."""
    if lead.name not in bands:
        return ""
    words, lo, hi = bands[lead.name]
    if not (np.isfinite(hi[i]) and np.isfinite(lo[i]) and hi[i] > 0):
        return ""
    return f"; its {words} change's 90% band is {_band_text(lo[i], hi[i])}: the gain is not certain"


def _could_gain(t: Columns, bands: dict[str, tuple[str, np.ndarray, np.ndarray]], idx: np.ndarray,
                base: int) -> str:
    """Where the baseline leads every objective, the eligible rows whose 90% bands of a change reach
    below 0: the ranking rests on the central values, which those bands do not settle."""
    could = []
    for i in idx:
        if i == base:
            continue
        parts = [f"{words} {_band_text(lo[i], hi[i])}" for words, lo, hi in bands.values()
                 if np.isfinite(lo[i]) and np.isfinite(hi[i]) and lo[i] < 0]
        if parts:
            could.append(f"{t['config_id'][i]} ({', '.join(parts)})")
    if not could:
        return ""
    return ("; within their 90% bands the changes of " + "; ".join(could[:3])
            + (f" and {len(could) - 3} more" if len(could) > 3 else "") + " reach below the baseline's: "
            "the central values rank the baseline first; the bands do not settle it")


def _basis_note(t: Columns, i: int, base: int) -> str:
    """Where the pick's power basis is not the baseline's (``power_basis``: tdp counts no host and every
    device at its TDP), a clause saying so: part of the energy and CO2 change is the convention."""
    if "power_basis" not in t:
        return ""
    mine, theirs = t["power_basis"][i], t["power_basis"][base]
    if mine is None or theirs is None or mine == theirs:
        return ""
    return (f" (energy and CO2 on the {mine} power basis, the baseline's {theirs}: part of the change is the "
            "accounting convention)")


def _scale(values: np.ndarray, base: int, idx: np.ndarray) -> float:
    """What an objective is divided by in the balanced score: the baseline's value, or where that is
    zero or unknown (a measured host has no price) the median of the eligible rows'."""
    b = float(values[base])
    if np.isfinite(b) and b > 0:
        return b
    m = float(np.median(values[idx]))
    return m if m > 0 else 1.0


def _lexfirst(primary: np.ndarray, keys: list[np.ndarray]) -> int:
    """``np.lexsort([*keys, primary])[0]`` without sorting every row: the rows at the lowest
    ``primary`` are sorted alone (lexsort is stable, NaN sorts last)."""
    low = np.nanmin(primary) if np.any(~np.isnan(primary)) else np.nan
    cand = np.flatnonzero(primary == low) if low == low else np.arange(len(primary))
    return int(cand[np.lexsort([*(k[cand] for k in keys), primary[cand]])[0]])


def tiebreak_at(keys: list[np.ndarray], idx: np.ndarray) -> list[np.ndarray]:
    """Secondary sort keys restricted to ``idx`` (np.lexsort sorts by the last key first)."""
    return [k[idx] for k in keys]
