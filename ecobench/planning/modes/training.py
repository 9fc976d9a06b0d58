"""Training: a layout and cluster size (given, searched, or the fewest instances for a deadline),
one job per sequence-length phase, the time to process the tokens, MFU and exposed communication."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ecobench.errors import BackendError, InputError
from ecobench.hardware.backends import Backend, Job, Performance
from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.catalog import Accelerator, Catalog, Instance
from ecobench.hardware.cluster import rank_peak_tflops, ranks_per_instance
from ecobench.parallel.step import Workload, model_flops_per_sequence
from ecobench.planning.jobs import backend_for, capabilities, make_job
from ecobench.planning.modes.base import ConfigRun, ModeBase
from ecobench.planning.plan import PlanResult, plan_training
from ecobench.planning.samples import BASIS_PLANNED, at_repetition
from ecobench.planning.training import TrainingPlan, instances_for_supplied, plan
from ecobench.power.uncertainty import BAND_METRICS_TRAINING, TrainingCase
from ecobench.scenario.model import LOCAL_INSTANCE, HardwareConfig, TrainingSpec
from ecobench.units import SECONDS_PER_HOUR

# No Neuron training library runs on Inferentia (inf1): "PyTorch NeuronX for training on Trn1 and Trn2 ...
# PyTorch Neuron for inference on Inf1" (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/
# neuron-intro/pytorch-setup/pytorch-install-prev.html, read 2026-11-29); its catalog entry also keeps
# activations on chip (an encoder's inference) and has no ZeRO limit, so a search chose ZeRO-3.
NO_TRAINING = {"inferentia": "Inferentia (inf1) runs no training: Neuron's training libraries "
                             "(torch-neuronx, NxD Training) target Trn1 and Trn2, and torch-neuron on "
                             "Inf1 is inference only"}


def training_device_refusal(inst: Instance) -> None:
    """Bad input (``instance_type``) where no training stack runs on the instance's accelerator."""
    why = NO_TRAINING.get(inst.spec.accelerator or "")
    if why is not None:
        raise InputError(f"{inst.name}: {why} (allowed: a trn1, trn2 or GPU instance)").in_config(
            "instance_type")


def training_refusal(cfg: HardwareConfig, inst: Instance, catalog: Catalog,
                     backends: Mapping[str, Backend]) -> Accelerator | None:
    """Bad input where the configuration's layout cannot be planned at all (a parallelism on the
    measured host or on an instance without accelerators; a deadline search by a backend that does
    not size clusters); else its accelerator, None where no layout is planned. Needs no evaluation:
    checked for every configuration before the first is evaluated (``planning.configs.check_config``)."""
    if cfg.instance_type == LOCAL_INSTANCE:
        if cfg.parallelism is not None:
            raise InputError("the measured host runs data parallel only").in_config("parallelism")
        return None
    training_device_refusal(inst)
    if cfg.measured_throughput_per_s is not None and cfg.instances is None:
        return None
    acc = catalog.accelerator_of(inst)
    if acc is None:
        if cfg.parallelism is not None:
            raise InputError(f"{inst.name} has no accelerator to split a model over").in_config("parallelism")
        return None
    if cfg.instances is None and not capabilities(cfg, backends).sizes_clusters:
        raise InputError(f"the deadline search uses the analytic model; give instances for backend "
                         f"{cfg.backend}").in_config("instances")
    return acc


def training_plan(run: ConfigRun) -> TrainingPlan | None:
    """The configuration's layout and cluster size (None for the measured host, and for a supplied
    throughput with a deadline, whose instances follow from the throughput)."""
    s, cfg, inst, catalog = run.scenario, run.config, run.instance, run.catalog
    tr = s.workload.training
    assert tr is not None
    acc = training_refusal(cfg, inst, catalog, run.backends)
    if acc is None:
        return None
    caps = capabilities(cfg, run.backends)
    eff = current_fit().efficiency(acc.vendor, "training", inst.spec.accelerator, cfg.stack)
    if caps.own_step_model and cfg.instances is not None:
        own = backend_for(cfg, run.backends).step_evaluator(inst, catalog)  # type: ignore[attr-defined]
        return plan(tr, s.workload.arch(), cfg, inst, catalog, own or eff)
    return plan(tr, s.workload.arch(), cfg, inst, catalog, eff)


def model_flops_utilization(flops: float, seconds: Any, ranks: float, peak_tflops: float) -> Any:
    """Model FLOPs over the cluster's peak for ``seconds`` (arrays too: the Monte Carlo's durations)."""
    return flops / (seconds * ranks * peak_tflops * 1e12)


