"""Hourly prices: the catalog's (instances.yaml, where the seed scenarios' prices live) and, for every
other region, the dated regional snapshot in ``data/prices.yaml``."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from ecobench.hardware.catalog import Instance
from ecobench.io.datacache import cached
from ecobench.io.yamlio import load_packaged

PRICES_FILE = "data/prices.yaml"


@dataclass(frozen=True)
class RegionalPrices:
    source: str
    as_of: str
    prices_usd_per_h: dict[str, dict[str, float]]


@functools.cache
def regional_prices() -> RegionalPrices:
    """The packaged snapshot (cached)."""
    text = resources.files("ecobench.hardware").joinpath(PRICES_FILE).read_text(encoding="utf-8")
    return cached("prices", [text], RegionalPrices, lambda: _parse(text))


def _parse(text: str) -> RegionalPrices:
    doc = load_packaged(text)
    return RegionalPrices(doc["source"], str(doc["as_of"]), doc["prices_usd_per_h"])


def on_demand_price(inst: Instance, region: str) -> tuple[float, str] | None:
    """(USD per hour, where it comes from) for ``inst`` in ``region``, or None if neither the catalog
    nor the snapshot prices it there."""
    catalog = inst.price_usd_per_h
    if region in catalog.regions:
        return catalog.regions[region], f"{catalog.source} ({catalog.as_of})"
    snap = regional_prices()
    price = snap.prices_usd_per_h.get(inst.name, {}).get(region)
    if price is None:
        return None
    return price, f"{snap.source} ({snap.as_of})"


def priced_regions(inst: Instance) -> list[str]:
    """Every region with an on-demand price for ``inst``."""
    snapshot = regional_prices().prices_usd_per_h.get(inst.name, {})
    return sorted(set(inst.price_usd_per_h.regions) | set(snapshot))
