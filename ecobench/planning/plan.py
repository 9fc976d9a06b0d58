"""Capacity and time planning: instances for an SLA, time to train on a cluster; energy, cost, CO2."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ecobench.errors import InputError
from ecobench.hardware.backends.base import Performance
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.planning.interruption import MAX_TRAINING_OVERHEAD, SpotTerms, fleet_overhead, training_overhead
from ecobench.power.carbon import GridIntensity
from ecobench.power.draw import COMPUTE_ONLY, Activity, PowerSetup, central_params, draw_w
from ecobench.power.embodied import embodied_kg
from ecobench.power.model import PowerBreakdown
from ecobench.power.scopes import co2_per_output_token, fleet_figures
from ecobench.power.uncertainty import InferenceCase, McConfig, TrainingCase, TrainingPhase, UncertainSetup
from ecobench.scenario.model import InferenceSpec, Phase, ServingSpec, TrainingSpec
from ecobench.units import (
    FLOAT_EPS,
    MILLION,
    SECONDS_PER_HOUR,
    per_output_token,
    whole,
)


@dataclass(frozen=True)
class Context:
    """What every configuration's plan needs besides its performance."""

    catalog: Catalog
    instance: Instance
    price_usd_per_h: float
    grid: GridIntensity
    pue: float
    power: PowerSetup  # the draw model's inputs
    uncertain: UncertainSetup | None = None  # what the Monte Carlo varies for this configuration
    spot: SpotTerms | None = None  # spot: what interruptions cost (None: on-demand, no overhead)


@dataclass
class PlanResult:
    """A configuration's plan: its row's figures (``row``: column name -> value; arrays for a sweep
    group) and what the Monte Carlo needs to band them (``mc``; None: no bands)."""

    row: dict[str, Any]
    mc: McConfig | None = None


def spot_columns(ctx: Context, overhead: float) -> dict[str, Any]:
    """The interruption frequency used and the re-run overhead (0 on-demand)."""
    return {"spot_interruption_pct_per_month": ctx.spot.interruption_pct_per_month if ctx.spot else None,
            "spot_overhead_pct": 100.0 * overhead}


def instances_for_rate(rate_per_s: float, throughput_per_instance_per_s: float,
                       max_utilization: float) -> int:
    """Fewest instances that serve ``rate_per_s`` at no more than ``max_utilization`` each."""
    need = rate_per_s / (throughput_per_instance_per_s * max_utilization)
    return max(1, math.ceil(need - FLOAT_EPS * max(1.0, need)))


def measured_host(ctx: Context, perf: Performance) -> bool:
    """Whether the host's own measured draw counts (a measuring backend; not under ``power_basis: tdp``)."""
    return ctx.power.basis != "tdp" and perf.provenance == "measured" and perf.measured is not None \
        and bool(perf.measured.power_w)


def _power(ctx: Context, perf: Performance, load: float, net_bytes_per_s: float) -> PowerBreakdown:
    """Draw at the work done (``power/draw.py``) at the load; a measured host's own measured draw (at
    full load, kept as is below it: conservative, as no idle draw was measured)."""
    if measured_host(ctx, perf):
        m = perf.measured.power_w  # type: ignore[union-attr]
        assert m is not None
        it = m["accelerator"] + m["cpu"] + m["memory"]
        return PowerBreakdown(m["accelerator"], m["cpu"], m["memory"], 0.0, (ctx.pue - 1.0) * it)
    w = draw_w(ctx.power.spec(activity(perf), net_bytes_per_s), central_params(ctx.pue), busy=load)
    return PowerBreakdown(*(_scalar(w[k]) for k in ("accelerator", "cpu", "memory", "network", "overhead")))


def _scalar(v: Any) -> Any:
    """A float for a 0-d value; an array (a sweep's headrooms) as it is."""
    import numpy as np

    return float(v) if np.ndim(v) == 0 else v


def _measured_w(ctx: Context, perf: Performance) -> dict[str, float] | None:
    return dict(perf.measured.power_w) \
        if measured_host(ctx, perf) and perf.measured and perf.measured.power_w \
        else None


def activity(perf: Performance) -> Activity:
    """What the backend says the accelerator does (compute-bound, memory-bound, stalls)."""
    return perf.activity or COMPUTE_ONLY


