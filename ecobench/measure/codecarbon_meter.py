"""Energy measurement through codecarbon's offline tracker, with the method actually used.

codecarbon reads RAPL (Intel/AMD CPUs under Linux) and NVML (NVIDIA GPUs) where present, and
otherwise models CPU power as TDP x load; RAM is always modelled. The tracker runs in codecarbon's
"process" mode, so the load model and the RAM model count this process only, not whatever else
the machine runs; RAPL and NVML cannot be split by process and measure the whole package or
device. The method is read back from the tracker's hardware objects and written out in words
(``power_method``), with ``energy_provenance`` saying whether any of it came from a counter, and
``cpu_power_fallback`` whether codecarbon, finding no CPU energy counter (no RAPL on most VMs),
fell back to modelling the CPU's power from its TDP (times the load, or a constant factor).
When Zeus meters the GPU (``zeus_meter.py``), the GPU's part is replaced by Zeus's
(:func:`describe`, :func:`provenance`).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ecobench.errors import BackendError
from ecobench.version import DISTRIBUTION


@dataclass(frozen=True)
class EnergySample:
    duration_s: float
    cpu_kwh: float
    ram_kwh: float
    gpu_kwh: float

    @property
    def total_kwh(self) -> float:
        return self.cpu_kwh + self.ram_kwh + self.gpu_kwh


Component = tuple[str, bool]  # (how one component's power is obtained, in words; from a counter)

CPU_MODES = {
    "intel_rapl": "CPU power: RAPL counters (whole CPU package, other processes included)",
    "cpu_load": "CPU power: TDP × load model, no RAPL (this process's CPU time)",
    "constant": "CPU power: TDP × constant factor, no RAPL and no load data",
    "intel_power_gadget": "CPU power: Intel Power Gadget (whole package)",
    "apple_powermetrics": "CPU power: powermetrics (whole package)",
    "windows_emi": "CPU power: Windows Energy Meter Interface (whole package)",
}
COUNTER_MODES = {"intel_rapl", "intel_power_gadget", "apple_powermetrics", "windows_emi"}
GPU_PREFIX = "GPU power:"


def describe(parts: list[Component]) -> str:
    """Each component's method in words, ``; ``-separated."""
    return "; ".join(text for text, _ in parts)


def provenance(parts: list[Component]) -> str:
    """'measured' when the compute power (CPU, GPU) came from counters, 'modelled' when none did,
    'partly measured' otherwise. RAM is modelled in every case (said in the method)."""
    compute = [counter for text, counter in parts if not text.startswith("RAM")]
    if compute and all(compute):
        return "measured"
    return "partly measured" if any(compute) else "modelled"


def codecarbon_version() -> str:
    """The installed codecarbon's version."""
    from importlib.metadata import version

    return version("codecarbon")


def require_codecarbon() -> Any:
    """codecarbon, or a BackendError naming the extra that installs it (``torch``, with the
    reference backend it meters; a plain install has no measured path and leaves it out)."""
    try:
        import codecarbon
    except ImportError:
        raise BackendError(f"measuring energy needs codecarbon: pip install '{DISTRIBUTION}[torch]' "
                           "(or set measurement.track_energy: false)") from None
    return codecarbon


def tdp_words(tdp_w: float, model: str) -> str:
    """The TDP codecarbon's CPU model scales, and where codecarbon took it from: its table of CPU
    models (a whole package's TDP, however few of its threads this host has), or, for a CPU it does
    not know, its default of a few watts a thread, which it says only in a log line."""
    try:
        from codecarbon.core import cpu
        from codecarbon.core.hardware_cache import get_cached_tdp

        known = get_cached_tdp(cpu)._get_cpu_power_from_registry(model) is not None
        per_thread = cpu.DEFAULT_POWER_PER_CORE
    except Exception:  # another codecarbon: the figure without its source
        return f"TDP {tdp_w:g} W"
    if known:
        return f"TDP {tdp_w:g} W, codecarbon's table figure for the {model} (whole packages)"
    return f"TDP {tdp_w:g} W, codecarbon's default of {per_thread:g} W a thread: its table lacks the {model}"


def ram_words(hw: Any) -> str:
    """codecarbon's RAM model in words: a draw a DIMM, the DIMMs guessed from this process's memory,
    never fewer than two on x86 (codecarbon 3.x), so a small process reads a constant floor."""
    try:
        from codecarbon.external.ram import RAM_SLOT_POWER_X86
    except ImportError:
        return "RAM power: codecarbon model (this process's memory)"
    if getattr(hw, "is_arm_cpu", False):
        return "RAM power: codecarbon model (DIMMs guessed from this process's memory; at least 3 W)"
    return (f"RAM power: codecarbon model ({RAM_SLOT_POWER_X86:g} W a DIMM, DIMMs guessed from this "
            f"process's memory; at least 2, {2 * RAM_SLOT_POWER_X86:g} W, whatever it holds)")


class Tracker:
    """A codecarbon offline tracker measuring one task (a repetition) at a time."""

    def __init__(self, measure_power_s: float = 0.5) -> None:
        OfflineEmissionsTracker = require_codecarbon().OfflineEmissionsTracker
        logging.getLogger("codecarbon").setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._tracker = OfflineEmissionsTracker(
                country_iso_code="USA", save_to_file=False, log_level="error",
                measure_power_secs=measure_power_s, tracking_mode="process",
                allow_multiple_runs=True)
            self._tracker.start()

    def components(self) -> list[Component]:
        """(how each component's power is obtained, whether from a hardware counter)."""
        parts = []
        for hw in self._tracker._hardware:  # codecarbon exposes no public accessor for this
            kind = type(hw).__name__
            if kind == "CPU":
                mode = getattr(hw, "_mode", "unknown")
                text = CPU_MODES.get(mode, f"CPU power: codecarbon mode {mode}")
                if mode in ("cpu_load", "constant") and getattr(hw, "_tdp", None) is not None:
                    text = f"{text[:-1]}; {tdp_words(float(hw._tdp), str(getattr(hw, '_model', '')))})"
                parts.append((text, mode in COUNTER_MODES))
            elif kind == "GPU":
                parts.append(("GPU power: NVML counters (whole device)", True))
            elif kind == "RAM":
                parts.append((ram_words(hw), False))
            else:
                parts.append((f"{kind} power: {hw.description() if hasattr(hw, 'description') else '?'}",
                              False))
        return parts

    @property
    def power_method(self) -> str:
        """Each component's method in words, e.g. 'CPU power: TDP × load model, no RAPL (...)'."""
        return describe(self.components())

    @property
    def energy_provenance(self) -> str:
        """:func:`provenance` of the components."""
        return provenance(self.components())

    @property
    def cpu_power_fallback(self) -> bool | None:
        """True when codecarbon found no CPU energy counter (RAPL, Power Gadget, powermetrics,
        Energy Meter) and models the CPU's power from its TDP; None when it tracks no CPU."""
        modes = [getattr(hw, "_mode", None) for hw in self._tracker._hardware if type(hw).__name__ == "CPU"]
        return None if not modes else not all(m in COUNTER_MODES for m in modes)

    @property
    def method(self) -> str:
        """codecarbon's version and the power method of each component."""
        return f"codecarbon {codecarbon_version()} ({self.power_method})"

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
