"""The draw model by activity, fitted on measured watts (``power/corpus.py``) and held out by group.

A device's mean draw is ``idle + (max - idle) x f``, ``f`` the time-weighted draw of the states it is
in, the four states of the planner's ``Activity``: compute-bound kernels, memory-bound kernels, sync
(the rest of a training step: exposed communication, pipeline bubble, its other kernels) and stalls
(host-side gaps: the chip has nothing launched and waits on the host). The time shares come from the
point's own run: the FLOP rate and the bytes streamed that its measured throughput implies, against
the chip's peaks (reaching ``COMPUTE_CEILING`` of the peak FLOP rate, or ``MEMORY_CEILING`` of the
memory bandwidth, is a chip busy all the time). The rest of a data-parallel training step, or of a
vision model's (no kernels, its FLOPs only), is sync; a transformer's without a gradient exchange is
kernels below the roofline, but for the pipeline bubble (:func:`split_train_rest`). The rest of a
service's (or an inference run's) time is split by :func:`split_rest`: host-side gaps (an engine that
waits on its CPU scheduler between steps; seconds of the metering window with nothing running) are
stalls, drawn at the sourced draw of a chip waiting with nothing to do (``power_model.yaml``
``draw.stall``, not fitted); the rest is kernels slower than the roofline (small-batch decode,
launch gaps with the clocks up), drawn like memory-bound kernels. A node's
host side is ecobench's own host model (``power/draw.py``: CPUs by load, memory per GB) for the
instance type standing for the system, times a fitted scale that stands for what that model leaves
out (fans, NICs, switches, power-supply losses). The compute, memory and sync draws (fractions of
the idle-to-maximum range) and the scale are fitted by bounded linear least squares on
relative errors; node-metered points fit them all at once.

``holdout`` predicts every point from a fit without its group (one lab or benchmark family) and gives
each a 90% band from the held-out errors of the other groups, each group weighing the same.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ecobench.hardware.backends.base import COMPUTE_ONLY
from ecobench.hardware.catalog import Catalog, load_catalog
from ecobench.parallel.step import WORKSPACE_GIB
from ecobench.power.corpus import PowerCorpus, PowerPoint, corpus_chips, load_corpus
from ecobench.power.draw import decode_draw_shares
from ecobench.units import BYTES_PER_DTYPE, GIB
from ecobench.workloads.transformer import forward_kernels, kv_cache_bytes_per_token, totals

STATES = ("compute", "memory", "sync", "stall")  # the order of Features.shares
FITTED = ("compute", "memory", "sync")  # the stall draw is sourced (power_model.yaml draw.stall)
HOST = ("host_scale",)
# the fit's upper bound on the host scale (x ecobench's CPU and memory draw of a node): fans, NICs,
# switches and power-supply losses at most four times what the CPU and memory model draws; the fitted
# scale is 1.47-1.71 (README "How ecobench models power, and its error")
HOST_SCALE_MAX = 5.0
COMPUTE_CEILING = 0.8  # dense matmuls reach about 80% of the datasheet peak (assumption, see README)
MEMORY_CEILING = 0.85  # streaming reaches about 85% of the datasheet bandwidth (assumption)
# Forward FLOPs per sample of the vision models in the corpus (no transformer kernels for them).
# ResNet-50 at 224x224: 3.8e9 multiply-adds (He et al., "Deep Residual Learning", CVPR 2016, Table 1).
VISION_FLOPS_PER_SAMPLE = {"resnet50": 2 * 3.8e9}
# The catalog instance standing for a node that states no instance type: (chip, devices) -> instance.
NODE_STAND_IN = {("h100-sxm", 8): "p5.48xlarge", ("h200", 8): "p5e.48xlarge",
                 ("a100-80gb", 8): "p4de.24xlarge", ("a100-40gb", 8): "p4d.24xlarge",
                 ("l4", 1): "g6.xlarge", ("l40s", 1): "g6e.xlarge"}
DEFAULT_CONTEXT_TOKENS = 512  # serving points that state no input length: an assumed prompt length
# Engines whose GPU waits on the host between decode steps for all the time its kernels leave: vLLM's V0
# engine (before 0.8, when V1 became the default) with single-step scheduling, its default. vLLM's v0.6.0
# release post profiled v0.5.3 serving Llama 3 8B on one H100: HTTP API server 33% and scheduling 29% of
# the execution time, GPU execution 38% ("If CPUs cannot schedule fast enough, GPUs will sit idle to wait
# for CPUs"); its fix for the scheduling share, multi-step scheduling, is opt-in (--num-scheduler-steps):
# https://blog.vllm.ai/2024/09/05/perf-update.html (2024-09-05). An offline run (LLM.generate, no HTTP
# server) still schedules every step on the CPU between GPU steps. Engines with a C++ runtime
# (TensorRT-LLM), multi-step or asynchronous scheduling (vLLM V1) are not taken as host-bound.
HOST_BOUND_ENGINE = re.compile(r"\bvLLM 0\.[0-7]\.(?:\d+|x)\b(?!.*(?:multi-step|num-scheduler-steps))",
                               re.IGNORECASE)
# The most of its time such an engine's GPU waits on the host, from the same profile: behind an HTTP
# server, the API server's 33% and the scheduler's 29% (0.62); offline (LLM.generate), no API server, the
# scheduler's 29 of the 29 + 38 left (0.43). Time the roofline leaves beyond that is kernels slower than
# the roofline, drawn like memory-bound ones (issue 20, 2026-11-28: docs/power.md).
HOST_WAIT_SHARE_SERVER = 0.33 + 0.29
HOST_WAIT_SHARE_OFFLINE = 0.29 / (0.29 + 0.38)
OFFLINE_ENGINE = re.compile(r"\boffline\b|LLM\.generate", re.IGNORECASE)
# Engines that launch every kernel from eager Python (Hugging Face transformers' generate() and pipelines,
# a plain PyTorch forward loop), without torch.compile or CUDA graphs: at small batches the GPU finishes
# each kernel before the CPU launches the next. PyTorch's "Accelerating Generative AI with PyTorch II:
# GPT, Fast" (2023-11-30, https://pytorch.org/blog/accelerating-generative-ai-2/) traced such a loop
# (Llama-2-7B, batch 1, A100-80GB: 25.5 tokens/s) as "heavily CPU overhead bound"; with the launches
# captured (torch.compile reduce-overhead) the same model ran 107 tokens/s. Serving and inference runs.
EAGER_ENGINE = re.compile(r"\b(?:HF transformers|PyTorch [\d.]+ eager)\b(?!.*(?:torch\.compile|CUDA graph))",
                          re.IGNORECASE)


def stall_draw() -> float:
    """The sourced draw of a chip waiting with nothing launched (power_model.yaml ``draw.stall``)."""
    from ecobench.power.params import power_model

    return power_model().draw.stall.central


def split_rest(p: PowerPoint, s_c: float, s_m: float, window_idle_s: float = 0.0
               ) -> tuple[float, float, float]:
    """(compute, memory, stall) shares of a service's or inference run's time, given the roofline's
    compute and memory shares: the time they leave is a stall (host-side gap) for a host-bound engine
    (``EAGER_ENGINE``; ``HOST_BOUND_ENGINE`` up to its profiled wait, :func:`host_wait_share`), else
    kernels slower than the roofline, drawn like memory-bound ones; a point that states its measured
    ``gpu_busy_share`` has its stall measured instead (the rest of the busy time is slow kernels); then
    ``window_idle_s`` seconds of the metering window with nothing running (a script's sleeps around a
    serving run of ``batch x output_tokens / output_tokens_per_s`` seconds) are stalls too."""
    rest = max(0.0, 1.0 - s_c - s_m)
    if p.gpu_busy_share is not None:  # measured: the GPU idles for the rest, its kernels fill the share
        st = min(rest, 1.0 - p.gpu_busy_share)
    elif p.kind == "power_serve" and HOST_BOUND_ENGINE.search(p.engine or "") is not None:
        st = min(rest, host_wait_share(p.engine or ""))
    elif EAGER_ENGINE.search(p.engine or "") is not None:
        st = rest
    else:
        st = 0.0
    c, m = s_c, s_m + rest - st
    if window_idle_s > 0 and p.batch and p.output_tokens and p.output_tokens_per_s:
        run_s = p.batch * p.output_tokens / p.output_tokens_per_s
        q = window_idle_s / (run_s + window_idle_s)
        c, m, st = c * (1 - q), m * (1 - q), st * (1 - q) + q
    return c, m, st


def host_wait_share(engine: str) -> float:
    """The most of its time a ``HOST_BOUND_ENGINE`` service's GPU waits on the host: the profiled
    share behind an HTTP server (``HOST_WAIT_SHARE_SERVER``), or offline (``OFFLINE_ENGINE``)."""
    return HOST_WAIT_SHARE_OFFLINE if OFFLINE_ENGINE.search(engine) else HOST_WAIT_SHARE_SERVER


def exchanges_gradients(p: PowerPoint) -> bool:
    """Whether the run's ranks exchange gradients every step (data parallel over more than one rank);
    a multi-device run that states no layout is taken as data parallel."""
    if p.devices * p.nodes == 1:
        return False
    data = (p.layout or {}).get("data")
    return data is None or int(data) > 1


def pipeline_bubble_share(p: PowerPoint) -> float:
    """The share of a step a 1F1B pipeline schedule idles in its bubble, ``(p - 1) / (m + p - 1)`` for
    ``p`` stages and ``m`` microbatches per step (GPipe and 1F1B have the same bubble: Narayanan et al.,
    "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC21, section
    2.2.1); ``m`` the layout's ``num_microbatches``, else the global batch over microbatch x data."""
    lay = p.layout or {}
    stages = int(lay.get("pipeline") or p.pipeline or 1)
    if stages <= 1:
        return 0.0
    m = lay.get("num_microbatches")
    if m is None:
        if p.global_batch_size is None:
            return 0.0
        m = p.global_batch_size / (float(lay.get("microbatch") or 1) * float(lay.get("data") or 1))
    return (stages - 1) / (float(m) + stages - 1)


