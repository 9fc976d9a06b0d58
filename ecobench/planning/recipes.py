"""Published training recipes: the layouts teams ran for a model of a given size, and the auto
search's preference for them.

A recipe is a published LLM training point's layout (``hardware/data/published_points.yaml``,
``kind: llm_train`` for a dense model, ``kind: moe_train`` for a mixture-of-experts one: a dense
recipe has no expert degree to follow, and a MoE model's total parameters say nothing of how a dense
model of that size is split) on the same vendor's accelerators, for a model with 0.5-2x the
parameters. Among the fitting layouts within :data:`RECIPE_TOLERANCE_PCT` of the fastest,
``parallelism: auto`` takes the one nearest a recipe (distance: how many factors of two its tensor,
pipeline, context and expert degrees are from the recipe's), the faster on a tie: a layout teams
have run is worth a few percent of predicted speed, which is within the model's held-out error
(median about 10% on ``llm_train`` points). Its choice says which recipe it followed, or that its
pick is unlike any (more than one factor of two from every recipe; it then keeps the fastest), or
that no recipe of that size is published.
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
    expert: int = 1
    moe: bool = False  # a mixture-of-experts model's recipe (kind moe_train)

    def describe(self) -> str:
        cp = f" CP{self.context}" if self.context > 1 else ""
        ep = f" EP{self.expert}" if self.moe else ""
        return f"{self.point_id}: TP{self.tensor}{cp} PP{self.pipeline}{ep}, {self.params / 1e9:.3g}B"


@functools.cache
def published_recipes() -> tuple[PublishedRecipe, ...]:
    """Every published LLM training point's layout (dense and mixture-of-experts), with its model's
    parameters and vendor."""
    from ecobench.hardware.published import load_points  # heavy: only when a search asks for it
    pts, cat = load_points(), load_catalog()
    out = []
    for p in pts.points:
        if p.kind not in ("llm_train", "moe_train") or p.layout is None:
            continue
        acc = (pts.systems[p.system].accelerator if p.system
               else cat.instance(p.instance_type or "").spec.accelerator)
        if acc not in cat.accelerators:
            continue
        out.append(PublishedRecipe(p.id, float(p.arch.params), cat.accelerators[acc].vendor,
                                   p.layout.tensor, p.layout.pipeline, expert=p.layout.expert,
                                   moe=p.kind == "moe_train"))
    return tuple(out)


def recipes_for(arch: Architecture, vendor: str) -> list[PublishedRecipe]:
    """The recipes of models within :data:`SIZE_RATIO` of ``arch``'s size, on ``vendor``'s chips, of
    its kind (mixture-of-experts recipes for a MoE model, dense ones for a dense model)."""
    n = float(arch.params)
    moe = arch.moe is not None
    return [r for r in published_recipes()
            if r.vendor == vendor and r.moe == moe and 1 / SIZE_RATIO <= r.params / n <= SIZE_RATIO]


def distance(tensor: np.ndarray, pipeline: np.ndarray, context: np.ndarray, r: PublishedRecipe,
             expert: np.ndarray | None = None) -> np.ndarray:
    """Factors of two between layouts and a recipe, summed over tensor, pipeline, context and (for a
    mixture-of-experts recipe) expert degrees."""
    d = (np.abs(np.log2(tensor / r.tensor)) + np.abs(np.log2(pipeline / r.pipeline))
         + np.abs(np.log2(context / r.context)))
    return d + np.abs(np.log2(expert / r.expert)) if expert is not None and r.moe else d


def prefer_published(ev: Evaluated, best: int, arch: Architecture, mask: np.ndarray,
                     vendor: str) -> tuple[int, str]:
    """The layout to take instead of the fastest ``best`` (within ``mask``), and what to say about it."""
    recipes = recipes_for(arch, vendor)
    if not recipes:
        kind = "mixture-of-experts " if arch.moe is not None else ""
        return best, (f"; no published {vendor} recipe for a {kind}model of {arch.params / 1e9:.3g}B "
                      "parameters")
    L = ev.layouts
    assert L.context is not None
    near = mask & (ev.total_s <= ev.total_s[best] * (1 + RECIPE_TOLERANCE_PCT / 100))
    idx = np.flatnonzero(near)
    dists = np.stack([distance(L.tensor[idx], L.pipeline[idx], L.context[idx], r, L.expert[idx])
                      for r in recipes])
    closest = dists.min(axis=0)
    order = np.lexsort((ev.total_s[idx], closest))
    pick = int(idx[order[0]])
    d = float(closest[order[0]])
    r = recipes[int(np.argmin(dists[:, order[0]]))]
    if d > LIKE_DISTANCE:  # nothing within the tolerance is like a recipe: the fastest, not a slower
        # layout that is merely less unlike one (TP2 PP2 EP4, 2.8% slower, in place of TP2 PP1 EP4)
        at_best = [float(distance(L.tensor[[best]], L.pipeline[[best]], L.context[[best]], x,
                                  L.expert[[best]])[0]) for x in recipes]
        k = int(np.argmin(at_best))
        return best, (f"; unlike any published recipe for this size (nearest {recipes[k].describe()}, "
                      f"{at_best[k]:.1f} factors of two away)")
    slower = ev.total_s[pick] / ev.total_s[best] - 1
    if pick != best and not math.isclose(slower, 0.0, abs_tol=1e-12):
        return pick, f"; nearest a published recipe ({r.describe()}), {slower:.1%} slower than the fastest"
    return pick, f"; like a published recipe ({r.describe()})"
