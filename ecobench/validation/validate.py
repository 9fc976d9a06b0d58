"""`ecobench validate`: reproduce the published AWS figures and report the error of each.

replay  -- each configuration is given the throughput implied by the published instance counts
           (inference) or durations (training): checks the power, carbon and cost models.
predict -- throughput from the backend alone.
holdout -- every published throughput point (hardware/data/published_points.yaml) predicted by the
           analytic model fitted without the point's source (leave-one-source-out): the model's
           out-of-sample error, summarised per kind of point; and every Neuron point predicted by
           the emulated NeuronCore fitted without its source (rows ``neuron_*``, kind
           ``neuron_emulated``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

from ecobench.io.yamlio import load_packaged
from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict
from ecobench.scenario.model import Scenario
from ecobench.units import SECONDS_PER_HOUR
from ecobench.validation.kinds import (
    HOLDOUT_TARGETS,
    NEURON_KIND,
    NEURON_SERVE_KIND,
    POWER_KINDS,
    kinds,
)

MODES = ("replay", "predict", "holdout")
__all__ = ["HOLDOUT_TARGETS", "MODES", "NEURON_KIND", "NEURON_SERVE_KIND", "POWER_KINDS", "kinds"]


@dataclass(frozen=True)
class Check:
    experiment: str
    figure: str
    mode: str
    published: float
    ecobench: float
    error_pct: float
    error_points: float | None
    target: str
    within_target: bool | None
    kind: str | None = None  # holdout: llm_train, encoder_train, encoder_infer
    source: str | None = None  # holdout: the source held out with this point
    low: float | None = None  # the 90% band of ecobench's figure, where one exists
    high: float | None = None

    @property
    def in_band(self) -> bool | None:
        """Whether the published value lies inside the 90% band (None without a band)."""
        if self.low is None or self.high is None:
            return None
        return self.low <= self.published <= self.high


@dataclass(frozen=True)
class Summary:
    """Out-of-sample error of one kind of point."""

    kind: str
    figure: str
    count: int
    median_abs_error_pct: float
    worst_abs_error_pct: float
    worst: str
    target: str
    within_target: bool
    coverage_pct: float | None = None  # share of published values inside their 90% band
    median_band_width_pct: float | None = None  # (high - low) / ecobench's value, median
    median_band_ratio: float | None = None  # high / low, median (issue 22's serving target: <= 1.8)


def _data(name: str) -> Any:
    return load_packaged(resources.files("ecobench.validation").joinpath(name).read_text("utf-8"))


def seed_scenario(experiment: str) -> Scenario:
    """The packaged seed scenario of an experiment."""
    exp = _data("published.yaml")["experiments"][experiment]
    return scenario_from_dict(_data(exp["scenario"]), f"ecobench/validation/{exp['scenario']}")


def _replayed(s: Scenario, exp: dict[str, Any]) -> Scenario:
    """The scenario with each configuration's throughput implied by the published results."""
    data = s.model_dump(mode="json")
    for cfg in data["configs"]:
        if s.workload.inference:
            rate_s = s.workload.inference.rate_per_h / SECONDS_PER_HOUR
            cfg["measured_throughput_per_s"] = rate_s / exp["published_instances"][cfg["id"]]
        else:
            assert s.workload.training is not None
            seconds = exp["published_duration_h"][cfg["id"]] * SECONDS_PER_HOUR
            total = s.workload.training.total_sequences
            cfg["measured_throughput_per_s"] = total / seconds / cfg["instances"]
    return scenario_from_dict(data, f"{s.name} (replay)")


_BAND_COLUMNS = {"throughput_ratio": ("a", "throughput_ratio"),
                 "energy_change_pct": ("a", "energy_change_pct"),
                 "cost_change_pct": ("a", "cost_change_pct"), "instances_accelerated": ("a", "instances"),
                 "instances_baseline": ("b", "instances"),
                 "cost_per_million_usd_accelerated": ("a", "cost_usd_per_million"),
                 "cost_per_million_usd_baseline": ("b", "cost_usd_per_million"),
                 "duration_h_accelerated": ("a", "duration_h"), "duration_h_baseline": ("b", "duration_h"),
                 "cost_usd_accelerated": ("a", "cost_usd"), "cost_usd_baseline": ("b", "cost_usd")}


