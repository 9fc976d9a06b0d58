"""Energy measurement through codecarbon's offline tracker, with the method actually used.

codecarbon reads RAPL (Intel/AMD CPUs under Linux), NVML (NVIDIA GPUs) where present, and
otherwise models CPU power from load and TDP; RAM is modelled. The method is read back from the
tracker's hardware objects and recorded, never assumed.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ecobench.errors import BackendError


@dataclass(frozen=True)
class EnergySample:
    duration_s: float
    cpu_kwh: float
    ram_kwh: float
    gpu_kwh: float

    @property
    def total_kwh(self) -> float:
        return self.cpu_kwh + self.ram_kwh + self.gpu_kwh


CPU_MODES = {"intel_rapl": "RAPL", "constant": "TDP estimate (no RAPL, no load data)",
             "cpu_load": "CPU-load model (TDP x load; no RAPL)",
             "intel_power_gadget": "Intel Power Gadget", "apple_powermetrics": "powermetrics"}


class Tracker:
    """A codecarbon offline tracker measuring one task (a repetition) at a time."""

    def __init__(self, measure_power_s: float = 0.5) -> None:
        try:
            from codecarbon import OfflineEmissionsTracker
        except ImportError as exc:  # pragma: no cover - codecarbon is a core dependency
            raise BackendError("codecarbon is needed to measure energy: pip install codecarbon") from exc
        logging.getLogger("codecarbon").setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._tracker = OfflineEmissionsTracker(
                country_iso_code="USA", save_to_file=False, log_level="error",
                measure_power_secs=measure_power_s, tracking_mode="machine",
                allow_multiple_runs=True)
            self._tracker.start()

    @property
    def method(self) -> str:
        """Which method codecarbon used for each component, e.g. 'CPU: intel_rapl; RAM: model'."""
        from importlib.metadata import version

        parts = []
        for hw in self._tracker._hardware:  # codecarbon exposes no public accessor for this
            kind = type(hw).__name__
            if kind == "CPU":
                mode = getattr(hw, "_mode", "unknown")
                parts.append("CPU: " + CPU_MODES.get(mode, mode))
            elif kind == "GPU":
                parts.append("GPU: NVML")
            elif kind == "RAM":
                parts.append("RAM: codecarbon memory model")
            else:
                parts.append(f"{kind}: {hw.description() if hasattr(hw, 'description') else '?'}")
        return f"codecarbon {version('codecarbon')} ({'; '.join(parts)})"

    @contextmanager
    def task(self, name: str) -> Iterator[list[EnergySample]]:
        """Measure the block; the yielded list receives one EnergySample when it ends."""
        out: list[EnergySample] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._tracker.start_task(name)
        try:
            yield out
        finally:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                d: Any = self._tracker.stop_task()
            out.append(EnergySample(float(d.duration), float(d.cpu_energy), float(d.ram_energy),
                                    float(d.gpu_energy)))

    def close(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._tracker.stop()
