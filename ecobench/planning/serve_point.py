"""``ecobench serve-point``: TTFT, TPOT and output tokens per second of one static batch, as published
serving sweeps report them (TensorRT-LLM's and Neuron's batch tables, vLLM's ``benchmark_latency``).

A static batch of ``batch`` prompts is prefilled together (TTFT), then decodes ``output - 1`` tokens
together (TPOT per step); tokens per second = batch x output / (TTFT + (output - 1) x TPOT). The step
times are the analytic serving model's (``parallel/serving.py``) at the stored fit's efficiency, or
with ``backend="emulated"`` on a Neuron instance the emulated NeuronCore's (``hardware/neuron/
serving.py``: the engine model's kernels with the stored serving correction, the batch's prompts
prefilled as one graph); each is the same prediction ``validate --mode holdout`` scores on the
``llm_serve`` points (as ``analytic`` and ``emulated_serve``). The 90% bands are split-conformal on the
held-out errors of the batch's regime (model, vendor, tensor degree, batch;
``hardware/backends/serve_bands.py``), the method ``validate`` scores the bands of the published
points with (there without each point's own source).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ecobench.errors import BackendError, InputError, UnknownNameError
from ecobench.hardware.backends.stacks import stack_refusal
from ecobench.hardware.catalog import Catalog, Instance, load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.hardware.lnc import device_in, given_lnc, lnc_of, lnc_options
from ecobench.parallel.layout import divisors
from ecobench.parallel.memory import rank_word
from ecobench.parallel.serving import (
    WORKSPACE_GIB,
    ServeWorkload,
    compiled_graph_tokens,
    decode_step_s,
    max_batch_by_memory,
    prefill_s,
    step_host_s,
    weights_gib_per_rank,
    with_stack_attention,
)
from ecobench.units import DTYPES
from ecobench.words import counted, did_you_mean
from ecobench.workloads.moe_blockwise import prefill_block_tokens


@dataclass(frozen=True)
class ServePoint:
    """One static batch's figures with their 90% bands."""

    model: str
    instance_type: str
    precision: str
    tensor: int
    batch: int
    input_tokens: int
    output_tokens: int
    figures: dict[str, tuple[float, float, float]]  # name -> (value, low, high)
    source: str
    quantization: str | None = None
    weight_precision: str | None = None  # --weight-precision, when it differs from precision
    kv_cache_precision: str | None = None  # --kv-cache-precision
    backend: str = "analytic"  # the serving model: analytic, or emulated (the emulated NeuronCore)
    lnc: int | None = None  # physical NeuronCores per rank (Neuron; None: a GPU); --lnc on trn2
    ranks: str = ""  # what the replica runs on: '8 of the instance's 8 accelerators' (:func:`_ranks_of`)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in ("model", "instance_type", "backend", "precision",
                                                             "quantization", "weight_precision",
                                                             "kv_cache_precision", "lnc", "tensor", "batch",
                                                             "input_tokens", "output_tokens")}
        for name, (v, lo, hi) in self.figures.items():
            out |= {name: v, f"{name}_low": lo, f"{name}_high": hi}
        return out | {"source": self.source}


