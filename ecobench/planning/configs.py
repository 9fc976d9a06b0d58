"""One configuration of a scenario -> its result row (or, for a sweep group, a row of arrays)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from ecobench.errors import BackendError, InputError
from ecobench.hardware.backends import Backend, Job, Performance, Utilization
from ecobench.hardware.backends.analytic import activity_of
from ecobench.hardware.backends.disagreement import backend_disagreement
from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import Catalog, Instance, local_instance
from ecobench.hardware.cluster import rank_peak_tflops, ranks_per_instance
from ecobench.hardware.prices import on_demand_price, priced_regions
from ecobench.hardware.spot import spot_label, spot_price, spot_regions
from ecobench.parallel.step import Workload, model_flops_per_sequence
from ecobench.planning.interruption import SpotTerms
from ecobench.planning.jobs import backend_for, capabilities, make_job
from ecobench.planning.plan import (
    Context,
    PlanResult,
    activity,
    plan_inference,
    plan_serving,
    plan_training,
)
from ecobench.planning.samples import BASIS_FRACTIONAL, BASIS_PLANNED, at_repetition, repetition_samples
from ecobench.planning.serving import plan as serve_plan
from ecobench.planning.training import TrainingPlan, instances_for_supplied, plan
from ecobench.power.carbon import GridIntensity, grid_intensity
from ecobench.power.setup import power_setup, uncertain_setup
from ecobench.scenario.model import LOCAL_INSTANCE, HardwareConfig, Phase, Scenario, ServingSpec
from ecobench.units import (
    CCF_AWS_PUE,
    DEFAULT_HOST_CPU_UTILIZATION,
    DEFAULT_REQUEST_BYTES_PER_TOKEN,
    SECONDS_PER_HOUR,
)
from ecobench.workloads.architecture import Architecture

ErrorPool = Literal["inference", "training", "serving", "emulated"]

def architecture(s: Scenario) -> Architecture:
    """The scenario's model: a preset, the inline architecture or its local config.json."""
    return s.workload.arch()


def supplied_performance(cfg: HardwareConfig, job: Job) -> Performance:
    """A throughput the scenario gives (e.g. measured elsewhere), at full accelerator load."""
    assert cfg.measured_throughput_per_s is not None
    cpu = cfg.host_cpu_utilization if cfg.host_cpu_utilization is not None \
        else DEFAULT_HOST_CPU_UTILIZATION
    return Performance(cfg.measured_throughput_per_s, Utilization(1.0, cpu, cpu, 0.0), "supplied",
                       "throughput supplied by the scenario (measured_throughput_per_s)",
                       network_bytes_per_sample=job.seq_len * DEFAULT_REQUEST_BYTES_PER_TOKEN)


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
    spot = pricing_model(s, cfg) == "spot"
    if spot and s.pricing.spot_discount_pct is None:
        found_spot = spot_price(inst.name, region)
        if found_spot is None:
            where = spot_regions(inst.name)
            raise InputError(f"configs[{cfg.id}]: the spot snapshot has no spot price for {inst.name} in "
                             f"{region} (regions with one: {', '.join(where) or 'none'}); give "
                             "pricing.spot_discount_pct, price_usd_per_h or a region listed")
        return found_spot, spot_label()
    found = on_demand_price(inst, region)
    if found is None and not priced_regions(inst):  # no sourced price anywhere: cost stays empty
        return float("nan"), "no sourced price in any region (cost columns empty)"
    if found is None:
        raise InputError(f"configs[{cfg.id}]: no on-demand price for {cfg.instance_type} in {region} "
                         f"(priced regions: {', '.join(priced_regions(inst))}); set price_usd_per_h")
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


