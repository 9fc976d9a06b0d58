"""Whether an inference batch fits device memory: each rank holds the whole model and its own batch
(the analytic backend's inference: ``ranks x batch`` sequences per batch time).

The estimate is deliberately simple and errs low (it refuses only a batch that cannot fit)::

    need = weights + batch x per_sequence + WORKSPACE_GIB
    weights = params x bytes(precision)
    per_sequence = seq_len x (hidden_size + widest) x bytes(precision)
    widest = max(intermediate_size, qkv width, heads x seq_len for unfused attention scores)

that is, the activations one layer holds at once: its input and its widest intermediate for every
sequence of the batch (earlier layers' activations are freed in inference). ``WORKSPACE_GIB`` is the
runtime's workspace, as serving's memory check counts it (``parallel/serving.py``). Device memory is
the catalog's per rank (``hardware/cluster.py``: a GPU's, a NeuronCore's share of its chip).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ecobench.errors import BackendError
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.hardware.cluster import instance_cluster
from ecobench.parallel.step import WORKSPACE_GIB
from ecobench.units import BYTES_PER_DTYPE, GIB
from ecobench.workloads.architecture import Architecture


@dataclass(frozen=True)
class BatchMemory:
    """One rank's memory for an inference batch, in GiB."""

    weights_gib: float
    per_sequence_gib: float
    device_gib: float

    def need_gib(self, batch: int) -> float:
        """Weights, ``batch`` sequences' activations of one layer and the workspace."""
        return self.weights_gib + batch * self.per_sequence_gib + WORKSPACE_GIB

    def largest_batch(self) -> int:
        """The largest batch that fits (0: not even the weights and workspace)."""
        free = self.device_gib - self.weights_gib - WORKSPACE_GIB
        return max(0, math.floor(free / self.per_sequence_gib)) if free > 0 else 0


def batch_memory(arch: Architecture, seq_len: int, dtype: str, device_gib: float) -> BatchMemory:
    """The module docstring's estimate for ``arch`` at ``seq_len`` tokens in ``dtype``."""
    b = BYTES_PER_DTYPE[dtype]
    scores = arch.heads * seq_len if arch.kind != "decoder" else 0  # decoders run fused attention
    widest = max(arch.intermediate_size, arch.qkv_width, scores)
    return BatchMemory(arch.params * b / GIB, seq_len * (arch.hidden_size + widest) * b / GIB, device_gib)


def device_memory_gib(cat: Catalog, inst: Instance, dtype: str) -> float | None:
    """One rank's memory on ``inst``; None where the catalog has no figure for it (no accelerator,
    or no peak in ``dtype``: the backend says so itself)."""
    if cat.accelerator_of(inst) is None:
        return None
    try:
        return instance_cluster(cat, inst, dtype).memory_gib
    except BackendError:
        return None