def serve_point(model: str, instance_type: str, precision: str, batch: int, input_tokens: int,
                output_tokens: int, tensor: int | None = None, stack: str | None = None,
                weight_precision: str | None = None, kv_cache_precision: str | None = None,
                quantization: str | None = None, backend: str = "analytic",
                lnc: int | None = None) -> ServePoint:
    """The static batch's TTFT, TPOT and tokens per second (``tensor``: default the smallest degree
    whose weights and the batch's caches fit; ``quantization``: as a configuration's, fp8 or int8
    W8A8, int4 W4A16; ``backend``: :data:`BACKENDS`; ``lnc``: Trainium2's logical NeuronCore setting,
    default the chip's, ``hardware/lnc.py``)."""
    from ecobench.hardware.backends.efficiency import current_fit, fitted_stacks, serving_figures
    from ecobench.hardware.backends.serve_bands import SERVING_FIGURES, Regime, serving_band
    from ecobench.planning.serving_options import llm_serving_refusal, quantized_cluster, storage_refusal
    from ecobench.scenario.model import QUANTIZATIONS
    from ecobench.workloads.presets import PRESETS, preset

    for name, value in (("--precision", precision), ("--weight-precision", weight_precision),
                        ("--kv-cache-precision", kv_cache_precision)):
        if value is not None and value not in DTYPES:
            hint = ("; 4-bit weights are --quantization int4 (W4A16: int4 weights, compute at --precision)"
                    if name == "--weight-precision" and value.lower() == "int4" else "")
            hint = hint or did_you_mean(value, list(DTYPES))
            raise InputError(f"{name} {value!r}: not a data type; allowed: {', '.join(DTYPES)}{hint}")
    if (bad := storage_refusal(precision, weight_precision, kv_cache_precision)) is not None:
        raise InputError(f"--{bad[0].replace('_', '-')} {bad[1]}")
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise InputError(f"--quantization {quantization!r}: allowed: {', '.join(QUANTIZATIONS)}")
    if quantization is not None and weight_precision is not None:
        raise InputError("give --quantization or --weight-precision, not both (quantization sets how "
                         "weights are stored)")
    for name, value in (("--batch", batch), ("--input-tokens", input_tokens),
                        ("--output-tokens", output_tokens)):
        if value < 1:
            raise InputError(f"{name} {value}: must be at least 1 (nearest valid: 1)")
    if backend not in BACKENDS:
        raise InputError(f"--backend {backend!r}: allowed: {', '.join(BACKENDS)}")
    if stack is not None and stack not in fitted_stacks():
        raise UnknownNameError("software stack", stack, fitted_stacks(), "--stack")
    decoders = [n for n, a in PRESETS.items() if a.kind == "decoder"]
    if model not in PRESETS and (model.endswith((".yaml", ".yml", ".json")) or Path(model).exists()):
        raise InputError(f"model {model}: a file; serve-point takes a decoder preset (allowed: "
                         f"{', '.join(decoders)}); a scenario's serving configurations are planned by "
                         "`ecobench run`")
    arch = preset(model)
    if arch.kind != "decoder":
        raise InputError(f"model {model}: an encoder; serve-point times a decoder's prefill and decode "
                         f"(allowed: {', '.join(decoders)})")
    if input_tokens + output_tokens > arch.max_position_embeddings:
        raise InputError(f"--input-tokens + --output-tokens {input_tokens + output_tokens} exceed {model}'s "
                         f"max_position_embeddings ({arch.max_position_embeddings})")
    cat = load_catalog()
    inst = cat.instance(instance_type, "--instance-type")
    acc = cat.accelerator_of(inst)
    if acc is None:
        raise InputError(f"--instance-type {instance_type}: no accelerator to serve an LLM on")
    try:
        cat = given_lnc(cat, inst.spec.accelerator, instance_type, lnc)
    except InputError as exc:
        raise InputError(f"--lnc {exc}") from None
    acc = cat.accelerator_of(inst)
    assert acc is not None
    if (why := llm_serving_refusal(inst.spec.accelerator)) is not None:
        raise InputError(f"--instance-type {instance_type}: {why}")
    if backend == "emulated":
        _emulated_refusal(instance_type, inst.spec.accelerator, model, arch.moe is not None, quantization)
    where = f"{instance_type} ({acc.vendor} {inst.spec.accelerator})"
    if (why := stack_refusal(stack, acc.vendor, "serving", where)) is not None:
        raise InputError(f"--stack {why}")
    try:
        cl = instance_cluster(cat, inst, precision)
    except BackendError as exc:  # a T4 at the default bf16: name the option
        raise InputError(f"--precision {precision}: {exc}") from None
    try:
        cl = quantized_cluster(cl, acc, quantization)
    except InputError as exc:
        raise InputError(f"--quantization {quantization}: {exc}") from None
    weight_precision = quantization or weight_precision
    valid = divisors(cl.ranks_per_node)
    if tensor is not None and tensor not in valid:
        raise InputError(f"--tensor {tensor}: must divide the {counted(cl.ranks_per_node, 'rank')} of "
                         f"{instance_type}; allowed: {', '.join(map(str, valid))}")

    # static shapes (Neuron): the workload pads the prompt to its context-encoding bucket
    # (ServeWorkload.prefill_compute_tokens, as the serving planner's)
    def workload(t: int) -> ServeWorkload:
        w = ServeWorkload(arch, input_tokens, output_tokens, precision, t, weight_precision,
                          kv_cache_precision, acc.static_kv_cache,
                          moe_block_tokens=prefill_block_tokens(acc.static_kv_cache, stack),
                          graph_tokens=compiled_graph_tokens(acc.static_kv_cache, stack,
                                                             input_tokens + output_tokens))
        return with_stack_attention(w, stack, lnc_of(cat, inst.spec.accelerator))

    options = [tensor] if tensor else valid
    fits = [t for t in options if max_batch_by_memory(workload(t), cl) >= batch]
    if not fits:
        larger = [v for v in valid if v > max(options)]
        weights_gib = weights_gib_per_rank(workload(max(options)))
        if not larger and weights_gib + WORKSPACE_GIB > cl.memory_gib:  # no batch or length helps
            from ecobench.planning.serving_options import weights_advice

            raise InputError(f"--instance-type {instance_type}: {model}'s weights alone take "
                             f"{weights_gib:.1f} GiB per {rank_word(cl)} at tensor {max(options)}, "
                             "beyond its "
                             f"{cl.memory_gib:.1f} GiB; allowed: "
                             + weights_advice(workload(max(options)), cl, weight_precision == "int4",
                                              "--quantization"))
        advice = (f"a larger --tensor ({', '.join(map(str, larger))})" if larger
                  else "fewer tokens, or an instance with more accelerator memory")
        raise InputError(f"--batch {batch}: {model}'s weights and {batch} caches of "
                         f"{input_tokens + output_tokens} tokens do not fit {instance_type} at tensor "
                         f"{', '.join(map(str, options))}; use "
                         + (f"a smaller batch or {advice}" if batch > 1 else advice))
    t = fits[0]
    w = workload(t)
    if backend == "emulated":
        tpot_s, ttft_s, how = _emulated_times(w, cl, device_in(cat, inst.spec.accelerator or ""), batch,
                                           stack)
    else:
        fit = current_fit()
        eff = fit.efficiency(acc.vendor, "serving", inst.spec.accelerator, stack)
        tpot_s = float(decode_step_s(w, cl, eff, np.array([float(batch)]))[0])
        # a static batch's prefill is one engine step carrying its prompts: its host cost too
        ttft_s = (float(prefill_s(w, cl, eff, float(batch)) + step_host_s(eff, float(batch)))
                  + fit.request_overhead_s(acc.vendor, stack))
        how = eff.source
    figs = serving_figures(tpot_s, ttft_s, batch, output_tokens)
    regime = Regime("emulated" if backend == "emulated" else "analytic", acc.vendor, t, float(batch))
    # one output token: no decode step follows the first token, so there is no TPOT to give
    names = [n for n in SERVING_FIGURES if not (n == "tpot_ms" and output_tokens == 1)]
    out = {}
    for name in names:
        v = float(figs[name])
        out[name] = (v, *serving_band(name, regime).around(v))
    return ServePoint(model, instance_type, precision, t, batch, input_tokens, output_tokens, out,
                      f"{how}; 90% bands: held-out errors of "
                      + "; ".join(f"{n} {serving_band(n, regime).describe()}" for n in names)
                      + ("" if len(names) == len(SERVING_FIGURES)
                         else "; no tpot_ms: with one output token no decode step follows the first"),
                      quantization, None if quantization else weight_precision, kv_cache_precision, backend,
                      lnc_of(cat, inst.spec.accelerator) if acc.vendor == "aws" else None,
                      _ranks_of(t, cat, inst, cl.ranks_per_node))


