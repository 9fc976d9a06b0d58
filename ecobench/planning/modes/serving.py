"""LLM serving: prefill and decode on replicas of a tensor degree, the fewest instances that meet the
TTFT and TPOT targets (``planning/serving.py``); no backend jobs: the serving model is the analytic
one, fitted and held out on published serving points."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ecobench.errors import BackendError, InputError
from ecobench.hardware.backends import Backend, Job, Performance, Utilization
from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.backends.serve_bands import Regime, serving_band
from ecobench.hardware.catalog import Accelerator, Catalog, Instance
from ecobench.planning import serving_options
from ecobench.planning.jobs import backend_for, capabilities
from ecobench.planning.measured_serving import measured_serving_performance
from ecobench.planning.modes.base import ConfigRun, ModeBase
from ecobench.planning.plan import PlanResult, plan_serving
from ecobench.planning.serving import latency_at
from ecobench.planning.serving import plan as serve_plan
from ecobench.power.uncertainty import BAND_METRICS_SERVING
from ecobench.scenario.model import HardwareConfig, ServingSpec
from ecobench.units import DEFAULT_HOST_CPU_UTILIZATION, DEFAULT_REQUEST_BYTES_PER_TOKEN, SECONDS_PER_HOUR


def serving_refusal(cfg: HardwareConfig, inst: Instance, catalog: Catalog,
                    backends: Mapping[str, Backend]) -> Accelerator:
    """Bad input where the configuration cannot be served at all (no accelerator, or one no LLM
    stack runs on; a backend that does not plan serving; scheduler options of another scheduler; a
    quantization the chip has no peak for); else its accelerator. Needs no evaluation: checked for
    every configuration before the first is evaluated (``planning.configs.check_config``)."""
    acc = catalog.accelerator_of(inst)
    if acc is None:
        raise InputError(f"{inst.name} has no accelerator to serve an LLM on").in_config("instance_type")
    if (why := serving_options.llm_serving_refusal(inst.spec.accelerator)) is not None:
        raise InputError(f"{inst.name}: {why}").in_config("instance_type")
    if "serving" not in capabilities(cfg, backends).modes:
        raise InputError(f"backend {cfg.backend} does not plan serving; serving is planned with the "
                         "analytic model or the emulated NeuronCore (Neuron instances), or from a "
                         "measured benchmark (measured_serving)").in_config("backend")
    if cfg.scheduler != "continuous" and (cfg.max_num_batched_tokens is not None or not cfg.chunked_prefill):
        field = "max_num_batched_tokens" if cfg.max_num_batched_tokens is not None else "chunked_prefill"
        raise InputError(f"{field} applies to the continuous scheduler only, not {cfg.scheduler}; "
                         "drop it or use scheduler: continuous").in_config(field)
    if cfg.scheduler == "continuous" and not cfg.chunked_prefill and cfg.max_num_batched_tokens is not None:
        raise InputError("max_num_batched_tokens is the token budget of chunked prefill's steps; with "
                         "chunked_prefill: false each prompt is prefilled whole in a step of its own, so "
                         "it would be dropped; allowed: drop it, or chunked_prefill: true"
                         ).in_config("max_num_batched_tokens")
    if cfg.scheduler == "disaggregated" and acc.static_kv_cache:
        raise InputError(f"{inst.name}'s serving stack compiles static key/value caches, which the "
                         "disaggregated scheduler cannot hand between replicas; allowed here: continuous, "
                         "static").in_config("scheduler")
    if (bad := serving_options.storage_refusal(cfg.precision, cfg.weight_precision,
                                               cfg.kv_cache_precision)) is not None:
        raise InputError(bad[1]).in_config(bad[0])
    serving_options.quantization_refusal(acc, cfg.quantization)
    if cfg.quantization in serving_options.W8A8 and capabilities(cfg, backends).own_serving_model:
        # the backend's own timer (the emulated NeuronCore) runs every matmul at `precision`: it never
        # sees quantized_cluster's 8-bit peak, so W8A8 would be planned as weight-only storage
        raise InputError(f"{cfg.quantization} (W8A8, weight matmuls at the chip's 8-bit peak) is modelled "
                         f"by the analytic serving model only; backend {cfg.backend} runs every matmul at "
                         f"precision {cfg.precision}; allowed with backend: {cfg.backend}: weight_precision: "
                         "fp8 or int8 (weight-only, 1 byte per weight), quantization: int4, or none; or "
                         "backend: analytic").in_config("quantization")
    return acc


def serving_performance(run: ConfigRun,
                        spec: ServingSpec | None = None) -> tuple[Performance, dict[str, Any]]:
    """The serving plan of a configuration as a Performance (capacity per instance, accelerator
    activity at the planned load) and its own columns (``spec``: another rate or targets than the
    scenario's)."""
    s, cfg, inst, catalog = run.scenario, run.config, run.instance, run.catalog
    spec = spec or s.workload.serving
    assert spec is not None
    if cfg.measured_serving is not None:
        return measured_serving_performance(spec, cfg)
    acc = serving_refusal(cfg, inst, catalog, run.backends)
    caps = capabilities(cfg, run.backends)
    fit = current_fit()
    eff = fit.efficiency(acc.vendor, "serving", inst.spec.accelerator, cfg.stack)
    timer = None
    if caps.own_serving_model:
        try:
            timer = backend_for(cfg, run.backends).serving_timer(inst, catalog, cfg.stack)  # type: ignore[attr-defined]
        except BackendError as exc:
            raise exc.in_config("backend") from None
    sp = serve_plan(spec, s.workload.arch(), cfg, inst, catalog, eff,
                    0.0 if timer is not None else fit.request_overhead_s(acc.vendor, cfg.stack), timer)
    cpu = cfg.host_cpu_utilization if cfg.host_cpu_utilization is not None else DEFAULT_HOST_CPU_UTILIZATION
    capacity = sp.capacity_per_replica_per_s * sp.replicas_per_instance
    perf = Performance(
        capacity, Utilization(1.0, cpu, cpu, 0.0), "emulated" if timer is not None else "estimated",
        method=(("emulated NeuronCore " if timer is not None else "")
                + f"serving model, {sp.replicas} replicas of tensor {sp.tensor}"
                + (f" x pipeline {sp.pipeline}" if sp.pipeline > 1 else "")
                + (f" ({sp.replicas_per_instance} per instance), " if sp.replicas_per_instance >= 1
                   else f" ({round(1 / sp.replicas_per_instance)} instances each), ")
                + f"{sp.batch:.1f} requests in flight each "
                f"(of up to {sp.max_batch}); "
                f"prefill {sp.prefill_share:.0%} of the time; "
                + (f"{opts}; " if (opts := serving_options.describe(spec, cfg)) else "")
                + eff.source),
        network_bytes_per_sample=DEFAULT_REQUEST_BYTES_PER_TOKEN * (sp.workload.input_tokens
                                                                    + sp.workload.output_tokens),
        activity=sp.activity)
    assert sp.operating is not None
    latency = functools.partial(latency_at, sp.operating, spec.requests_per_h / SECONDS_PER_HOUR,
                                sp.capacity_per_replica_per_s, prefill_replicas=sp.prefill_replicas)
    regime = Regime("emulated" if timer is not None else "analytic", acc.vendor, sp.tensor, sp.batch)
    bands = (serving_band("output_tokens_per_s", regime), serving_band("ttft_ms", regime))
    return perf, {"instances": sp.instances, "busy": sp.busy, "latency": latency, "bands": bands,
                  "tensor_parallel": sp.tensor,
                  "replicas": sp.replicas, "replicas_per_instance": sp.replicas_per_instance,
                  "batch": sp.batch,
                  "max_batch": sp.max_batch, "scheduler": sp.scheduler,
                  "weight_precision": sp.workload.weight_dtype or sp.workload.dtype,
                  "kv_cache_precision": sp.workload.kv_dtype or sp.workload.dtype,
                  **({"prefill_replicas": sp.prefill_replicas, "decode_replicas": sp.decode_replicas}
                     if sp.prefill_replicas is not None else {}),
                  **sp.latency, "slo": sp.slo, "memory_per_device_gib": sp.memory_per_device_gib,
                  "accelerator_activity": sp.accelerator_activity, "layout_choice": sp.choice}


class ServingMode(ModeBase):
    """Instances for a request rate within the latency targets (``plan_serving``)."""

    band_metrics = BAND_METRICS_SERVING

    def __init__(self, run: ConfigRun) -> None:
        super().__init__(run)
        spec = run.scenario.workload.serving
        assert spec is not None
        self.spec: ServingSpec = spec
        self.extra: dict[str, Any] = {}

    def jobs(self) -> list[Job]:
        """None: the serving model times prefill and decode itself."""
        return []

    def performances(self, jobs: list[Job]) -> list[Performance]:
        """The serving model's capacity and activity at the planned load."""
        perf, self.extra = serving_performance(self.run)
        return [perf]

    def plan(self, perfs: list[Performance]) -> PlanResult:
        """Energy, cost and CO2 of the instances the serving model sized; a load profile's strategies."""
        p = perfs[0]
        result = plan_serving(self.spec, self.extra.pop("instances"), p.throughput_per_instance_per_s, p,
                              self.run.ctx, self.extra.pop("busy"), self.extra.pop("latency"),
                              self.extra.pop("bands", None))
        if self.spec.profile and not self.run.sweep_group:
            result.row |= self.profile_columns()
        return result

    def columns(self, perfs: list[Performance], result: PlanResult) -> dict[str, Any]:
        """Replicas, tensor degree, batch, TTFT and TPOT, memory per device, accelerator activity."""
        return self.extra

    def profile_columns(self) -> dict[str, Any]:
        """The load profile's strategies, each hour's fleet sized by the serving model at its rate."""
        from ecobench.planning.profile import flat_columns, profile_strategies, serving_fleet

        fleet = serving_fleet(self.spec, self.run.ctx, lambda spec: serving_performance(self.run, spec))
        profile = self.spec.profile
        assert profile is not None
        out = profile_strategies(profile.hourly(self.spec.requests_per_h), profile.autoscale, fleet)
        return {"profile": out} | flat_columns(out)