def _bands(df: Any, acc: str, base: str) -> dict[str, tuple[float, float]]:
    """The Monte Carlo band of each figure, where the results carry one."""
    rows = {"a": df.set_index("config_id").loc[acc], "b": df.set_index("config_id").loc[base]}
    out = {}
    for fig, (who, col) in _BAND_COLUMNS.items():
        r = rows[who]
        if f"{col}_low" not in r.index or r[f"{col}_low"] != r[f"{col}_low"]:  # absent or NaN
            continue
        lo, hi = float(r[f"{col}_low"]), float(r[f"{col}_high"])
        if hi - lo > 1e-9 * max(1.0, abs(hi)):  # a figure fixed by what is supplied has no band
            out[fig] = (lo, hi)
    return out


def _figures(df: Any, acc: str, base: str, mode: str) -> dict[str, float]:
    a = df.set_index("config_id").loc[acc]
    b = df.set_index("config_id").loc[base]
    out = {"throughput_ratio": a.throughput_ratio, "energy_change_pct": a.energy_change_pct,
           "cost_change_pct": a.cost_change_pct}
    if mode == "inference":
        out |= {"instances_accelerated": a.instances, "instances_baseline": b.instances,
                "cost_per_million_usd_accelerated": a.cost_usd_per_million,
                "cost_per_million_usd_baseline": b.cost_usd_per_million}
    else:
        out |= {"duration_h_accelerated": a.duration_h, "duration_h_baseline": b.duration_h,
                "cost_usd_accelerated": a.cost_usd, "cost_usd_baseline": b.cost_usd}
    return {k: float(v) for k, v in out.items()}


Progress = Callable[[str], None]


def validate(modes: tuple[str, ...] = MODES, progress: Progress | None = None) -> list[Check]:
    """Every published figure in every mode, with ecobench's value and the error; ``progress`` is
    told what is being done (one line per step)."""
    say = progress or (lambda _msg: None)
    pub = _data("published.yaml")
    checks: list[Check] = []
    for name, exp in pub["experiments"].items():
        base_s = seed_scenario(name)
        for mode in (m for m in modes if m in ("replay", "predict")):
            say(f"{mode} {name}")
            s = _replayed(base_s, exp) if mode == "replay" else base_s
            df = evaluate(s)
            got = _figures(df, exp["accelerated"], exp["baseline"], s.workload.mode)
            band = _bands(df, exp["accelerated"], exp["baseline"])
            for fig, published in exp["figures"].items():
                value = got[fig]
                err = (value - published) / abs(published) * 100.0
                points = value - published if fig.endswith("_change_pct") else None
                tgt = pub["targets"][mode].get(fig)
                if tgt is None:
                    target, ok = "reported", None
                elif "points" in tgt:
                    target, ok = f"±{tgt['points']} points", abs(value - published) <= tgt["points"]
                else:
                    target, ok = f"±{tgt['pct']}%", abs(err) <= tgt["pct"]
                lo, hi = band.get(fig, (None, None))
                checks.append(Check(name, fig, mode, float(published), value, err, points, target, ok,
                                    low=lo, high=hi))
    if "predict" in modes:
        say("predict neuron points (emulated NeuronCore, stored fit)")
        checks += neuron_checks("predict")
    if "holdout" in modes:
        checks += holdout_checks(progress) + neuron_checks("holdout", progress) + power_checks(progress)
        checks += neuron_serving_checks(progress)
    return checks


NEURON_SERVE_TARGETS = (15.0, 60.0)  # median, worst |error| % (issue 22: Neuron serving median <= 15%)


