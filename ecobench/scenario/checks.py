"""Checks of a validated scenario that the schema cannot make alone: names against the catalog and
presets, supplied figures against the chips they describe (a sweep's values and cost are checked by
the schema's own validator: :func:`ecobench.scenario.model.check_sweep`)."""


from pathlib import Path
from typing import Any

from ecobench.errors import EcobenchError, InputError, UnknownNameError
from ecobench.hardware.catalog import LOCAL_INSTANCE, load_catalog
from ecobench.scenario.model import (
    TRAINING_DTYPES,
    HardwareConfig,
    ParallelismSpec,
    Scenario,
    backend_capabilities,
)
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.presets import PRESETS, preset

__all__ = ["check_names", "unknown_chips"]


def check_names(s: Scenario, source: str) -> None:
    """Names the schema cannot know: instance types, regions, presets, data types per chip."""
    cat = load_catalog()
    try:
        unknown = []  # the preset, the regions and every override's key: all misspellings in one run
        if s.workload.model is not None and s.workload.model not in PRESETS:
            unknown.append(str(UnknownNameError("model preset", s.workload.model, PRESETS, "workload.model")))
        for region, where in [(s.region, "region"), *((r, f"overrides.grid_g_per_kwh.{r}")
                                                      for r in s.overrides.grid_g_per_kwh)]:
            try:
                cat.region(region, where)
            except UnknownNameError as exc:
                unknown.append(str(exc))
        unknown += unknown_chips({"accelerator_power_w": s.overrides.accelerator_power_w})
        if unknown:
            raise InputError("\n  ".join(["invalid scenario", *unknown]) if len(unknown) > 1 else unknown[0])
        arch = s.workload.arch()
        for i, c in enumerate(s.configs):
            _check_expert(c, arch, f"configs[{i}].parallelism.expert")
            _check_drafter(c, arch, f"configs[{i}].speculative")
            if (arch.moe or arch.mla) and not backend_capabilities(c.backend).experts:
                raise InputError(f"configs[{i}].backend: {c.backend} does not model mixture-of-experts "
                                 "layers or latent attention; allowed: analytic")
            if c.instance_type != LOCAL_INSTANCE:
                cat.instance(c.instance_type, f"configs[{i}].instance_type")
                _check_lnc(cat, c.instance_type, c.lnc, f"configs[{i}].lnc")
                _check_measured_power(s, c, cat, f"configs[{i}].measured_power_w")
                if s.workload.training and c.precision == "fp8":
                    _check_fp8(cat, c, f"configs[{i}].precision")
            if c.region:
                cat.region(c.region, f"configs[{i}].region")
            if c.stack is not None:
                from ecobench.hardware.backends.efficiency import fitted_stacks

                if c.stack not in fitted_stacks():
                    raise UnknownNameError("software stack", c.stack, fitted_stacks(), f"configs[{i}].stack")
        for key, check in (("instance_type", lambda v, where: cat.instance(v, where)),
                           ("region", lambda v, where: cat.region(v, where))):
            for i, v in enumerate((s.sweep or {}).get(key, [])):
                check(v, f"sweep.{key}[{i}]")
        base = s.config(s.baseline)
        if "instance_type" not in (s.sweep or {}) and base.instance_type != LOCAL_INSTANCE:
            for i, v in enumerate((s.sweep or {}).get("lnc", [])):
                _check_lnc(cat, base.instance_type, v, f"sweep.lnc[{i}]")
        w = s.workload
        seq_lens = ([("workload.inference.seq_len", w.inference.seq_len)] if w.inference
                    else [] if w.serving and w.serving.lengths_csv is not None  # each row is checked below
                    else [("workload.serving.input_tokens + output_tokens",
                           int(w.serving.input_tokens or 0) + int(w.serving.output_tokens or 0))] if w.serving
                    else [(f"workload.training.phases[{i}].seq_len", p.seq_len)
                          for i, p in enumerate(w.training.phases)])  # type: ignore[union-attr]
        for what, n in seq_lens:
            if n > arch.max_position_embeddings:
                raise InputError(f"{what}: {n} exceeds {arch.name}'s max_position_embeddings "
                                 f"({arch.max_position_embeddings}); allowed: at most "
                                 f"{arch.max_position_embeddings} tokens")
        if w.serving is not None and w.serving.lengths_csv is not None:
            from ecobench.io.lengths_csv import read_lengths_csv

            # every row, not only the means: a request longer than the context cannot be served
            read_lengths_csv(Path(w.serving.lengths_csv), "workload.serving.lengths_csv",
                             arch.max_position_embeddings, arch.name)
        if s.workload.inference and arch.kind == "decoder":
            raise InputError(f"workload.inference: {arch.name} is a decoder; inference models a fixed-size "
                             "forward pass of an encoder: use workload.serving for token-by-token generation")
        if s.workload.serving and arch.kind != "decoder":
            raise InputError(f"workload.serving: {arch.name} is an encoder; serving generates tokens with a "
                             "decoder: use workload.inference for an encoder")
    except EcobenchError as exc:
        raise InputError(f"{source}: {exc}") from None


