"""One configuration of a scenario -> its result row (or, for a sweep group, a row of arrays)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from ecobench.bounds import MAX_INSTANCES
from ecobench.errors import EcobenchError, InputError
from ecobench.hardware.backends import Backend
from ecobench.hardware.backends.disagreement import backend_disagreement
from ecobench.hardware.catalog import Catalog, DeviceMemory, Instance, local_instance
from ecobench.hardware.lnc import describe_lnc, given_lnc, lnc_of, lnc_options
from ecobench.hardware.prices import on_demand_price, priced_regions
from ecobench.hardware.spot import spot_label, spot_price, spot_regions
from ecobench.planning.interruption import SpotTerms
from ecobench.planning.jobs import capabilities
from ecobench.planning.modes import ConfigRun, mode_for, refuse
from ecobench.planning.plan import Context, PlanResult, activity, measured_host
from ecobench.power.basis import config_basis, from_scenario
from ecobench.power.carbon import GridIntensity, grid_intensity
from ecobench.power.draw import PowerSetup
from ecobench.power.setup import power_setup, uncertain_setup
from ecobench.scenario.model import LOCAL_INSTANCE, HardwareConfig, Scenario
from ecobench.units import CCF_AWS_PUE

ErrorPool = Literal["inference", "training", "serving", "emulated", "moe_training"]


def pricing_model(s: Scenario, cfg: HardwareConfig) -> str:
    """on_demand or spot: the configuration's own, else the scenario's."""
    return cfg.pricing or s.pricing.model


def spot_terms(s: Scenario, cfg: HardwareConfig) -> SpotTerms | None:
    """What interruptions cost this configuration (None: on-demand)."""
    if pricing_model(s, cfg) != "spot":
        return None
    p = s.pricing
    return SpotTerms(p.spot_interruption_pct_per_month, p.checkpoint_interval_h, p.restart_h)


def _price(s: Scenario, cfg: HardwareConfig, inst: Instance, region: str) -> tuple[float, str]:
    """(USD per instance-hour, its source): the scenario's, the catalog's or the regional snapshot's
    on-demand price; for spot, a given discount off it, else the spot snapshot's price."""
    if cfg.price_usd_per_h is not None:
        return cfg.price_usd_per_h, "scenario price_usd_per_h"
    if cfg.instance_type == LOCAL_INSTANCE:  # no sourced price: not free (it ranked first on cost)
        return float("nan"), "no price for the local host: set price_usd_per_h (cost columns empty)"
    spot = pricing_model(s, cfg) == "spot"
    if spot and s.pricing.spot_discount_pct is None:
        found_spot = spot_price(inst.name, region)
        if found_spot is None:
            where = spot_regions(inst.name)
            raise InputError(f"the spot snapshot has no spot price for {inst.name} in "
                             f"{region} (regions with one: {', '.join(where) or 'none'}); give "
                             "pricing.spot_discount_pct, price_usd_per_h or a region listed") \
                .in_config(by_id=True)
        return found_spot, spot_label()
    found = on_demand_price(inst, region)
    if found is None and not priced_regions(inst):  # no sourced price anywhere: cost stays empty
        return float("nan"), "no sourced price in any region (cost columns empty)"
    if found is None:
        raise InputError(f"no on-demand price for {cfg.instance_type} in {region} "
                         f"(priced regions: {', '.join(priced_regions(inst))}); set price_usd_per_h") \
            .in_config(by_id=True)
    price, source = found
    if spot:
        assert s.pricing.spot_discount_pct is not None
        price *= 1 - s.pricing.spot_discount_pct / 100
        source += f", spot at {s.pricing.spot_discount_pct:g}% off"
    return price, source


@dataclass(frozen=True)
class Cells:
    """A sweep group's regions and headrooms, evaluated in one call: prices and grid intensities
    are arrays of shape (1, regions), headrooms of shape (headrooms, 1), and every figure broadcasts."""

    regions: list[str]
    utils: Any  # np.ndarray (headrooms, 1); the workload's max_utilization where the sweep has none
    price_usd_per_h: Any  # np.ndarray (1, regions)
    price_source: list[str]
    grid: GridIntensity  # g_per_kwh an array (1, regions); source and year per region in lists