BACKENDS = ("analytic", "emulated")  # --backend


def _emulated_refusal(instance_type: str, accelerator: str | None, model: str, moe: bool,
                      quantization: str | None) -> None:
    """Bad input for ``--backend emulated`` where the emulated NeuronCore does not time the batch (the
    limits ``run`` gives a serving configuration of ``backend: emulated``)."""
    from ecobench.hardware.neuron.arch import DEVICES
    from ecobench.planning.serving_options import W8A8

    if accelerator not in DEVICES:
        raise InputError(f"--backend emulated: {instance_type} has no NeuronCore; the emulated NeuronCore "
                         "times inf2, trn1 and trn2 instances (allowed elsewhere: --backend analytic)")
    if moe:
        raise InputError(f"--backend emulated: {model} is a mixture of experts, which the emulated "
                         "NeuronCore would time as a dense layer of every expert; allowed: --backend "
                         "analytic")
    if quantization in W8A8:
        raise InputError(f"--quantization {quantization} (W8A8, weight matmuls at the chip's 8-bit peak) is "
                         "modelled by the analytic serving model only; the emulated NeuronCore runs every "
                         "matmul at --precision; allowed with --backend emulated: --weight-precision fp8 or "
                         "int8 (weight-only), --quantization int4, or none; or --backend analytic")


