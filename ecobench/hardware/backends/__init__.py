"""Backends: analytic (roofline), emulated (NeuronCore model), reference (PyTorch, measured).

The analytic backend is imported with the package; the others on their first use."""

from ecobench.hardware.backends import analytic as _analytic  # noqa: F401  (registers itself)
from ecobench.hardware.backends.base import (
    BACKENDS,
    Backend,
    Capabilities,
    Job,
    LazyBackend,
    Performance,
    Utilization,
)

# Registered on first use; the capabilities are the classes' own (EmulatedBackend, ReferenceBackend).
EMULATED = Capabilities(modes=frozenset({"inference", "training", "serving"}), error_model="emulated",
                        own_step_model=True, own_serving_model=True, experts=False)
REFERENCE = Capabilities(sweepable=False, error_model=None, measures_host=True, experts=False)
BACKENDS.setdefault("emulated", LazyBackend("emulated", "ecobench.hardware.backends.emulated", EMULATED))
BACKENDS.setdefault("reference", LazyBackend("reference", "ecobench.hardware.backends.torch_ref", REFERENCE))

__all__ = ["BACKENDS", "Backend", "Capabilities", "Job", "Performance", "Utilization"]