def unknown_chips(overrides: object) -> list[str]:
    """One line for each key of ``overrides.accelerator_power_w`` (the scenario's, or the file's
    ``overrides`` as parsed, before its schema is checked) that is no catalog accelerator, with the
    nearest names: a scenario refused by its schema names them in the same run."""
    power = overrides.get("accelerator_power_w") if isinstance(overrides, dict) else None
    if not isinstance(power, dict):
        return []
    known = load_catalog().accelerators
    return [str(UnknownNameError("accelerator", key, known, f"overrides.accelerator_power_w.{key}"))
            for key in power if isinstance(key, str) and key not in known]


MEASURED_POWER_SLACK = 2.0  # a supplied draw this far below its chips' idle or above their maximum is refused


def _check_measured_power(s: Scenario, c: HardwareConfig, cat: Any, where: str) -> None:
    """A supplied draw in watts for every accelerator of one instance: a figure in kW (or mW) lands far
    outside what its chips can draw together (half their idle to twice their maximum; the instance
    scope: at least half their idle)."""
    if c.measured_power_w is None or c.measured_power_scope is None:
        return
    inst = cat.instance(c.instance_type)
    acc = cat.accelerator_of(inst)
    n = inst.spec.accelerator_count
    if acc is None or not n:
        return
    override = s.overrides.accelerator_power_w.get(inst.spec.accelerator or "")
    idle, top = ((override.idle_w, override.max_w) if override
                 else (acc.power.idle_w, max(acc.power.max_w, acc.power.high_w or 0.0)))
    low, high = n * idle / MEASURED_POWER_SLACK, n * top * MEASURED_POWER_SLACK
    w = c.measured_power_w

    def watts(x: float) -> str:
        return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"

    if c.measured_power_scope == "accelerator" and not low <= w <= high:
        raise InputError(f"{where}: {w:g} W is outside {watts(low)}-{watts(high)} W, half the idle to twice "
                         f"the maximum draw of the {n} {acc.name} of {c.instance_type} together; allowed: "
                         "watts for all of one instance's accelerators (measured_power_scope: accelerator; a "
                         "figure in kW is the usual cause)")
    if c.measured_power_scope == "instance" and w < low:
        raise InputError(f"{where}: {w:g} W is below {watts(low)} W, half the idle draw of the {n} "
                         f"{acc.name} of {c.instance_type} alone; allowed: watts for the whole instance "
                         "(measured_power_scope: instance; a figure in kW is the usual cause)")


def _check_lnc(cat: Any, instance_type: str, lnc: int | None, where: str) -> None:
    """A logical NeuronCore setting is one the instance's chip offers (``hardware/lnc.py``)."""
    if lnc is None:
        return
    from ecobench.hardware.lnc import lnc_refusal

    why = lnc_refusal(cat.instance(instance_type).spec.accelerator, instance_type, lnc)
    if why is not None:
        raise InputError(f"{where}: {why}")


def _check_drafter(c: HardwareConfig, arch: Architecture, where: str) -> None:
    """A speculative drafter is smaller than the model it drafts for (a larger one was planned, and its
    weights blamed on the target when they did not fit)."""
    sp = c.speculative
    if sp is None or sp.method != "draft":
        return
    field, params = (("draft_model", float(preset(sp.draft_model).params)) if sp.draft_model is not None
                     else ("draft_params", float(sp.draft_params or 0.0)))
    if params >= arch.params:
        named = f"{sp.draft_model} ({params / 1e9:.3g} B parameters)" if sp.draft_model else f"{params:.3g}"
        raise InputError(f"{where}.{field}: {named} is not smaller than the model it drafts for, "
                         f"{arch.name} ({arch.params / 1e9:.3g} B); allowed: a drafter of fewer than "
                         f"{arch.params:.3g} parameters (a smaller preset, or draft_params)")


def _check_expert(c: HardwareConfig, arch: Architecture, where: str) -> None:
    """The expert-parallel degree against the model's experts (exit 2 naming the nearest valid one)."""
    if not isinstance(c.parallelism, ParallelismSpec) or c.parallelism.expert == 1:
        return
    e = c.parallelism.expert
    if arch.moe is None:
        raise InputError(f"{where}: {e} expert-parallel ranks, but {arch.name} has no experts; allowed: 1 "
                         "(or a model with architecture.moe)")
    n = arch.moe.experts
    if n % e:
        ok = [d for d in range(1, n + 1) if n % d == 0]
        near = min(ok, key=lambda d: (abs(d - e), d))
        raise InputError(f"{where}: {e} does not divide the {n} experts; allowed: divisors of {n} "
                         f"({', '.join(map(str, ok))}); nearest valid value: {near}")


def _check_fp8(cat: Any, c: HardwareConfig, where: str) -> None:
    """FP8 training needs FP8 matmuls: a chip without a published FP8 peak is refused."""
    acc = cat.accelerator_of(cat.instance(c.instance_type))
    if acc is None or acc.peak_tflops.get("fp8"):
        return
    with_fp8 = sorted({i.name for i in cat.instances.values()
                       if (a := cat.accelerator_of(i)) is not None and a.peak_tflops.get("fp8")
                       and i.spec.intra_link is not None})
    near = "bf16" if acc.peak_tflops.get("bf16") else "fp16"
    raise InputError(f"{where}: fp8 training runs its matmuls in FP8, and {acc.name} ({c.instance_type}) has "
                     f"no FP8 peak; allowed here: "
                     f"{', '.join(d for d, v in acc.peak_tflops.items() if v and d in TRAINING_DTYPES)} "
                     f"(nearest valid: {near}), or an instance with FP8: {', '.join(with_fp8)}")