def overridden(inst: Instance, cfg: HardwareConfig, index: int = 0) -> Instance:
    """``inst`` with the configuration's ``network_gbps`` and ``device_memory_gib`` in place of the
    catalog's (a cluster the catalog does not describe); each override names itself as the source."""
    spec = inst.spec
    changes: dict[str, Any] = {}
    where = f"scenario override configs[{index}]"
    if cfg.network_gbps is not None:
        changes["network_gbps"] = cfg.network_gbps
        changes["network_up_to"] = False
    if cfg.device_memory_gib is not None:
        if spec.accelerator is None:
            raise InputError(f"{inst.name} has no accelerator whose memory to override") \
                .in_config("device_memory_gib")
        changes["accelerator_memory"] = DeviceMemory(
            gib=cfg.device_memory_gib, source=f"{where}.device_memory_gib", as_of="scenario")
    if not changes:
        return inst
    return inst.model_copy(update={"spec": spec.model_copy(update=changes)})


def locate(exc: EcobenchError, cfg: HardwareConfig, index: int) -> EcobenchError:
    """``exc`` with the configuration's location in front of its message, where it is about the
    configuration (``EcobenchError.in_config``); once: a located error is left alone."""
    if exc.config_field is None:
        return exc
    where = f"configs[{cfg.id if exc.config_by_id else index}]"
    where += f".{exc.config_field}" if exc.config_field else ""
    given = "precision" in cfg.model_fields_set  # fp32 by default: a chip without it was a puzzle
    dtype = cfg.precision if given else f"{cfg.precision}, the default: no precision given"
    where += f" ({cfg.instance_type}, {dtype})" if exc.config_detail else ""
    exc.args = (f"{where}: {exc}",)
    exc.config_field = None
    return exc


def config_catalog(catalog: Catalog, inst: Instance, cfg: HardwareConfig) -> Catalog:
    """The catalog as the configuration sees it: its chip at the configuration's logical NeuronCore
    setting (``lnc``; ``hardware/lnc.py``), else ``catalog`` itself. Bad input for a setting the chip
    does not offer (``given_lnc``)."""
    try:
        return given_lnc(catalog, inst.spec.accelerator, inst.name, cfg.lnc)
    except InputError as exc:
        raise exc.in_config("lnc") from None


def _setup(s: Scenario, cfg: HardwareConfig, catalog: Catalog,
           index: int) -> tuple[str, Instance, str, PowerSetup, Catalog]:
    """The configuration's region, instance (with its overrides), power basis, draw inputs and catalog
    (:func:`config_catalog`)."""
    region = cfg.region or s.region
    inst = (local_instance(region, cfg.price_usd_per_h) if cfg.instance_type == LOCAL_INSTANCE
            else overridden(catalog.instance(cfg.instance_type), cfg, index))
    catalog = config_catalog(catalog, inst, cfg)
    acc_override = s.overrides.accelerator_power_w.get(inst.spec.accelerator or "")
    override = (acc_override.idle_w, acc_override.max_w) if acc_override else None
    basis = config_basis(s, cfg)
    try:
        power = power_setup(catalog, inst, override, cfg.host_cpu_utilization, cfg.measured_power_w,
                            cfg.measured_power_scope, basis)
    except InputError as exc:  # tdp on a chip without a datasheet TDP: say where the basis came from
        raise from_scenario(exc, s, cfg) from None
    return region, inst, basis, power, catalog


def check_config(s: Scenario, cfg: HardwareConfig, catalog: Catalog, backends: Mapping[str, Backend],
                 index: int = 0) -> None:
    """The checks of one configuration that need no evaluation, with the messages the evaluation
    gives: its instance and overrides, power basis, price, backend and its mode's preconditions
    (``modes.refusal``). Run for every configuration before the first is evaluated, so a bad one
    late in ``configs`` is refused before minutes of work on the others."""
    region, inst, _, _, catalog = _setup(s, cfg, catalog, index)
    _price(s, cfg, inst, region)
    refuse(s, cfg, inst, catalog, backends)