def evaluate_config(s: Scenario, cfg: HardwareConfig, catalog: Catalog,
                    backends: Mapping[str, Backend], index: int = 0,
                    cells: Cells | None = None) -> PlanResult:
    """One result row for one configuration; with ``cells``, one row of arrays for a sweep group (no
    Monte Carlo: the sweep's shown rows get their bands from a second, scalar evaluation)."""
    region = cfg.region or s.region
    inst = (local_instance(region, cfg.price_usd_per_h) if cfg.instance_type == LOCAL_INSTANCE
            else catalog.instance(cfg.instance_type))
    arch = architecture(s)
    acc_override = s.overrides.accelerator_power_w.get(inst.spec.accelerator or "")
    override = (acc_override.idle_w, acc_override.max_w) if acc_override else None
    power = power_setup(catalog, inst, override, cfg.host_cpu_utilization, cfg.measured_power_w,
                        cfg.measured_power_scope)
    if cells is None:
        price, price_source = _price(s, cfg, inst, region)
        grid = grid_intensity(catalog, region, s.overrides.grid_g_per_kwh)
        errors = _throughput_mode(s, cfg, backends)
        uncertain = uncertain_setup(catalog, inst, power, grid, region, price, errors,
                                    f"{s.workload.mode}:{inst.spec.accelerator}:{cfg.precision}",
                                    s.pue == CCF_AWS_PUE)
        ctx = Context(catalog, inst, price, grid, s.pue, override, power, uncertain, spot_terms(s, cfg))
        utilization: Any = cfg.max_utilization
    else:
        price_source: Any = cells.price_source  # type: ignore[no-redef]
        ctx = Context(catalog, inst, cells.price_usd_per_h, cells.grid, s.pue, override, power, None,
                      spot_terms(s, cfg))
        utilization = cells.utils

    jobs: list[Job] = []

    def perf(job: Job) -> Performance:
        jobs.append(job)
        if cfg.measured_throughput_per_s is not None:
            return with_activity(supplied_performance(cfg, job), job, inst, catalog)
        backend = backend_for(cfg, backends)
        try:
            p = backend.evaluate(job, inst, catalog)
        except BackendError as exc:
            raise BackendError(f"configs[{cfg.id}] ({cfg.instance_type}, {cfg.precision}): {exc}") \
                from None
        return with_activity(p, job, inst, catalog)

    w = s.workload
    perfs: list[Performance] = []
    extra: dict[str, Any] = {}
    if w.inference:
        inf = w.inference
        batch = cfg.batch_size or inf.batch_size
        p = perf(make_job(scenario=s, config=cfg, mode="inference", seq_len=inf.seq_len, batch_size=batch))
        perfs.append(p)
        result = plan_inference(inf, p, ctx, batch, max_utilization=utilization)
    elif w.serving:
        p, extra = serving_performance(s, cfg, index, inst, catalog, backends)
        perfs.append(p)
        result = plan_serving(w.serving, extra.pop("instances"), p.throughput_per_instance_per_s, p, ctx,
                              extra.pop("busy"))
    else:
        tr = w.training
        assert tr is not None
        tplan = training_plan(s, cfg, index, inst, catalog, backends)
        n = tplan.instances if tplan else (cfg.instances or instances_for_supplied(tr, arch, cfg))
        decoder = arch.kind == "decoder"

        def phase_perf(phase: Phase) -> Performance:
            micro = tplan.layout.microbatch if tplan else (cfg.batch_size or tr.microbatch(decoder))
            p = perf(make_job(scenario=s, config=cfg, mode="training", seq_len=phase.seq_len,
                              batch_size=micro, instances=n,
                              global_batch_size=tr.global_batch(phase, decoder),
                              layout=tplan.layout if tplan else None))
            perfs.append(p)
            return p

        result = plan_training(tr, n, phase_perf, ctx)
        row = result.row
        extra = training_columns(s, cfg, inst, catalog, tplan, perfs, row)
        extra["global_batch_size"] = tr.global_batch(tr.phases[0], decoder)  # sequences per step, as used
        if tr.deadline_h is not None:
            extra["meets_deadline"] = bool(row["duration_h"] <= tr.deadline_h * (1 + 1e-9))
            extra["deadline_h"] = tr.deadline_h

    def replan(i: int) -> dict[str, Any]:
        """The plan again, every performance as repetition i saw it (fractional instances)."""
        reps = iter([at_repetition(p, i) for p in perfs])
        if w.inference:
            return plan_inference(w.inference, next(reps), ctx, batch, whole_instances=False,
                                  max_utilization=utilization).row
        assert w.training is not None
        return plan_training(w.training, n, lambda _phase: next(reps), ctx).row

    head = {
        "config_id": cfg.id,
        "instance_type": cfg.instance_type,
        "accelerator": inst.spec.accelerator or "none",
        "accelerator_count": inst.spec.accelerator_count,
        "backend": "supplied" if cfg.measured_throughput_per_s is not None else cfg.backend,
        "precision": cfg.precision,
        "provenance": perfs[0].provenance,
        "method": " | ".join(dict.fromkeys(p.method for p in perfs)),
        "region": region if cells is None else cells.regions,
        "grid_source": ctx.grid.source,
        "grid_year": ctx.grid.year,
        "price_source": price_source,
        "numeric_error": perfs[0].numeric_error,
        "is_baseline": cfg.id == s.baseline,
        "headline_scope": s.headline_scope,
        "draw_basis": activity(perfs[0]).source,
    }
    row = result.row
    if cells is None and (w.inference or w.serving) and \
            (w.inference or w.serving).profile:  # type: ignore[union-attr]
        # a sweep group's rows leave it out; the rows it shows get it from the scalar evaluation
        row |= profile_columns(s, cfg, index, inst, catalog, ctx, perfs[0], backends)
    mode = "inference" if w.inference else "training"
    backend = backend_columns(perfs, replan, mode) if not w.serving else {"measurement_method": None}
    disagreement = None if w.serving else backend_disagreement(jobs, perfs, inst, catalog)
    mc = None if result.mc is None else replace(result.mc, config_id=cfg.id)
    return PlanResult(head | row | extra | backend | {"backend_disagreement": disagreement}, mc)


