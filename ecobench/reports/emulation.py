"""`ecobench emulate`: the per-kernel NeuronCore breakdown of a scenario's Neuron configurations."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ecobench.errors import BackendError, EcobenchError, InputError
from ecobench.hardware.backends import BACKENDS, Job
from ecobench.hardware.backends.efficiency import current_fit
from ecobench.hardware.backends.emulated import aggregate_kernels, device_of, step_evaluator
from ecobench.hardware.catalog import Catalog, Instance, load_catalog
from ecobench.hardware.neuron.arch import DEVICES
from ecobench.io.rundir import atomic_dir, target_dir
from ecobench.planning.configs import config_catalog, locate
from ecobench.planning.jobs import make_job
from ecobench.planning.modes.inference import memory_fit, memory_refusal
from ecobench.planning.modes.training import training_device_refusal
from ecobench.planning.training import plan
from ecobench.scenario.model import LOCAL_INSTANCE, HardwareConfig, Scenario


def _training_job(s: Scenario, cfg: HardwareConfig, inst: Instance, cat: Catalog) -> Job:
    """The first phase's training job with the configuration's layout (``auto``: searched with the
    emulated step model; a deadline: the analytic model's cluster size, at the vendor's fitted
    efficiency whatever the configuration's ``stack``, as the breakdown has always had it)."""
    tr = s.workload.training
    assert tr is not None
    arch = s.workload.arch()
    decoder = arch.kind == "decoder"
    acc = cat.accelerator_of(inst)
    assert acc is not None
    eff = current_fit().efficiency(acc.vendor, "training", inst.spec.accelerator)
    evaluator = step_evaluator(inst, cat) if cfg.instances is not None else None
    tp = plan(tr, arch, cfg, inst, cat, evaluator or eff)
    ph = tr.phases[0]
    return make_job(scenario=s, config=cfg, mode="training", seq_len=ph.seq_len,
                    batch_size=tp.layout.microbatch, instances=tp.instances,
                    global_batch_size=tr.global_batch(ph, decoder), layout=tp.layout)


def emulate_scenario(s: Scenario) -> dict[str, Any]:
    """Per configuration with a Neuron device: throughput, engine utilisation, numeric error and
    the per-kernel breakdown (training: one micro-batch on the busiest pipeline stage, every layer)
    of the first (or only) sequence-length phase."""
    cat = load_catalog()
    backend = BACKENDS["emulated"]
    w = s.workload
    if w.serving:
        raise InputError("workload.serving: ecobench emulate breaks down inference and training "
                         "scenarios; a serving scenario's plan is in `ecobench run`'s results")
    configs = []
    for index, cfg in enumerate(s.configs):
        if cfg.instance_type == LOCAL_INSTANCE:
            continue
        inst = cat.instance(cfg.instance_type)
        if inst.spec.accelerator not in DEVICES:
            if cfg.backend == "emulated":  # as `run` refuses it
                try:
                    device_of(inst)
                except BackendError as exc:
                    raise locate(InputError(str(exc)).in_config("backend"), cfg, index) from None
            continue
        try:  # the chip at the configuration's logical NeuronCore setting, as `ecobench run` plans it
            cfg_cat = config_catalog(cat, inst, cfg)
        except EcobenchError as exc:
            raise locate(exc, cfg, index) from None
        if w.inference:
            batch = cfg.batch_size or w.inference.batch_size
            try:  # as `ecobench run` refuses it
                memory_refusal(memory_fit(s, cfg, inst, cfg_cat, BACKENDS, batch), w.inference, cfg, inst,
                               cfg_cat, batch)
            except EcobenchError as exc:
                locate(exc, cfg, index)
                raise
            job = make_job(scenario=s, config=cfg, mode="inference", seq_len=w.inference.seq_len,
                           batch_size=batch)
        else:
            try:
                training_device_refusal(inst)
                job = _training_job(s, cfg, inst, cfg_cat)
            except EcobenchError as exc:
                locate(exc, cfg, index)
                raise
        try:
            perf = backend.evaluate(job, inst, cfg_cat)
        except BackendError as exc:  # named as `ecobench run` names it
            raise locate(exc.in_config(by_id=True, detail=True), cfg, index) from None
        dev = device_of(inst, cfg_cat)
        step, engine = perf.step, perf.engine
        assert engine is not None  # the emulated backend reports its engines
        configs.append({
            "config_id": cfg.id, "instance_type": cfg.instance_type, "precision": cfg.precision,
            "seq_len": job.seq_len, "batch_size": job.batch_size,
            "layout": job.layout.describe() if job.layout else None, "instances": job.instances,
            "throughput_per_instance_per_s": perf.throughput_per_instance_per_s,
            "throughput_per_chip_per_s": perf.throughput_per_instance_per_s / inst.spec.accelerator_count,
            "throughput_per_core_per_s": perf.throughput_per_instance_per_s
            / (inst.spec.accelerator_count * dev.cores),
            "step_s": step["step_s"] if step is not None else None,
            "mfu": step["mfu"] if step is not None else None,
            "numeric_format": engine.numeric_format, "numeric_error": perf.numeric_error,
            "engine_utilization": engine.engine_utilization,
            "kernels": aggregate_kernels(engine.kernels),
            "method": perf.method,
        })
    if not configs:
        raise InputError("no configuration runs on an Inf1, Inf2, Trn1 or Trn2 instance")
    return {"scenario": s.name, "mode": w.mode, "configs": configs}


def print_breakdown(report: dict[str, Any]) -> None:
    for c in report["configs"]:
        layout = f", {c['layout']} on {c['instances']} instances" if c.get("layout") else ""
        step = f", step {c['step_s']:.3g} s, MFU {c['mfu']:.1%}" if c.get("step_s") else ""
        print(f"\n{c['config_id']}: {c['instance_type']} {c['numeric_format']}, seq {c['seq_len']}, "
              f"batch {c['batch_size']}{layout}{step}: {c['throughput_per_instance_per_s']:,.4g} samples/s "
              f"per instance ({c['throughput_per_chip_per_s']:,.4g} per chip, "
              f"{c['throughput_per_core_per_s']:,.4g} per core); "
              f"layer error vs FP32 {c['numeric_error']:.2e}")
        print("  engines busy: " + ", ".join(f"{e} {u:.0%}" for e, u in c["engine_utilization"].items()))
        print(f"  {'kernel':<34} {'engine':<7} {'count':>5} {'time us':>10} {'util':>6}  bound")
        for k in sorted(c["kernels"], key=lambda k: -k["time_us"]):
            print(f"  {k['kernel']:<34} {k['engine']:<7} {k['count']:>5} {k['time_us']:>10.1f} "
                  f"{k['utilization']:>6.0%}  {k['bound']}")


def write_emulation(s: Scenario, report: dict[str, Any], root: Path, out: Path | None,
                    final: Path | None = None) -> Path:
    """Write emulation.json and kernels.csv into a new run directory, atomically; ``final`` is the
    directory where the caller has already asked :func:`target_dir` for it."""
    if final is None:
        final = target_dir(root, s.name, out)
    buf = io.StringIO()
    wr = csv.DictWriter(buf, ["config_id", "kernel", "phase", "engine", "bound", "count", "time_us",
                              "utilization"])
    wr.writeheader()
    for c in report["configs"]:
        for k in c["kernels"]:
            wr.writerow({"config_id": c["config_id"], **k})
    with atomic_dir(final) as tmp:
        (tmp / "emulation.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        (tmp / "kernels.csv").write_text(buf.getvalue(), encoding="utf-8")
    return final