def _common(ctx: Context, n: float, duration_h: float, power: PowerBreakdown,
            hours_factor: float = 1.0) -> dict[str, Any]:
    """Energy, cost and CO2 of ``n`` instances for ``duration_h``; ``hours_factor`` scales the
    instance-hours (a spot fleet's headroom)."""
    inst_h = n * duration_h * hours_factor
    figures = fleet_figures(inst_h, power.accelerator_w, power.it_w, power.total_w, ctx.price_usd_per_h,
                            ctx.grid.g_per_kwh, embodied_kg(ctx.instance, inst_h))
    return figures | {
        "instances": n,
        "duration_h": duration_h,
        "instance_hours": inst_h,
        "power_w": power.total_w,
        "power_accelerator_w": power.accelerator_w,
        "power_cpu_w": power.cpu_w,
        "power_memory_w": power.memory_w,
        "power_network_w": power.network_w,
        "power_overhead_w": power.overhead_w,
        "price_usd_per_h": ctx.price_usd_per_h,
        "grid_g_per_kwh": ctx.grid.g_per_kwh,
    }


def plan_fleet(ctx: Context, perf: Performance, instances: float, busy: float, net_bytes_per_s: float,
               duration_h: float) -> dict[str, Any]:
    """Energy, cost and CO2 of ``instances`` running ``duration_h`` with their accelerators working
    ``busy`` of the time (the draw model counts the idle rest), each moving ``net_bytes_per_s``. On
    spot, the fleet keeps the interrupted share as headroom, as :func:`plan_inference`'s does."""
    overhead = fleet_overhead(ctx.spot) if ctx.spot else 0.0
    return _common(ctx, instances, duration_h, _power(ctx, perf, busy, net_bytes_per_s), 1.0 + overhead)


def latency_p99_s(rate_per_server: Any, batch_s: float, batch: int) -> Any:
    """99th-percentile latency of a request at a server that runs batches of ``batch`` taking
    ``batch_s`` each, requests arriving as a Poisson stream: the batch's own time, the time the first
    request of a batch waits for the rest ((batch - 1) / rate), and the queue of batches, an M/D/1
    queue whose wait is taken as 0 with probability 1 - rho and exponential otherwise (its
    heavy-traffic form): 99th percentile ``wait / rho * ln(100 rho)``."""
    import numpy as np

    lam = np.asarray(rate_per_server, dtype=float)
    rho = lam * batch_s / batch
    wait = rho * batch_s / (2 * np.maximum(1 - rho, 1e-12))
    tail = np.where(rho > 0.01, wait / np.maximum(rho, 1e-12) * np.log(np.maximum(100 * rho, 1.0)), 0.0)
    return np.where(rho < 1, batch_s + (batch - 1) / np.maximum(lam, 1e-12) + tail, np.inf)


def instances_for_latency(rate_s: float, servers: int, batch_s: float, batch: int,
                          target_s: float) -> float | None:
    """Instances (fractional) whose servers keep the 99th-percentile latency within ``target_s``; None
    where no load does (a batch alone takes longer): the row is then planned at full load and its
    ``slo`` says the target is missed, as a serving row's does."""
    import numpy as np

    grid = np.linspace(0.0, 1.0, 4001)[1:] * batch / batch_s  # rate per server, up to its capacity
    ok = latency_p99_s(grid, batch_s, batch) <= target_s
    if not ok.any():
        return None
    return rate_s / (servers * float(grid[ok].max()))


def latency_sizing(rate_s: float, servers: int, batch_s: float, batch: int,
                   target_s: float) -> Callable[[Any], Any]:
    """Instances (fractional) that keep the 99th-percentile latency within ``target_s`` when the
    throughput is ``m`` times the plan's (an array of Monte Carlo draws): the batch then takes
    ``batch_s / m``. The latency is ``batch_s`` times a function of the load alone, so one grid of
    loads (the one :func:`instances_for_latency` searches) serves every draw; a draw too slow to meet
    the target at any load needs none for it (0): it is planned at full load, as a plan that misses its
    target is (sizing it at its least-latency load, near no load for a batch of 1, took a draw of the
    layoutlm_realtime_p99 inf1 row at a 20 ms target to 15,978 instances)."""
    import numpy as np

    rho = np.linspace(0.0, 1.0, 4001)[1:]
    g = latency_p99_s(rho * batch / batch_s, batch_s, batch) / batch_s  # p99 in units of the batch time
    lowest_after = np.minimum.accumulate(g[::-1])[::-1]  # non-decreasing: searchsorted finds the last fit

    def need(m: Any) -> Any:
        b = batch_s / np.asarray(m, dtype=float)
        k = np.searchsorted(lowest_after, target_s / b, side="right") - 1
        return np.where(k >= 0, rate_s / (servers * rho[np.maximum(k, 0)] * batch / b), 0.0)

    return need