def split_train_rest(p: PowerPoint, s_c: float, s_m: float) -> tuple[float, float, float, float]:
    """Shares (STATES) of a training step, given the compute and memory shares its FLOP rate and bytes
    imply. Where the ranks exchange no gradients (one GPU; pipeline stages with data parallel 1) the
    time the roofline leaves is the step's kernels running below it, drawn like compute-bound ones,
    except the pipeline bubble (:func:`pipeline_bubble_share`), which is sync: Perseus's per-rank
    profiles of such runs find the GPUs inside forward and backward kernels 73-97% of the iteration
    while the FLOP rate fills 14-16% (docs/power.md). A data-parallel step's rest is all sync: the
    corpus cannot split its exposed gradient exchange from its slow kernels. So is the rest of a step
    of a model the fit has no kernels for (a vision model: its FLOPs only, ``VISION_FLOPS_PER_SAMPLE``):
    its memory-bound kernels (batch norm, activations), input waits and slow kernels are not split
    either (Zeus's ResNet-50 runs slower on an A40 than on a V100: docs/power.md)."""
    rest = max(0.0, 1.0 - s_c - s_m)
    if exchanges_gradients(p) or p.arch is None:
        return s_c, s_m, rest, 0.0
    bubble = min(rest, pipeline_bubble_share(p))
    return s_c + rest - bubble, s_m, bubble, 0.0


