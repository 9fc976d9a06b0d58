"""Per-repetition samples of a measured (or projected) row, computed through the planner.

The regression gate tests measured figures on their repetitions. Every repetition's throughput
(and, for a measured host, its own power draw) is planned again, so each figure derived from the
measurement (instances, energy, cost, CO2, per-million figures) gets one value per repetition, as
the planner would have computed it from that repetition alone: not the row's value scaled by the
throughput's deviation. Inference is planned with fractional instances (``instances_needed``), the
continuous quantity behind the integer count: a throughput change of 3% that moves the count from
5 to 6 shows in the samples as a 3% change, not a 20% one. The row itself keeps whole instances.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ecobench.hardware.backends.base import Performance

__all__ = ["BASIS_FRACTIONAL", "BASIS_PLANNED", "at_repetition", "repetition_count", "repetition_samples"]

BASIS_FRACTIONAL = "per repetition, planned with fractional instances"
BASIS_PLANNED = "per repetition, planned"


def repetition_count(perfs: list[Performance]) -> int:
    """Repetitions every measured performance has (0 when none was measured)."""
    counts = [len(p.measured.throughput_samples_per_s) for p in perfs if p.measured is not None]
    return min(counts) if counts else 0


def at_repetition(perf: Performance, i: int) -> Performance:
    """``perf`` as repetition ``i`` saw it: its throughput, and its power draw where measured."""
    m = perf.measured
    if m is None:
        return perf
    power = m.power_w_samples[i] if m.power_w_samples else m.power_w
    return replace(perf, throughput_per_instance_per_s=m.throughput_samples_per_s[i],
                   measured=replace(m, power_w=power))


def _positive_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def repetition_samples(perfs: list[Performance],
                       replan: Callable[[int], dict[str, Any]]) -> dict[str, list[float]]:
    """For every numeric figure of the plan that varies between repetitions and is positive in all
    of them, its value per repetition; ``replan(i)`` plans the configuration at repetition i."""
    rows = [replan(i) for i in range(repetition_count(perfs))]
    if len(rows) < 2:
        return {}
    out: dict[str, list[float]] = {}
    for key in rows[0]:
        values = [r.get(key) for r in rows]
        if all(_positive_number(v) for v in values) and len(set(values)) > 1:
            out[key] = [float(v) for v in values]  # type: ignore[arg-type]
    return out
