"""Emulated backend: Inf1 (NeuronCore-v1), Inf2/Trn1 (NeuronCore-v2) and Trn2 (NeuronCore-v3).

Every kernel is timed on the engine model (``hardware/neuron/work.py``, ``timing.py``) with the
parameters fitted on the published Neuron points (``hardware/neuron/fit.py``; their held-out error
is what ``ecobench validate --mode holdout`` reports as the ``neuron_*`` rows). Inference runs a
copy of the model on every logical core; training runs the configuration's layout (tensor,
pipeline and data parallelism, ZeRO-1, recomputation) with the compute per rank from the engine
model and the communication, bubble and optimizer from the step model
(``hardware/neuron/step.py``). Serving hands the serving plan a timer of decode steps and
prefills on the engine model (``hardware/neuron/serving.py``; held out as ``emulated_serve``).

The numeric error is that of one layer run in the configuration's number format against FP32
(encoders: a BERT layer; decoders: a Llama-style layer), on a slice of at most
:data:`NUMERIC_MAX_HIDDEN` x :data:`NUMERIC_MAX_SEQ`. The accelerator utilisation handed to the
power model is the share of time the NeuronCores execute kernels (neuron-monitor's
``neuroncore_utilization``): communication left exposed and the pipeline bubble leave them idle.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any

from ecobench.errors import BackendError
from ecobench.hardware.backends.base import (
    Capabilities,
    EngineBreakdown,
    Job,
    Performance,
    Utilization,
    register,
)
from ecobench.hardware.catalog import Catalog, Instance
from ecobench.hardware.cluster import instance_cluster, rank_peak_tflops
from ecobench.hardware.lnc import device_in
from ecobench.hardware.neuron.arch import DEVICES, NeuronDeviceSpec
from ecobench.hardware.neuron.fit import current_fit
from ecobench.hardware.neuron.serving import EmulatedServeTimer, current_correction
from ecobench.hardware.neuron.step import evaluate as step_evaluate
from ecobench.hardware.neuron.step import set_kernels, weight_matmul_dtype
from ecobench.hardware.neuron.timing import EngineParams, KernelTiming, engine_utilization, time_kernels
from ecobench.parallel.layout import Layout
from ecobench.parallel.search import StepEvaluator
from ecobench.parallel.step import FP8_ACTIVATION_DTYPE, Layouts
from ecobench.units import DEFAULT_HOST_CPU_UTILIZATION, DEFAULT_REQUEST_BYTES_PER_TOKEN
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.transformer import forward_kernels

NUMERIC_MAX_HIDDEN = 1024  # encoders up to BERT-Large are measured at full width
NUMERIC_MAX_DECODER_HIDDEN = 512
NUMERIC_MAX_SEQ = 128
TRAINING_DATA_BYTES_PER_TOKEN = 8 * 3  # ids, segment ids, mask (int64) read from storage


def numeric_format(dtype: str, mode: str, accelerator: str) -> str:
    """The emulated number format: Trainium trains BF16 with stochastic rounding."""
    if dtype == "bf16" and mode == "training" and accelerator in ("trainium", "trainium2"):
        return "bf16_sr"
    return {"fp8": "fp8_e4m3"}.get(dtype, dtype)


def numerics_bytes(hidden: int, heads: int, inter: int, seq: int) -> float:
    """Memory the numeric check of one layer takes: FP32 weights and activations, several copies."""
    weights = 4 * hidden * hidden + 2 * hidden * inter
    activations = seq * (8 * hidden + 2 * inter) + 2 * heads * seq * seq
    return 4.0 * 3 * (weights + activations)


@functools.cache
def layer_error(arch: Architecture, seq: int, fmt: str,
                attention_fmt: str | None = None) -> tuple[float, str]:
    """Relative error of one layer in ``fmt`` (attention's matmuls in ``attention_fmt`` where given)
    against FP32, and the slice it was measured on."""
    attn = f", attention in {attention_fmt}" if attention_fmt else ""
    from ecobench.hardware.neuron import numerics  # ml_dtypes: only when emulating

    s = min(seq, NUMERIC_MAX_SEQ)
    if arch.kind == "encoder":
        h = min(arch.hidden_size, NUMERIC_MAX_HIDDEN)
        heads = max(1, arch.heads * h // arch.hidden_size)
        inter = arch.intermediate_size * h // arch.hidden_size
        return numerics.layer_error(h, heads, inter, s, fmt, attention_fmt=attention_fmt), \
            f"{h} wide, {s} tokens{attn}"
    h = min(arch.hidden_size, NUMERIC_MAX_DECODER_HIDDEN)
    heads = max(1, h // arch.head_dim)
    h = heads * arch.head_dim
    kv = max(1, heads * arch.kv // arch.heads)
    while heads % kv:
        kv -= 1
    inter = arch.intermediate_size * h // arch.hidden_size
    err = numerics.decoder_layer_error(h, heads, kv, inter, s, fmt, attention_fmt=attention_fmt)
    return err, f"{h} wide, {heads} heads / {kv} kv, {s} tokens{attn}"


def device_of(instance: Instance, catalog: Catalog | None = None) -> NeuronDeviceSpec:
    """The Neuron chip an instance carries, at the logical NeuronCore setting ``catalog`` describes it
    at (None: its default; ``hardware/lnc.py``), or a BackendError naming the ones emulated."""
    acc = instance.spec.accelerator
    if acc not in DEVICES:
        raise BackendError(f"{instance.name} has no Neuron device the emulated backend models; it covers "
                           f"{', '.join(sorted(DEVICES))} instances (allowed: an inf2, trn1 or trn2 "
                           "instance, inf1 for inference only, or backend: analytic)")
    return DEVICES[acc] if catalog is None else device_in(catalog, acc)


class EmulatedBackend:
    """NeuronCore engine model with fitted overheads (see the module docstring)."""

    name = "emulated"
    capabilities = Capabilities(modes=frozenset({"inference", "training", "serving"}), error_model="emulated",
                                own_step_model=True, own_serving_model=True, experts=False)

    @staticmethod
    def params(dev: NeuronDeviceSpec) -> EngineParams:
        """The fitted parameters of the device's core generation."""
        return current_fit().params(dev.core.generation)

    @staticmethod
    def step_evaluator(instance: Instance, catalog: Catalog | None = None) -> StepEvaluator | None:
        """Its own step model for ``instance`` (``capabilities.own_step_model``): :func:`step_evaluator`."""
        return step_evaluator(instance, catalog)

    @staticmethod
    def serving_timer(instance: Instance, catalog: Catalog | None = None,
                      stack: str | None = None) -> EmulatedServeTimer:
        """Decode steps and prefills on the instance's NeuronCores (``capabilities.own_serving_model``;
        ``hardware/neuron/serving.py``), at the logical NeuronCore setting of ``catalog``, running the
        serving ``stack`` (None: NxD Inference)."""
        return EmulatedServeTimer(device_of(instance, catalog), current_correction(), stack)

    def evaluate(self, job: Job, instance: Instance, catalog: Catalog) -> Performance:
        dev = device_of(instance, catalog)
        acc = catalog.accelerator_of(instance)
        if acc is not None:  # a type the chip has no published peak in: named with those it has
            rank_peak_tflops(acc, job.dtype)
        try:
            if job.mode == "inference":
                return self._inference(job, instance, dev, catalog)
            return self._training(job, instance, catalog, dev)
        except ValueError as exc:
            raise BackendError(str(exc)) from None

    # -- inference ----------------------------------------------------------------------------
    def inference_timings(self, job: Job, instance: Instance,
                          catalog: Catalog | None = None) -> list[KernelTiming]:
        """Per-kernel timing of one batch on one logical core."""
        dev = device_of(instance, catalog)
        ks = forward_kernels(job.arch, job.seq_len, job.batch_size, job.dtype)
        return time_kernels(ks, dev, job.batch_size, self.params(dev), job.arch.norm)

    def _inference(self, job: Job, instance: Instance, dev: NeuronDeviceSpec,
                   catalog: Catalog) -> Performance:
        if job.seq_len > job.arch.max_position_embeddings:
            raise ValueError(f"sequence length {job.seq_len} exceeds the model's max_position_embeddings "
                             f"{job.arch.max_position_embeddings}")
        p = self.params(dev)
        timings = self.inference_timings(job, instance, catalog)
        compute = sum(t.time_s for t in timings)
        batch_s = compute + p.launch_s
        cores = dev.cores * instance.spec.accelerator_count
        per_instance = cores * job.batch_size / batch_s
        util = engine_utilization(timings)
        fmt = numeric_format(job.dtype, job.mode, instance.spec.accelerator or "")
        err, sliced = layer_error(job.arch, job.seq_len, fmt)
        return self._performance(
            job, per_instance, compute / batch_s, util, fmt, err, sliced, dev, instance,
            f"{batch_s * 1e3:.3g} ms per batch of {job.batch_size} on each of {cores} cores "
            f"(launch {p.launch_s * 1e6:.0f} us)", timings, {"batch_s": batch_s},
            job.seq_len * DEFAULT_REQUEST_BYTES_PER_TOKEN)

    # -- training -----------------------------------------------------------------------------
    def _layout(self, job: Job, ranks: int) -> Layout:
        if job.layout is not None:
            return job.layout
        return Layout(1, 1, ranks, 0, "none", job.batch_size)

    def training_timings(self, job: Job, instance: Instance, catalog: Catalog) -> list[KernelTiming]:
        """Per-kernel timing of one micro-batch on one rank, every layer of a pipeline stage."""
        dev = device_of(instance, catalog)
        cl = instance_cluster(catalog, instance, job.dtype)
        lay = self._layout(job, cl.ranks_per_node * job.instances)
        w = job.training_workload(lay.data * lay.microbatch)
        p = self.params(dev)
        out = []
        for kernels, reps, saved in set_kernels(w, lay).values():
            for t in time_kernels(kernels, dev, lay.microbatch, p, job.arch.norm, training=True, saved=saved,
                                  weight_matmul_dtype=weight_matmul_dtype(w)):
                out.append(KernelTiming(t.name, None, t.phase, t.engine, t.time_s * reps,
                                        {e: v * reps for e, v in t.busy_s.items()}, t.utilization, t.bound,
                                        count=reps))
        return out

    def _training(self, job: Job, instance: Instance, catalog: Catalog, dev: NeuronDeviceSpec) -> Performance:
        if job.global_batch_size is None:
            raise BackendError("a training job needs a global batch")
        cl = instance_cluster(catalog, instance, job.dtype)
        lay = self._layout(job, cl.ranks_per_node * job.instances)
        if lay.zero > cl.max_zero_stage:
            raise BackendError(f"{instance.name}: Neuron's training libraries offer ZeRO up to stage "
                               f"{cl.max_zero_stage}, not {lay.zero}")
        w = job.training_workload()
        p = self.params(dev)
        r = step_evaluate(w, cl, Layouts.of([lay], job.instances), dev, p).row(0)
        per_instance = r["sequences_per_s"] / job.instances
        timings = self.training_timings(job, instance, catalog)
        util = engine_utilization(timings)
        busy = r["compute_s"] - r["bubble_s"]
        fmt = numeric_format(job.dtype, job.mode, instance.spec.accelerator or "")
        # FP8 training: FP8 weight matmuls, attention in BF16 (neuron/step.py, as the timing has it)
        attention_fmt = FP8_ACTIVATION_DTYPE if job.dtype == "fp8" else None
        err, sliced = layer_error(job.arch, job.seq_len, fmt, attention_fmt)
        return self._performance(
            job, per_instance, busy / r["step_s"], util, fmt, err, sliced, dev, instance,
            f"{lay.describe()} on {job.instances}x {instance.name}: step {r['step_s']:.3g} s, "
            f"MFU {r['mfu']:.1%}, exposed communication {r['comm_exposed_s'] / r['step_s']:.0%}, "
            f"bubble {r['bubble_s'] / r['step_s']:.0%}", timings, {"step": r},
            job.seq_len * TRAINING_DATA_BYTES_PER_TOKEN)

    def _performance(self, job: Job, per_instance: float, activity: float, util: dict[str, float], fmt: str,
                     err: float, sliced: str, dev: NeuronDeviceSpec, instance: Instance, what: str,
                     timings: list[KernelTiming], extra: dict[str, Any], net_bytes: float) -> Performance:
        cpu = DEFAULT_HOST_CPU_UTILIZATION if job.host_cpu_utilization is None else job.host_cpu_utilization
        busiest = max(util, key=util.__getitem__)
        fit = current_fit()
        return Performance(
            throughput_per_instance_per_s=per_instance,
            utilization=Utilization(accelerator=min(1.0, max(0.0, activity)), cpu=cpu, memory=cpu,
                                    network=0.0),
            provenance="emulated",
            method=(f"{dev.core.name} engine model ({dev.cores} cores x {instance.spec.accelerator_count} "
                    f"chips), {fmt}: {what}; TensorE busy {util['tensor']:.0%}, busiest {busiest} "
                    f"{util[busiest]:.0%}; "
                    f"overheads fitted on {len(fit.points)} published Neuron points; layer error vs FP32 "
                    f"{err:.2e} ({sliced})"),
            network_bytes_per_sample=net_bytes,
            numeric_error=err,
            engine=EngineBreakdown(fmt, util, [t.as_dict() for t in timings]),
            **extra,
        )


def step_evaluator(instance: Instance, catalog: Catalog | None = None) -> StepEvaluator | None:
    """The emulated step model of an instance's Neuron device (what ``parallelism: auto`` searches
    with for an emulated configuration) at the logical NeuronCore setting of ``catalog`` (None: the
    chip's default), or None for a device it does not model."""
    if instance.spec.accelerator not in DEVICES:
        return None
    dev = device_of(instance, catalog)
    p = EmulatedBackend.params(dev)
    return lambda w, cl, L: step_evaluate(w, cl, L, dev, p)


register(EmulatedBackend())


def aggregate_kernels(kernels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kernels summed over layers: one line per kernel name."""
    agg: dict[str, dict[str, Any]] = defaultdict(lambda: {"time_us": 0.0, "n": 0, "util": 0.0})
    for k in kernels:
        a = agg[k["kernel"]]
        a.update(kernel=k["kernel"], engine=k["engine"], bound=k["bound"], phase=k["phase"])
        a["time_us"] += k["time_us"]
        a["util"] += k["utilization"] * k["time_us"]
        a["n"] += k.get("count", 1)
    return [{"kernel": a["kernel"], "phase": a["phase"], "engine": a["engine"], "bound": a["bound"],
             "count": a["n"], "time_us": a["time_us"],
             "utilization": a["util"] / a["time_us"] if a["time_us"] else 0.0} for a in agg.values()]