def of_kinds(checks: list[Check], wanted: tuple[str, ...]) -> list[Check]:
    """The holdout rows of the ``wanted`` kinds (``emulated_serve`` stands for each family's)."""
    def family(c: Check) -> str:
        return NEURON_SERVE_KIND if (c.kind or "").startswith(f"{NEURON_SERVE_KIND}_") else c.kind or ""

    return [c for c in checks if c.mode == "holdout" and family(c) in wanted]


def neuron_serving_checks(progress: Progress | None = None) -> list[Check]:
    """Every published Neuron serving figure (TPOT, TTFT) predicted by the emulated NeuronCore's
    serving timer with its correction fitted without the point's source
    (``hardware/neuron/serving.py``; the engine parameters are fitted on throughput points only)."""
    from ecobench.hardware.neuron.serving import holdout

    if progress:
        progress("holdout neuron serving: emulated decode steps and prefills, correction without each source")
    from ecobench.hardware.backends.serve_bands import point_band

    median_t, worst_t = NEURON_SERVE_TARGETS
    out = []
    for r in holdout():
        lo, hi = point_band(r.point.id, r.figure, "emulated").around(r.predicted)  # without its source
        out.append(Check(f"{NEURON_SERVE_KIND}_{r.point.id.removeprefix('neuron_')}", r.figure, "holdout",
                         r.published, r.predicted, r.error_pct, None, f"±{worst_t:g}%",
                         abs(r.error_pct) <= worst_t,
                         f"{NEURON_SERVE_KIND}_{(r.point.instance_type or '').split('.')[0]}", r.source,
                         low=lo, high=hi))
    return out


def power_checks(progress: Progress | None = None) -> list[Check]:
    """Every fitted measured-power point predicted by the draw model fitted without its group."""
    from ecobench.power.fit import holdout

    if progress:
        progress("holdout power: draw model fitted once per group of measured points")
    from ecobench.power.corpus import load_corpus

    points = {p.id: p for p in load_corpus().points}
    out = []
    for r in holdout():
        worst = HOLDOUT_TARGETS[r.kind, "power_w"][1]
        out.append(Check(f"{r.kind}_{r.id}", "power_w", "holdout", r.measured_w, r.predicted_w, r.error_pct,
                         None, f"±{worst:g}%", abs(r.error_pct) <= worst, r.kind, r.group,
                         low=r.low_w, high=r.high_w))
        p = points[r.id]
        if p.energy_j_per_output_token is None or p.output_tokens_per_s is None:
            continue
        # the published energy per output token against the held-out draw at the run's own throughput:
        # every metered device's (or node's) watts over the output tokens per second
        meters = p.devices if p.power_per == "device" else p.nodes  # devices: every metered one
        j = meters / p.output_tokens_per_s
        pred, pub = r.predicted_w * j, p.energy_j_per_output_token
        err = (pred / pub - 1.0) * 100.0
        worst = HOLDOUT_TARGETS[r.kind, "energy_j_per_output_token"][1]
        out.append(Check(f"{r.kind}_{r.id}", "energy_j_per_output_token", "holdout", pub, pred, err, None,
                         f"±{worst:g}%", abs(err) <= worst, r.kind, r.group, low=r.low_w * j,
                         high=r.high_w * j))
    return out


