"""Workload modes: one module each (inference at a rate, serving, training; measured wraps the
first and the last), behind the interface of ``modes/base.py``; :func:`mode_for` picks one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

from ecobench.errors import InputError
from ecobench.hardware.backends import Backend
from ecobench.hardware.backends.stacks import stack_refusal
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.planning.jobs import capabilities
from ecobench.planning.measured_serving import measured_bench
from ecobench.planning.modes.base import ConfigRun, WorkloadMode
from ecobench.planning.modes.inference import InferenceMode
from ecobench.planning.modes.measured import MeasuredMode, Replannable
from ecobench.planning.modes.serving import ServingMode, serving_refusal
from ecobench.planning.modes.training import TrainingMode, training_refusal
from ecobench.scenario.model import HardwareConfig, Scenario

# The scenario's workload mode -> the mode that plans it, built for one configuration.
MODES: dict[str, Callable[[ConfigRun], WorkloadMode]] = {
    "inference": InferenceMode,
    "serving": ServingMode,
    "training": TrainingMode,
}


def stack_check(s: Scenario, cfg: HardwareConfig, inst: Instance, catalog: Catalog) -> None:
    """Bad input where the configuration names a stack fitted only on another vendor's chips or for
    another mode (``hardware/backends/stacks.py``): its factors were measured on other hardware or
    work."""
    acc = catalog.accelerator_of(inst)
    if acc is None:
        return
    where = f"{inst.name} ({acc.vendor} {inst.spec.accelerator})"
    if (why := stack_refusal(cfg.stack, acc.vendor, s.workload.mode, where)) is not None:
        raise InputError(why).in_config("stack")


def mode_for(run: ConfigRun) -> WorkloadMode:
    """The configuration's mode: its workload's, wrapped as measured where its backend measures."""
    stack_check(run.scenario, run.config, run.instance, run.catalog)
    mode = MODES[run.scenario.workload.mode](run)
    if capabilities(run.config, run.backends).measures_host:
        return MeasuredMode(cast(Replannable, mode))
    return mode


def refuse(s: Scenario, cfg: HardwareConfig, inst: Instance, catalog: Catalog,
           backends: Mapping[str, Backend]) -> None:
    """Bad input where the configuration's mode cannot plan it at all, found without evaluating it
    (the same checks and messages as the mode's own): its backend, and serving's and training's
    preconditions."""
    capabilities(cfg, backends)  # an unavailable backend
    stack_check(s, cfg, inst, catalog)
    spec = s.workload.serving
    if spec is not None and cfg.measured_serving is not None:
        measured_bench(spec, cfg)
    elif spec is not None:
        serving_refusal(cfg, inst, catalog, backends)
    elif s.workload.training is not None:
        training_refusal(cfg, inst, catalog, backends)


__all__ = ["MODES", "ConfigRun", "MeasuredMode", "WorkloadMode", "mode_for", "refuse", "stack_check"]