@dataclass(frozen=True)
class Features:
    """One point's time shares and the figures that turn a fitted draw into watts."""

    point: PowerPoint
    group: str
    shares: tuple[float, float, float, float]  # STATES (stall: host-side gaps, at the sourced draw)
    idle_w: float
    max_w: float
    per_node: bool  # the measured figure is a node's (devices x chip + host), else one device's
    devices: int
    measured_w: float
    host_w: float = 0.0  # ecobench's host model for the node (CPUs and memory), before the fitted scale
    limit_w: float | None = None  # the device power limit the run set (MLPerf MaxQ), None: the chip's maximum

    def design_row(self, d_stall: float | None = None, at_limit: bool = False) -> tuple[list[float], float]:
        """Coefficients of (FITTED draws..., host terms) and the constant (idle and the stalls at the
        sourced ``d_stall``): predicted W = row . x + c. ``at_limit``: each device draws its power
        limit, whatever the draws."""
        rng = self.max_w - self.idle_w
        n = self.devices if self.per_node else 1
        row = [0.0 if at_limit else n * rng * s for s in self.shares[:len(FITTED)]]
        row += [self.host_w if self.per_node else 0.0]
        if at_limit and self.limit_w is not None:
            return row, n * self.limit_w
        d = stall_draw() if d_stall is None else d_stall
        return row, n * (self.idle_w + rng * self.shares[STATES.index("stall")] * d)

    def at_limit(self, draws: dict[str, float]) -> bool:
        """Whether the device's uncapped draw under ``draws`` reaches its power limit: a power-limited
        chip draws ``min(limit, idle + (max - idle) x share)`` (the driver lowers its clocks to hold it)."""
        if self.limit_w is None:
            return False
        share = sum(s * draws[k] for s, k in zip(self.shares, STATES, strict=True))
        return self.idle_w + (self.max_w - self.idle_w) * share >= self.limit_w


