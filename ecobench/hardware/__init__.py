"""Hardware: the sourced catalog and the backends that give throughput and utilisation."""

from ecobench.hardware.catalog import Catalog, load_catalog

__all__ = ["Catalog", "load_catalog"]
