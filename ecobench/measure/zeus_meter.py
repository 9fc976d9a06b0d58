"""GPU energy per measurement window through Zeus (``pip install 'ecobench-ml[gpu]'``).

Zeus's ``ZeusMonitor`` reads NVML's energy counter (``nvmlDeviceGetTotalEnergyConsumption``, Volta
and newer) at the start and end of a window, after synchronising the GPU's queued work, so a window's
energy is exactly the counter's difference over the window: no power sampling, no interpolation.
On an older GPU Zeus integrates NVML power samples taken by a helper process instead; the method
says which. codecarbon stays for the CPU and RAM (``codecarbon_meter.py``); its own GPU figure is
then left out, so nothing is counted twice.

The monitor is passed in (:class:`GpuMeter`), never looked up: tests pass
:class:`ecobench.measure.testing.ReplayZeusMonitor`, which replays recorded windows without a GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from ecobench.version import install_extra

__all__ = ["ZEUS_COUNTER", "ZEUS_SAMPLED", "GpuMeter", "GpuWindow", "WindowMonitor", "open_zeus"]

ZEUS_COUNTER = "Zeus (NVML energy counter)"
ZEUS_SAMPLED = "Zeus (NVML power samples integrated: this GPU has no energy counter)"
GPU_EXTRA_HINT = install_extra("gpu")
J_PER_KWH = 3.6e6


class WindowMonitor(Protocol):
    """What :class:`GpuMeter` needs of a monitor: ``zeus.monitor.ZeusMonitor``'s window methods.
    ``end_window`` returns an object with ``time`` (s) and ``gpu_energy`` ({GPU index: J})."""

    def begin_window(self, key: str) -> None:
        """Start the window ``key``."""
        ...

    def end_window(self, key: str) -> Any:
        """End the window ``key``: its time and each GPU's energy."""
        ...


@dataclass(frozen=True)
class GpuWindow:
    """One window as the GPU meter saw it: its length and the GPUs' energy together."""

    duration_s: float
    energy_j: float

    @property
    def energy_kwh(self) -> float:
        """The energy in kWh."""
        return self.energy_j / J_PER_KWH


class GpuMeter:
    """Measures the GPU energy of each window through a :class:`WindowMonitor`.

    ``method`` says how (:data:`ZEUS_COUNTER` or :data:`ZEUS_SAMPLED`, with the library's version);
    ``counter`` whether the energy came from a hardware energy counter.
    """

    def __init__(self, monitor: WindowMonitor, *, method: str = ZEUS_COUNTER, version: str = "",
                 counter: bool = True) -> None:
        self._monitor = monitor
        self.method = method
        self.version = version
        self.counter = counter

    @property
    def component(self) -> tuple[str, bool]:
        """The GPU's part of ``power_method``, and whether it came from a counter."""
        return f"GPU power: {self.method} (whole device)", self.counter

    @property
    def description(self) -> str:
        """The method with the library's version, e.g. 'Zeus (NVML energy counter), zeus 0.16.0'."""
        return f"{self.method}, zeus {self.version}" if self.version else self.method

    @contextmanager
    def window(self, name: str) -> Iterator[list[GpuWindow]]:
        """Measure the block; the yielded list receives one :class:`GpuWindow` when it ends."""
        out: list[GpuWindow] = []
        self._monitor.begin_window(name)
        yield out
        m = self._monitor.end_window(name)
        out.append(GpuWindow(float(m.time), float(sum(m.gpu_energy.values()))))


def open_zeus(gpu_index: int) -> tuple[GpuMeter | None, str]:
    """A Zeus meter of CUDA device ``gpu_index`` (as PyTorch numbers it), or None and why not.

    CPU energy is left to codecarbon (``cpu_indices=[]``: Zeus would need root to read RAPL). Windows
    shorter than NVML's counter update period (20-100 ms) would read zero; ``approx_instant_energy``
    then takes the instantaneous power times the window's length instead.
    """
    try:
        from zeus.monitor import ZeusMonitor
    except ImportError:
        return None, f"zeus is not installed ({GPU_EXTRA_HINT})"
    try:
        monitor = ZeusMonitor(gpu_indices=[gpu_index], cpu_indices=[], approx_instant_energy=True,
                              sync_execution_with="torch")
        counter = bool(monitor.gpus.supports_get_total_energy_consumption(gpu_index))
    except Exception as exc:  # Zeus's NVML and device errors have no common base: said in the method
        return None, f"Zeus could not open GPU {gpu_index}: {type(exc).__name__}: {exc}"
    return GpuMeter(monitor, method=ZEUS_COUNTER if counter else ZEUS_SAMPLED, version=_version("zeus"),
                    counter=counter), ""


def _version(distribution: str) -> str:
    """The installed distribution's version ('' when its metadata is missing)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return ""
