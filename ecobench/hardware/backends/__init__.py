"""Backends: analytic (roofline), emulated (NeuronCore model), reference (PyTorch, measured).

The analytic backend is imported with the package; the others on their first use."""

from ecobench.hardware.backends import analytic as _analytic  # noqa: F401  (registers itself)
from ecobench.hardware.backends.base import BACKENDS, Backend, Job, LazyBackend, Performance, Utilization

for _name, _module in (("emulated", "ecobench.hardware.backends.emulated"),
                       ("reference", "ecobench.hardware.backends.torch_ref")):
    BACKENDS.setdefault(_name, LazyBackend(_name, _module))

__all__ = ["BACKENDS", "Backend", "Job", "Performance", "Utilization"]