def profile_columns(s: Scenario, cfg: HardwareConfig, index: int, inst: Instance, catalog: Catalog,
                    ctx: Context, perf: Performance, backends: Mapping[str, Backend]) -> dict[str, Any]:
    """The load profile's strategies (``planning/profile.py``): ``profile`` (nested, results.json
    only) and its flat ``profile_*`` columns."""
    from ecobench.planning.profile import (
        BATCH_CANDIDATES,
        flat_columns,
        inference_fleet,
        profile_strategies,
        serving_fleet,
    )

    w = s.workload
    if w.inference:
        inf = w.inference
        own = cfg.batch_size or inf.batch_size
        pairs = [(own, perf)]
        if capabilities(cfg, backends).cheap:  # ask again at the other batch sizes
            for b in (b for b in BATCH_CANDIDATES if b != own):
                job = make_job(scenario=s, config=cfg, mode="inference", seq_len=inf.seq_len, batch_size=b)
                try:
                    p = backend_for(cfg, backends).evaluate(job, inst, catalog)
                    pairs.append((b, with_activity(p, job, inst, catalog)))
                except BackendError:
                    continue  # a batch this configuration cannot run is no candidate
        fleet = inference_fleet(inf, perf, ctx, own, pairs)
        profile, rate = inf.profile, inf.rate_per_h
    else:
        sv = w.serving
        assert sv is not None
        fleet = serving_fleet(sv, ctx,
                              lambda spec: serving_performance(s, cfg, index, inst, catalog, backends, spec))
        profile, rate = sv.profile, sv.requests_per_h
    assert profile is not None
    out = profile_strategies(profile.hourly(rate), profile.autoscale, fleet)
    return {"profile": out} | flat_columns(out)


