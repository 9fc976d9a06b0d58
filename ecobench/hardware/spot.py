"""Spot prices: the dated regional snapshot in ``data/spot.yaml`` (built by ``spot_build.py``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from ecobench.io.yamlio import load_packaged

SPOT_FILE = "data/spot.yaml"


@dataclass(frozen=True)
class SpotSnapshot:
    source: str
    as_of: str
    instance_types: tuple[str, ...]  # the types the snapshot covers
    spot_usd_per_h: dict[str, dict[str, float]]  # instance type -> region -> median over zones


@functools.cache
def spot_snapshot() -> SpotSnapshot:
    """The packaged snapshot (cached)."""
    text = resources.files("ecobench.hardware").joinpath(SPOT_FILE).read_text(encoding="utf-8")
    doc = load_packaged(text)
    return SpotSnapshot(doc["source"], str(doc["as_of"]), tuple(doc["instance_types"]), doc["spot_usd_per_h"])


def spot_price(instance_type: str, region: str) -> float | None:
    """Spot USD per hour for ``instance_type`` in ``region``, or None if the snapshot has none."""
    return spot_snapshot().spot_usd_per_h.get(instance_type, {}).get(region)


def spot_regions(instance_type: str) -> list[str]:
    """Every region the snapshot has a spot price for ``instance_type`` in."""
    return sorted(spot_snapshot().spot_usd_per_h.get(instance_type, {}))


def spot_label() -> str:
    """How results name the snapshot (``price_source``)."""
    snap = spot_snapshot()
    return f"spot snapshot {snap.source} ({snap.as_of})"