def _peak_tflops(acc: Any, precision: str | None) -> float | None:
    for d in (precision, "bf16", "fp16"):
        if d and acc.peak_tflops.get(d):
            return float(acc.peak_tflops[d])
    return None


def running_batch(p: PowerPoint, memory_gib: float | None) -> float | None:
    """The sequences a serving point's decode steps carry: a measured running batch (``avg_batch_size``)
    as stated; a configured one (``batch_size``) at most what the KV cache holds beside the weights on a
    rank of ``memory_gib``, the planner's memory check (``parallel/serving.py`` ``max_batch_by_memory``:
    memory less the weights and ``WORKSPACE_GIB``), each sequence at its mean context (the one whose KV
    reads ``_rates`` counts). An engine that cannot hold the batch runs fewer sequences per step and
    preempts the rest (vLLM), so the same tokens take more steps, each reading the weights again."""
    if p.avg_batch_size is not None or p.batch is None or memory_gib is None or p.arch is None:
        return p.batch
    weights, per_seq = _serve_bytes(p)
    free = (memory_gib - WORKSPACE_GIB) * GIB - weights
    return min(p.batch, max(1.0, free / per_seq)) if free > 0 else p.batch


def _serve_bytes(p: PowerPoint, batch: float | None = None) -> tuple[float, float]:
    """(weight bytes, KV-cache bytes of one sequence at its mean context) on one rank of a serving
    point: the weights it holds (``batch`` None) or a decode step of ``batch`` sequences reads once (a
    MoE layer reads the routed experts its tokens pick, the planner's rule:
    ``parallel/serving.routed_read_share``), and the cache it reads per sequence of its batch."""
    from ecobench.parallel.serving import routed_read_share

    assert p.arch is not None
    a, tensor = p.arch, p.tensor or 1
    dtype = p.precision if p.precision in BYTES_PER_DTYPE else "bf16"
    params = a.params if batch is None else (
        a.params - a.routed_expert_params + a.routed_expert_params * float(routed_read_share(a, batch)))
    weights = params * BYTES_PER_DTYPE.get(p.weight_precision or dtype, 2) / tensor
    context = (p.input_tokens or DEFAULT_CONTEXT_TOKENS) + (p.output_tokens or 0) / 2
    return weights, context * kv_cache_bytes_per_token(p.arch, dtype, tensor)