def serving_performance(s: Scenario, cfg: HardwareConfig, index: int, inst: Instance,
                        catalog: Catalog, backends: Mapping[str, Backend],
                        spec: ServingSpec | None = None) -> tuple[Performance, dict[str, Any]]:
    """The serving plan of a configuration as a Performance (capacity per instance, accelerator
    activity at the planned load) and its own columns (``spec``: another rate or targets than the
    scenario's)."""
    spec = spec or s.workload.serving
    assert spec is not None
    acc = catalog.accelerator_of(inst)
    if acc is None:
        raise InputError(f"configs[{index}].instance_type: {inst.name} has no accelerator to serve an LLM on")
    if "serving" not in capabilities(cfg, backends).modes:
        raise InputError(f"configs[{index}].backend: serving plans use the analytic model (fitted and held "
                         "out on published serving points); the emulated NeuronCore's serving steps are "
                         "not validated and measured or supplied serving throughput is not supported")
    fit = current_fit()
    eff = fit.efficiency(acc.vendor, "serving", inst.spec.accelerator, cfg.stack)
    sp = serve_plan(spec, s.workload.arch(), cfg, index, inst, catalog, eff,
                    fit.request_overhead_s(acc.vendor))
    cpu = cfg.host_cpu_utilization if cfg.host_cpu_utilization is not None else DEFAULT_HOST_CPU_UTILIZATION
    capacity = sp.capacity_per_replica_per_s * sp.replicas_per_instance
    perf = Performance(
        capacity, Utilization(1.0, cpu, cpu, 0.0), "estimated",
        method=(f"serving model, {sp.replicas} replicas of tensor {sp.tensor} "
                f"({sp.replicas_per_instance} per instance), {sp.batch:.1f} requests in flight each "
                f"(of up to {sp.max_batch}); "
                f"prefill {sp.prefill_share:.0%} of the time; {eff.source}"),
        network_bytes_per_sample=DEFAULT_REQUEST_BYTES_PER_TOKEN * (spec.input_tokens + spec.output_tokens),
        activity=sp.activity)
    return perf, {"instances": sp.instances, "busy": sp.busy, "tensor_parallel": sp.tensor,
                  "replicas": sp.replicas, "replicas_per_instance": sp.replicas_per_instance,
                  "batch": sp.batch,
                  "max_batch": sp.max_batch,
                  "ttft_ms": sp.ttft_ms, "ttft_p99_ms": sp.ttft_p99_ms, "tpot_ms": sp.tpot_ms,
                  "tpot_p99_ms": sp.tpot_p99_ms, "memory_per_device_gib": sp.memory_per_device_gib,
                  "accelerator_activity": sp.accelerator_activity, "layout_choice": sp.choice}


def _throughput_mode(s: Scenario, cfg: HardwareConfig, backends: Mapping[str, Backend]) -> ErrorPool | None:
    """Which out-of-sample errors band this configuration's throughput (None: supplied or measured)."""
    return cast(ErrorPool | None, capabilities(cfg, backends).throughput_errors(s.workload.mode))


def with_activity(p: Performance, job: Job, inst: Instance, catalog: Catalog) -> Performance:
    """``p`` with the accelerator activity the draw model needs (``Performance.activity``)."""
    if p.provenance != "measured":
        return replace(p, activity=activity_of(p, job, inst, catalog))
    return p


def training_plan(s: Scenario, cfg: HardwareConfig, index: int, inst: Instance,
                  catalog: Catalog, backends: Mapping[str, Backend]) -> TrainingPlan | None:
    """The configuration's layout and cluster size (None for the measured host, and for a supplied
    throughput with a deadline, whose instances follow from the throughput)."""
    tr = s.workload.training
    assert tr is not None
    if cfg.instance_type == LOCAL_INSTANCE:
        if cfg.parallelism is not None:
            raise InputError(f"configs[{index}].parallelism: the measured host runs data parallel only")
        return None
    if cfg.measured_throughput_per_s is not None and cfg.instances is None:
        return None
    acc = catalog.accelerator_of(inst)
    if acc is None:
        if cfg.parallelism is not None:
            raise InputError(f"configs[{index}].parallelism: {inst.name} has no accelerator to split "
                             "a model over")
        return None
    caps = capabilities(cfg, backends)
    if cfg.instances is None and not caps.sizes_clusters:
        raise InputError(f"configs[{index}].instances: the deadline search uses the analytic model; give "
                         f"instances for backend {cfg.backend}")
    eff = current_fit().efficiency(acc.vendor, "training", inst.spec.accelerator, cfg.stack)
    if caps.own_step_model and cfg.instances is not None:
        own = backend_for(cfg, backends).step_evaluator(inst)  # type: ignore[attr-defined]
        return plan(tr, s.workload.arch(), cfg, index, inst, catalog, own or eff)
    return plan(tr, s.workload.arch(), cfg, index, inst, catalog, eff)


