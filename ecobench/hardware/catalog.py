"""The hardware catalog: instances (with their links), accelerators, CPU power and regions.

Package data under ``ecobench/hardware/data`` read with ``importlib.resources``; validated once.
"""


import functools
import statistics
from importlib import resources
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ecobench.errors import InputError, UnknownNameError
from ecobench.io.datacache import cached
from ecobench.io.yamlio import load_packaged

__all__ = ["Accelerator", "Catalog", "Instance", "Link", "load_catalog"]

LOCAL_INSTANCE = "local"  # the host ecobench runs on, measured by the reference backend


class _Row(BaseModel):
    # defer_build: a catalog read from the cache (ecobench.io.datacache) never builds the validators
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Sourced(_Row):
    """A block of figures and where they come from."""

    source: str = Field(min_length=5)
    as_of: str = Field(min_length=4)
    inferred_from: str | None = None
    note: str | None = None


class PowerEvidence(_Row):
    """One line of evidence for a chip's maximum draw: its reading (and range) and the reasoning."""

    line: str
    estimate_w: float = Field(gt=0)
    low_w: float = Field(gt=0)
    high_w: float = Field(gt=0)
    reasoning: str
    source: str = Field(min_length=5)
    as_of: str = Field(min_length=4)


class ChipPower(Sourced):
    """Idle and maximum draw. Where no vendor figure exists, ``max_w`` is the median of the lines of
    ``evidence`` and ``low_w``/``high_w`` the lowest and highest readings: the 90% range the Monte
    Carlo draws the chip's maximum from (idle scales with it)."""

    idle_w: float = Field(ge=0)
    max_w: float = Field(gt=0)
    low_w: float | None = Field(None, gt=0)
    high_w: float | None = Field(None, gt=0)
    evidence: tuple[PowerEvidence, ...] = ()
    # The vendor's datasheet TDP (or board power), where one is published: what ``power_basis: tdp``
    # counts (the footprint convention of model cards and papers); None: no datasheet figure.
    tdp_w: float | None = Field(None, gt=0)
    tdp_source: str | None = Field(None, min_length=5)

    @model_validator(mode="after")
    def _evidence_sets_the_range(self) -> Self:
        if (self.tdp_w is None) != (self.tdp_source is None):
            raise ValueError("tdp_w and tdp_source go together: a datasheet TDP needs its source")
        if self.tdp_w is not None and self.evidence:
            raise ValueError("a chip whose maximum is an evidence range has no datasheet TDP")
        if not self.evidence:
            if self.low_w is not None or self.high_w is not None:
                raise ValueError("a power range needs its lines of evidence")
            return self
        central = statistics.median(e.estimate_w for e in self.evidence)
        low, high = min(e.low_w for e in self.evidence), max(e.high_w for e in self.evidence)
        for name, want, got in (("max_w", central, self.max_w), ("low_w", low, self.low_w),
                                ("high_w", high, self.high_w)):
            if got is None or abs(got - want) > 0.051:
                raise ValueError(f"{name} must be {want:.1f} W (from the evidence lines), not {got}")
        return self

    @property
    def uncertain(self) -> bool:
        """Whether the maximum is a range (no vendor figure) rather than a datasheet value."""
        return self.low_w is not None and self.high_w is not None


class Accelerator(_Row):
    name: str
    vendor: str
    peak_tflops: dict[str, float | None]
    memory_gib: float = Field(gt=0)
    memory_bandwidth_gb_per_s: float = Field(gt=0)
    activations_on_chip: bool = False
    ranks_per_chip: int = Field(1, gt=0, description="training ranks per chip: NeuronCores as the "
                                                      "Neuron docs count them, 1 for a GPU")
    max_zero_stage: int = Field(3, ge=0, le=3, description="highest ZeRO stage its training libraries offer")
    max_zero_stage_source: str | None = None
    static_kv_cache: bool = Field(
        False, description="serving: its inference stack compiles static shapes and "
        "reads the whole compiled key/value cache every step")
    static_kv_cache_source: str | None = None
    spec_source: str
    spec_as_of: str
    spec_inferred_from: str | None = Field(
        None, description="where the peaks are not the part's own published figures: what they stand in from")
    power: ChipPower


class Link(Sourced):
    """The device-to-device link inside an instance: bandwidth per device, one direction, and the
    latency of one step of a ring collective over it."""

    name: str
    gb_per_s: float = Field(gt=0)
    latency_us: float = Field(gt=0)


class DeviceMemory(Sourced):
    """Memory per accelerator where an instance carries a memory variant of its catalog chip (the
    same compute and bandwidth, a larger part: the V100 32 GB of p3dn.24xlarge)."""

    gib: float = Field(gt=0)


class InstanceSpec(Sourced):
    vcpus: int = Field(gt=0)
    memory_gib: float = Field(gt=0)
    accelerator: str | None
    accelerator_count: int = Field(ge=0)
    network_gbps: float = Field(gt=0)
    network_up_to: bool
    cpu: str
    cpu_microarchitecture: str
    cpu_power_note: str | None = None
    intra_link: Link | None = None  # device-to-device link inside the instance
    accelerator_memory: DeviceMemory | None = None  # this instance's part, where it differs from the chip's