def plan_inference(spec: InferenceSpec, perf: Performance, ctx: Context, batch: int = 1,
                   whole_instances: bool = True, max_utilization: Any = None) -> PlanResult:
    """Instances to meet the rate (at full load, or within the latency target), and energy, cost and
    CO2 over the horizon and per million. ``whole_instances=False`` plans with the fractional count
    (``instances_needed``): the continuous quantity behind the integer step, used for the
    per-repetition samples. ``max_utilization`` (default the spec's) and the context's price and grid
    intensity may be numpy arrays: a sweep plans many headrooms and regions in one call, and every
    figure broadcasts over them."""
    import numpy as np

    rate_s = spec.rate_per_h / SECONDS_PER_HOUR
    t = perf.throughput_per_instance_per_s
    u = spec.max_utilization if max_utilization is None else max_utilization
    need = rate_s / (t * u)
    latency: dict[str, Any] = {}
    sizing = None
    if spec.latency_ms_p99 is not None:
        servers = perf.servers
        batch_s = perf.batch_s if perf.batch_s is not None else batch * servers / t
        by_latency = instances_for_latency(rate_s, servers, batch_s, batch, spec.latency_ms_p99 / 1e3)
        if by_latency is not None:  # else no load meets it: planned at full load, its slo says misses
            need = np.maximum(need, by_latency)
            need = float(need) if np.ndim(need) == 0 else need
            if ctx.uncertain is not None:
                sizing = latency_sizing(rate_s, servers, batch_s, batch, spec.latency_ms_p99 / 1e3)
    n: Any = whole(need) if whole_instances else need
    if spec.latency_ms_p99 is not None:
        p99 = 1e3 * latency_p99_s(rate_s / (n * servers), batch_s, batch)
        latency = {"latency_p99_ms": float(p99) if np.ndim(p99) == 0 else p99}
        if np.ndim(p99) == 0:  # each target with the planned value, as a serving row's slo
            verdict = "meets" if float(p99) <= spec.latency_ms_p99 * (1 + 1e-9) else "misses"
            latency["slo"] = f"latency_ms_p99 {spec.latency_ms_p99:g}: {float(p99):.4g} {verdict}"
    load = rate_s / (n * t)
    power = _power(ctx, perf, load, rate_s / n * perf.network_bytes_per_sample)
    overhead = fleet_overhead(ctx.spot) if ctx.spot else 0.0
    row = _common(ctx, n, spec.horizon_h, power, 1.0 + overhead) | spot_columns(ctx, overhead)
    mc = None
    if ctx.uncertain is not None:
        case = InferenceCase(rate_s, u, spec.horizon_h, t, perf.network_bytes_per_sample,
                             ctx.power.spec(activity(perf), rate_s / n * perf.network_bytes_per_sample),
                             instance_hours_factor=1.0 + overhead, sizing=sizing)
        mc = McConfig("", ctx.uncertain, case, ctx.pue, _measured_w(ctx, perf))
    millions = spec.rate_per_h * spec.horizon_h / MILLION
    row.update({
        "throughput_per_instance_per_s": t,
        "instances_needed": need,
        "load": load,
        "inferences": spec.rate_per_h * spec.horizon_h,
        "energy_kwh_per_million": row["energy_kwh"] / millions,
        "cost_usd_per_million": row["cost_usd"] / millions,
        "co2_kg_per_million": row["co2_kg"] / millions,
        **latency,
    })
    return PlanResult(row, mc)


