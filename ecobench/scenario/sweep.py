"""A scenario's ``sweep:`` block: configuration fields with lists of values, expanded into every
combination. Each combination takes the baseline configuration's fields and overrides the swept ones.

Combinations are grouped so one evaluation covers many: a group holds every region and headroom
(``max_utilization``) of one choice of the other fields, since those two change only the price, the
grid intensity and the instance count, which the planner computes with numpy over arrays
(``ecobench.planning.sweep``). The backend runs once per group.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ecobench.scenario.model import HardwareConfig, Scenario

GRID_AXES = ("region", "max_utilization")  # evaluated together, as numpy arrays, in one group
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def combinations(s: Scenario) -> int:
    """How many configurations the sweep expands to (0 without a sweep)."""
    return math.prod(len(v) for v in s.sweep.values()) if s.sweep else 0


def label(value: Any) -> str:
    """A short, id-safe text for a sweep value (``{tensor: 8, zero: 1}`` -> ``tensor8-zero1``)."""
    if isinstance(value, dict):
        text = "-".join(f"{k}{label(v)}" for k, v in value.items())
    elif isinstance(value, float):
        text = f"{value:g}"
    else:
        text = str(value)
    return _UNSAFE.sub("-", text).strip("-") or "x"


@dataclass(frozen=True)
class Group:
    """Configurations that differ only in region and headroom: evaluated in one call."""

    config: HardwareConfig  # the baseline's fields with this group's other coordinates
    coords: dict[str, Any]  # this group's values of the axes outside GRID_AXES
    regions: list[str]
    utils: list[float | None]  # None: the workload's max_utilization
    indices: np.ndarray  # sweep_index of each (headroom, region) cell, shape (len(utils), len(regions))
    prefix: str  # id text of the group's coordinates
    axes: tuple[str, ...]  # every swept field, in the scenario's order

    def config_id(self, u: int, r: int) -> str:
        """The id of the (headroom, region) cell: the swept values, joined."""
        parts = [self.prefix] if self.prefix else []
        if "region" in self.axes:
            parts.append(self.regions[r])
        if "max_utilization" in self.axes:
            parts.append(f"u{label(self.utils[u])}")
        return "_".join(parts)[:100]

    def cell_config(self, u: int, r: int) -> HardwareConfig:
        """The configuration of one (headroom, region) cell, with its own id."""
        return self.config.model_copy(update={"region": self.regions[r], "max_utilization": self.utils[u],
                                              "id": self.config_id(u, r)})


def groups(s: Scenario) -> Iterator[Group]:
    """The sweep's groups in order (the last axis varies fastest in ``sweep_index``)."""
    import numpy as np

    assert s.sweep is not None
    from ecobench.scenario.model import HardwareConfig

    base = s.config(s.baseline)
    dump = base.model_dump(exclude_unset=True)
    keys = list(s.sweep)
    sizes = [len(s.sweep[k]) for k in keys]
    strides = {k: math.prod(sizes[i + 1:]) for i, k in enumerate(keys)}
    outer = [k for k in keys if k not in GRID_AXES]
    regions = [str(r) for r in s.sweep["region"]] if "region" in s.sweep else [base.region or s.region]
    utils: list[float | None] = list(s.sweep["max_utilization"]) if "max_utilization" in s.sweep \
        else [base.max_utilization]
    u_off = np.arange(len(utils)) * strides["max_utilization"] if "max_utilization" in s.sweep \
        else np.zeros(1, dtype=int)
    r_off = np.arange(len(regions)) * strides["region"] if "region" in s.sweep else np.zeros(1, dtype=int)
    cell = u_off[:, None] + r_off[None, :]
    axes = tuple(keys)
    for picks in itertools.product(*(range(len(s.sweep[k])) for k in outer)):
        coords = {k: s.sweep[k][i] for k, i in zip(outer, picks, strict=True)}
        start = sum(i * strides[k] for k, i in zip(outer, picks, strict=True))
        prefix = "_".join(label(v) for v in coords.values())
        cfg = HardwareConfig.model_validate(dump | coords | {"id": (prefix or "sweep")[:100]})
        yield Group(cfg, coords, regions, utils, start + cell, prefix, axes)


def config_at(s: Scenario, index: int, config_id: str) -> HardwareConfig:
    """The configuration at position ``index`` of the sweep's product (its ``sweep_index``)."""
    from ecobench.scenario.model import HardwareConfig

    assert s.sweep is not None
    coords: dict[str, Any] = {}
    for key in reversed(list(s.sweep)):
        values = s.sweep[key]
        index, i = divmod(index, len(values))
        coords[key] = values[i]
    dump = s.config(s.baseline).model_dump(exclude_unset=True)
    return HardwareConfig.model_validate(dump | coords | {"id": config_id})