def _rates(p: PowerPoint, memory_gib: float | None = None) -> tuple[float, float, float] | str:
    """(FLOP/s, bytes/s, of which KV-cache bytes/s) per device that the point's measured throughput
    implies; a serving point's decode steps carry its :func:`running_batch` on a chip of ``memory_gib``.
    Without them, the fields the point lacks, in its own words."""
    # devices: per node for a node's meter, every metered device for a device's
    arch, dev = p.arch, p.devices * p.nodes if p.power_per == "node" else p.devices
    dtype = p.precision if p.precision in BYTES_PER_DTYPE else "bf16"
    if p.kind == "power_serve":
        missing = [name for name, lacks in (("output_tokens_per_s", p.output_tokens_per_s is None),
                                            ("batch_size or avg_batch_size", p.batch is None),
                                            ("model or architecture", arch is None)) if lacks]
        if missing or arch is None or p.output_tokens_per_s is None:
            return " and ".join(missing)
        tensor = p.tensor or 1
        params = arch.active_params  # a MoE token runs its k experts, not every expert
        # every output token carries its request's prefill: input / output prompt tokens per output token
        prompt = (p.input_tokens or DEFAULT_CONTEXT_TOKENS) / (p.output_tokens or 1)
        flops = 2.0 * params * p.output_tokens_per_s * (1.0 + prompt) / dev
        replicas = max(1.0, dev / tensor)
        batch = running_batch(p, memory_gib)
        assert batch is not None
        steps_per_s = p.output_tokens_per_s / replicas / batch
        weights, per_seq = _serve_bytes(p, batch)
        kv = batch * per_seq
        return flops, steps_per_s * (weights + kv), steps_per_s * kv
    key = _vision_key(p) if arch is None else None
    shape = "" if arch is not None or key is not None else "model or architecture"
    if p.kind == "power_infer":
        if p.samples_per_s is None or shape:
            return " and ".join(n for n in ("samples_per_s" if p.samples_per_s is None else "", shape) if n)
        f = (totals(forward_kernels(arch, p.seq_len or 384, 1, dtype))[0] if arch is not None
             else VISION_FLOPS_PER_SAMPLE[key])  # type: ignore[index]
        return p.samples_per_s * f / dev, 0.0, 0.0
    # training: 6N FLOPs per token (forward 2N, backward 4N); low-rank adapters 4N (no weight gradients);
    # N the parameters a token uses (a MoE model's active ones)
    tokens = p.tokens_per_s or (p.samples_per_s * p.seq_len if p.samples_per_s and p.seq_len else None)
    if arch is not None and tokens is not None:
        per_token = 4.0 if p.trainable == "lora" else 6.0
        return per_token * arch.active_params * tokens / dev, 0.0, 0.0
    if key is not None and p.samples_per_s is not None:  # forward and backward: 3x
        return 3.0 * VISION_FLOPS_PER_SAMPLE[key] * p.samples_per_s / dev, 0.0, 0.0
    if key is not None:
        return "samples_per_s"
    if shape and (tokens is not None or p.samples_per_s is not None):
        return shape  # a throughput is given: a transformer's shape (and its seq_len) reads it
    return " and ".join(n for n in (shape, "tokens_per_s, or samples_per_s and seq_len") if n)


def roofline_fraction(p: PowerPoint, cat: Catalog) -> float | None:
    """The point's measured throughput over the most its devices can give by the roofline (the chip's
    peak FLOP/s and memory bandwidth, :func:`_rates`): above 1 is beyond the datasheet. None where the
    point has no throughput, model or catalog chip to read it with."""
    chip = chip_figures(p, cat)
    if chip is None:
        return None
    peak, rates = _peak_tflops(chip, p.precision), _rates(p, chip.memory_gib)
    if peak is None or isinstance(rates, str):
        return None
    flops, byts, _ = rates
    return max(flops / (peak * 1e12), byts / (chip.memory_bandwidth_gb_per_s * 1e9))