def evaluate_config(s: Scenario, cfg: HardwareConfig, catalog: Catalog,
                    backends: Mapping[str, Backend], index: int = 0,
                    cells: Cells | None = None) -> PlanResult:
    """One result row for one configuration; with ``cells``, one row of arrays for a sweep group (no
    Monte Carlo: the sweep's shown rows get their bands from a second, scalar evaluation). The
    workload's mode (``planning/modes``) gives the jobs, the plan and its columns."""
    region, inst, basis, power, catalog = _setup(s, cfg, catalog, index)
    if cells is None:
        price, price_source = _price(s, cfg, inst, region)
        grid = grid_intensity(catalog, region, s.overrides.grid_g_per_kwh)
        errors = _throughput_mode(s, cfg, backends)
        uncertain = uncertain_setup(catalog, inst, power, grid, region, price, errors,
                                    f"{s.workload.mode}:{inst.spec.accelerator}:{cfg.precision}",
                                    s.pue == CCF_AWS_PUE)
        ctx = Context(catalog, inst, price, grid, s.pue, power, uncertain, spot_terms(s, cfg))
        utilization: Any = cfg.max_utilization
    else:
        price_source: Any = cells.price_source  # type: ignore[no-redef]
        ctx = Context(catalog, inst, cells.price_usd_per_h, cells.grid, s.pue, power, None,
                      spot_terms(s, cfg))
        utilization = cells.utils
    run = ConfigRun(s, cfg, index, inst, catalog, backends, ctx, utilization, cells is not None)
    mode = mode_for(run)
    jobs = mode.jobs()
    perfs = mode.performances(jobs)
    result = mode.plan(perfs)
    if cells is None:
        _within_instances_bound(s, result.row.get("instances"))
        profile = result.row.get("profile")
        if profile and profile["hourly"]["static_instances"] > MAX_INSTANCES \
                and cfg.id not in {c.id for c in s.configs}:
            # a sweep's combination shown: no day (a combination over the bound is skipped, not refused)
            result.row.update({k: None if k == "profile" else float("nan")
                               for k in result.row if k.startswith("profile")})
        elif profile:  # the day's busiest hour is planned too
            _within_instances_bound(s, profile["hourly"]["static_instances"],
                                    "the load profile's busiest hour ")
    extra = mode.columns(perfs, result)
    head = {
        "config_id": cfg.id,
        "instance_type": cfg.instance_type,
        "accelerator": inst.spec.accelerator or "none",
        "accelerator_count": inst.spec.accelerator_count,
        # a chip with a logical NeuronCore setting (Trainium2) planned by a backend: the setting planned
        # at, its default included (a measured or supplied figure's setting is not known)
        **({"lnc": lnc_of(catalog, inst.spec.accelerator)} if lnc_options(inst.spec.accelerator)
           and cfg.measured_throughput_per_s is None and cfg.measured_serving is None else {}),
        "backend": "supplied" if cfg.measured_throughput_per_s is not None
        else "measured" if cfg.measured_serving is not None else cfg.backend,
        "precision": cfg.precision,
        "provenance": perfs[0].provenance,
        "method": " | ".join(dict.fromkeys(p.method for p in perfs))
        + (f" | {describe_lnc(catalog, inst.spec.accelerator)}" if cfg.lnc is not None else ""),
        "region": region if cells is None else cells.regions,
        "grid_source": ctx.grid.source,
        "grid_year": ctx.grid.year,
        "price_source": price_source,
        "numeric_error": perfs[0].numeric_error,
        "is_baseline": cfg.id == s.baseline,
        "headline_scope": s.headline_scope,
        "draw_basis": activity(perfs[0]).source,
        "power_basis": "measured" if basis == "modelled" and measured_host(ctx, perfs[0]) else basis,
    }
    disagreement = backend_disagreement(jobs, perfs, inst, catalog)
    mc = None if result.mc is None else replace(result.mc, config_id=cfg.id)
    return PlanResult(head | result.row | extra | mode.backend_columns(perfs)
                      | {"backend_disagreement": disagreement}, mc)


def _within_instances_bound(s: Scenario, instances: Any, what: str = "") -> None:
    """Bad input where the plan (``what``: the load profile's busiest hour) needs more instances than
    ecobench plans (``bounds.MAX_INSTANCES``, README "Input bounds"): a rate that needs them is
    beyond what the model is meant for."""
    if instances is None or float(instances) <= MAX_INSTANCES:
        return
    rate = {"serving": "workload.serving.requests_per_h", "inference": "workload.inference.rate_per_h"}
    where = rate.get(s.workload.mode, "")
    if what and where:
        where = f"{where} or {where.rsplit('.', 1)[0]}.profile"
    lower = f"lower {where} or " if where else ""
    raise InputError(f"{what}needs {float(instances):,.0f} instances, above the "
                     f"{MAX_INSTANCES:,} instances a plan may have (README 'Input bounds'); "
                     f"{lower}use a larger instance").in_config(by_id=True, detail=True)


def _throughput_mode(s: Scenario, cfg: HardwareConfig, backends: Mapping[str, Backend]) -> ErrorPool | None:
    """Which out-of-sample errors band this configuration's throughput (None: supplied or measured):
    a mixture-of-experts model's training, the held-out errors of the published MoE runs."""
    pool = capabilities(cfg, backends).throughput_errors(s.workload.mode)
    if pool == "training" and s.workload.arch().moe is not None:
        pool = "moe_training"
    return cast(ErrorPool | None, pool)


