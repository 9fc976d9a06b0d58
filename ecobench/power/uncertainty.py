"""A 90% band on every figure: a seeded, vectorised Monte Carlo over the uncertain inputs.

Ranged inputs: the throughput (the efficiency model's out-of-sample errors,
``hardware/backends/residuals.py``), a Neuron chip's maximum draw (the catalog's evidence range), the
draw model's shares, host CPU load and memory power (``data/power_model.yaml``), the PUE (when the
scenario keeps the default) and the grid intensity (``data/grid_intensity.csv``). Each draw reruns the
arithmetic of the plan (instances for the rate or time to train, draw per instance, energy by scope,
cost, CO2) on arrays, with the same draw function as the central case (``draw.py``).

Draws are shared where the uncertainty is: configurations on the same accelerator, mode and data type
share a throughput draw, on the same chip a chip-power draw, in the same region a grid draw, and all
share the draw model's, host's, memory's and PUE's. Each input has its own random stream, seeded from
the scenario's seed and the input's name, so adding a configuration leaves the others' draws alone.
Bands are the 5th and 95th percentiles; changes against the baseline are taken draw by draw.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecobench.power.draw import DrawParams, DrawSpec, draw_w
from ecobench.power.params import power_model, split_lognormal
from ecobench.power.scopes import co2_per_output_token, fleet_figures
from ecobench.table import CHANGE_METRICS, change_pct
from ecobench.units import MILLION, SECONDS_PER_HOUR, per_output_token, whole

PERCENTILES = (5.0, 95.0)
# Whole counts in every draw: a percentile between two draws is widened to them (the low edge rounded
# down, the high one up), so a band never names a fraction of an instance.
COUNT_METRICS = ("instances",)
# The changes against the baseline the Monte Carlo bands (of the one change map, ecobench.table)
BANDED_CHANGES = ("energy_kwh", "energy_it_kwh", "energy_accelerator_kwh", "cost_usd", "co2_kg", "co2_it_kg",
                  "co2_accelerator_kg")
BAND_METRICS_INFERENCE = ("throughput_per_instance_per_s", "instances", "power_w", "energy_kwh",
                          "energy_it_kwh",
                          "energy_accelerator_kwh", "cost_usd", "co2_kg", "co2_it_kg", "co2_accelerator_kg",
                          "energy_kwh_per_million", "cost_usd_per_million", "co2_kg_per_million")
BAND_METRICS_SERVING = ("throughput_per_instance_per_s", "instances", "power_w", "energy_kwh",
                        "energy_it_kwh",
                        "energy_accelerator_kwh", "cost_usd", "co2_kg", "co2_it_kg", "co2_accelerator_kg",
                        "energy_j_per_output_token", "energy_it_j_per_output_token",
                        "energy_accelerator_j_per_output_token", "cost_usd_per_million_output_tokens",
                        "co2_g_per_million_output_tokens", "co2_it_g_per_million_output_tokens",
                        "co2_accelerator_g_per_million_output_tokens", "ttft_ms_p50", "tpot_ms_p50")
BAND_METRICS_TRAINING = ("throughput_per_instance_per_s", "duration_h", "power_w", "mfu", "energy_kwh",
                         "energy_it_kwh",
                         "energy_accelerator_kwh", "cost_usd", "co2_kg", "co2_it_kg", "co2_accelerator_kg")


@dataclass(frozen=True)
class UncertainSetup:
    """What varies for one configuration besides the shared inputs."""

    throughput_mode: str | None  # residual pool (training or inference); None: supplied or measured
    throughput_key: str  # configurations with the same key share the throughput draw
    chip: str | None  # accelerator whose maximum is an evidence range; None: a fixed figure
    chip_low_w: float
    chip_central_w: float
    chip_high_w: float
    pue_uncertain: bool
    grid_key: str | None  # region with a ranged intensity; None: fixed (a scenario override)
    grid_g_per_kwh: float
    grid_low: float
    grid_high: float
    price_usd_per_h: float
    embodied_kg_per_instance_h: float


@dataclass(frozen=True)
class InferenceCase:
    rate_per_s: float
    max_utilization: float
    horizon_h: float
    throughput_per_s: float
    network_bytes_per_sample: float
    spec: DrawSpec
    busy_per_load: float = 1.0  # serving: the accelerators' busy share over the load (idle slots differ)
    output_tokens: float | None = None  # serving: output tokens per request (figures per output token)
    instance_hours_factor: float = 1.0  # a spot fleet's headroom (planning/interruption.py)
    # serving: TTFT and TPOT at a throughput multiplier (the plan's planning/serving.latency_at)
    latency: Callable[[Any], dict[str, Any]] | None = None
    # a p99 latency target: instances it needs at a throughput multiplier (planning/plan.latency_sizing)
    sizing: Callable[[Any], Any] | None = None
    # serving: the regime's conditional bands of the decode speed and of the prefill (serve_bands.Band:
    # the ones serve-point and validate give); None: the workload mode's Student-t pool
    decode_band: Any = None
    prefill_band: Any = None


@dataclass(frozen=True)
class TrainingPhase:
    seconds: float
    spec: DrawSpec


@dataclass(frozen=True)
class TrainingCase:
    instances: int
    sequences: float
    phases: tuple[TrainingPhase, ...]
    time_factor: float = 1.0  # spot: run time lost to interruptions (planning/interruption.py)
    mfu: Callable[[Any], Any] | None = None  # MFU of a wall time in seconds (the plan's own function)


@dataclass(frozen=True)
class McConfig:
    """One configuration as the Monte Carlo needs it (attached to its row by the planner)."""

    config_id: str
    setup: UncertainSetup
    case: InferenceCase | TrainingCase
    pue: float
    measured_w: dict[str, float] | None = None  # a measured host: accelerator, cpu, memory (fixed)


class Draws:
    """Independent, reproducible random streams, one per named input."""

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        self.seed = seed
        self._cache: dict[str, np.ndarray] = {}

    def _rng(self, key: str) -> np.random.Generator:
        return np.random.default_rng([self.seed, zlib.crc32(key.encode())])

    def normal(self, key: str) -> np.ndarray:
        k = "n:" + key
        if k not in self._cache:
            self._cache[k] = self._rng(k).standard_normal(self.n)
        return self._cache[k]

    def t(self, key: str, df: float) -> np.ndarray:
        k = f"t:{key}:{df:.6g}"
        if k not in self._cache:
            self._cache[k] = self._rng(k).standard_t(df, self.n)
        return self._cache[k]


class ZeroDraws(Draws):
    """Every input at its central value (tests: the Monte Carlo's arithmetic equals the plan's)."""

    def normal(self, key: str) -> np.ndarray:
        return np.zeros(self.n)

    def t(self, key: str, df: float) -> np.ndarray:
        return np.zeros(self.n)


def _params(c: McConfig, d: Draws) -> DrawParams:
    pm = power_model()
    s = c.setup
    chip = split_lognormal(s.chip_central_w, s.chip_low_w, s.chip_high_w, d.normal(f"chip:{s.chip}")) \
        if s.chip else None
    return DrawParams(
        d_compute=np.minimum(1.0, pm.draw.compute_bound.draw(d.normal("draw:compute_bound"))),
        d_memory=np.minimum(1.0, pm.draw.memory_bound.draw(d.normal("draw:memory_bound"))),
        d_stall=np.minimum(1.0, pm.draw.stall.draw(d.normal("draw:stall"))),
        d_sync=np.minimum(1.0, pm.draw.sync.draw(d.normal("draw:sync"))),
        vcpus_per_rank=pm.host_cpu.vcpus_per_rank.draw(d.normal("host:vcpus_per_rank")),
        memory_w_per_gb=pm.memory_w_per_gb.draw(d.normal("memory_w_per_gb")),
        pue=pm.pue.draw(d.normal("pue")) if s.pue_uncertain else np.full(d.n, c.pue),
        chip_max_w=chip, host_scale=pm.host_scale.draw(d.normal("host_scale")))


def _throughput_multiplier(s: UncertainSetup, d: Draws, band: Any = None) -> np.ndarray:
    if s.throughput_mode is None:
        return np.ones(d.n)
    if band is not None:  # a serving regime's band: log-normal draws with its edges at 5% and 95%
        return np.asarray(band.multipliers(d.normal(f"throughput:{s.throughput_key}")))
    from ecobench.hardware.backends.residuals import error_fit

    fit = error_fit(s.throughput_mode)
    return fit.multipliers(d.t(f"throughput:{s.throughput_key}", fit.df))


def _measured_w(c: McConfig, n: int) -> dict[str, np.ndarray]:
    m = c.measured_w or {}
    it = np.full(n, m.get("accelerator", 0.0) + m.get("cpu", 0.0) + m.get("memory", 0.0))
    return {"accelerator": np.full(n, m.get("accelerator", 0.0)), "it": it, "total": it * c.pue}


def simulate(c: McConfig, d: Draws) -> dict[str, np.ndarray]:
    """Every banded figure of one configuration, one value per draw."""
    s = c.setup
    p = _params(c, d)
    m = _throughput_multiplier(s, d, getattr(c.case, "decode_band", None))
    grid = split_lognormal(s.grid_g_per_kwh, s.grid_low, s.grid_high, d.normal(f"grid:{s.grid_key}")) \
        if s.grid_key else np.full(d.n, s.grid_g_per_kwh)
    case = c.case
    out: dict[str, np.ndarray] = {}
    if isinstance(case, InferenceCase):
        t = case.throughput_per_s * m
        need = case.rate_per_s / (t * case.max_utilization)
        if case.sizing is not None:  # the plan sizes for its latency target too: so does each draw
            need = np.maximum(need, case.sizing(m))
        n = whole(need)
        load = case.rate_per_s / (n * t)
        w = _measured_w(c, d.n) if c.measured_w else draw_w(
            case.spec, p, busy=np.minimum(1.0, load * case.busy_per_load), achieved=m,
            network_bytes_per_s=case.rate_per_s / n * case.network_bytes_per_sample)
        inst_h = n * case.horizon_h * case.instance_hours_factor
        out |= {"throughput_per_instance_per_s": t, "instances": n}
        if case.latency is not None:
            out |= case.latency(m)
            if case.prefill_band is not None and s.throughput_mode is not None:  # TTFT: the prefill's own
                speed_p = case.prefill_band.multipliers(d.normal(f"prefill:{s.throughput_key}"))
                out["ttft_ms_p50"] = out["ttft_ms_p50"] * m / speed_p
    else:
        n = np.full(d.n, float(case.instances))
        if case.mfu is not None:  # no draw runs faster than the chips' peak: MFU at most 1
            central_s = sum(ph.seconds for ph in case.phases) * case.time_factor
            m = np.minimum(m, 1.0 / max(float(case.mfu(central_s)), 1e-12))
        seconds = np.zeros(d.n)
        acc_ws, it_ws, total_ws = np.zeros(d.n), np.zeros(d.n), np.zeros(d.n)
        for ph in case.phases:
            sec = ph.seconds / m
            wp = _measured_w(c, d.n) if c.measured_w else draw_w(ph.spec, p, busy=1.0, achieved=m)
            seconds += sec
            acc_ws, it_ws, total_ws = acc_ws + wp["accelerator"] * sec, it_ws + wp["it"] * sec, \
                total_ws + wp["total"] * sec
        w = {"accelerator": acc_ws / seconds, "it": it_ws / seconds, "total": total_ws / seconds}
        inst_h = n * seconds * case.time_factor / SECONDS_PER_HOUR
        out |= {"throughput_per_instance_per_s": case.sequences / (seconds * n),
                "duration_h": seconds * case.time_factor / SECONDS_PER_HOUR}
        if case.mfu is not None:  # at most 1 (the speed cap above), not 1 + a rounding error
            out["mfu"] = np.minimum(case.mfu(out["duration_h"] * SECONDS_PER_HOUR), 1.0)
    figures = fleet_figures(inst_h, w["accelerator"], w["it"], w["total"], s.price_usd_per_h, grid,
                            s.embodied_kg_per_instance_h * inst_h)
    out |= {k: figures[k] for k in ("energy_accelerator_kwh", "energy_it_kwh", "energy_kwh", "cost_usd",
                                    "co2_kg", "co2_it_kg", "co2_accelerator_kg")}
    out["power_w"] = w["total"] + 0.0 * inst_h  # per instance, facility (the plan's power_w)
    if isinstance(case, InferenceCase) and case.output_tokens is not None:
        tokens = case.rate_per_s * SECONDS_PER_HOUR * case.horizon_h * case.output_tokens
        out |= per_output_token(out, tokens) | co2_per_output_token(out, tokens)
    elif isinstance(case, InferenceCase):
        millions = case.rate_per_s * SECONDS_PER_HOUR * case.horizon_h / MILLION
        out |= {"energy_kwh_per_million": out["energy_kwh"] / millions,
                "cost_usd_per_million": out["cost_usd"] / millions,
                "co2_kg_per_million": out["co2_kg"] / millions}
    return out


def percentiles(a: np.ndarray, pct: tuple[float, ...]) -> np.ndarray:
    """Percentiles of each row of ``a`` (shape rows x len(pct)), numpy's default ("linear") method;
    a row holding NaN gives NaN. ``np.percentile`` gives the same figures but imports ``numpy.ma``
    on its first call (through ``np.unique``), 20 ms of a seed run's start-up."""
    s = np.sort(a, axis=1)
    pos = np.asarray(pct, dtype=float) / 100.0 * (a.shape[1] - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, a.shape[1] - 1)
    frac = pos - lo
    out: np.ndarray = s[:, lo] + (s[:, hi] - s[:, lo]) * frac
    out[np.isnan(a).any(axis=1)] = np.nan
    return out