def _vision_key(p: PowerPoint) -> str | None:
    name = p.model_name.lower().replace("-", "")
    return next((k for k in VISION_FLOPS_PER_SAMPLE if k in name), None)


def features(p: PowerPoint, corpus: PowerCorpus, cat: Catalog) -> Features | None:
    """The point's time shares, or None when it cannot be fitted (:func:`fitting` says why)."""
    f = fitting(p, corpus, cat)
    return f if isinstance(f, Features) else None


def fitting(p: PowerPoint, corpus: PowerCorpus, cat: Catalog) -> Features | str:
    """The point's time shares, or why it cannot be fitted, in the point's own fields (a chip outside
    the catalog, no throughput of the same run, a model without kernels, a peak draw, facility scope)."""
    chip = chip_figures(p, cat)
    if chip is None:
        return "gpu 'other' without chip: kept as evidence (a chip needs its peaks to be fitted)"
    if p.exclude_reason:
        return "exclude_reason is given: kept as evidence"
    if chip.ceiling_unknown:
        return f"the maximum draw of {chip.name} is not known ({chip.ceiling_unknown}): kept as evidence"
    if p.power_stat != "mean":
        return f"power_stat {p.power_stat}: only mean draws are fitted"
    if corpus.metered(p) == "facility":
        return "its source is metered at the facility: only device and node draws are fitted"
    rates = _rates(p, chip.memory_gib)
    if isinstance(rates, str):
        return f"a {p.kind} point is fitted with {rates} (of the same run as its draw)"
    peak = _peak_tflops(chip, p.precision)
    if peak is None:
        return f"no peak figure of {chip.name} for precision {p.precision}"
    flops, byts, kv = rates
    s_c = min(1.0, flops / (COMPUTE_CEILING * peak * 1e12))
    s_m = min(1.0 - s_c, byts / (MEMORY_CEILING * chip.memory_bandwidth_gb_per_s * 1e9))
    if kv > 0:  # decode attention's KV-cache reads draw like compute (the planner's rule too)
        s_kv = s_m * kv / byts
        s_c, s_m = decode_draw_shares(s_c, s_m - s_kv, s_kv)
    # the rest of a training step: kernels below the roofline and the pipeline bubble, or, where ranks
    # exchange gradients, sync (split_train_rest); the rest of a service's time is host-side gaps
    # (stalls) or kernels slower than the roofline (split_rest)
    if p.kind == "power_train":
        shares = split_train_rest(p, s_c, s_m)
    else:
        c, m, st = split_rest(p, s_c, s_m, corpus.sources[p.source].window_idle_s)
        shares = (c, m, 0.0, st)
    per_node = p.power_per == "node"
    host = _host_w(p, cat) if per_node else 0.0
    if host is None:
        return ("power_per node needs the node's host draw: give instance_type (a catalog instance with "
                f"{p.devices} {p.gpu})")
    limit = None if p.power_limit_w is None or p.power_limit_w >= chip.max_w else p.power_limit_w
    return Features(p, corpus.group(p), shares, chip.idle_w, chip.max_w, per_node, p.devices, p.power_w, host,
                    limit)


@dataclass(frozen=True)
class ChipFigures:
    """The figures of a chip the fit needs: from the catalog, or from the corpus's own chips."""

    name: str
    peak_tflops: dict[str, float]
    memory_bandwidth_gb_per_s: float
    idle_w: float
    max_w: float
    memory_gib: float | None = None  # per device (catalog chips; the corpus's own chips state none)
    ceiling_unknown: str | None = None  # why max_w is not the chip's draw ceiling (corpus chips): not fitted


