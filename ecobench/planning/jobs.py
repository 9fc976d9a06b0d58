"""What a configuration asks its backend: its jobs (one keyword-only factory) and the backend's
capabilities (never its name)."""

from __future__ import annotations

from collections.abc import Mapping

from ecobench.errors import BackendError
from ecobench.hardware.backends.base import SUPPLIED, Backend, Capabilities, Job
from ecobench.parallel.layout import Layout
from ecobench.planning.training import recipe_of
from ecobench.scenario.model import HardwareConfig, Scenario
from ecobench.workloads.transformer import Mode


def make_job(*, scenario: Scenario, config: HardwareConfig, mode: Mode, seq_len: int, batch_size: int,
             instances: int = 1, global_batch_size: int | None = None, layout: Layout | None = None) -> Job:
    """The job ``config`` runs for the scenario's workload: the model, the configuration's data type,
    host load, device, depth, software stack and measurement settings, the training task; the phase's
    shape and the cluster as given."""
    tr = scenario.workload.training if mode == "training" else None
    task, num_labels = scenario.workload.head() if tr else ("pretrain", 2)
    return Job(arch=scenario.workload.arch(), mode=mode, seq_len=seq_len, batch_size=batch_size,
               dtype=config.precision, instances=instances, global_batch_size=global_batch_size,
               host_cpu_utilization=config.host_cpu_utilization, device=config.device, layers=config.layers,
               measurement=scenario.measurement, layout=layout,
               task=task, num_labels=num_labels,
               stack=config.stack, config_id=config.id,
               recipe=recipe_of(config) if tr else None)


def backend_for(config: HardwareConfig, backends: Mapping[str, Backend]) -> Backend:
    """The configuration's backend, or a BackendError naming the available ones."""
    if config.backend not in backends:
        raise BackendError(f"backend {config.backend!r} is not available "
                           f"(available: {', '.join(sorted(backends))})").in_config(by_id=True)
    return backends[config.backend]


def capabilities(config: HardwareConfig, backends: Mapping[str, Backend]) -> Capabilities:
    """What gives the configuration's performance can do: a supplied throughput, else its backend."""
    if config.measured_throughput_per_s is not None or config.measured_serving is not None:
        return SUPPLIED
    return backend_for(config, backends).capabilities
