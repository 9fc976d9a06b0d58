"""The power model's ranged inputs (``power/data/power_model.yaml``), each a central value with a 90%
range, its source and what it is inferred from; and the one distribution the Monte Carlo draws them
from."""


import contextvars
import functools
import math
from importlib import resources
from typing import Any, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ecobench.io.yamlio import load_packaged

Z90 = 1.6448536269514722  # standard normal quantile of 0.95: low/high are the 5th/95th percentiles


class Ranged(BaseModel):
    """A central value and its 90% range (5th and 95th percentiles)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    central: float = Field(gt=0)
    low: float = Field(gt=0)
    high: float = Field(gt=0)
    source: str = Field(min_length=5)
    as_of: str = Field(min_length=4)
    inferred_from: str

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.low <= self.central <= self.high:
            raise ValueError(f"need low <= central <= high, got {self.low}, {self.central}, {self.high}")
        return self

    def draw(self, z: Any) -> Any:
        """Values at standard-normal draws ``z``: see :func:`split_lognormal`."""
        return split_lognormal(self.central, self.low, self.high, z)


def split_lognormal(central: float, low: float, high: float, z: Any) -> Any:
    """A two-piece lognormal with median ``central`` whose 5th and 95th percentiles are ``low`` and
    ``high`` (asymmetric ranges keep their shape), evaluated at standard-normal draws ``z``."""
    z = np.asarray(z, dtype=float)
    s_lo = math.log(central / low) / Z90
    s_hi = math.log(high / central) / Z90
    return central * np.exp(np.where(z < 0, s_lo, s_hi) * z)


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DrawShares(_Block):
    compute_bound: Ranged
    memory_bound: Ranged
    sync: Ranged
    stall: Ranged


class HostCpu(_Block):
    vcpus_per_rank: Ranged


class PowerModel(_Block):
    version: str
    draw: DrawShares
    host_cpu: HostCpu
    memory_w_per_gb: Ranged
    host_scale: Ranged
    pue: Ranged


# a run's own power model (a scenario's power_points: ecobench.power.calibrate.calibrated_model), set
# for the time of its evaluation; None: the packaged one
RUN_MODEL: contextvars.ContextVar[PowerModel | None] = contextvars.ContextVar("power_model", default=None)


@functools.cache
def packaged_power_model() -> PowerModel:
    """The packaged power model (cached)."""
    text = resources.files("ecobench.power").joinpath("data/power_model.yaml").read_text(encoding="utf-8")
    return PowerModel.model_validate(load_packaged(text))


def power_model() -> PowerModel:
    """The power model in use: the run's own (``RUN_MODEL``), else the packaged one."""
    return RUN_MODEL.get() or packaged_power_model()