def chip_figures(p: PowerPoint, cat: Catalog) -> ChipFigures | None:
    """The point's chip: its catalog accelerator, else its corpus chip (``gpu: other`` with ``chip``),
    else None (evidence only)."""
    acc = cat.accelerators.get(p.gpu)
    if acc is not None:
        return ChipFigures(acc.name, acc.peak_tflops, acc.memory_bandwidth_gb_per_s, acc.power.idle_w,
                           acc.power.max_w, acc.memory_gib)
    if p.chip is None:
        return None
    c = corpus_chips()[p.chip]
    return ChipFigures(c.name, c.peak_tflops, c.memory_bandwidth_gb_per_s, c.idle_w, c.max_w,
                       ceiling_unknown=c.ceiling_unknown)


def _host_w(p: PowerPoint, cat: Catalog) -> float | None:
    """ecobench's host draw (CPUs at the load its ranks give, memory) of the point's instance type."""
    name = p.instance_type or NODE_STAND_IN.get((p.gpu, p.devices))
    if name is None or name not in cat.instances:
        return None
    from ecobench.power.draw import central_params, draw_w
    from ecobench.power.setup import power_setup

    setup = power_setup(cat, cat.instance(name), None, None, None, None)
    d = draw_w(setup.spec(COMPUTE_ONLY, 0.0), replace(central_params(1.0), host_scale=1.0))
    return float(d["cpu"] + d["memory"])


@dataclass(frozen=True)
class PowerFit:
    draws: dict[str, float]  # STATES -> fraction of the idle-to-maximum range (stall: the sourced one)
    host: dict[str, float]  # HOST -> W
    points: int
    residual_log_sd: float

    def predict_w(self, f: Features) -> float:
        row, const = f.design_row(self.draws["stall"], f.at_limit(self.draws))
        x = [self.draws[s] for s in FITTED] + [self.host[h] for h in HOST]
        return float(np.dot(row, x) + const)


LIMIT_ITERATIONS = 20  # refits until the set of points held at their power limit stops changing


def fit(feats: list[Features]) -> PowerFit:
    """Bounded least squares on relative errors: FITTED draws in [0, 1], host terms >= 0; the stall
    draw is the sourced one. A point whose device reaches its stated power limit under the current
    draws is predicted at the limit; the fit is repeated until that set is stable."""
    from scipy.optimize import lsq_linear

    d_stall = stall_draw()
    y = np.array([f.measured_w for f in feats], dtype=float)
    w = 1.0 / y
    has_node = any(f.per_node for f in feats)
    lo = [0.0] * len(FITTED) + [0.0]
    hi = [1.0] * len(FITTED) + [HOST_SCALE_MAX if has_node else 1e-9]
    limited = [False] * len(feats)
    for _ in range(LIMIT_ITERATIONS):
        rows = [f.design_row(d_stall, at) for f, at in zip(feats, limited, strict=True)]
        a = np.array([r for r, _ in rows], dtype=float)
        c = np.array([k for _, k in rows], dtype=float)
        x = lsq_linear(a * w[:, None], (y - c) * w, bounds=(lo, hi)).x
        draws = dict(zip(FITTED, map(float, x[:len(FITTED)]), strict=True)) | {"stall": d_stall}
        now = [f.at_limit(draws) for f in feats]
        if now == limited:
            break
        limited = now
    pred = a @ x + c
    sd = float(np.std(np.log(np.maximum(pred, 1e-9) / y))) if len(y) > 1 else 0.0
    k = len(FITTED)
    return PowerFit(dict(zip(FITTED, map(float, x[:k]), strict=True)) | {"stall": d_stall},
                    dict(zip(HOST, map(float, x[k:]), strict=True)), len(feats), sd)


def features_of(corpus: PowerCorpus, cat: Catalog) -> tuple[Features, ...]:
    """Every point of ``corpus`` that can be fitted, with its time shares."""
    return tuple(f for p in corpus.points if (f := features(p, corpus, cat)) is not None)


@functools.cache
def corpus_features() -> tuple[Features, ...]:
    """The packaged corpus's fitted points."""
    return features_of(load_corpus(), load_catalog())


