"""Backends: analytic (roofline), emulated (NeuronCore model), reference (PyTorch, measured)."""

from ecobench.hardware.backends import analytic as _analytic  # noqa: F401  (registers itself)
from ecobench.hardware.backends import emulated as _emulated  # noqa: F401
from ecobench.hardware.backends import torch_ref as _torch_ref  # noqa: F401  (torch imported lazily)
from ecobench.hardware.backends.base import BACKENDS, Backend, Job, Performance, Utilization

__all__ = ["BACKENDS", "Backend", "Job", "Performance", "Utilization"]
