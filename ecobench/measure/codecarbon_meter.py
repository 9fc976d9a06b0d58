"""Energy measurement through codecarbon's offline tracker, with the method actually used.

codecarbon reads RAPL (Intel/AMD CPUs under Linux) and NVML (NVIDIA GPUs) where present, and
otherwise models CPU power as TDP x load; RAM is always modelled. The tracker runs in codecarbon's
"process" mode, so the load model and the RAM model count this process only, not whatever else
the machine runs; RAPL and NVML cannot be split by process and measure the whole package or
device. The method is read back from the tracker's hardware objects and written out in words
(``power_method``), with ``energy_provenance`` saying whether any of it came from a counter.
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


CPU_MODES = {
    "intel_rapl": "CPU power: RAPL counters (whole CPU package, other processes included)",
    "cpu_load": "CPU power: TDP × load model, no RAPL (this process's CPU time)",
    "constant": "CPU power: TDP × constant factor, no RAPL and no load data",
    "intel_power_gadget": "CPU power: Intel Power Gadget (whole package)",
    "apple_powermetrics": "CPU power: powermetrics (whole package)",
}
COUNTER_MODES = {"intel_rapl", "intel_power_gadget", "apple_powermetrics"}


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
                measure_power_secs=measure_power_s, tracking_mode="process",
                allow_multiple_runs=True)
            self._tracker.start()

    def _components(self) -> list[tuple[str, bool]]:
        """(how each component's power is obtained, whether from a hardware counter)."""
        parts = []
        for hw in self._tracker._hardware:  # codecarbon exposes no public accessor for this
            kind = type(hw).__name__
            if kind == "CPU":
                mode = getattr(hw, "_mode", "unknown")
                parts.append((CPU_MODES.get(mode, f"CPU power: codecarbon mode {mode}"),
                              mode in COUNTER_MODES))
            elif kind == "GPU":
                parts.append(("GPU power: NVML counters (whole device)", True))
            elif kind == "RAM":
                parts.append(("RAM power: codecarbon model (this process's memory)", False))
            else:
                parts.append((f"{kind} power: {hw.description() if hasattr(hw, 'description') else '?'}",
                              False))
        return parts

    @property
    def power_method(self) -> str:
        """Each component's method in words, e.g. 'CPU power: TDP × load model, no RAPL (...)'."""
        return "; ".join(text for text, _ in self._components())

    @property
    def energy_provenance(self) -> str:
        """'measured' when the compute power (CPU, GPU) came from counters, 'modelled' when none
        did, 'partly measured' otherwise. RAM is modelled in every case (said in power_method)."""
        compute = [counter for text, counter in self._components() if not text.startswith("RAM")]
        if compute and all(compute):
            return "measured"
        return "partly measured" if any(compute) else "modelled"

    @property
    def method(self) -> str:
        """codecarbon's version and the power method of each component."""
        from importlib.metadata import version

        return f"codecarbon {version('codecarbon')} ({self.power_method})"

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
