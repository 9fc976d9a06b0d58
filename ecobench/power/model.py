"""An instance's average draw per component and the facility overhead (PUE); the draw itself is
``power/draw.py``'s."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PowerBreakdown:
    """Average draw of one instance, by component, in watts."""

    accelerator_w: float
    cpu_w: float
    memory_w: float
    network_w: float
    overhead_w: float  # facility overhead: (PUE - 1) x IT power

    @property
    def it_w(self) -> float:
        """Power drawn by the instance itself."""
        return self.accelerator_w + self.cpu_w + self.memory_w + self.network_w

    @property
    def total_w(self) -> float:
        """Power at the facility meter."""
        return self.it_w + self.overhead_w
