"""Measured: a configuration measured on this host (or projected from it) by a backend that
``measures_host``. It plans as its workload mode (inference or training) and adds what the
measurement says: method, window, confidence interval, MFU, the host's load and the quality
warnings, and the per-repetition samples computed through the planner
(``ecobench.planning.samples``) that the regression gate tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from ecobench.hardware.backends import Job, Performance
from ecobench.planning.modes.base import WorkloadMode
from ecobench.planning.plan import PlanResult
from ecobench.planning.samples import repetition_samples


class Replannable(WorkloadMode, Protocol):
    """A workload mode that plans a measurement's repetitions one by one."""

    samples_basis: str

    def replan(self, perfs: list[Performance], i: int) -> dict[str, Any]:
        """The plan's figures as repetition ``i`` saw them."""
        ...


def measurement_columns(perfs: list[Performance], mode: Replannable) -> dict[str, Any]:
    """The measurement's columns and per-repetition samples (none: ``measurement_method`` None)."""
    m = perfs[0].measured
    if m is None:
        return {"measurement_method": None}
    measured = [p.measured for p in perfs if p.measured is not None]
    warnings = list(dict.fromkeys(w for x in measured for w in x.warnings))
    return {
        "measurement_method": m.method,
        "power_method": m.power_method,
        "energy_provenance": m.energy_provenance,
        "cpu_power_fallback": m.cpu_power_fallback,
        "throughput_ci95_low": m.ci95_low,
        "throughput_ci95_high": m.ci95_high,
        "throughput_cv_pct": max((x.throughput_cv_pct or 0.0) for x in measured),
        "host_other_cpu_pct_before": max((x.other_cpu_pct_before or 0.0) for x in measured),
        "host_other_cpu_pct_during": max((x.other_cpu_pct_during or 0.0) for x in measured),
        "measurement_warnings": "; ".join(warnings) if warnings else None,
        "repetitions": len(m.throughput_samples_per_s),
        "window_start_utc": m.window_start_utc,
        "window_end_utc": m.window_end_utc,
        "host_gemm_tflops": m.host_gemm_tflops,
        "mfu": m.mfu,
        "samples_basis": mode.samples_basis,
        "samples": repetition_samples(perfs, lambda i: mode.replan(perfs, i)),
        "energy_windows": _energy_windows(m),
    }


def _energy_windows(m: Any) -> list[dict[str, float]] | None:
    """Each measured window's length and mean draw per component (emissions.csv's rows); None
    where energy was not measured (not tracked, or a projection)."""
    if not m.window_s or not m.power_w_samples:
        return None
    return [{"duration_s": d, "accelerator_w": p["accelerator"], "cpu_w": p["cpu"], "memory_w": p["memory"]}
            for d, p in zip(m.window_s, m.power_w_samples, strict=True)]


class MeasuredMode:
    """``inner``'s plan of a measured configuration, with the measurement's columns."""

    def __init__(self, inner: Replannable) -> None:
        self.inner = inner
        self.band_metrics = inner.band_metrics

    def jobs(self) -> list[Job]:
        """The workload mode's jobs."""
        return self.inner.jobs()

    def performances(self, jobs: list[Job]) -> list[Performance]:
        """The measurements."""
        return self.inner.performances(jobs)

    def plan(self, perfs: list[Performance]) -> PlanResult:
        """The workload mode's plan at the measured throughput (and draw)."""
        return self.inner.plan(perfs)

    def columns(self, perfs: list[Performance], result: PlanResult) -> dict[str, Any]:
        """The workload mode's columns (MFU comes from the measurement: the Monte Carlo does not band
        the model's)."""
        out = self.inner.columns(perfs, result)
        if result.mc is not None and getattr(result.mc.case, "mfu", None) is not None:
            result.mc = replace(result.mc, case=replace(result.mc.case, mfu=None))
        return out

    def backend_columns(self, perfs: list[Performance]) -> dict[str, Any]:
        """The measurement's columns and samples."""
        return measurement_columns(perfs, self.inner)
