"""Measured Neuron power: the driver's per-device power utilisation in sysfs, turned into energy.

Since Neuron driver 2.21.37 (Neuron 2.25.0) each device reports, in
``/sys/devices/virtual/neuron_device/neuronN/stats/power/utilization``, one line
``<status>,<timestamp>,<min>,<max>,<avg>``: the status (``POWER_STATUS_VALID``,
``POWER_STATUS_NO_DATA`` or ``POWER_STATUS_INVALID``), the Unix time of the minute it covers, and the
minimum, maximum and average power over that minute as a percentage (0.00-100.00) of the device's
maximum power, updated every minute (Neuron docs, tools/neuron-sys-tools/neuron-sysfs-user-guide.rst).
AWS publishes no watts, so a minute's energy is ``avg / 100 x P_max x 60 s`` with ``P_max`` the
catalog's evidence range for the chip (low, central, high) or the user's own figure. Only VALID
minutes count; the others are reported, never guessed.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ecobench.errors import InputError
from ecobench.io.bounded import read_text, snippet

SYSFS_ROOT = Path("/sys/devices/virtual/neuron_device")
UTILIZATION = Path("stats/power/utilization")
# a --sysfs above the device tree (/sys, a copy of it): where the tree is below it
_BELOW = ("devices/virtual/neuron_device", "virtual/neuron_device", "neuron_device")
VALID, NO_DATA, INVALID = "POWER_STATUS_VALID", "POWER_STATUS_NO_DATA", "POWER_STATUS_INVALID"
STATUSES = (VALID, NO_DATA, INVALID)
MISSING = "missing"  # the device has no utilization file (a driver older than 2.21.37)
MINUTE_S = 60.0
MAX_FILE_BYTES = 4096  # one line of about 50 bytes
MAX_DEVICES = 1_024  # an instance has at most 16 Neuron devices
MAX_TIMESTAMP_S = 10_000_000_000  # Unix seconds: the year 2286
FORMAT = "<status>,<unix timestamp>,<min %>,<max %>,<avg %>"


@dataclass(frozen=True)
class PowerReading:
    """One device's last minute: percentages of its maximum power (None unless VALID)."""

    device: str
    status: str
    timestamp: int | None
    min_pct: float | None = None
    max_pct: float | None = None
    avg_pct: float | None = None


def _pct(value: str, path: Path, name: str) -> float:
    try:
        v = float(value)
    except ValueError:
        raise InputError(f"{path}: field {name} is {snippet(value)}; expected a percentage 0.00-100.00 "
                         f"(format {FORMAT})") from None
    if not (math.isfinite(v) and 0.0 <= v <= 100.0):
        raise InputError(f"{path}: field {name} is {v}; allowed: 0.00-100.00 (% of the device's maximum)")
    return v


def parse_utilization(text: str, path: Path, device: str) -> PowerReading:
    """One utilization file; an error naming the file, the field and the format if malformed."""
    parts = [p.strip() for p in text.strip().split(",")]
    if len(parts) != 5:
        raise InputError(f"{path}: {len(parts)} fields in {snippet(text.strip())}; expected 5: {FORMAT}")
    status, stamp = parts[0], parts[1]
    if status not in STATUSES:
        raise InputError(f"{path}: field status is {snippet(status)}; allowed: {', '.join(STATUSES)}")
    try:
        ts_f = float(stamp)
    except ValueError:
        raise InputError(f"{path}: field timestamp is {snippet(stamp)}; expected Unix seconds") from None
    if not (math.isfinite(ts_f) and 0 <= ts_f <= MAX_TIMESTAMP_S):
        raise InputError(f"{path}: field timestamp is {snippet(stamp)}; allowed: Unix seconds 0 to "
                         f"{MAX_TIMESTAMP_S:,} (the year 2286)")
    ts = int(ts_f)
    if status != VALID:
        return PowerReading(device, status, ts)
    lo, hi, avg = (_pct(v, path, n) for v, n in zip(parts[2:], ("min", "max", "avg"), strict=True))
    return PowerReading(device, status, ts, lo, hi, avg)


def read_tree(root: Path = SYSFS_ROOT) -> list[PowerReading]:
    """The last minute of every Neuron device under ``root``."""
    if not root.is_dir():
        raise InputError(f"{root}: no Neuron sysfs tree (expected neuronN/{UTILIZATION} for each device; "
                         "needs the Neuron driver 2.21.37 or later on an Inf/Trn instance)")
    try:
        devices = sorted((p for p in root.iterdir() if re.fullmatch(r"neuron[0-9]{1,6}", p.name)),
                         key=lambda p: int(p.name.removeprefix("neuron")))
    except OSError as exc:
        raise InputError(f"{root}: cannot list the Neuron devices ({exc.strerror})") from None
    if not devices:
        below = next((root / d for d in _BELOW if (root / d).is_dir()), None)
        raise InputError(f"{root}: no neuronN device folders (expected neuron0, neuron1, ...)"
                         + (f"; allowed: the folder that holds them, {below}" if below else ""))
    if len(devices) > MAX_DEVICES:
        raise InputError(f"{root}: {len(devices):,} neuronN folders; at most {MAX_DEVICES:,} (an instance "
                         "has up to 16 Neuron devices)")
    out = []
    for dev in devices:
        f = dev / UTILIZATION
        if not f.exists():
            out.append(PowerReading(dev.name, MISSING, None))
            continue
        text = read_text(f, MAX_FILE_BYTES, "Neuron sysfs utilization")
        out.append(parse_utilization(text, f, dev.name))
    if all(r.status == MISSING for r in out):
        raise InputError(f"{root}: no device has {UTILIZATION} (the Neuron driver 2.21.37 or later adds it)")
    return out


@dataclass
class NeuronEnergy:
    """Energy of the VALID minutes seen, per device, at each maximum-power reading."""

    p_max_w: tuple[float, float, float]  # low, central, high
    minutes: dict[tuple[str, int], float] = field(default_factory=dict)  # (device, timestamp) -> avg %
    skipped: dict[str, int] = field(default_factory=dict)  # status -> readings not counted

    def add(self, readings: list[PowerReading]) -> None:
        """Count each device's minute once (sysfs repeats it until the next update)."""
        for r in readings:
            if r.status == VALID and r.timestamp is not None and r.avg_pct is not None:
                self.minutes[(r.device, r.timestamp)] = r.avg_pct
            else:
                self.skipped[r.status] = self.skipped.get(r.status, 0) + 1

    def energy_j(self, p_max_w: float) -> float:
        """Sum over counted minutes of ``avg % / 100 x P_max x 60 s``."""
        return sum(avg / 100.0 * p_max_w * MINUTE_S for avg in self.minutes.values())

    def energy_kwh(self) -> tuple[float, float, float]:
        """(low, central, high) kWh."""
        lo, mid, hi = (self.energy_j(p) / 3.6e6 for p in self.p_max_w)
        return lo, mid, hi

    def device_minutes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for dev, _ in self.minutes:
            out[dev] = out.get(dev, 0) + 1
        return out


def sample(root: Path, minutes: int, p_max_w: tuple[float, float, float],
           sleep: Callable[[float], None] = time.sleep) -> NeuronEnergy:
    """Read the tree now and then once a minute for ``minutes`` minutes (0: one read)."""
    acc = NeuronEnergy(p_max_w)
    acc.add(read_tree(root))
    for _ in range(minutes):
        sleep(MINUTE_S)
        acc.add(read_tree(root))
    return acc
