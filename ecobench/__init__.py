"""ecobench: what an ML workload costs in instances, energy, money and CO2 on each kind of hardware."""

__version__ = "0.1.0"
__all__ = ["__version__"]