class TrainingMode(ModeBase):
    """Time, energy, cost and CO2 of a training run on a cluster (``plan_training``)."""

    band_metrics = BAND_METRICS_TRAINING
    samples_basis = BASIS_PLANNED

    def __init__(self, run: ConfigRun) -> None:
        super().__init__(run)
        spec = run.scenario.workload.training
        assert spec is not None
        self.spec: TrainingSpec = spec
        self.arch = run.scenario.workload.arch()
        self.decoder = self.arch.kind == "decoder"
        self.tplan = training_plan(run)
        cfg = run.config
        self.mfu_inputs: tuple[float, float, float] | None = None  # model FLOPs, ranks, peak TFLOP/s
        self.instances = self.tplan.instances if self.tplan else \
            (cfg.instances or instances_for_supplied(spec, self.arch, cfg))

    def jobs(self) -> list[Job]:
        """One per sequence-length phase, at the layout's micro-batch on the cluster."""
        tr, cfg, tp = self.spec, self.run.config, self.tplan
        micro = tp.layout.microbatch if tp else (cfg.batch_size or tr.microbatch(self.decoder))
        return [make_job(scenario=self.run.scenario, config=cfg, mode="training", seq_len=phase.seq_len,
                         batch_size=micro, instances=self.instances,
                         global_batch_size=tr.global_batch(phase, self.decoder),
                         layout=tp.layout if tp else None) for phase in tr.phases]

    def plan(self, perfs: list[Performance]) -> PlanResult:
        """Phase by phase on the cluster."""
        phases = iter(perfs)
        return plan_training(self.spec, self.instances, lambda _phase: next(phases), self.run.ctx)

    def replan(self, perfs: list[Performance], i: int) -> dict[str, Any]:
        """The plan again as repetition ``i`` of a measurement saw it."""
        reps = iter([at_repetition(p, i) for p in perfs])
        return plan_training(self.spec, self.instances, lambda _phase: next(reps), self.run.ctx).row

    def columns(self, perfs: list[Performance], result: PlanResult) -> dict[str, Any]:
        """The layout, MFU, exposed communication, tokens, the global batch and the deadline."""
        tr, row = self.spec, result.row
        extra = self.training_columns(perfs, row)
        if result.mc is not None and isinstance(result.mc.case, TrainingCase) and self.mfu_inputs:
            flops, ranks, peak = self.mfu_inputs  # the Monte Carlo's MFU, from its own durations
            mfu = functools.partial(model_flops_utilization, flops, ranks=ranks, peak_tflops=peak)
            result.mc = replace(result.mc, case=replace(result.mc.case, mfu=mfu))
        extra["global_batch_size"] = tr.global_batch(tr.phases[0], self.decoder)  # sequences per step
        if tr.deadline_h is not None:
            extra["meets_deadline"] = bool(row["duration_h"] <= tr.deadline_h * (1 + 1e-9))
            extra["deadline_h"] = tr.deadline_h
        return extra

    def training_columns(self, perfs: list[Performance], row: dict[str, Any]) -> dict[str, Any]:
        """Layout, memory per device, MFU (model FLOPs over the cluster's peak, time-weighted over the
        phases), exposed communication, and the tokens processed."""
        tr, cfg, arch = self.spec, self.run.config, self.arch
        inst, catalog = self.run.instance, self.run.catalog
        tokens = sum(tr.phase_sequences(ph) * ph.seq_len for ph in tr.phases)
        out: dict[str, Any] = {"tokens": tokens, "tensor_parallel": None, "pipeline_parallel": None,
                               "data_parallel": None, "context_parallel": None, "zero_stage": None,
                               "offload": None, "recompute": None,
                               "microbatch": None, "memory_per_device_gib": None, "mfu": None,
                               "comm_overhead_pct": None, "layout_choice": None, "pipeline_schedule": None,
                               "virtual_stages": None, "expert_parallel": None, "idle_devices": None}
        acc = catalog.accelerator_of(inst)
        if acc is None:
            return out
        if self.tplan is not None:
            lay = self.tplan.layout
            out.update(tensor_parallel=lay.tensor, pipeline_parallel=lay.pipeline, data_parallel=lay.data,
                       context_parallel=lay.context, offload=lay.offload, zero_stage=lay.zero,
                       recompute=lay.recompute, microbatch=lay.microbatch,
                       memory_per_device_gib=self.tplan.memory_per_device_gib,
                       layout_choice=self.tplan.choice, pipeline_schedule=lay.schedule,
                       virtual_stages=lay.virtual, expert_parallel=lay.expert,
                       idle_devices=self.tplan.instances * ranks_per_instance(catalog, inst) - lay.ranks)
        flops = sum(model_flops_per_sequence(Workload(arch, ph.seq_len, tr.global_batch(ph, self.decoder),
                                                      cfg.precision, tr.task, tr.num_labels))
                    * tr.phase_sequences(ph) for ph in tr.phases)
        seconds = row["duration_h"] * SECONDS_PER_HOUR
        # the ranks the layout runs on: idle ones (idle_devices) do no model work, and counting them
        # read 72 idle of 200 A100s as an MFU of 0.358 for a layout whose ranks ran at 0.56
        ranks = self.tplan.layout.ranks if self.tplan is not None else \
            row["instances"] * ranks_per_instance(catalog, inst)
        try:
            peak = rank_peak_tflops(acc, cfg.precision)
        except BackendError:
            out["mfu"] = None
        else:
            out["mfu"] = model_flops_utilization(flops, seconds, ranks, peak)
            self.mfu_inputs = (flops, ranks, peak)
        steps = [p.step for p in perfs]
        if steps and all(st is not None for st in steps):
            shares = [st["comm_exposed_s"] / st["step_s"] for st in steps if st is not None]
            weights = [tr.phase_sequences(ph) / p.throughput_per_instance_per_s
                       for ph, p in zip(tr.phases, perfs, strict=True)]
            share = sum(a * b for a, b in zip(shares, weights, strict=True)) / sum(weights)
            out["comm_overhead_pct"] = 100.0 * share
        return out