def training_columns(s: Scenario, cfg: HardwareConfig, inst: Instance, catalog: Catalog,
                     tplan: TrainingPlan | None, perfs: list[Performance],
                     row: dict[str, Any]) -> dict[str, Any]:
    """Layout, memory per device, MFU (model FLOPs over the cluster's peak, time-weighted over the
    phases), exposed communication, and the tokens processed."""
    tr = s.workload.training
    assert tr is not None
    arch = s.workload.arch()
    decoder = arch.kind == "decoder"
    tokens = sum(tr.phase_sequences(ph) * ph.seq_len for ph in tr.phases)
    out: dict[str, Any] = {"tokens": tokens, "tensor_parallel": None, "pipeline_parallel": None,
                           "data_parallel": None, "zero_stage": None, "recompute": None, "microbatch": None,
                           "memory_per_device_gib": None, "mfu": None, "comm_overhead_pct": None,
                           "layout_choice": None}
    acc = catalog.accelerator_of(inst)
    if acc is None:
        return out
    if tplan is not None:
        lay = tplan.layout
        out.update(tensor_parallel=lay.tensor, pipeline_parallel=lay.pipeline, data_parallel=lay.data,
                   zero_stage=lay.zero, recompute=lay.recompute, microbatch=lay.microbatch,
                   memory_per_device_gib=tplan.memory_per_device_gib, layout_choice=tplan.choice)
    flops = sum(model_flops_per_sequence(Workload(arch, ph.seq_len, tr.global_batch(ph, decoder),
                                                  cfg.precision, tr.task, tr.num_labels))
                * tr.phase_sequences(ph) for ph in tr.phases)
    seconds = row["duration_h"] * SECONDS_PER_HOUR
    ranks = row["instances"] * ranks_per_instance(catalog, inst)
    try:
        out["mfu"] = flops / (seconds * ranks * rank_peak_tflops(acc, cfg.precision) * 1e12)
    except BackendError:
        out["mfu"] = None
    steps = [p.step for p in perfs]
    if steps and all(st is not None for st in steps):
        shares = [st["comm_exposed_s"] / st["step_s"] for st in steps if st is not None]
        weights = [tr.phase_sequences(ph) / p.throughput_per_instance_per_s
                   for ph, p in zip(tr.phases, perfs, strict=True)]
        share = sum(a * b for a, b in zip(shares, weights, strict=True)) / sum(weights)
        out["comm_overhead_pct"] = 100.0 * share
    return out


def backend_columns(perfs: list[Performance], replan: Callable[[int], dict[str, Any]],
                    mode: str) -> dict[str, Any]:
    """What only some backends give. Emulated: per-kernel timing and engine utilisation. Measured
    and projected: method, window, confidence interval, MFU, the host's load and the quality
    warnings, and per-repetition samples computed through the planner (``ecobench.planning.samples``)
    that the regression gate tests."""
    engine = perfs[0].engine
    if perfs[0].provenance == "emulated" and engine is not None:
        from ecobench.hardware.backends.emulated import aggregate_kernels

        return {"measurement_method": None, "kernels": aggregate_kernels(engine.kernels),
                "engine_utilization": engine.engine_utilization}
    m = perfs[0].measured
    if m is None:
        return {"measurement_method": None}
    measured = [p.measured for p in perfs if p.measured is not None]
    warnings = list(dict.fromkeys(w for x in measured for w in x.warnings))
    return {
        "measurement_method": m.method,
        "power_method": m.power_method,
        "energy_provenance": m.energy_provenance,
        "throughput_ci95_low": m.ci95_low,
        "throughput_ci95_high": m.ci95_high,
        "throughput_cv_pct": max((x.throughput_cv_pct or 0.0) for x in measured),
        "host_other_cpu_pct_before": max((x.other_cpu_pct_before or 0.0) for x in measured),
        "host_other_cpu_pct_during": max((x.other_cpu_pct_during or 0.0) for x in measured),
        "measurement_warnings": "; ".join(warnings) if warnings else None,
        "repetitions": len(m.throughput_samples_per_s),
        "window_start_utc": m.window_start_utc,
        "window_end_utc": m.window_end_utc,
        "host_gemm_tflops": m.host_gemm_tflops,
        "mfu": m.mfu,
        "samples_basis": BASIS_FRACTIONAL if mode == "inference" else BASIS_PLANNED,
        "samples": repetition_samples(perfs, replan),
    }


