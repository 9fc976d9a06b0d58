"""Power, carbon intensity and embodied carbon."""

from ecobench.power.carbon import GridIntensity, grid_intensity
from ecobench.power.embodied import embodied_kg
from ecobench.power.model import PowerBreakdown

__all__ = ["GridIntensity", "PowerBreakdown", "embodied_kg", "grid_intensity"]