def plan_training(spec: TrainingSpec, n: int, perf_for_phase: Callable[[Phase], Performance],
                  ctx: Context) -> PlanResult:
    """Time to process the sequences on ``n`` instances, phase by phase; energy, cost, CO2."""
    duration_s = 0.0
    energy_ws = 0.0  # per instance, W x s, at the facility
    parts = [PowerBreakdown(0, 0, 0, 0, 0)]
    perfs = []
    phases = []
    for phase in spec.phases:
        perf = perf_for_phase(phase)
        perfs.append(perf)
        seqs = spec.phase_sequences(phase)
        seconds = seqs / (n * perf.throughput_per_instance_per_s)
        power = _power(ctx, perf, 1.0, perf.throughput_per_instance_per_s
                       * perf.network_bytes_per_sample)
        duration_s += seconds
        energy_ws += power.total_w * seconds
        phases.append(TrainingPhase(seconds, ctx.power.spec(
            activity(perf), perf.throughput_per_instance_per_s * perf.network_bytes_per_sample)))
        parts.append(PowerBreakdown(*(seconds * getattr(power, f) for f in
                                      ("accelerator_w", "cpu_w", "memory_w", "network_w", "overhead_w"))))
    avg = PowerBreakdown(*(sum(getattr(p, f) for p in parts) / duration_s for f in
                           ("accelerator_w", "cpu_w", "memory_w", "network_w", "overhead_w")))
    overhead = training_overhead(ctx.spot, n) if ctx.spot else 0.0  # interruptions lengthen the run
    if overhead > MAX_TRAINING_OVERHEAD:
        assert ctx.spot is not None
        times = (f"{1 + overhead:,.0f} times as long as" if math.isfinite(overhead)
                 else "beyond any multiple of")
        raise InputError(
            f"on spot, {n:,} instances interrupted at {ctx.spot.interruption_pct_per_month:g}% a month "
            f"with a checkpoint every {ctx.spot.checkpoint_interval_h:g} h would train {times} "
            f"on demand (allowed: at most {1 + MAX_TRAINING_OVERHEAD:g} times); checkpoint more often "
            "(pricing.checkpoint_interval_h), lower pricing.spot_interruption_pct_per_month or use "
            "pricing: on_demand").in_config(by_id=True)
    row = _common(ctx, n, duration_s * (1.0 + overhead) / SECONDS_PER_HOUR, avg) | spot_columns(ctx, overhead)
    total = sum(spec.phase_sequences(ph) for ph in spec.phases)
    row.update({
        "throughput_per_instance_per_s": total / (duration_s * n),
        "load": 1.0,
        "sequences": total,
        "sequences_per_h": total / (duration_s * (1.0 + overhead) / SECONDS_PER_HOUR),
    })
    mc = None
    if ctx.uncertain is not None:
        case = TrainingCase(n, total, tuple(phases), 1.0 + overhead)
        mc = McConfig("", ctx.uncertain, case, ctx.pue, _measured_w(ctx, perfs[0]))
    return PlanResult(row, mc)


def plan_serving(spec: ServingSpec, instances: int, capacity_per_instance_per_s: float, perf: Performance,
                 ctx: Context, busy: float,
                 latency: Callable[[Any], dict[str, Any]] | None = None,
                 bands: tuple[Any, Any] | None = None) -> PlanResult:
    """Energy, cost and CO2 of ``instances`` serving the request rate for the horizon, per output
    token at every scope; the accelerators work ``busy`` of the time (replica slots in use, idle time
    excluded). ``latency`` (TTFT and TPOT at a speed multiplier, ``planning/serving.latency_at``) goes
    to the Monte Carlo, which bands them; ``bands``: the (decode, prefill) ``serve_bands.Band`` of the
    configuration's regime, which the Monte Carlo's speed draws follow."""
    rate_s = spec.requests_per_h / SECONDS_PER_HOUR
    net = rate_s / instances * perf.network_bytes_per_sample
    overhead = fleet_overhead(ctx.spot) if ctx.spot else 0.0
    row = _common(ctx, instances, spec.horizon_h, _power(ctx, perf, busy, net), 1.0 + overhead) \
        | spot_columns(ctx, overhead)
    tokens = spec.requests_per_h * spec.horizon_h * spec.output_tokens
    load = rate_s / (instances * capacity_per_instance_per_s)
    mc = None
    if ctx.uncertain is not None:
        case = InferenceCase(rate_s, 1.0, spec.horizon_h, capacity_per_instance_per_s,
                             perf.network_bytes_per_sample, ctx.power.spec(activity(perf), net),
                             busy_per_load=busy / load, output_tokens=spec.output_tokens,
                             instance_hours_factor=1.0 + overhead, latency=latency,
                             decode_band=bands[0] if bands else None,
                             prefill_band=bands[1] if bands else None)
        mc = McConfig("", ctx.uncertain, case, ctx.pue, None)
    row.update({
        "throughput_per_instance_per_s": capacity_per_instance_per_s,
        "load": load,
        "requests": spec.requests_per_h * spec.horizon_h,
        "output_tokens": tokens,
        "output_tokens_per_s_per_instance": rate_s * spec.output_tokens / instances,
        **per_output_token(row, tokens),
        **co2_per_output_token(row, tokens),
    })
    return PlanResult(row, mc)


