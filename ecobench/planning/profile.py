"""A day of load: a static fleet, an autoscaled fleet and a batch job for a 24-hour rate profile.

Given the 24 hourly rates of ``workload.inference.profile`` (or ``serving.profile``):

* **static**: the fleet the busiest hour needs, running all 24 hours; each hour its instances work
  the share of the time the load asks for and draw idle power the rest (the draw model's ``busy``).
* **autoscaled**: hour h runs the fleet sized for the busiest of hours h to h + ``lag_h`` (a
  scale-up takes ``lag_h`` hours, so the capacity must be there before the load arrives; the day
  repeats, so hour 23 looks ahead to hour 0), never fewer than ``min_instances``. Scaling down is
  taken as immediate.
* **batch**: the day's volume as one job at full load with no latency target, at the most
  productive batch (inference: the analytic backend's best of batches 1 to 64; serving: the most
  requests a replica can keep in flight), billed by the instance-hour it needs.

Instances per rate come from the planner (``plan_inference``, the serving plan), with the
workload's latency targets and headroom; energy, cost and CO2 from ``planner.plan_fleet`` (the
draw model and the embodied share per instance-hour). Each hour's load is taken as even within
the hour: peaks shorter than an hour are not modelled.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ecobench.hardware.backends.base import Performance
from ecobench.planning.plan import Context, plan_fleet, plan_inference
from ecobench.scenario.model import InferenceSpec, ServingSpec
from ecobench.scenario.profile import HOURS, AutoscaleSpec
from ecobench.units import SECONDS_PER_HOUR

BATCH_CANDIDATES = (1, 2, 4, 8, 16, 32, 64)  # inference batches the batch strategy tries (analytic)
RELAXED_MS = 1e7  # a latency target no plan binds on: the batch job has none
STRATEGIES = ("static", "autoscaled", "batch")
TOTALS = ("instance_hours", "energy_kwh", "cost_usd", "co2_kg")


@dataclass(frozen=True)
class Fleet:
    """How one configuration serves a rate, as the strategies need it.

    ``size(rate_per_h)``: the fewest instances for the rate within the workload's targets, and the
    rate per hour one instance carries at that plan (its full load within the headroom);
    ``hour(instances, rate_per_h)``: one hour of that fleet at that rate (``plan_fleet``'s row);
    ``batch(volume)``: the volume as a batch job (``plan_fleet``'s row, plus ``batch_size`` and
    ``throughput_per_instance_per_s``).
    """

    size: Callable[[float], tuple[int, float]]
    hour: Callable[[int, float], dict[str, Any]]
    batch: Callable[[float], dict[str, Any]]


def sized_rates(rates_per_h: np.ndarray, lag_h: int) -> np.ndarray:
    """The rate each hour's autoscaled fleet is sized for: the busiest of hours h to h + lag_h."""
    r = np.asarray(rates_per_h, dtype=float)
    return np.max(np.stack([np.roll(r, -k) for k in range(lag_h + 1)]), axis=0)


def _totals(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    return {k: float(sum(row[k] for row in rows)) for k in TOTALS}


def _per_hour(strategy: str, rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Each hour's figures of a strategy (``<strategy>_<figure>``, 24 values): the day's totals are
    their sums."""
    return {f"{strategy}_{k}": [float(row[k]) for row in rows] for k in TOTALS}


def _idle_hour() -> dict[str, float]:
    return dict.fromkeys(TOTALS, 0.0)


def profile_strategies(rates_per_h: Sequence[float], autoscale: AutoscaleSpec,
                       fleet: Fleet) -> dict[str, Any]:
    """Static, autoscaled and batch fleets over the day (per-day totals), the hourly plan, and the
    idle capacity autoscaling avoids."""
    rates = np.asarray(rates_per_h, dtype=float)
    assert rates.shape == (HOURS,) and (rates >= 0).all() and rates.max() > 0
    size = functools.cache(lambda r: fleet.size(r) if r > 0 else (0, 0.0))
    hour = functools.cache(lambda n, r: fleet.hour(n, r) if n > 0 else _idle_hour())

    peak_n, peak_cap = size(float(rates.max()))
    static_n = peak_n  # the busiest hour's need: min_instances is the autoscaled fleet's floor only
    sized = sized_rates(rates, autoscale.lag_h)
    plans = [size(float(x)) for x in sized]
    auto_n = [max(autoscale.min_instances, n) for n, _ in plans]
    caps = [n * (cap or peak_cap) for n, (_, cap) in zip(auto_n, plans, strict=True)]
    static_rows = [hour(static_n, float(r)) for r in rates]
    auto_rows = [hour(n, float(r)) for n, r in zip(auto_n, rates, strict=True)]
    static, auto = _totals(static_rows), _totals(auto_rows)
    volume = float(rates.sum())  # one hour each
    job = fleet.batch(volume)
    batch = _totals([job]) | {"batch_size": job["batch_size"],
                              "throughput_per_instance_per_s": job["throughput_per_instance_per_s"]}
    avoided = static["instance_hours"] - auto["instance_hours"]
    return {
        "rule": (f"static: {static_n} instances (sized for the busiest hour) for 24 h; autoscaled: hour h "
                 f"sized for the busiest of hours h..h+{autoscale.lag_h} (scale-up lag), at least "
                 f"{autoscale.min_instances}; batch: the day's volume at full load, no latency target"),
        "lag_h": autoscale.lag_h,
        "min_instances": autoscale.min_instances,
        "daily_volume": volume,
        "peak_rate_per_h": float(rates.max()),
        "mean_rate_per_h": float(rates.mean()),
        "hourly": {"rate_per_h": rates.tolist(), "sized_rate_per_h": sized.tolist(),
                   "autoscaled_instances": auto_n, "autoscaled_capacity_per_h": caps,
                   "static_instances": static_n, "static_capacity_per_h": static_n * peak_cap,
                   **_per_hour("static", static_rows), **_per_hour("autoscaled", auto_rows)},
        "static": static,
        "autoscaled": auto,
        "batch": batch,
        "idle_avoided_instance_hours": avoided,
        "idle_avoided_pct": 100.0 * avoided / static["instance_hours"],
    }


def flat_columns(profile: dict[str, Any]) -> dict[str, float]:
    """The CSV's flat columns: ``profile_<strategy>_<figure>`` and ``profile_idle_avoided_pct``."""
    out = {f"profile_{s}_{k}": profile[s][k] for s in STRATEGIES
           for k in ("energy_kwh", "cost_usd", "co2_kg")}
    return out | {"profile_idle_avoided_pct": profile["idle_avoided_pct"]}


def inference_fleet(spec: InferenceSpec, perf: Performance, ctx: Context, batch: int,
                    batch_perfs: Sequence[tuple[int, Performance]]) -> Fleet:
    """An encoder's fleet: instances from ``plan_inference`` (headroom and latency target), each hour
    at the load the rate puts on them; the batch job at the most productive of ``batch_perfs``
    (batch, performance) pairs."""
    quiet = replace(ctx, uncertain=None)  # the hourly plans carry no Monte Carlo
    t = perf.throughput_per_instance_per_s

    def size(rate_per_h: float) -> tuple[int, float]:
        at = spec.model_copy(update={"rate_per_h": rate_per_h, "horizon_h": 1.0, "profile": None})
        n = int(plan_inference(at, perf, quiet, batch).row["instances"])
        return n, t * spec.max_utilization * SECONDS_PER_HOUR

    def hour(n: int, rate_per_h: float) -> dict[str, Any]:
        rate_s = rate_per_h / SECONDS_PER_HOUR
        return plan_fleet(quiet, perf, n, rate_s / (n * t), rate_s / n * perf.network_bytes_per_sample, 1.0)

    def batch_job(volume: float) -> dict[str, Any]:
        b, best = max(batch_perfs, key=lambda bp: bp[1].throughput_per_instance_per_s)
        tb = best.throughput_per_instance_per_s
        row = plan_fleet(quiet, best, volume / (tb * SECONDS_PER_HOUR), 1.0,
                         tb * best.network_bytes_per_sample, 1.0)
        return row | {"batch_size": b, "throughput_per_instance_per_s": tb}

    return Fleet(size, hour, batch_job)


ServingAt = Callable[[ServingSpec], tuple[Performance, dict[str, Any]]]


def serving_fleet(spec: ServingSpec, ctx: Context, serving_at: ServingAt) -> Fleet:
    """An LLM's fleet: ``serving_at(spec)`` plans a request rate (``modes/serving.serving_performance``:
    the performance and its ``instances``, ``busy`` and ``batch``). An hour's fleet of ``n``
    instances where the rate's own plan needs ``m`` runs ``m`` instances' work: busy ``busy x m / n``
    (the draw is linear in busy, so it is the same spread over all ``n``)."""
    quiet = replace(ctx, uncertain=None)

    @functools.cache
    def at(rate_per_h: float, relaxed: bool = False) -> tuple[Performance, dict[str, Any]]:
        upd: dict[str, Any] = {"requests_per_h": rate_per_h, "horizon_h": 1.0, "profile": None}
        base = spec.without_targets() if relaxed else spec
        return serving_at(base.model_copy(update=upd))

    def size(rate_per_h: float) -> tuple[int, float]:
        perf, extra = at(rate_per_h)
        return int(extra["instances"]), perf.throughput_per_instance_per_s * SECONDS_PER_HOUR

    def hour(n: int, rate_per_h: float) -> dict[str, Any]:
        perf, extra = at(rate_per_h)
        rate_s = rate_per_h / SECONDS_PER_HOUR
        return plan_fleet(quiet, perf, n, extra["busy"] * extra["instances"] / n,
                          rate_s / n * perf.network_bytes_per_sample, 1.0)

    def batch_job(volume: float) -> dict[str, Any]:
        # a rate far beyond any day's: the plan then has the fewest instances, the most per instance
        most, _ = at(1e9 * SECONDS_PER_HOUR, True)
        c = most.throughput_per_instance_per_s
        full, extra = at(c * SECONDS_PER_HOUR, True)  # one instance at full load
        busy = extra["busy"] * extra["instances"]
        row = plan_fleet(quiet, full, volume / (c * SECONDS_PER_HOUR), busy,
                         c * full.network_bytes_per_sample, 1.0)
        return row | {"batch_size": extra["batch"], "throughput_per_instance_per_s": c}

    return Fleet(size, hour, batch_job)