class Price(Sourced):
    regions: dict[str, float]


class Embodied(Sourced):
    server: str
    server_kgco2e: float = Field(ge=0)
    host_vcpus: int = Field(gt=0)


class Instance(_Row):
    name: str
    spec: InstanceSpec
    price_usd_per_h: Price
    embodied: Embodied

    @property
    def host_share(self) -> float:
        """Fraction of the host server this instance occupies (by vCPUs)."""
        return self.spec.vcpus / self.embodied.host_vcpus


class CpuPower(_Row):
    min_w_per_vcpu: float = Field(ge=0)
    max_w_per_vcpu: float = Field(gt=0)


class Region(_Row):
    name: str
    us_state: str | None = None  # eGRID state (codecarbon usa_emissions.json key)
    province: str | None = None  # Canadian province (codecarbon canada_energy_mix.json key)
    zone: str | None = None  # Nordic bidding zone (codecarbon nordic_emissions.json key)
    country: str | None = None  # ISO-3 country


class Catalog(_Row):
    """Everything the catalog holds, validated."""

    version: str
    instances: dict[str, Instance]
    accelerators: dict[str, Accelerator]
    cpu_power: dict[str, CpuPower]
    cpu_power_source: Sourced
    regions: dict[str, Region]

    def instance(self, name: str, where: str = "") -> Instance:
        """The instance ``name``; unknown names suggest the nearest known ones."""
        try:
            return self.instances[name]
        except KeyError:
            raise UnknownNameError("instance type", name, self.instances, where) from None

    def region(self, name: str, where: str = "") -> Region:
        """The region ``name``; unknown names list the known ones."""
        try:
            return self.regions[name]
        except KeyError:
            raise UnknownNameError("region", name, self.regions, where) from None

    def accelerator_of(self, inst: Instance) -> Accelerator | None:
        """The accelerator an instance carries, or None for a CPU instance."""
        return self.accelerators[inst.spec.accelerator] if inst.spec.accelerator else None

    def cpu_power_of(self, inst: Instance) -> CpuPower:
        """Per-vCPU power coefficients for the instance's CPU."""
        return self.cpu_power[inst.spec.cpu_microarchitecture]


def supported_dtypes(acc: Accelerator) -> str:
    """The data types an accelerator has a published peak for."""
    return ", ".join(d for d, v in acc.peak_tflops.items() if v) or "none published"


def local_instance(region: str, price_usd_per_h: float | None) -> Instance:
    """This host as an instance: its vCPUs and memory; price as given (none if not: its cost is then
    empty, ``planning.configs._price``); no embodied figure."""
    import os
    import platform

    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    here = {"source": "this host (os.cpu_count, sysconf)", "as_of": "measured at run time"}
    return Instance.model_validate(dict(
        name="local",
        spec={**here, "vcpus": os.cpu_count() or 1, "memory_gib": round(mem_gib, 2),
              "accelerator": None, "accelerator_count": 0, "network_gbps": 1.0,
              "network_up_to": True, "cpu": platform.processor() or platform.machine(),
              "cpu_microarchitecture": "default"},
        price_usd_per_h={"regions": {region: price_usd_per_h} if price_usd_per_h else {},
                         "source": "scenario price_usd_per_h" if price_usd_per_h else
                         "no price for the local host", "as_of": "run time"},
        embodied={"server": "local", "server_kgco2e": 0.0, "host_vcpus": os.cpu_count() or 1,
                  "source": "unknown for the local host: counted as 0", "as_of": "run time"},
    ))


FILES = ("instances.yaml", "accelerators.yaml", "regions.yaml")


@functools.cache
def load_catalog() -> Catalog:
    """The packaged catalog, validated (kept in memory, and on disk by ecobench.io.datacache)."""
    texts = [resources.files("ecobench.hardware").joinpath(f"data/{n}").read_text(encoding="utf-8")
             for n in FILES]
    return cached("catalog", texts, Catalog, lambda: _validate(*(load_packaged(t) for t in texts)))


def _validate(inst: dict[str, Any], acc: dict[str, Any], reg: dict[str, Any]) -> Catalog:
    cpu = acc["cpu_power"]
    return Catalog.model_validate(dict(
        version=inst["catalog_version"],
        instances={k: {"name": k, **v} for k, v in inst["instances"].items()},
        accelerators=acc["accelerators"],
        cpu_power=cpu["microarchitectures"],
        cpu_power_source={"source": cpu["source"], "as_of": cpu["as_of"]},
        regions=reg["regions"],
    ))


def chip_max_range(chip: str) -> tuple[float, float, float]:
    """(low, central, high) maximum W of a catalog chip whose power is an evidence range."""
    accs = load_catalog().accelerators
    ranged = sorted(k for k, a in accs.items() if a.power.uncertain)
    if chip not in ranged:
        raise InputError(f"--chip {chip!r}: allowed: {', '.join(ranged)} (or give --max-w)")
    p = accs[chip].power
    assert p.low_w is not None and p.high_w is not None
    return p.low_w, p.max_w, p.high_w