def holdout_checks(progress: Progress | None = None) -> list[Check]:
    """Every published point predicted by the analytic model fitted without its source (stored
    while the points and the model are unchanged: ``residuals.held_out``)."""
    from collections import Counter

    from ecobench.hardware.backends.residuals import held_out, holdout_band
    from ecobench.hardware.backends.serve_bands import point_band

    rows = held_out("analytic", progress)
    if progress:
        kinds = Counter(r.point.kind for r in rows)
        progress(f"holdout analytic: {len(rows)} figures, by kind: "
                 + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    out = []
    for r in rows:
        tokens = r.point.kind in ("llm_train", "moe_train")
        scale = r.point.seq_len if tokens else 1.0
        figure = "tokens_per_s" if tokens else r.figure
        worst = HOLDOUT_TARGETS[r.point.kind, figure][1]
        pred = r.predicted * scale
        if r.point.kind == "llm_serve":  # its regime's errors from the other sources (serve_bands.py)
            f = point_band(r.point.id, figure).factor
            lo, hi = 1.0 / f, f
        else:  # training (mixture-of-experts its own pool) and encoders: the pool without its source
            lo, hi = holdout_band(r.point.id)
        out.append(Check(f"{r.point.kind}_{r.point.id}", figure, "holdout", r.published * scale, pred,
                         r.error_pct, None, f"±{worst:g}%", abs(r.error_pct) <= worst, r.point.kind, r.source,
                         low=pred * lo, high=pred * hi))
    return out


def _target(median: float, worst: float, median_t: float, worst_t: float) -> str:
    """The target, and which part of it is missed."""
    missed = [f"{what} {v:.1f}% > {t:g}%" for what, v, t in (("median", median, median_t),
                                                              ("worst", worst, worst_t)) if v > t]
    return f"median ≤ {median_t:g}%, worst ≤ {worst_t:g}%" + (f" ({'; '.join(missed)})" if missed else "")


def summarize(checks: list[Check]) -> list[Summary]:
    """Count, median and worst |error| of the holdout rows, per kind of point and figure."""
    import statistics

    out = []
    for (kind, figure), (median_t, worst_t) in HOLDOUT_TARGETS.items():
        rows = [c for c in checks if c.mode == "holdout" and c.kind == kind and c.figure == figure]
        if not rows:
            continue
        errs = [abs(c.error_pct) for c in rows]
        worst = max(rows, key=lambda c: abs(c.error_pct))
        med = statistics.median(errs)
        cov, width = band_stats(rows)
        out.append(Summary(kind, figure, len(rows), med, max(errs), worst.experiment,
                           _target(med, max(errs), median_t, worst_t),
                           med <= median_t and max(errs) <= worst_t, cov, width, band_ratio(rows)))
    held = [c for c in checks if c.mode == "holdout"]
    serve = [c for c in held if (c.kind or "").startswith(NEURON_SERVE_KIND)]
    # the analytic model's figures: the emulated NeuronCore predicts the same Neuron points again (its
    # throughput and serving rows have summaries of their own), which would count them twice here
    out += _overall("all", [c for c in held if c.kind not in POWER_KINDS and c not in serve
                            and c.kind != NEURON_KIND])
    out += _overall("power", [c for c in held if c.kind in POWER_KINDS])
    return out + neuron_summary(checks) + neuron_serving_summary(serve)


def neuron_serving_summary(rows: list[Check]) -> list[Summary]:
    """Median and worst held-out |error| of the emulated NeuronCore's serving figures, per instance
    family and figure."""
    import statistics

    out = []
    median_t, worst_t = NEURON_SERVE_TARGETS
    for kind, figure in sorted({(c.kind or "", c.figure) for c in rows}):
        sel = [c for c in rows if c.kind == kind and c.figure == figure]
        errs = [abs(c.error_pct) for c in sel]
        worst = max(sel, key=lambda c: abs(c.error_pct))
        med = statistics.median(errs)
        cov, width = band_stats(sel)
        out.append(Summary(kind, figure, len(sel), med, max(errs), worst.experiment,
                           _target(med, max(errs), median_t, worst_t),
                           med <= median_t and max(errs) <= worst_t, cov, width, band_ratio(sel)))
    return out


def _overall(label: str, rows: list[Check]) -> list[Summary]:
    """Median and worst |error| and band coverage over every row of one family (throughput, power)."""
    import statistics

    out = []
    if rows:
        cov, width = band_stats(rows)
        errs = [abs(c.error_pct) for c in rows]
        worst = max(rows, key=lambda c: abs(c.error_pct))
        out.append(Summary(label, "all", len(rows), statistics.median(errs), max(errs), worst.experiment,
                           f"coverage ≥ {COVERAGE_TARGET_PCT:g}% of published values inside the 90% band",
                           cov is not None and cov >= COVERAGE_TARGET_PCT, cov, width, band_ratio(rows)))
    return out


COVERAGE_TARGET_PCT = 90.0


def band_stats(rows: list[Check]) -> tuple[float | None, float | None]:
    """(coverage %, median band width % of ecobench's value) of the rows that carry a band."""
    import statistics

    banded = [c for c in rows if c.in_band is not None]
    if not banded:
        return None, None
    cov = 100.0 * sum(bool(c.in_band) for c in banded) / len(banded)
    width = statistics.median(100.0 * (c.high - c.low) / abs(c.ecobench) for c in banded  # type: ignore[operator]
                              if c.ecobench)
    return cov, width


def band_ratio(rows: list[Check]) -> float | None:
    """Median high / low of the rows that carry a band (None without one)."""
    import statistics

    ratios = [c.high / c.low for c in rows if c.in_band is not None and c.low]  # type: ignore[operator]
    return statistics.median(ratios) if ratios else None


NEURON_TARGET_PCT = 25.0
NEURON_MEDIAN_TARGET_PCT = 12.0


def _neuron_name(point_id: str) -> str:
    return "neuron_" + point_id.removeprefix("neuron_").removeprefix("neuron")


def _neuron_check(point: Any, published: float, predicted: float, mode: str, source: str | None) -> Check:
    from ecobench.hardware.backends.residuals import holdout_band

    tokens = point.kind == "llm_train"
    scale = point.seq_len if tokens else 1.0
    err = (predicted / published - 1.0) * 100.0
    lo, hi = holdout_band(point.id, emulated=True)
    return Check(_neuron_name(point.id), "tokens_per_s" if tokens else "sequences_per_s", mode,
                 published * scale, predicted * scale, err, None, f"±{NEURON_TARGET_PCT:g}%",
                 abs(err) <= NEURON_TARGET_PCT, NEURON_KIND if mode == "holdout" else None, source,
                 low=predicted * scale * lo, high=predicted * scale * hi)


def neuron_checks(mode: str = "predict", progress: Progress | None = None) -> list[Check]:
    """Every published point on a Neuron instance predicted by the emulated NeuronCore: with the
    stored fit (``predict``, in sample), or fitted without the point's source (``holdout``; stored
    while the points and the model are unchanged)."""
    from ecobench.hardware.neuron import fit as nfit

    if mode == "holdout":
        from ecobench.hardware.backends.residuals import held_out

        return [_neuron_check(r.point, r.published, r.predicted, "holdout", r.source)
                for r in held_out("emulated", progress)]
    prepared = list(nfit.prepared_points())
    pred = nfit.predict(prepared, nfit.current_fit())
    return [_neuron_check(p.point, p.published, float(v), "predict", None)
            for p, v in zip(prepared, pred, strict=True)]


def neuron_summary(checks: list[Check]) -> list[Summary]:
    """Median and worst held-out |error| of the emulated NeuronCore over every Neuron point."""
    import statistics

    rows = [c for c in checks if c.mode == "holdout" and c.kind == NEURON_KIND]
    if not rows:
        return []
    errs = [abs(c.error_pct) for c in rows]
    worst = max(rows, key=lambda c: abs(c.error_pct))
    med = statistics.median(errs)
    cov, width = band_stats(rows)
    return [Summary(NEURON_KIND, "throughput", len(rows), med, max(errs), worst.experiment,
                    f"median ≤ {NEURON_MEDIAN_TARGET_PCT:g}%, worst ≤ {NEURON_TARGET_PCT:g}%",
                    med <= NEURON_MEDIAN_TARGET_PCT and max(errs) <= NEURON_TARGET_PCT, cov, width,
                    band_ratio(rows))]


def as_json(checks: list[Check]) -> list[dict[str, Any]]:
    """JSON-ready objects: experiment, figure, mode, published, ecobench, error_pct (+ extras), then
    one ``mode: holdout_summary`` object per kind of holdout point."""
    rows = [asdict(c) | {"in_band": c.in_band} for c in checks]
    for sm in summarize(checks):
        rows.append({"experiment": sm.kind, "mode": "holdout_summary", "published": None, "ecobench": None,
                     "error_pct": None, **asdict(sm)})
    return rows