@dataclass(frozen=True)
class PowerCheck:
    """One point predicted by a fit without its group, with its 90% band."""

    id: str
    kind: str
    group: str
    source: str
    gpu: str
    per: str
    measured_w: float
    predicted_w: float
    low_w: float
    high_w: float

    @property
    def error_pct(self) -> float:
        return (self.predicted_w / self.measured_w - 1.0) * 100.0

    @property
    def in_band(self) -> bool:
        return self.low_w <= self.measured_w <= self.high_w


def refits_without_each_group(feats: tuple[Features, ...]) -> dict[str, PowerFit]:
    """Group -> the fit on every other group's points (the holdout's and the ranges' refits)."""
    return {g: fit([f for f in feats if f.group != g]) for g in sorted({f.group for f in feats})}


def holdout(feats: tuple[Features, ...] | None = None,
            refits: dict[str, PowerFit] | None = None) -> list[PowerCheck]:
    """Every point predicted by a fit without its group; its 90% band ``[pred / e^q, pred x e^q]``,
    ``q`` the source-weighted conformal half-width of the other groups' held-out log errors (log of
    measured over predicted; each group weighing the same, ``residuals.source_weighted_halfwidth``,
    the rule of the throughput bands): a new lab's bias is one draw from the groups', not one from
    their pooled points, so a large group's tight errors do not narrow the band. Those errors are
    themselves predicted without the point's group (each other group by a fit without both,
    :func:`_nested_halfwidths`): the band never rests on a fit that saw the point it is scored on."""
    feats = corpus_features() if feats is None else feats
    refits = refits_without_each_group(feats) if refits is None else refits
    preds = [refits[f.group].predict_w(f) for f in feats]
    half = _nested_halfwidths(feats)
    out = []
    for f, pr in zip(feats, preds, strict=True):
        q = half[f.group]
        out.append(PowerCheck(f.point.id, f.point.kind, f.group, f.point.source, f.point.gpu,
                              f.point.power_per, f.measured_w, pr, pr * math.exp(-q), pr * math.exp(q)))
    return out


def _nested_halfwidths(feats: tuple[Features, ...]) -> dict[str, float]:
    """Group -> the band half-width (log) of its points: the source-weighted conformal half-width of
    every other group's log errors, each other group predicted by a fit without it and without this
    group. With the errors of fits that kept this group (one fit per other group), a group's own
    watts reached its band: raising one group's measured draws by half widened its band by up to
    190% (measured 2026-11-29, helper val25); nested, 15 fits (one per pair) for the corpus's 6 groups."""
    from ecobench.hardware.backends.residuals import source_weighted_halfwidth

    groups = sorted({f.group for f in feats})
    without = {frozenset((g, h)): fit([f for f in feats if f.group not in (g, h)])
               for i, g in enumerate(groups) for h in groups[i + 1:]}  # one fit per pair, serving both
    half: dict[str, float] = {}
    for g in groups:
        errs: list[float] = []
        names: list[str] = []
        for h in groups:
            if h == g:
                continue
            m = without[frozenset((g, h))]
            for f in feats:
                if f.group == h:
                    errs.append(math.log(f.measured_w / max(m.predict_w(f), 1e-9)))
                    names.append(h)
        half[g] = source_weighted_halfwidth(np.array(errs), np.array(names)) if errs else 0.0
    return half


def fit_with_ranges(feats: tuple[Features, ...] | None = None,
                    refits: dict[str, PowerFit] | None = None) -> dict[str, dict[str, float]]:
    """Each fitted parameter's central value (every group) and range: the lowest and highest of the
    fits that leave one group out (how much the answer rests on any one lab or benchmark)."""
    feats = corpus_features() if feats is None else feats
    full = fit(list(feats))
    refits = refits_without_each_group(feats) if refits is None else refits

    def param(m: PowerFit, k: str) -> float:
        return m.draws[k] if k in m.draws else m.host[k]

    out = {}
    for k in FITTED + HOST:
        vals = [param(m, k) for m in refits.values()] + [param(full, k)]
        out[k] = {"central": param(full, k), "low": min(vals), "high": max(vals)}
    return out
