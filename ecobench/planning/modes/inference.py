"""Inference at a rate: the fewest instances that serve the rate within the headroom (and the
latency target), one job at the configuration's batch size; a load profile's strategies."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ecobench.errors import BackendError, InputError
from ecobench.hardware.backends import Backend, Job, Performance
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.parallel.memory import rank_word
from ecobench.planning.inference_memory import batch_memory, device_memory_gib
from ecobench.planning.jobs import backend_for, capabilities, make_job
from ecobench.planning.modes.base import ConfigRun, ModeBase, with_activity
from ecobench.planning.plan import PlanResult, plan_inference
from ecobench.planning.samples import BASIS_FRACTIONAL, at_repetition
from ecobench.power.uncertainty import BAND_METRICS_INFERENCE
from ecobench.scenario.model import HardwareConfig, InferenceSpec, Scenario


def memory_fit(s: Scenario, cfg: HardwareConfig, inst: Instance, catalog: Catalog,
               backends: Mapping[str, Backend], batch: int) -> tuple[int, float, float] | None:
    """The largest batch that fits a rank's memory, what ``batch`` needs and what the rank has, in
    GiB (``planning/inference_memory.py``); None where the throughput is supplied or measured, or the
    catalog has no memory figure for the device."""
    spec = s.workload.inference
    assert spec is not None
    if capabilities(cfg, backends).error_model is None:
        return None
    device = device_memory_gib(catalog, inst, cfg.precision)
    if device is None:
        return None
    mem = batch_memory(s.workload.arch(), spec.seq_len, cfg.precision, device)
    return mem.largest_batch(), mem.need_gib(batch), device


def memory_refusal(fit: tuple[int, float, float] | None, spec: InferenceSpec, cfg: HardwareConfig,
                   inst: Instance, catalog: Catalog, batch: int) -> None:
    """Bad input where ``batch`` cannot fit one rank's memory (``fit``: :func:`memory_fit`'s); the
    same message from ``ecobench run`` and ``ecobench emulate``."""
    if fit is None or batch <= fit[0]:
        return
    largest, need, device = fit
    rank = rank_word(catalog.accelerator_of(inst))
    allowed = (f"allowed: at most {largest} (the largest batch that fits)" if largest else
               "no batch fits: the weights and workspace alone do not; use a device with more memory")
    own = bool(cfg.batch_size)  # the configuration's own batch size, else the workload's
    where = "" if own else f"configs[{cfg.id}], "
    text = (f"{batch} sequences of {spec.seq_len} tokens need {need:,.2f} GiB per {rank} on "
            f"{inst.name} ({where}{cfg.precision}: the weights and one layer's "
            f"activations), which has {device:,.2f} GiB; {allowed}")
    if own:
        raise InputError(text).in_config("batch_size", by_id=True)
    raise InputError(f"workload.inference.batch_size: {text}")


class InferenceMode(ModeBase):
    """Instances for a request rate (``plan_inference``)."""

    band_metrics = BAND_METRICS_INFERENCE
    samples_basis = BASIS_FRACTIONAL  # a measurement's per-repetition samples: fractional instances

    def __init__(self, run: ConfigRun) -> None:
        super().__init__(run)
        spec = run.scenario.workload.inference
        assert spec is not None
        self.spec: InferenceSpec = spec
        self.batch = run.config.batch_size or spec.batch_size

    def jobs(self) -> list[Job]:
        """One batch of the configuration's size, checked against device memory."""
        self._check_memory()
        return [self._job(self.batch)]

    @functools.cached_property
    def _memory_fit(self) -> tuple[int, float, float] | None:
        """The largest batch that fits a rank's memory, what ``self.batch`` needs and what the rank
        has, in GiB (``planning/inference_memory.py``); None where the throughput is supplied or
        measured, or the catalog has no memory figure for the device. Worked out once: the memory check
        and the batch candidates both read it."""
        r = self.run
        return memory_fit(r.scenario, r.config, r.instance, r.catalog, r.backends, self.batch)

    def _check_memory(self) -> None:
        """Bad input where the batch cannot fit one rank's memory."""
        r = self.run
        memory_refusal(self._memory_fit, self.spec, r.config, r.instance, r.catalog, self.batch)

    def _job(self, batch: int) -> Job:
        return make_job(scenario=self.run.scenario, config=self.run.config, mode="inference",
                        seq_len=self.spec.seq_len, batch_size=batch)

    def plan(self, perfs: list[Performance]) -> PlanResult:
        """Instances for the rate; with a load profile (not for a sweep group: the rows it shows get
        it from their own evaluation), its strategies."""
        r = self.run
        result = plan_inference(self.spec, perfs[0], r.ctx, self.batch, max_utilization=r.utilization)
        if self.spec.profile and not r.sweep_group:
            result.row |= self.profile_columns(perfs[0])
        return result

    def replan(self, perfs: list[Performance], i: int) -> dict[str, Any]:
        """The plan again as repetition ``i`` of a measurement saw it, with fractional instances."""
        return plan_inference(self.spec, at_repetition(perfs[0], i), self.run.ctx, self.batch,
                              whole_instances=False, max_utilization=self.run.utilization).row

    def profile_columns(self, perf: Performance) -> dict[str, Any]:
        """The load profile's strategies (``planning/profile.py``): ``profile`` (nested, results.json
        only) and its flat ``profile_*`` columns; the batch job at the most productive batch size the
        backend gives where asking again is cheap."""
        from ecobench.planning.profile import (
            BATCH_CANDIDATES,
            flat_columns,
            inference_fleet,
            profile_strategies,
        )

        r = self.run
        pairs = [(self.batch, perf)]
        fit = self._memory_fit
        if capabilities(r.config, r.backends).cheap:
            for b in (b for b in BATCH_CANDIDATES if b != self.batch and (fit is None or b <= fit[0])):
                job = self._job(b)
                try:
                    p = backend_for(r.config, r.backends).evaluate(job, r.instance, r.catalog)
                    pairs.append((b, with_activity(p, job, r.instance, r.catalog)))
                except BackendError:
                    continue  # a batch this configuration cannot run is no candidate
        fleet = inference_fleet(self.spec, perf, r.ctx, self.batch, pairs)
        assert self.spec.profile is not None
        out = profile_strategies(self.spec.profile.hourly(self.spec.rate_per_h), self.spec.profile.autoscale,
                                 fleet)
        return {"profile": out} | flat_columns(out)
