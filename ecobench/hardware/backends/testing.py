"""Test doubles: backends that run nothing, so tests of planning, power and reports need no hardware,
no model and no fit. Pass them in (``evaluate(s, backends=...)``); they are not registered.

- :class:`FakeBackend` gives one fixed :class:`Performance` for every job and records the jobs.
- :class:`ReplayBackend` gives the :class:`Performance` recorded for each configuration id
  (``Job.config_id``), e.g. a measurement taken earlier; a configuration it has no record of is a
  ``BackendError`` naming the ones it has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ecobench.errors import BackendError
from ecobench.hardware.backends.base import Capabilities, Job, Performance, Utilization
from ecobench.hardware.catalog import Catalog, Instance

__all__ = ["FakeBackend", "ReplayBackend", "fixed_performance"]


def fixed_performance(throughput_per_instance_per_s: float = 100.0, *, accelerator: float = 1.0,
                      cpu: float = 0.5, network_bytes_per_sample: float = 0.0) -> Performance:
    """A performance as a backend would report it, with the given throughput and utilisation."""
    return Performance(throughput_per_instance_per_s, Utilization(accelerator, cpu, cpu, 0.0), "estimated",
                       "fixed by a test double", network_bytes_per_sample=network_bytes_per_sample)


@dataclass
class FakeBackend:
    """Gives ``performance`` for every job; ``jobs`` holds what it was asked, in order."""

    performance: Performance = field(default_factory=fixed_performance)
    name: str = "fake"
    capabilities: Capabilities = Capabilities(modes=frozenset({"inference", "training", "serving"}))
    jobs: list[Job] = field(default_factory=list)

    def evaluate(self, job: Job, instance: Instance, catalog: Catalog) -> Performance:
        """The fixed performance, whatever the job and instance."""
        self.jobs.append(job)
        return self.performance


@dataclass
class ReplayBackend:
    """Gives the performance ``recorded`` for the job's configuration id. Its capabilities default to a
    measuring backend's (no model error; not swept); give the capabilities of the backend it stands in for."""

    recorded: Mapping[str, Performance]
    name: str = "replay"
    capabilities: Capabilities = Capabilities(sweepable=False, error_model=None, measures_host=True)

    def evaluate(self, job: Job, instance: Instance, catalog: Catalog) -> Performance:
        """The recorded performance of ``job.config_id``."""
        found = self.recorded.get(job.config_id or "")
        if found is None:
            raise BackendError(f"no recorded performance for configuration {job.config_id!r} (recorded: "
                               f"{', '.join(sorted(self.recorded)) or 'none'})")
        return found
