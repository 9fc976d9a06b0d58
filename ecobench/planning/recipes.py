"""Published training recipes: the layouts teams ran for a model of a given size, and the auto
search's preference for them.

A recipe is a published LLM training point's layout (``hardware/data/published_points.yaml``,
``kind: llm_train``) on the same vendor's accelerators, for a model with 0.5-2x the parameters.
Among the fitting layouts within :data:`RECIPE_TOLERANCE_PCT` of the fastest, ``parallelism: auto``
takes the one nearest a recipe (distance: how many factors of two its tensor, pipeline and context
degrees are from the recipe's), the faster on a tie: a layout teams have run is worth a few percent
of predicted speed, which is within the model's held-out error (median about 10% on ``llm_train``
points). Its choice says which recipe it followed, or that its pick is unlike any (more than one
factor of two from every recipe), or that no recipe of that size is published.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ecobench.hardware.catalog import load_catalog
from ecobench.parallel.search import Evaluated
from ecobench.workloads.architecture import Architecture

RECIPE_TOLERANCE_PCT = 3.0
SIZE_RATIO = 2.0  # a recipe applies to models with 1/2 to 2x its parameters
LIKE_DISTANCE = 1.0  # within one factor of two (on one degree) of a recipe: "like" it


@dataclass(frozen=True)
class PublishedRecipe:
    """One published point's layout and the size of its model."""

    point_id: str
    params: float
    vendor: str
    tensor: int
    pipeline: int
    context: int = 1

    def describe(self) -> str:
        cp = f" CP{self.context}" if self.context > 1 else ""
        return f"{self.point_id}: TP{self.tensor}{cp} PP{self.pipeline}, {self.params / 1e9:.3g}B"


@functools.cache
def published_recipes() -> tuple[PublishedRecipe, ...]:
    """Every published LLM training point's layout, with its model's parameters and vendor."""
    from ecobench.hardware.published import load_points  # heavy: only when a search asks for it
    pts, cat = load_points(), load_catalog()
    out = []
    for p in pts.points:
        if p.kind != "llm_train" or p.layout is None:
            continue
        acc = (pts.systems[p.system].accelerator if p.system
               else cat.instance(p.instance_type or "").spec.accelerator)
        if acc not in cat.accelerators:
            continue
        out.append(PublishedRecipe(p.id, float(p.arch.params), cat.accelerators[acc].vendor,
                                   p.layout.tensor, p.layout.pipeline))
    return tuple(out)


def recipes_for(arch: Architecture, vendor: str) -> list[PublishedRecipe]:
    """The recipes of models within :data:`SIZE_RATIO` of ``arch``'s size, on ``vendor``'s chips."""
    n = float(arch.params)
    return [r for r in published_recipes()
            if r.vendor == vendor and 1 / SIZE_RATIO <= r.params / n <= SIZE_RATIO]


def distance(tensor: np.ndarray, pipeline: np.ndarray, context: np.ndarray, r: PublishedRecipe) -> np.ndarray:
    """Factors of two between layouts and a recipe, summed over tensor, pipeline and context."""
    return (np.abs(np.log2(tensor / r.tensor)) + np.abs(np.log2(pipeline / r.pipeline))
            + np.abs(np.log2(context / r.context)))


def prefer_published(ev: Evaluated, best: int, arch: Architecture, mask: np.ndarray,
                     vendor: str) -> tuple[int, str]:
    """The layout to take instead of the fastest ``best`` (within ``mask``), and what to say about it."""
    recipes = recipes_for(arch, vendor)
    if not recipes:
        return best, f"; no published {vendor} recipe for a model of {arch.params / 1e9:.3g}B parameters"
    L = ev.layouts
    assert L.context is not None
    near = mask & (ev.total_s <= ev.total_s[best] * (1 + RECIPE_TOLERANCE_PCT / 100))
    idx = np.flatnonzero(near)
    dists = np.stack([distance(L.tensor[idx], L.pipeline[idx], L.context[idx], r) for r in recipes])
    closest = dists.min(axis=0)
    order = np.lexsort((ev.total_s[idx], closest))
    pick = int(idx[order[0]])
    d = float(closest[order[0]])
    r = recipes[int(np.argmin(dists[:, order[0]]))]
    if d > LIKE_DISTANCE:
        return pick, (f"; unlike any published recipe for this size (nearest {r.describe()}, "
                      f"{d:.1f} factors of two away)")
    slower = ev.total_s[pick] / ev.total_s[best] - 1
    if pick != best and not math.isclose(slower, 0.0, abs_tol=1e-12):
        return pick, f"; nearest a published recipe ({r.describe()}), {slower:.1%} slower than the fastest"
    return pick, f"; like a published recipe ({r.describe()})"