def bands(configs: list[McConfig], baseline_id: str, draws: int, seed: int) -> dict[str, dict[str, float]]:
    """``<metric>_low`` / ``<metric>_high`` (5th and 95th percentiles) of every banded figure and of
    the changes against the baseline, per configuration id."""
    d = Draws(draws, seed)
    sims = {c.config_id: simulate(c, d) for c in configs}
    base = sims.get(baseline_id)
    out: dict[str, dict[str, float]] = {}
    for c in configs:
        sim = sims[c.config_id]
        metrics = dict(sim)
        if base is not None:
            thr = "throughput_per_instance_per_s"
            metrics["throughput_ratio"] = sim[thr] / base[thr]
            for col, short in CHANGE_METRICS.items():
                if col in BANDED_CHANGES:
                    metrics[f"{short}_change_pct"] = change_pct(sim[col], base[col])
        names = list(metrics)
        with np.errstate(all="ignore"):  # a change against a zero baseline is undefined: NaN
            q = percentiles(np.vstack([metrics[k] for k in names]), PERCENTILES)
        row: dict[str, float] = {}
        for i, k in enumerate(names):
            lo, hi = float(q[i, 0]), float(q[i, 1])
            if k in COUNT_METRICS and math.isfinite(lo) and math.isfinite(hi):
                lo, hi = float(math.floor(lo)), float(math.ceil(hi))
            row[f"{k}_low"] = lo if math.isfinite(lo) else math.nan
            row[f"{k}_high"] = hi if math.isfinite(hi) else math.nan
        out[c.config_id] = row
    return out


def describe_inputs() -> list[dict[str, Any]]:
    """The shared ranged inputs, for results.json and the report."""
    pm = power_model()
    items = [("accelerator draw share, compute-bound work", pm.draw.compute_bound),
             ("accelerator draw share, memory-bound work", pm.draw.memory_bound),
             ("accelerator draw share, sync (training communication and bubbles)", pm.draw.sync),
             ("accelerator draw share, stalls", pm.draw.stall),
             ("host vCPUs busy per accelerator rank", pm.host_cpu.vcpus_per_rank),
             ("memory power (W per GB)", pm.memory_w_per_gb),
             ("host draw scale (node meters over the CPU and memory model)", pm.host_scale),
             ("PUE (when not set by the scenario)", pm.pue)]
    return [{"input": name, "central": r.central, "low": r.low, "high": r.high, "source": r.source,
             "as_of": r.as_of, "inferred_from": r.inferred_from} for name, r in items]
