"""The kernel record every backend consumes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

KernelKind = Literal["matmul", "elementwise", "gather", "optimizer"]
Phase = Literal["forward", "backward", "optimizer"]


@dataclass(frozen=True)
class Kernel:
    """One kernel a sample runs, with its work per sample.

    ``flops`` and ``bytes`` are per sample; weights read once per batch are already divided by the
    batch size. ``per_step`` kernels (the optimizer) run once per optimizer step per device: their
    figures are per step and a backend divides them by the samples each device sees per step.
    """

    name: str
    kind: KernelKind
    phase: Phase
    shape: str
    flops: float
    bytes: float
    dtype: str
    layer: int | None = None
    per_step: bool = False
    dims: tuple[int, int, int, int] | None = None  # matmul: (count, m, k, n) per sample
    weights: bool = False  # matmul whose right operand is a weight (shared across the batch)

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes if self.bytes else float("inf")