def _emulated_times(w: ServeWorkload, cl: Any, dev: Any, batch: int,
                    stack: str | None) -> tuple[float, float, str]:
    """(TPOT s, TTFT s, how) of a static batch on the emulated NeuronCore: the decode step at ``batch``
    and the ``batch`` prompts prefilled as one context-encoding graph, each with the stored serving
    correction, as ``hardware/neuron/serving.py`` predicts the published points it is fitted and held
    out on (``dev``: the Neuron chip at the logical NeuronCore setting planned)."""
    from ecobench.hardware.neuron.serving import EmulatedServeTimer, current_correction
    from ecobench.workloads.moe_blockwise import NXD_DEFAULT_STACK

    corr = current_correction()
    timer = EmulatedServeTimer(dev, corr, stack)
    tpot_s = float(timer.decode_s(w, cl, np.array([float(batch)]))[0])
    ttft_s = timer.prefill_s(w, cl, batch)
    nxd = corr.stack_scale("ttft_ms", stack)
    how = (f"emulated {dev.core.name}: the engine model's kernels with the serving "
           f"correction fitted on {len(corr.points)} published Neuron serving points "
           f"(x{corr.scale['tpot_ms']:.3g} + {corr.fixed_ms['tpot_ms']:.3g} ms a decode step, "
           f"x{corr.scale['ttft_ms']:.3g} + {corr.fixed_ms['ttft_ms']:.3g} ms a prefill"
           + (f", x{nxd:.3g} on {stack or NXD_DEFAULT_STACK}" if nxd != 1.0 else "") + ")")
    return tpot_s, ttft_s, how


def _ranks_of(tensor: int, cat: Catalog, inst: Instance, ranks: int) -> str:
    """'8 of the instance's 8 accelerators', or where the tensor degree counts NeuronCores (two or more a
    chip): '24 of the instance's 24 NeuronCores (12 chips)' (trn2: logical NeuronCores, at LNC=2;
    '... physical NeuronCores, at LNC=1'); ``cat``: the catalog at the setting planned, ``ranks``: the
    instance's."""
    count = inst.spec.accelerator_count
    if ranks == count == 1:
        return "the instance's one accelerator"
    if ranks == count:
        return f"{tensor} of the instance's {count} accelerators"
    acc = cat.accelerator_of(inst)
    lnc = lnc_of(cat, inst.spec.accelerator)
    # trn2: logical cores at LNC=2, physical ones at LNC=1; one core a rank elsewhere (inf2, trn1)
    logical = "logical " if lnc > 1 else "physical " if lnc_options(inst.spec.accelerator) else ""
    unit = f"{logical}NeuronCores" if acc is not None and acc.vendor == "aws" else "ranks"
    setting = f", LNC={lnc}" if lnc_options(inst.spec.accelerator) else ""
    return f"{tensor} of the instance's {ranks} {unit} ({count} chip{'s' if count > 1 else ''}{setting})"


def format_point(p: ServePoint) -> str:
    """The terminal's lines."""
    from ecobench.planning.serving_options import QUANTIZATION_WORDS

    quant = f", {QUANTIZATION_WORDS[p.quantization]}" if p.quantization else ""
    quant += f", weights {p.weight_precision}" if p.weight_precision else ""
    quant += f", KV cache {p.kv_cache_precision}" if p.kv_cache_precision else ""
    head = (f"{p.model} on {p.instance_type} ({p.precision}{quant}, tensor {p.tensor}): static batch "
            f"{p.batch}, {p.input_tokens} tokens in, {p.output_tokens} out; one replica on "
            f"{p.ranks}")
    rows = [f"  {name:<22} {v:>10.4g}   90% band {lo:.4g} to {hi:.4g}"
            for name, (v, lo, hi) in p.figures.items()]
    return "\n".join([head, *rows, f"  ({p.source})"])
