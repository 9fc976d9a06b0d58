"""The backend extension point: (job, hardware configuration) -> Performance."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from ecobench.hardware.catalog import Catalog, Instance
from ecobench.parallel.layout import Layout
from ecobench.parallel.memory import Recipe
from ecobench.parallel.step import Workload
from ecobench.workloads.architecture import Architecture, Task
from ecobench.workloads.transformer import Mode

Provenance = Literal["estimated", "emulated", "measured", "projected", "supplied"]


@dataclass(frozen=True)
class Activity:
    """Shares (summing to 1) of an accelerator's working time in compute-bound kernels, memory-bound
    kernels, stalls (per-kernel overhead, launch gaps, host waits: a service's idle moments) and sync
    (a training step's exposed communication and pipeline bubble: the chip waits on its peers with its
    clocks up). Each state draws its own fitted share of the idle-to-maximum range (power/fit.py)."""

    compute: float
    memory: float
    stall: float
    source: str = ""
    sync: float = 0.0
    active: float = 1.0  # share of the accelerators that work; the rest (idle ranks) draw idle power

    def scaled(self, achieved: Any) -> Any:
        """Shares (compute, memory, stall, sync) when ``achieved`` times the modelled throughput is
        reached. The kernels take the time the model gives them and the waits fill the rest: below 1
        the sync keeps its own time and all the extra time is a stall; above 1 the waits shrink first,
        stall and sync in proportion, and only when none is left do the kernels themselves run faster
        (their split kept). docs/power.md."""
        r = np.asarray(achieved, dtype=float)
        kernels = self.compute + self.memory
        busy = np.minimum(1.0, kernels * r)  # kernel time over the run's time, capped at all of it
        k = kernels if kernels > 0 else 1.0
        waits = 1.0 - busy
        wait_model = self.stall + self.sync
        sync = np.minimum(self.sync * r, waits * self.sync / wait_model) if wait_model > 0 else 0.0 * waits
        return self.compute / k * busy, self.memory / k * busy, waits - sync, sync

    def share(self, d_compute: Any, d_memory: Any, d_stall: Any, d_sync: Any, achieved: Any = 1.0) -> Any:
        """Time-weighted dynamic share (0-1) of the idle-to-maximum range."""
        c, m, s, y = self.scaled(achieved)
        return self.active * np.clip(c * d_compute + m * d_memory + s * d_stall + y * d_sync, 0.0, 1.0)


COMPUTE_ONLY = Activity(1.0, 0.0, 0.0, "no kernel model for this job: taken as compute-bound")


@dataclass(frozen=True, kw_only=True)
class Job:
    """What one configuration must run: the model, the phase's shape, and the cluster. Keyword-only;
    planning builds a configuration's jobs with one factory (``ecobench.planning.jobs.make_job``)."""

    arch: Architecture
    mode: Mode
    seq_len: int
    batch_size: int
    dtype: str
    instances: int = 1
    global_batch_size: int | None = None
    host_cpu_utilization: float | None = None
    device: str = "auto"
    layers: int | None = None
    measurement: Any = None  # scenario.MeasurementSpec, for measuring backends
    layout: Layout | None = None  # training: how the job is split over the cluster's ranks
    task: Task = "pretrain"
    num_labels: int = 2
    stack: str | None = None  # analytic: the software stack whose fitted efficiency applies
    config_id: str | None = None  # the configuration the job is for (a replayed measurement's key)
    recipe: Recipe | None = None  # training: optimizer, master weights, attention kernel (None: defaults)

    def training_workload(self, global_batch: int | None = None) -> Workload:
        """The step model's workload of a training job (``global_batch`` where the job has none)."""
        r = self.recipe or Recipe()
        gb = self.global_batch_size if self.global_batch_size is not None else global_batch
        assert gb is not None
        return Workload(self.arch, self.seq_len, gb, self.dtype, self.task, self.num_labels,
                        r.fused_attention, r.optimizer, r.master_weights)


@dataclass(frozen=True)
class Utilization:
    """Busy fraction of each component (0-1) when the instance runs at full throughput."""

    accelerator: float
    cpu: float
    memory: float
    network: float

    def __post_init__(self) -> None:
        for name in ("accelerator", "cpu", "memory", "network"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} utilisation {v} is outside 0..1")


@dataclass(frozen=True)
class Measurement:
    """What a measuring backend observed: per-repetition throughput and energy, and how."""

    throughput_samples_per_s: tuple[float, ...]
    energy_kwh_per_sample: tuple[float, ...] | None
    power_w: dict[str, float] | None  # accelerator, cpu, memory: mean draw over the windows
    method: str
    window_start_utc: str
    window_end_utc: str
    ci95_low: float
    ci95_high: float
    host_gemm_tflops: float | None = None
    mfu: float | None = None
    power_w_samples: tuple[dict[str, float], ...] | None = None  # per window, like power_w
    power_method: str | None = None  # each component's method in words (power/measure.py)
    energy_provenance: str | None = None  # measured | partly measured | modelled
    other_cpu_pct_before: float | None = None  # host CPU share of other processes (power/hostload.py)
    other_cpu_pct_during: float | None = None
    throughput_cv_pct: float | None = None
    warnings: tuple[str, ...] = ()  # why the measurement is not reproducible; empty when it is
    cpu_power_fallback: bool | None = None  # codecarbon modelled the CPU's power (no RAPL counter)
    window_s: tuple[float, ...] | None = None  # each energy window's length, like power_w_samples


@dataclass(frozen=True)
class EngineBreakdown:
    """What the emulated NeuronCore engine model saw: the number format, each engine's busy share and
    the per-kernel timing (``KernelTiming.as_dict`` rows)."""

    numeric_format: str
    engine_utilization: dict[str, float]
    kernels: list[dict[str, Any]]


@dataclass(frozen=True)
class Performance:
    """What a backend reports for one configuration, with the figures planning reads typed:
    ``activity`` (the draw model's input; None: planning derives it, ``with_activity``),
    inference's ``batch_s`` (seconds per batch on one of the instance's ``servers`` model copies;
    None: batch x servers / throughput) and training's ``step`` (the step model's row, seconds)."""

    throughput_per_instance_per_s: float
    utilization: Utilization
    provenance: Provenance
    method: str
    network_bytes_per_sample: float = 0.0
    numeric_error: float | None = None
    measured: Measurement | None = None
    activity: Activity | None = None
    batch_s: float | None = None
    servers: int = 1
    step: Mapping[str, float] | None = None
    engine: EngineBreakdown | None = None  # emulated: per-engine and per-kernel timing


WORKLOAD_ERRORS = "workload"  # Capabilities.error_model: the held-out errors of the workload's mode


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do. Call sites ask these, never the backend's name.

    ``modes``: the workload modes it gives a performance for; ``sweepable``: evaluated without
    running anything, so a sweep may list it; ``error_model``: the held-out error pool that bands
    its throughput (``WORKLOAD_ERRORS``: the workload mode's, ``residuals.py``; None: measured, no
    model error); ``measures_host``: measures this host (``instance_type: local``);
    ``sizes_clusters``: finds the fewest instances for a training deadline; ``cheap``: cheap to ask
    again (a load profile tries other batch sizes); ``own_step_model``: times training layouts with
    its own step model (``step_evaluator(instance, catalog)``), which ``parallelism: auto`` searches
    with; ``own_serving_model``: times serving's decode steps and prefills itself
    (``serving_timer(instance, catalog, stack)``, a ``planning.serving.ServeTimer``; ``catalog``: the
    configuration's, with its chip at the logical NeuronCore setting it plans, ``hardware/lnc.py``;
    ``stack``: the configuration's serving stack, None when it names none);
    ``experts``: models mixture-of-experts layers and latent attention (``workloads/moe.py``)."""

    modes: frozenset[str] = frozenset({"inference", "training"})
    sweepable: bool = True
    error_model: str | None = WORKLOAD_ERRORS
    measures_host: bool = False
    sizes_clusters: bool = False
    cheap: bool = False
    own_step_model: bool = False
    own_serving_model: bool = False
    experts: bool = True

    def throughput_errors(self, mode: str) -> str | None:
        """The error pool of this backend's throughput in a workload ``mode`` (None: measured)."""
        return mode if self.error_model == WORKLOAD_ERRORS else self.error_model


# A throughput the scenario supplies (measured_throughput_per_s): no backend, no model error.
SUPPLIED = Capabilities(error_model=None)


class Backend(Protocol):
    """Gives throughput and utilisation for a job on an instance, and says what it can do."""

    name: str
    capabilities: Capabilities

    def evaluate(self, job: Job, instance: Instance, catalog: Catalog) -> Performance:
        """Performance of ``job`` on one ``instance`` of a cluster of ``job.instances``."""
        ...


BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    """Add a backend to the registry under its name."""
    BACKENDS[backend.name] = backend
    return backend


@dataclass
class LazyBackend:
    """A registry entry whose module is imported on first use; the module registers the real
    backend in its place. The emulated and PyTorch backends import 30 ms of modules that a run on
    the analytic backend never calls."""

    name: str
    module: str
    capabilities: Capabilities  # the real backend's, known without importing it (checked on load)

    def load(self) -> Backend:
        """The registered backend, importing its module."""
        importlib.import_module(self.module)
        real = BACKENDS[self.name]
        if real is self:
            raise ImportError(f"{self.module} did not register the backend {self.name!r}")
        if real.capabilities != self.capabilities:
            raise ImportError(f"{self.module}: the backend {self.name!r} declares other capabilities than "
                              "its registry entry")
        return real

    def evaluate(self, job: Job, instance: Instance, catalog: Catalog) -> Performance:
        """The real backend's :meth:`Backend.evaluate`."""
        return self.load().evaluate(job, instance, catalog)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # copy and pickle probe dunders before the fields exist
            raise AttributeError(attr)
        return getattr(self.load(), attr)
