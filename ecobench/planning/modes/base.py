"""The mode interface: what the evaluation loop asks a workload mode for one configuration.

A mode is built for one configuration (:class:`ConfigRun`) and answers, in this order:

- ``jobs()``: the jobs the configuration's backend runs (training: one per sequence-length phase);
- ``performances(jobs)``: the performance of each (the backend's, or the mode's own model);
- ``plan(perfs)``: the :class:`PlanResult`: the row's figures and the Monte Carlo's input;
- ``columns(perfs, result)``: the mode's own columns; ``backend_columns(perfs)``: what only some
  backends give (the emulated engines; a measurement);
- ``band_metrics``: the figures the Monte Carlo bands for it (``power/uncertainty.py``).

Adding a mode is one module with a class like those here, and one line in ``modes/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol

from ecobench.errors import BackendError
from ecobench.hardware.backends import Backend, Job, Performance, Utilization
from ecobench.hardware.backends.analytic import activity_of
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.planning.jobs import backend_for
from ecobench.planning.plan import Context, PlanResult
from ecobench.scenario.model import HardwareConfig, Scenario
from ecobench.units import DEFAULT_HOST_CPU_UTILIZATION, DEFAULT_REQUEST_BYTES_PER_TOKEN


def supplied_performance(cfg: HardwareConfig, job: Job) -> Performance:
    """A throughput the scenario gives (e.g. measured elsewhere), at full accelerator load."""
    assert cfg.measured_throughput_per_s is not None
    cpu = cfg.host_cpu_utilization if cfg.host_cpu_utilization is not None \
        else DEFAULT_HOST_CPU_UTILIZATION
    return Performance(cfg.measured_throughput_per_s, Utilization(1.0, cpu, cpu, 0.0), "supplied",
                       "throughput supplied by the scenario (measured_throughput_per_s)",
                       network_bytes_per_sample=job.seq_len * DEFAULT_REQUEST_BYTES_PER_TOKEN)


def with_activity(p: Performance, job: Job, inst: Instance, catalog: Catalog) -> Performance:
    """``p`` with the accelerator activity the draw model needs (``Performance.activity``)."""
    if p.provenance != "measured":
        return replace(p, activity=activity_of(p, job, inst, catalog))
    return p


@dataclass(frozen=True)
class ConfigRun:
    """One configuration as a mode sees it: the scenario, the configuration (``index`` in
    ``configs``), its instance, the plan's context, the backends, and the inference headroom
    (``utilization``: the configuration's, or a sweep group's array; ``sweep_group``: the figures are
    arrays over a sweep group's regions and headrooms)."""

    scenario: Scenario
    config: HardwareConfig
    index: int
    instance: Instance
    catalog: Catalog
    backends: Mapping[str, Backend]
    ctx: Context
    utilization: Any = None
    sweep_group: bool = False

    def performance(self, job: Job) -> Performance:
        """The supplied or the backend's performance of ``job``, with its accelerator activity."""
        cfg = self.config
        if cfg.measured_throughput_per_s is not None:
            return with_activity(supplied_performance(cfg, job), job, self.instance, self.catalog)
        backend = backend_for(cfg, self.backends)
        try:
            p = backend.evaluate(job, self.instance, self.catalog)
        except BackendError as exc:
            raise exc.in_config(by_id=True, detail=True) from None
        return with_activity(p, job, self.instance, self.catalog)


class WorkloadMode(Protocol):
    """One workload mode, built for one configuration (see the module docstring)."""

    band_metrics: ClassVar[tuple[str, ...]]

    def jobs(self) -> list[Job]:
        """The jobs the configuration's backend runs."""
        ...

    def performances(self, jobs: list[Job]) -> list[Performance]:
        """The performance of each job (or of the mode's own model, where it has no jobs)."""
        ...

    def plan(self, perfs: list[Performance]) -> PlanResult:
        """The row's figures and the Monte Carlo's input."""
        ...

    def columns(self, perfs: list[Performance], result: PlanResult) -> dict[str, Any]:
        """The mode's own columns."""
        ...

    def backend_columns(self, perfs: list[Performance]) -> dict[str, Any]:
        """What only some backends give."""
        ...


def engine_columns(perfs: list[Performance]) -> dict[str, Any]:
    """What only some backends give: the emulated NeuronCore's per-kernel timing and engine
    utilisation (a measurement's columns: ``modes/measured.py``)."""
    engine = perfs[0].engine
    if perfs[0].provenance == "emulated" and engine is not None:
        from ecobench.hardware.backends.emulated import aggregate_kernels

        return {"measurement_method": None, "kernels": aggregate_kernels(engine.kernels),
                "engine_utilization": engine.engine_utilization}
    return {"measurement_method": None}


class ModeBase:
    """Defaults: a performance from the backend per job, no columns of its own, the engine columns."""

    def __init__(self, run: ConfigRun) -> None:
        self.run = run

    def performances(self, jobs: list[Job]) -> list[Performance]:
        """The backend's performance of each job, in order."""
        return [self.run.performance(job) for job in jobs]

    def columns(self, perfs: list[Performance], result: PlanResult) -> dict[str, Any]:
        """None of its own."""
        return {}

    def backend_columns(self, perfs: list[Performance]) -> dict[str, Any]:
        """The emulated engines' columns where the backend gives them."""
        return engine_columns(perfs)
