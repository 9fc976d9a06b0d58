"""Workloads: model architectures turned into the kernels they run."""

from ecobench.workloads.kernels import Kernel
from ecobench.workloads.presets import PRESETS, preset
from ecobench.workloads.transformer import Architecture, build_kernels, totals

__all__ = ["PRESETS", "Architecture", "Kernel", "build_kernels", "preset", "totals"]
