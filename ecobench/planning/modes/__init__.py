"""Workload modes: one module each (inference at a rate, serving, training; measured wraps the
first and the last), behind the interface of ``modes/base.py``; :func:`mode_for` picks one."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from ecobench.planning.jobs import capabilities
from ecobench.planning.modes.base import ConfigRun, WorkloadMode
from ecobench.planning.modes.inference import InferenceMode
from ecobench.planning.modes.measured import MeasuredMode, Replannable
from ecobench.planning.modes.serving import ServingMode
from ecobench.planning.modes.training import TrainingMode

# The scenario's workload mode -> the mode that plans it, built for one configuration.
MODES: dict[str, Callable[[ConfigRun], WorkloadMode]] = {
    "inference": InferenceMode,
    "serving": ServingMode,
    "training": TrainingMode,
}


def mode_for(run: ConfigRun) -> WorkloadMode:
    """The configuration's mode: its workload's, wrapped as measured where its backend measures."""
    mode = MODES[run.scenario.workload.mode](run)
    if capabilities(run.config, run.backends).measures_host:
        return MeasuredMode(cast(Replannable, mode))
    return mode


__all__ = ["MODES", "ConfigRun", "MeasuredMode", "WorkloadMode", "mode_for"]
