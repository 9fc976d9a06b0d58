"""A scenario's ``sweep:`` block: configuration fields with lists of values, expanded into every
combination. Each combination takes the baseline configuration's fields and overrides the swept ones.

Combinations are grouped so one evaluation covers many: a group holds every region, price
(``price_usd_per_h``) and headroom (``max_utilization``) of one choice of the other fields, since those
three change only the price, the grid intensity and the instance count, which the planner computes
with numpy over arrays (``ecobench.planning.sweep``). The backend runs once per group.

A group's cells are laid out as the planner evaluates them, headrooms by columns, a column being one
(price, region) pair, price-major; its rows are written price, then headroom, then region.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ecobench.scenario.sweep_size import GRID_AXES

if TYPE_CHECKING:
    import numpy as np

    from ecobench.hardware.catalog import Catalog
    from ecobench.scenario.model import HardwareConfig, Scenario

ID_MAX_CHARS = 100  # a combination's id is cut to this length
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


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
    """Configurations that differ only in region, price and headroom: evaluated in one call."""

    config: HardwareConfig  # the baseline's fields with this group's other coordinates
    coords: dict[str, Any]  # this group's values of the axes outside GRID_AXES
    regions: list[str]
    prices: list[float | None]  # the swept prices (None: the catalog's); [config's] without that axis
    utils: list[float | None]  # None: the workload's max_utilization
    indices: np.ndarray  # sweep_index of each (price, headroom, region) cell, that shape
    prefixes: list[str]  # id text of the group's coordinates, one per price
    axes: tuple[str, ...]  # every swept field, in the scenario's order
    tails: tuple[str, ...] = ()  # id text of each headroom (``_u0.5``), the same in every group
    repeat: str = ""  # why the group is not evaluated: it repeats an earlier one (:func:`_own_lnc`)

    def config_id(self, u: int, r: int, p: int = 0) -> str:
        """The id of the (price, headroom, region) cell: the swept values, joined."""
        parts = [self.prefixes[p]] if self.prefixes[p] else []
        if "region" in self.axes:
            parts.append(self.regions[r])
        if "max_utilization" in self.axes:
            parts.append(f"u{label(self.utils[u])}")
        return "_".join(parts)[:ID_MAX_CHARS]

    def ids(self, cols_p: list[int], cols_r: list[int]) -> list[str]:
        """The ids of the columns (price ``cols_p[c]``, region ``cols_r[c]``; a price's columns
        together) at every headroom, in the order the rows are written: by price, then headroom,
        then region (``config_id`` of each, built at once)."""
        tails = list(self.tails) or ([f"_u{label(u)}" for u in self.utils] if "max_utilization" in self.axes
                                     else [""])
        pre = self.prefixes
        if "region" in self.axes:
            heads = [pre[p] + "_" + self.regions[r] if pre[p] else self.regions[r]
                     for p, r in zip(cols_p, cols_r, strict=True)]
        else:
            heads = [pre[p] for p in cols_p]
        if len(tails) == 1 and not tails[0]:
            out = heads
        elif len(set(cols_p)) == 1:
            out = [h + t if h else t[1:] for t in tails for h in heads]
        else:
            bounds = [i for i in range(1, len(cols_p)) if cols_p[i] != cols_p[i - 1]]
            blocks = [heads[a:b] for a, b in zip([0, *bounds], [*bounds, len(heads)], strict=True)]
            out = [h + t if h else t[1:] for hs in blocks for t in tails for h in hs]
        if out and max(map(len, out)) > ID_MAX_CHARS:
            out = [c[:ID_MAX_CHARS] for c in out]
        return out

    def cell_config(self, u: int, r: int, p: int = 0) -> HardwareConfig:
        """The configuration of one (price, headroom, region) cell, with its own id."""
        update: dict[str, Any] = {"region": self.regions[r], "max_utilization": self.utils[u],
                                  "id": self.config_id(u, r, p)}
        if "price_usd_per_h" in self.axes:
            update["price_usd_per_h"] = self.prices[p]
        return self.config.model_copy(update=update)


def ids_distinct(s: Scenario) -> bool:
    """Whether every combination's id differs from every other's by construction: each axis's labels
    distinct, none holding the separator ``_``, and no id long enough to be cut (then ids need no
    check against each other, only against the configurations')."""
    assert s.sweep is not None
    longest = 0
    for key, values in s.sweep.items():
        texts = [str(v) if key == "region" else label(v) for v in values]
        if len(set(texts)) < len(texts) or any("_" in t for t in texts):
            return False
        longest += max(map(len, texts)) + 1 + (key == "max_utilization")
    return longest - 1 <= ID_MAX_CHARS


def _own_lnc(s: Scenario, coords: dict[str, Any], catalog: Catalog | None) -> str:
    """A combination's ``lnc`` on an instance whose chip has no setting (trn1, inf2, GPUs): set to None
    in ``coords`` (the chip's own), as the sweep holds that instance once, at ``sweep.lnc``'s first
    value; why a combination at another value is not evaluated ('' where it is)."""
    from ecobench.hardware.catalog import load_catalog
    from ecobench.hardware.lnc import lnc_options

    if coords.get("lnc") is None:
        return ""
    assert s.sweep is not None
    kind = coords.get("instance_type", s.config(s.baseline).instance_type)
    inst = (catalog or load_catalog()).instances.get(kind)
    if inst is None or lnc_options(inst.spec.accelerator):
        return ""
    first = coords["lnc"] == s.sweep["lnc"][0]
    coords["lnc"] = None
    return "" if first else (f"lnc: {kind} has no logical NeuronCore setting; its one row is at its chip's "
                             "own (sweep_lnc empty)")


def groups(s: Scenario, catalog: Catalog | None = None) -> Iterator[Group]:
    """The sweep's groups in order (the last axis varies fastest in ``sweep_index``); ``catalog``
    (default the packaged one) tells which instances have a logical NeuronCore setting to sweep."""
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
    prices: list[float | None] = list(s.sweep["price_usd_per_h"]) if "price_usd_per_h" in s.sweep \
        else [base.price_usd_per_h]

    def offsets(axis: str, n: int) -> np.ndarray:
        return np.arange(n) * strides[axis] if axis in s.sweep else np.zeros(1, dtype=int)

    cell = (offsets("price_usd_per_h", len(prices))[:, None, None]
            + offsets("max_utilization", len(utils))[None, :, None]
            + offsets("region", len(regions))[None, None, :])
    axes = tuple(keys)
    before = [k for k in outer if keys.index(k) < keys.index("price_usd_per_h")] \
        if "price_usd_per_h" in s.sweep else outer
    price_labels = [label(p) for p in prices] if "price_usd_per_h" in s.sweep else [""]
    tails = tuple(f"_u{label(u)}" for u in utils) if "max_utilization" in s.sweep else ("",)
    for picks in itertools.product(*(range(len(s.sweep[k])) for k in outer)):
        coords = {k: s.sweep[k][i] for k, i in zip(outer, picks, strict=True)}
        repeat = _own_lnc(s, coords, catalog)
        start = sum(i * strides[k] for k, i in zip(outer, picks, strict=True))
        shown = [k for k in outer if not (k == "lnc" and coords[k] is None)]  # no setting: no id text
        head = [label(coords[k]) for k in before if k in shown]
        tail = [label(coords[k]) for k in shown if k not in before]
        if "price_usd_per_h" in s.sweep:  # the price's label where the axis stands
            h = "".join(x + "_" for x in head)
            tl = "".join("_" + x for x in tail)
            prefixes = [h + p + tl for p in price_labels]
        else:
            prefixes = ["_".join(head + tail)]
        first = prefixes[0]
        update = coords | ({"price_usd_per_h": prices[0]} if "price_usd_per_h" in s.sweep else {})
        cfg = HardwareConfig.model_validate(dump | update | {"id": (first or "sweep")[:ID_MAX_CHARS]})
        yield Group(cfg, coords, regions, prices, utils, start + cell, prefixes, axes, tails, repeat)


def config_at(s: Scenario, index: int, config_id: str, catalog: Catalog | None = None) -> HardwareConfig:
    """The configuration at position ``index`` of the sweep's product (its ``sweep_index``)."""
    from ecobench.scenario.model import HardwareConfig

    assert s.sweep is not None
    coords: dict[str, Any] = {}
    for key in reversed(list(s.sweep)):
        values = s.sweep[key]
        index, i = divmod(index, len(values))
        coords[key] = values[i]
    _own_lnc(s, coords, catalog)
    dump = s.config(s.baseline).model_dump(exclude_unset=True)
    return HardwareConfig.model_validate(dump | coords | {"id": config_id})
