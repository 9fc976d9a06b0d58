"""The efficiency model: what share of its peaks a software stack achieves, fitted on published points.

A configuration's time is the step model's (``parallel/step.py``): every kernel at
``max(FLOPs / (compute x peak), bytes / (memory x bandwidth)) + overhead``, collectives at
``network x`` link bandwidth, plus pipeline bubble, recomputation and exposed communication. What is
left to fit is how well a stack drives the hardware:

* ``compute.<vendor>.<mode>``: share of the dense peak reached by compute-bound kernels, per
  accelerator vendor and mode (training / inference);
* ``device.<accelerator>``: a factor on it for each accelerator (clocks under load, how well a
  generation's tensor cores are fed), and ``stack.<name>``: one for each software stack (Megatron,
  NeMo, FSDP, Neuron, TensorRT...). Both are shrunk towards 1 (an accelerator or a stack is assumed
  within about 20% of its vendor's typical value unless its points say otherwise), so one never seen
  gets the vendor's typical value;
* ``attention.<vendor>.<mode>``: the share of that which attention kernels reach (FlashAttention's
  kernels run below the GEMMs' share of peak; serving's decode attention is another kernel again);
* ``gemm_rows.<vendor>``: the token rows ``M`` at which a serving prefill's weight matmul reaches half its
  compute share: a prefill's matmul of ``M`` rows (prompt tokens x prompts) runs its compute-bound time
  at ``M / (M + gemm_rows)`` of the share (too few output tiles to fill the SMs: tile and wave
  quantization), ~1 at thousands of rows. NVIDIA only (:data:`GEMM_ROWS_VENDORS`); decode steps
  (memory-bound weight streaming) and training or encoder inference take none;
* ``lowp.<vendor>.serving``: the share of ``compute`` a served 8-bit model's (FP8, INT8) weight matmuls
  reach of their 8-bit peak (:data:`LOWP_SIGMA`; its attention and element-wise work run at 16 bits as
  before; serving only, :data:`LOWP_MODES`);
* ``memory.<vendor>``: share of memory bandwidth reached by memory-bound kernels;
* ``overhead.<vendor>.<mode>``: fixed seconds per kernel (launch, synchronisation; inference
  stacks differ from training stacks);
* ``collective.<implementation>`` (``nccl``, ``custom``; else ``collective.<stack>``): serving's seconds
  per step of a tensor-parallel all-reduce (decode's all-reduces are small, so their latency, not the
  link bandwidth, sets their time), fitted per implementation across the stacks that run it;
* ``request.<vendor>`` x ``request_stack.<stack>``: serving's fixed seconds per request, paid once by a
  prefill (TTFT): the vendor's, times a factor per stack shrunk towards 1 (a C++ benchmark loop adds
  less than an engine behind an HTTP server); a stack never seen takes the vendor's;
* ``step.<stack>``: serving's fixed seconds per engine step of each stack (the host's work around a
  step: scheduling, sampling, launches a CUDA graph does not cover), paid by every decode step and by
  a static batch's prefill step (its TTFT); one never seen takes the prior centre;
* ``seq_step.<stack>``: serving's host seconds per sequence an engine step carries (scheduling each
  sequence, sampling its token, building its share of the step's input metadata in Python), paid by a
  decode step per sequence of its batch and by a static batch's prefill step per prompt; only for the
  stacks whose step loop runs on the host, in Python, between device steps
  (:data:`HOST_STEP_STACKS`, and any source that launches eagerly: :func:`pays_seq_step`); a C++
  runtime's (TensorRT-LLM, TurboMind) or a compiled Neuron graph's is taken as none;
* ``launch.eager.<accelerator>``: host seconds per kernel an eager engine (PyTorch eager mode, no CUDA
  graph) launches: its decode step, and a static batch's prefill, take at least its launches' host time
  (``parallel/serving.py``, ``launch_bound_s``); only for the sources that state (or are inferred to
  have run) ``launch: eager``; per accelerator, standing for the host CPU of its servers (the launches
  run on the host; a DGX-A100 has AMD EPYC Rome CPUs, a DGX-H100 Xeon Sapphire Rapids); one never seen
  takes the prior centre;
* ``reread.<vendor>``: the share of an ungrouped decode attention's repeated key/value reads that
  reach memory (``parallel/serving.py``: sources whose stack predates grouped-query kernels);
* ``network``: share of link bandwidth reached by collectives (``network.serving`` for serving's
  tensor-parallel all-reduces), and ``zero3.<stack>``: the share of
  that which a stack's ZeRO-3 parameter gathers reach (shrunk towards 1; DeepSpeed's ZeRO-3 of 2021
  sits far below PyTorch FSDP's).

The parameters are fitted in log space by least squares on log(predicted / published) throughput
(weighted by an assumed 15% scatter of published figures), with weak priors that keep a parameter
defined when its points are held out (a maximum a-posteriori fit). ``holdout`` refits without each
source in turn and predicts that source's points: the out-of-sample error ``validate`` reports.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from ecobench.hardware.catalog import Catalog, load_catalog
from ecobench.hardware.cluster import instance_cluster, make_cluster
from ecobench.hardware.neuron.arch import logical_core_size
from ecobench.parallel.collectives import all_reduce_s
from ecobench.parallel.layout import Layout
from ecobench.parallel.serving import (
    TP_ALL_REDUCES_PER_LAYER,
    ServeWorkload,
    compiled_graph_tokens,
    decode_step_s,
    kv_reread_bytes,
    overlap_s,
    prefill_fused_attention,
    prefill_s,
    serve_kernels,
    step_host_s,
    step_launches,
    tp_ring_gb_per_s,
    with_routed_reads,
)
from ecobench.parallel.step import (
    ANALYTIC_SETS,
    Cases,
    Cluster,
    Efficiency,
    KernelArrays,
    Layouts,
    Workload,
    case_constants,
    combine,
    evaluate,
    is_8bit,
    kernel_time_s,
    stage_kernels,
)
from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.moe_blockwise import prefill_block_tokens
from ecobench.workloads.transformer import forward_kernels

if TYPE_CHECKING:  # the points are read only to fit and to hold out, not by a run
    from ecobench.hardware.published import HoldoutRow, PublishedPoint, PublishedPoints

OBS_SIGMA = 0.15  # assumed scatter of a published throughput around what its set-up can reach (log)
OBS_SIGMA_TTFT = 0.3  # time to first token carries more of the host's scheduling and tokenisation
# The stack's factor on the vendor's per-request seconds: shrunk towards 1 as loosely as zero3.<stack> (0.5:
# within about x1.65 at one sigma), the other per-stack factor on a vendor-wide quantity that is known to
# differ a lot between stacks; the compute factor's 0.2 assumes stacks within ~20%, which host code does not
# keep (TensorRT-LLM's C++ gptSessionBenchmark vs an engine behind an HTTP server). Measured held out
# (helper req12, 2026-11-27; llm_serve TTFT |error| median / p90 / worst, one vendor-wide overhead -> 0.5
# -> 1.0): 12.4 / 47.5 / 90.1 -> 11.9 / 41.7 / 88.6 -> 12.0 / 41.4 / 87.6 (the v0.9.0 sweep's batch-1
# rows: p90 54.6 -> 35.3 -> 26.7); docs/serving.md.
REQUEST_STACK_SIGMA = 0.5
# The per-sequence host cost per engine step, for the stacks whose step loop runs in Python on the host
# between device steps: vLLM's V0 engine (2023-2024), which scheduled, prepared the inputs, sampled and
# turned each step's outputs into Python objects synchronously, per sequence ("the time between two steps
# ... sampling time, prepare input time, process_model_output time, and scheduler time. When BS is 200,
# all this together can be 20ms": vllm-project/vllm issue #6801, comment of 2024-08-08, a vLLM
# maintainer agreeing; "GPU is often idle, waiting for CPU operations (5-13ms of GPU bubble)": RFC #6854,
# 2024-07-26). Prior centre 20 ms / 200 sequences = 100 us (inferred from that figure; it also holds the
# step's fixed part, which step.<stack> carries, so the centre is high if anything); sigma 1.0 (x2.7).
# The published vLLM points are V0-era (the Argonne sweep, 2024); vLLM's V1 engine (default from 0.8,
# 2025) overlaps this work with the device's, and TensorRT-LLM's and TurboMind's C++ runtimes, the
# Neuron stacks' compiled fixed-batch graphs and one-request benchmarks have no such term.
# Tried with the term on every stack (helper seq12, 2026-11-27: prior 20 us, sigma 1.5): fitted on
# every point 70 us for vLLM, 12 us TensorRT-LLM, 16 us LMDeploy; held out the TensorRT-LLM sweeps lost
# (their batch >= 16 rows split a step cost from a per-sequence one) and it was not kept.
# A source that launches eagerly (``launch: eager``) pays it too, under its own stack's key
# (:func:`pays_seq_step`): a PyTorch eager step loop is a Python one (the Splitwise profiles, inferred an
# internal vLLM branch of 2023, i.e. V0's per-sequence loop). Its own key, not vLLM's: the branch is
# inferred, not stated, so held out its cost rests on the sourced prior rather than on another source's
# fit (helper seqs14, 2026-11-28; held-out figures in docs/serving.md).
# vLLM's V1 engine (stack ``vllm-v1``) is not among them: it schedules and prepares the next step in a
# process of its own, beside the device's work (docs/serving.md, "vLLM V1: a stack of its own").
HOST_STEP_STACKS = frozenset({"vllm"})
SEQ_STEP_PRIOR_S = 1e-4
# Host seconds per modelled kernel an eager engine launches (``launch.eager.<accelerator>``). Prior
# centre from vLLM before its CUDA graphs (vllm-project/vllm PR #1926, "Optimize model execution with
# CUDA graph", opened 2023-12-05, review closed 2023-12-17; "Since vllm 0.2.7, CUDA graph generation is
# on by default": bentoml/OpenLLM issue #1003, 2024-05-28): Llama-2-7B at batch 1, TP 1, 5 prompt and
# 100 output tokens took "about 1.05s ... with CUDA graph" and "about 1.2s without" (PR #1440,
# 2023-10-20), i.e. ~12 ms per decode step eager, host-bound (a graph shortened it). The model's decode
# step of Llama-2-7B has 258 kernels that compute (8 per layer, the final norm, the LM head; vLLM eager
# launched ~10 per layer: fused norm, QKV GEMM, rotary, cache write, paged attention, output GEMM, fused
# add-norm, gate/up GEMM, SiLU-and-mul, down GEMM), so 12 ms / 258 = 47 us per modelled kernel (an upper
# estimate: the 12 ms also holds the step's sampling). Plain PyTorch eager, unfused, takes more: gpt-fast's
# starting point, Llama-2-7B at 25.5 tok/s on A100, "heavily CPU overhead bound"
# (pytorch.org/blog/accelerating-generative-ai-2/, 2023-11), is 39 ms / 258 = 150 us. Sigma 1.0.
LAUNCH_PRIOR_S = 4.7e-5
# The weight matmul's rows at half its large-matrix compute rate (``gemm_rows.<vendor>``). A GEMM of M rows
# is cut into output tiles of 64-256 rows x 64-256 columns, one thread block each: with few rows there are
# too few tiles to fill a GPU's SMs (A100: 108 SMs; a partial last wave idles SMs), and cuBLAS falls back
# to smaller tiles and split-K (NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001,
# February 2023, ch. 3 "Dimension Quantization Effects", docs.nvidia.com/deeplearning/performance/).
# Measured fp16 cuBLAS on a T4, N=1024, K=2048 (NVIDIA/cutlass issue #106, 2020-06-30): M = 128, 256, 512,
# 1024 in 70, 94, 150, 274 us, i.e. 0.49, 0.73, 0.91 of the M=1024 rate at 128-512 rows, M / (M + h) with
# h ~ 50-130 (inferred). Prior centre 100 rows, sigma 1.0 (x2.7); NVIDIA only (no Neuron evidence).
# Serving prefills only: with the factor on decode steps (M = batch) and training too (helper gemm14,
# 2026-11-28) it fitted 138 rows, made a 7B decode step on an A100 compute-bound from batch ~16, and held
# out llm_serve TPOT |error| median went 8.3 -> 10.3%, tokens/s 6.7 -> 8.1%, encoder_train 5.3 -> 9.1%; the
# decode rows disagree (a decode step's few-row matmuls stream the weights at memory speed). On prefills
# only it fits 79 rows on every point; held-out figures in docs/serving.md.
GEMM_ROWS_VENDORS = frozenset({"nvidia"})
# An 8-bit job's weight matmuls (``lowp.<vendor>.<mode>``): the share of ``compute`` they reach of their
# 8-bit peak, relative to a 16-bit matmul's of its peak. Prior centre 1 (no assumption: the datasheet's
# doubled peak), sigma 0.3: FP8 GEMMs are commonly measured further below their peak than BF16 ones (a
# wave of tiles does twice the work in the same memory traffic, and an FP8 recipe adds casts and scaling
# kernels around each matmul), but by how much per stack is what the published points say.
# Serving only (:data:`LOWP_MODES`): per mode, training's fitted at 0.98 on every point, but held out its
# extra freedom moved the A100 BERT-Large training points of NVIDIA's DLE source from +2% to +12%
# (docs/serving.md "8-bit weight matmuls").
LOWP_SIGMA = 0.3
LOWP_MODES = frozenset({"serving"})
GEMM_ROWS_PRIOR = 100.0
# Priors: (centre, sigma in log space). Wide except the stack factor, which is the shrinkage.
PRIORS: dict[str, tuple[float, float]] = {
    "compute": (0.5, 0.7),
    "stack": (1.0, 0.2),
    "device": (1.0, 0.2),
    "attention": (0.7, 0.5),
    "zero3": (1.0, 0.5),
    "request": (5e-3, 1.5),
    "request_stack": (1.0, REQUEST_STACK_SIGMA),
    "collective": (1e-5, 1.5),
    "step": (2e-4, 2.0),
    "seq_step": (SEQ_STEP_PRIOR_S, 1.0),
    "gemm_rows": (GEMM_ROWS_PRIOR, 1.0),
    "lowp": (1.0, LOWP_SIGMA),
    "reread": (0.5, 1.0),
    "launch": (LAUNCH_PRIOR_S, 1.0),
    "memory": (0.6, 0.5),
    "overhead": (5e-6, 1.5),
    "network": (0.7, 0.3),
}
BOUNDS: dict[str, tuple[float, float]] = {
    "compute": (0.02, 1.0), "stack": (0.3, 3.0), "device": (0.3, 3.0), "attention": (0.05, 1.5),
    "zero3": (0.02, 3.0), "request": (1e-5, 0.5), "request_stack": (0.01, 100.0), "collective": (1e-7, 1e-3),
    "step": (1e-6, 0.2), "seq_step": (1e-8, 1e-3), "reread": (0.01, 1.0), "launch": (1e-7, 1e-3),
    "gemm_rows": (1.0, 4096.0), "lowp": (0.2, 1.5),
    "memory": (0.02, 1.0), "overhead": (1e-8, 1e-3), "network": (0.02, 1.0),
}
FIT_FILE = "data/efficiency_fit.json"
# Stacks whose ZeRO-3 all-gathers each parameter tensor on its own (12 collectives per GPT layer, not
# one): DeepSpeed's ZeRO-3 until mid-2021, "all_gathers for one parameter ... most of the all_gather
# operations are very small" (DeepSpeed issue #1069, 2021-06-21); batched by PR #1188 (2021-06-25,
# _allgather_params_coalesced), after the SC'21 paper's runs (2021-04). PyTorch FSDP gathers one flat
# parameter per wrapped layer.
ZERO3_PER_TENSOR_STACKS = frozenset({"deepspeed-zero3"})
# Stacks whose ZeRO-3 parameter gathers do not overlap compute: DeepSpeed's ZeRO-3 from its release
# (PR #834, 2021-03-08) to PR #1188 (merged 2021-10-31) called torch.cuda.synchronize() before each
# parameter's all-gather (partition_parameters.py, _allgather_param); PR #1188's message: "the async
# version is not async at all, because each all_gather calls torch.cuda.synchronize()". Its gradient
# reduce-scatters ran asynchronously on a reduction stream (stage3.py, average_tensor).
ZERO3_SYNC_GATHER_STACKS = frozenset({"deepspeed-zero3"})
UNSTATED_STACK = "unstated"  # a source that does not say which engine it ran: its own factors, never offered
# The tensor-parallel all-reduce a stack runs today where a configuration does not say (its latency is
# fitted per implementation, ``collective.<implementation>``): vLLM's custom all-reduce is on by default
# since PR #4040 (2024-04-12, "custom allreduce should be enabled by default"; kernels of PR #2192);
# TensorRT-LLM's PluginConfig defaults use_custom_all_reduce to True (tensorrt_llm/plugin/plugin.py,
# 2024 versions read 2026-11-26); SGLang's unless --disable-custom-all-reduce is passed (sgl-project/sglang
# docs/advanced_features/server_arguments.md: default false, "Fall back to standard NCCL allreduce instead of
# the custom kernel", read 2026-11-28). Other stacks keep their own latency (collective.<stack>).
STACK_ALL_REDUCE = {"vllm": "custom", "vllm-v1": "custom", "tensorrt-llm": "custom", "sglang": "custom"}
# NCCL between GPUs without a peer link (PCIe boards: no NVLink, so no custom all-reduce) is its own
# implementation for the fit: each step of its all-reduce crosses PCIe switches or the host bridge (NCCL's P2P
# or SHM transport), not NVLink, so its latency per step is not that of NCCL over NVLink; one latency for both
# let the NVLink runs' latency set the PCIe boards' (the DLI sweep's L40S TP 8 rows came out 82% slow).
PCIE_ALL_REDUCE = "nccl-pcie"


@dataclass(frozen=True)
class Fit:
    """Fitted parameters (by name) and the points they were fitted on."""

    values: dict[str, float]
    points: tuple[str, ...]

    def value(self, name: str, kind: str) -> float:
        """The fitted parameter ``name`` (of prior ``kind``); one the fit never saw: its prior centre."""
        return self.values.get(name, PRIORS[kind][0])

    def request_overhead_s(self, vendor: str, stack: str | None = None) -> float:
        """Fixed seconds a serving stack adds to every prefill (scheduling, graph launch, sampling): the
        vendor's, times the stack's factor (None, or a stack never seen: the vendor's)."""
        factor = self.value(f"request_stack.{stack}", "request_stack") if stack else 1.0
        return self.value(f"request.{vendor}", "request") * factor

    def efficiency(self, vendor: str, mode: str, accelerator: str | None = None,
                   stack: str | None = None, all_reduce: str | None = None,
                   launch: str | None = None) -> Efficiency:
        """The efficiency of ``accelerator`` (a ``vendor`` part) in ``mode`` on ``stack`` (None: the
        vendor's typical stack), its tensor-parallel all-reduces by ``all_reduce`` (None: what the stack
        runs by default, :data:`STACK_ALL_REDUCE`), its kernels launched by ``launch`` (``eager``: one by
        one from the host, ``launch.eager`` seconds each; None or ``graph``: CUDA graphs). Parameters the
        fit never saw take their prior centre (1 for the accelerator and stack factors)."""
        get = self.value
        device = self.values.get(device_key(accelerator, mode), get(f"device.{accelerator}", "device"))
        compute = get(f"compute.{vendor}.{mode}", "compute") * device \
            * (get(f"stack.{stack}", "stack") if stack else 1.0)
        label = f"{accelerator or vendor} {mode}" + (f" on {stack}" if stack else " (typical stack)")
        return Efficiency(compute=min(1.0, compute), memory=get(memory_key(vendor, mode), "memory"),
                          overhead_s=get(f"overhead.{vendor}.{mode}", "overhead"),
                          network=get(network_key(mode), "network"),
                          attention=get(f"attention.{vendor}.{mode}", "attention"),
                          sharded_network=get(f"zero3.{stack}", "zero3") if stack else 1.0,
                          zero3_per_tensor=stack in ZERO3_PER_TENSOR_STACKS,
                          zero3_sync_gathers=stack in ZERO3_SYNC_GATHER_STACKS,
                          collective_latency_s=get(collective_key(stack, all_reduce), "collective")
                          if mode == "serving" else None,
                          step_overhead_s=get(f"step.{stack}", "step") if mode == "serving" else 0.0,
                          seq_step_overhead_s=get(f"seq_step.{stack}", "seq_step")
                          if mode == "serving" and pays_seq_step(stack, launch) else 0.0,
                          kv_reread=get(f"reread.{vendor}", "reread") if mode == "serving" else 0.0,
                          launch_s=get(launch_key(launch, accelerator), "launch")
                          if mode == "serving" and launch == EAGER else 0.0,
                          gemm_half_rows=get(f"gemm_rows.{vendor}", "gemm_rows")
                          if mode == "serving" and vendor in GEMM_ROWS_VENDORS else 0.0,
                          low_precision=get(lowp_key(vendor, mode), "lowp") if mode in LOWP_MODES else 1.0,
                          source=f"efficiency fitted jointly on {len(self.points)} published points of every "
                                 f"mode: {label}")


@dataclass(frozen=True)
class Prepared:
    """A point with everything that does not depend on the parameters computed once."""

    point: PublishedPoint
    vendor: str
    accelerator: str
    stack: str
    targets: tuple[tuple[str, float, float], ...]  # (figure, published value, sigma of its log)
    cluster: Cluster
    workload: Workload | None = None
    layouts: Layouts | None = None
    kernels: KernelArrays | None = None
    ranks: int = 1
    serve: ServeWorkload | None = None
    all_reduce: str | None = None  # serving: the tensor-parallel all-reduce (None: the stack's own)
    launch: str | None = None  # serving: eager (kernels launched one by one), graph or None (the stack's)

    @property
    def published(self) -> float:
        """The first published figure (sequences per second, or TPOT for serving)."""
        return self.targets[0][1]

    @property
    def keys(self) -> list[str]:
        """Parameter names this point depends on."""
        v, mode = self.vendor, self.point.mode
        keys = [f"compute.{v}.{mode}", device_key(self.accelerator, mode), f"stack.{self.stack}",
                f"attention.{v}.{mode}", memory_key(v, mode), f"overhead.{v}.{mode}", network_key(mode)]
        if self.layouts is not None and int(self.layouts.zero[0]) == 3:
            keys.append(f"zero3.{self.stack}")
        if is_8bit(self.cluster) and mode in LOWP_MODES:
            keys.append(lowp_key(v, mode))
        if self.serve is not None:
            if v in GEMM_ROWS_VENDORS:
                keys.append(f"gemm_rows.{v}")
            keys += [f"request.{v}", f"request_stack.{self.stack}",
                     collective_key(self.stack, self.all_reduce), f"step.{self.stack}"]
            if pays_seq_step(self.stack, self.launch):
                keys.append(f"seq_step.{self.stack}")
            if kv_reread_bytes(self.serve) > 0:
                keys.append(f"reread.{v}")
            if self.launch == EAGER:
                keys.append(launch_key(self.launch, self.accelerator))
        return keys

    def predict(self, eff: Efficiency, request_s: float = 0.0) -> dict[str, float]:
        """Predicted figures: ``sequences_per_s`` (whole run; per instance for inference), or for
        serving ``tpot_ms``, ``ttft_ms`` and ``output_tokens_per_s``."""
        if self.serve is not None:
            b = float(self.point.batch_size or 1)
            rows = np.array([float(self.point.decode_batch)])  # Neuron: the compiled batch
            tpot = float(decode_step_s(self.serve, self.cluster, eff, rows)[0])
            # a static batch's prefill is one engine step carrying its b prompts
            ttft = float(prefill_s(self.serve, self.cluster, eff, b) + step_host_s(eff, b)) + request_s
            return serving_figures(tpot, ttft, b, self.serve.output_tokens)
        if self.kernels is not None:
            b = self.point.batch_size or 1
            t = float(self.kernels.time_s(np.array([b]), self.cluster, eff)[0])
            return {"sequences_per_s": self.ranks * b / t}
        assert self.workload is not None and self.layouts is not None
        step = evaluate(self.workload, self.cluster, self.layouts, eff)
        return {"sequences_per_s": float(step.sequences_per_s[0])}


def serving_figures(tpot_s: Any, ttft_s: Any, batch: Any, output_tokens: Any) -> dict[str, Any]:
    """The published serving figures from a decode step and a prefill: a static batch prefills
    together, then decodes ``output_tokens - 1`` more tokens together."""
    return {"tpot_ms": 1e3 * tpot_s, "ttft_ms": 1e3 * ttft_s,
            "output_tokens_per_s": batch * output_tokens / (ttft_s + (output_tokens - 1) * tpot_s)}


def prepare(p: PublishedPoint, pts: PublishedPoints, cat: Catalog) -> Prepared:
    """Resolve a point's model, cluster and layout."""
    stack = p.stack or pts.sources[p.source].stack
    all_reduce = pts.sources[p.source].all_reduce
    launch = pts.sources[p.source].launch
    if p.system is not None:
        sysm = pts.systems[p.system]
        acc_key = sysm.accelerator
        acc = cat.accelerators[acc_key]
        cl = make_cluster(acc, sysm.ranks_per_node, sysm.intra_gb_per_s, _DEFAULT_LINK_LATENCY_US,
                          sysm.network_gbps, p.precision)
        if sysm.memory_gib is not None:
            cl = dataclasses.replace(cl, memory_gib=sysm.memory_gib)
        if not sysm.peer_link:  # no peer reads over PCIe: the engines fall back to NCCL, over PCIe
            all_reduce = PCIE_ALL_REDUCE
    else:
        inst = cat.instance(p.instance_type or "")
        acc_key = inst.spec.accelerator or ""
        acc = cat.accelerators[acc_key]
        cl = instance_cluster(cat, inst, p.precision)
    arch = p.arch
    if p.kind == "llm_serve":
        assert p.tensor and p.input_tokens and p.output_tokens
        # static shapes: the prompt runs its padded context-encoding bucket (the point's compiled length)
        bucket = p.prefill_bucket_tokens(acc.static_kv_cache)
        sw = ServeWorkload(arch, p.input_tokens, p.output_tokens, p.precision, p.tensor, p.weight_precision,
                           p.kv_cache_precision, static_cache=acc.static_kv_cache,
                           grouped_kv_reads=pts.sources[p.source].grouped_reads_for(arch.heads, arch.kv),
                           prefill_bucket_tokens=bucket,
                           moe_block_tokens=prefill_block_tokens(acc.static_kv_cache, stack),
                           graph_tokens=compiled_graph_tokens(acc.static_kv_cache, stack, p.seq_len),
                           fused_attention=prefill_fused_attention(
                               stack, logical_core_size(acc_key), bucket or p.input_tokens,
                               pts.sources[p.source].fused_attention))
        # Fitted on TPOT and TTFT; on the throughput only where no TPOT is published (elsewhere it is
        # derived from the same runs, and Neuron's tables disagree with their own TPOT); never on a
        # figure the row contradicts (``unfitted_figures``).
        sigma = {"tpot_ms": OBS_SIGMA, "ttft_ms": OBS_SIGMA_TTFT, "output_tokens_per_s": OBS_SIGMA}
        figs = {f: v for f, v in published_figures(p).items() if f not in p.unfitted_figures}
        if "tpot_ms" in figs:
            figs.pop("output_tokens_per_s", None)
        targets = tuple((fig, v, sigma[fig]) for fig, v in figs.items())
        return Prepared(p, acc.vendor, acc_key, stack, targets, cl, serve=sw, all_reduce=all_reduce,
                        launch=launch)
    if p.kind == "encoder_infer":
        chips = p.accelerators or (cat.instance(p.instance_type).spec.accelerator_count
                                   if p.instance_type else 1)
        ks = forward_kernels(arch, p.seq_len, p.batch_size or 1, p.precision)
        return Prepared(p, acc.vendor, acc_key, stack, (("sequences_per_s", p.throughput_per_s, OBS_SIGMA),),
                        cl, kernels=KernelArrays.of(ks), ranks=chips * acc.ranks_per_chip)
    lay = p.layout
    assert lay is not None and p.global_batch_size is not None
    ranks = p.nodes * cl.ranks_per_node
    data = lay.data or ranks // (lay.tensor * lay.pipeline)
    layout = Layout(lay.tensor, lay.pipeline, data, lay.zero, lay.recompute, lay.microbatch, lay.virtual,
                    expert=lay.expert, expert_tensor=lay.expert_tensor, expert_dispatch=lay.expert_dispatch,
                    expert_overlap=lay.expert_overlap)
    w = Workload(arch, p.seq_len, p.global_batch_size, p.precision,
                 fused_attention=None if pts.sources[p.source].fused_attention else False,
                 fused_loss=pts.sources[p.source].fused_loss)
    return Prepared(p, acc.vendor, acc_key, stack, (("sequences_per_s", p.throughput_per_s, OBS_SIGMA),), cl,
                    workload=w, layouts=Layouts.of([layout], p.nodes), ranks=ranks)


_DEFAULT_LINK_LATENCY_US = 3.0


def device_key(accelerator: str | None, mode: str) -> str:
    """The accelerator factor's parameter: serving has its own (decode and prefill of a serving stack
    feed an accelerator unlike training or encoder inference do), the other modes share one."""
    return f"device.{accelerator}.serving" if mode == "serving" else f"device.{accelerator}"


def collective_key(stack: str | None, all_reduce: str | None = None) -> str:
    """The all-reduce latency's parameter: per implementation (``nccl``, ``custom``) where it is known
    (given, or the stack's default in :data:`STACK_ALL_REDUCE`), else per stack."""
    impl = all_reduce or STACK_ALL_REDUCE.get(stack or "")
    return f"collective.{impl or stack}"


EAGER = "eager"  # a source's ``launch``: the host launches every kernel of a step (no CUDA graph)


def pays_seq_step(stack: str | None, launch: str | None) -> bool:
    """Whether a serving engine pays host seconds per sequence of each step (``seq_step.<stack>``): a
    stack whose step loop runs in Python on the host (:data:`HOST_STEP_STACKS`), or an engine that
    launches its kernels eagerly (a PyTorch eager step loop, which is a Python one)."""
    return stack in HOST_STEP_STACKS or launch == EAGER


def launch_key(launch: str | None, accelerator: str | None) -> str:
    """The eager launch cost's parameter: host seconds per kernel, per accelerator (standing for the
    host CPU of its servers: the launches run on the host)."""
    return f"launch.{launch}.{accelerator}"


def memory_key(vendor: str, mode: str) -> str:
    """The memory-bandwidth share's parameter: serving's decode streams weights and caches in long
    reads; training and encoder inference share one for their short element-wise kernels."""
    return f"memory.{vendor}.serving" if mode == "serving" else f"memory.{vendor}"


def lowp_key(vendor: str, mode: str) -> str:
    """The 8-bit weight matmuls' share parameter (:data:`LOWP_SIGMA`), per vendor and mode."""
    return f"lowp.{vendor}.{mode}"


def network_key(mode: str) -> str:
    """The link-bandwidth share's parameter: serving's tensor-parallel all-reduces (inference
    engines' own kernels) have one, training's collectives another."""
    return "network.serving" if mode == "serving" else "network"


def _kind(name: str) -> str:
    return name.split(".", 1)[0]


def _names(prepared: list[Prepared]) -> list[str]:
    return sorted({k for p in prepared for k in p.keys})


class Batch:
    """Every point's predictions as one vectorised computation of the parameters: the kernels of all
    points concatenated (summed per point and kernel set with ``bincount``), then the closed-form
    step of all training points at once, and the serving latencies. What :meth:`Prepared.predict`
    does point by point."""

    SETS = ANALYTIC_SETS  # training; inference uses set 0, serving sets 0 (decode) and 1 (prefill)

    def __init__(self, prepared: list[Prepared], names: list[str]) -> None:
        self.names = names
        idx = {n: i for i, n in enumerate(names)}
        self.n = len(prepared)
        col = lambda key: np.array([idx[key(p)] for p in prepared])  # noqa: E731
        self.i_compute = col(lambda p: f"compute.{p.vendor}.{p.point.mode}")
        self.i_device = col(lambda p: device_key(p.accelerator, p.point.mode))
        self.i_stack = col(lambda p: f"stack.{p.stack}")
        self.i_attention = col(lambda p: f"attention.{p.vendor}.{p.point.mode}")
        self.i_memory = col(lambda p: memory_key(p.vendor, p.point.mode))
        self.i_overhead = col(lambda p: f"overhead.{p.vendor}.{p.point.mode}")
        self.i_network = col(lambda p: network_key(p.point.mode))
        self.i_zero3 = np.array([idx.get(f"zero3.{p.stack}", -1) for p in prepared])
        self.i_request = np.array([idx.get(f"request.{p.vendor}", -1) for p in prepared])
        self.i_request_stack = np.array([idx.get(f"request_stack.{p.stack}", -1) for p in prepared])
        self.i_collective = np.array([idx.get(collective_key(p.stack, p.all_reduce), -1) for p in prepared])
        self.i_step = np.array([idx.get(f"step.{p.stack}", -1) for p in prepared])
        self.i_seq_step = np.array([idx.get(f"seq_step.{p.stack}", -1) if pays_seq_step(p.stack, p.launch)
                                    else -1 for p in prepared])
        self.i_reread = np.array([idx.get(f"reread.{p.vendor}", -1) for p in prepared])
        self.i_launch = np.array([idx.get(launch_key(p.launch, p.accelerator), -1) if p.launch == EAGER
                                  else -1 for p in prepared])
        self.i_gemm_rows = np.array([idx.get(f"gemm_rows.{p.vendor}", -1) if p.serve is not None else -1
                                     for p in prepared])
        self.i_lowp = np.array([idx.get(lowp_key(p.vendor, p.point.mode), -1) if is_8bit(p.cluster) else -1
                                for p in prepared])
        parts: list[tuple[int, int, KernelArrays]] = []
        launches: list[tuple[float, float]] = []  # per serving point: kernels a decode step, a prefill launch
        for i, p in enumerate(prepared):
            if p.serve is not None:  # the decode step at its batch reads a share of the routed experts
                dec, pre = serve_kernels(p.serve)
                launches.append((step_launches(p.serve, dec), step_launches(p.serve, pre)))
                dec = with_routed_reads(dec, p.serve.arch, float(p.point.decode_batch), p.serve.nxd_moe)
                parts += [(i, 0, dec), (i, 1, pre)]
            elif p.kernels is not None:
                parts.append((i, 0, p.kernels))
            else:
                assert p.workload is not None and p.layouts is not None
                assert p.layouts.expert is not None
                assert p.layouts.expert_tensor is not None
                sk = stage_kernels(p.workload, int(p.layouts.tensor[0]), int(p.layouts.expert[0]),
                                   int(p.layouts.expert_tensor[0]))
                parts += [(i, j, getattr(sk, name)) for j, name in enumerate(self.SETS)]
        cat = lambda f: np.concatenate([f(i, j, k) for i, j, k in parts])  # noqa: E731
        self.k_point = cat(lambda i, j, k: np.full(len(k.flops), i))
        self.k_seg = cat(lambda i, j, k: np.full(len(k.flops), i * len(self.SETS) + j))
        self.k_flops = cat(lambda i, j, k: k.flops)
        self.k_act = cat(lambda i, j, k: k.act_bytes)
        self.k_weight = cat(lambda i, j, k: k.weight_bytes)
        self.k_wm = cat(lambda i, j, k: k.weight_matmul)
        self.k_att = cat(lambda i, j, k: k.attention)
        self.k_rows = cat(lambda i, j, k: k.rows if k.rows is not None else np.zeros(len(k.flops)))
        micro = np.array([int(p.layouts.microbatch[0]) if p.layouts is not None else (p.point.batch_size or 1)
                          for p in prepared], dtype=float)
        cl = [p.cluster for p in prepared]
        kp = self.k_point
        # a serving point's decode kernels run its decode batch (Neuron: the compiled batch)
        decode = np.array([float(p.point.decode_batch) if p.serve is not None else 0.0 for p in prepared])
        first_set = self.k_seg % len(self.SETS) == 0
        self.k_micro = np.where(first_set & (decode[kp] > 0), decode[kp], micro[kp])
        self.k_peak = np.array([c.peak_tflops for c in cl])[kp]
        self.k_peak16 = np.array([c.peak_16bit_tflops or c.peak_tflops for c in cl])[kp]
        self.k_bw = np.array([c.memory_gb_per_s for c in cl])[kp]
        self.k_on_chip = np.array([c.activations_on_chip for c in cl])[kp]
        self.infer = np.flatnonzero([p.kernels is not None for p in prepared])
        self.ranks_x_micro = np.array([p.ranks for p in prepared]) * micro
        self.train = np.flatnonzero([p.layouts is not None for p in prepared])
        self.per_tensor = np.array([prepared[i].stack in ZERO3_PER_TENSOR_STACKS for i in self.train])
        self.sync_gathers = np.array([prepared[i].stack in ZERO3_SYNC_GATHER_STACKS for i in self.train])
        consts = [case_constants(p.workload, p.cluster, p.layouts) for p in prepared
                  if p.workload is not None and p.layouts is not None]
        self.static = {k: np.concatenate([np.atleast_1d(c[k]) for c in consts]) if consts else np.zeros(0)
                       for k in (consts[0] if consts else {})}
        sv = [(i, p) for i, p in enumerate(prepared) if p.serve is not None]
        self.serve = np.array([i for i, _ in sv], dtype=int)
        sw = [p.serve for _, p in sv]
        self.s_batch = micro[self.serve]
        self.s_decode_batch = decode[self.serve]
        self.s_layers = np.array([w.arch.layers for w in sw if w], dtype=float)
        self.s_token_bytes = np.array([w.arch.hidden_size * BYTES_PER_DTYPE[w.dtype] for w in sw if w],
                                      dtype=float)
        self.s_input = np.array([w.prefill_compute_tokens for w in sw if w], dtype=float)
        self.s_output = np.array([w.output_tokens for w in sw if w], dtype=float)
        self.s_tensor = np.array([w.tensor for w in sw if w], dtype=float)
        self.s_intra = np.array([tp_ring_gb_per_s(prepared[i].cluster) for i in self.serve], dtype=float)
        # An ungrouped decode attention's repeated reads per step, in seconds at full bandwidth.
        bw = np.array([prepared[i].cluster.memory_gb_per_s * 1e9 for i in self.serve], dtype=float)
        self.s_reread_s = self.s_batch * np.array([kv_reread_bytes(w) for w in sw if w], dtype=float) / bw
        # Kernels a decode step and a prefill launch (an eager engine's host pays each).
        self.s_launch_decode = np.array([d for d, _ in launches], dtype=float)
        self.s_launch_prefill = np.array([f for _, f in launches], dtype=float)
        # What each target reads: (point, figure), in the order of Prepared.targets.
        self.targets = [(i, fig) for i, p in enumerate(prepared) for fig, _, _ in p.targets]

    def figures(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """Per point: ``sequences_per_s`` (training, inference), ``tpot_ms`` and ``ttft_ms`` (serving);
        NaN where a point has no such figure."""
        x = np.exp(z)
        compute = np.minimum(1.0, x[self.i_compute] * x[self.i_device] * x[self.i_stack])
        memory = x[self.i_memory]
        kp = self.k_point
        half_rows = np.where(self.i_gemm_rows >= 0, x[np.maximum(self.i_gemm_rows, 0)], 0.0)
        lowp = np.where(self.i_lowp >= 0, x[np.maximum(self.i_lowp, 0)], 1.0)
        kt = kernel_time_s(self.k_flops, self.k_act, self.k_weight, self.k_wm, self.k_att, self.k_micro,
                           self.k_peak * lowp[kp], self.k_peak16, self.k_bw, self.k_on_chip, compute[kp],
                           x[self.i_attention][kp], memory[kp], x[self.i_overhead][kp], self.k_rows,
                           half_rows[kp])
        sets = len(self.SETS)
        seg = np.bincount(self.k_seg, weights=kt, minlength=self.n * sets).reshape(self.n, sets)
        seqs, tpot, ttft, tokens = (np.full(self.n, np.nan) for _ in range(4))
        seqs[self.infer] = self.ranks_x_micro[self.infer] / seg[self.infer, 0]
        if len(self.train):
            tr = self.train
            s = seg[tr]
            zn = np.where(self.i_zero3[tr] >= 0, x[np.maximum(self.i_zero3[tr], 0)], 1.0)
            res = combine(Cases(**self.static, f=s[:, 0], g=s[:, 1], att=s[:, 2], emb=s[:, 3] + s[:, 4],
                                head=s[:, 5] + s[:, 6], op=s[:, 7], network=x[self.i_network[tr]],
                                sharded_network=zn,
                                per_tensor=self.per_tensor, sync_gathers=self.sync_gathers,
                                memory_eff=memory[tr]))
            seqs[tr] = res.sequences_per_s
        if len(self.serve):
            sv = self.serve
            net = self.s_intra * x[self.i_network[sv]]
            lat = x[self.i_collective[sv]]
            tp = lambda tokens: self.s_layers * TP_ALL_REDUCES_PER_LAYER * all_reduce_s(  # noqa: E731
                tokens * self.s_token_bytes, self.s_tensor, net, lat)
            step = x[np.maximum(self.i_step[sv], 0)]
            seq_step = np.where(self.i_seq_step[sv] >= 0, x[np.maximum(self.i_seq_step[sv], 0)], 0.0)
            reread = np.where(self.i_reread[sv] >= 0, x[np.maximum(self.i_reread[sv], 0)], 0.0)
            launch = np.where(self.i_launch[sv] >= 0, x[np.maximum(self.i_launch[sv], 0)], 0.0)
            decode = overlap_s(seg[sv, 0] + tp(self.s_decode_batch) + reread * self.s_reread_s / memory[sv],
                               launch * self.s_launch_decode)
            tpot[sv] = 1e3 * (decode + step + seq_step * self.s_decode_batch)
            request = x[self.i_request[sv]] * x[self.i_request_stack[sv]]
            prefill = overlap_s(seg[sv, 1] + tp(self.s_batch * self.s_input), launch * self.s_launch_prefill)
            ttft[sv] = 1e3 * (prefill + request + step + seq_step * self.s_batch)
            tokens[sv] = serving_figures(tpot[sv] / 1e3, ttft[sv] / 1e3, self.s_batch,
                                         self.s_output)["output_tokens_per_s"]
        return {"sequences_per_s": seqs, "tpot_ms": tpot, "ttft_ms": ttft, "output_tokens_per_s": tokens}

    def predict(self, z: np.ndarray) -> np.ndarray:
        """The predicted value of every target (in the order of ``targets``)."""
        f = self.figures(z)
        return np.array([f[fig][i] for i, fig in self.targets])


def fit(prepared: list[Prepared]) -> Fit:
    """Maximum a-posteriori parameters for these points."""
    from scipy.optimize import least_squares

    names = _names(prepared)
    prior = np.array([math.log(PRIORS[_kind(n)][0]) for n in names])
    sigma = np.array([PRIORS[_kind(n)][1] for n in names])
    lo = np.array([math.log(BOUNDS[_kind(n)][0]) for n in names])
    hi = np.array([math.log(BOUNDS[_kind(n)][1]) for n in names])
    pub = np.log([v for p in prepared for _, v, _ in p.targets])
    obs = np.array([sd for p in prepared for _, _, sd in p.targets])
    batch = Batch(prepared, names)

    def residuals(z: np.ndarray) -> np.ndarray:
        return np.concatenate([(np.log(batch.predict(z)) - pub) / obs, (z - prior) / sigma])

    # Each point depends on a few parameters: tell the solver, so its finite differences group columns.
    rows = [[n in p.keys for n in names] for p in prepared for _ in p.targets]
    sparsity = np.vstack([rows, np.eye(len(names), dtype=bool)])
    sol = least_squares(residuals, np.clip(prior, lo + 1e-9, hi - 1e-9), bounds=(lo, hi), x_scale=1.0,
                        diff_step=1e-4, jac_sparsity=sparsity, ftol=1e-6, xtol=1e-6, gtol=1e-6)
    return Fit(dict(zip(names, (float(v) for v in np.exp(sol.x)), strict=True)),
               tuple(p.point.id for p in prepared))


@functools.cache
def prepared_points() -> tuple[Prepared, ...]:
    """Every packaged published point, prepared."""
    from ecobench.hardware.published import load_points

    pts, cat = load_points(), load_catalog()
    return tuple(prepare(p, pts, cat) for p in pts.points)


def holdout(prepared: tuple[Prepared, ...] | None = None, kinds: set[str] | None = None,
            progress: Callable[[str], None] | None = None) -> list[HoldoutRow]:
    """Leave-one-source-out: each source's points predicted by a fit on every other source (only the
    sources with points of ``kinds``, when given); ``progress`` hears of each source in turn.
    ``residuals.held_out`` reads the stored result instead while its inputs are unchanged."""
    from ecobench.hardware.published import HoldoutRow, is_fitted, load_points

    prepared = prepared or prepared_points()
    fits: dict[tuple[str, ...], Fit] = {}  # sources with only unfitted points share one fit
    pts = load_points()
    group = {k: v.group or k for k, v in pts.sources.items()}
    rows = []
    sources = list(dict.fromkeys(group[p.point.source] for p in prepared
                                 if kinds is None or p.point.kind in kinds))
    for i, src in enumerate(sources, 1):
        if progress:
            progress(f"holdout analytic: fit {i}/{len(sources)}, without {src}")
        train = [p for p in prepared if group[p.point.source] != src and is_fitted(p.point)]
        key = tuple(p.point.id for p in train)
        f = fits[key] if key in fits else fits.setdefault(key, fit(train))
        for p in prepared:
            if group[p.point.source] == src and (kinds is None or p.point.kind in kinds):
                eff = f.efficiency(p.vendor, p.point.mode, p.accelerator, p.stack, p.all_reduce, p.launch)
                got = p.predict(eff, f.request_overhead_s(p.vendor, p.stack))
                for fig, value in published_figures(p.point).items():
                    rows.append(HoldoutRow(p.point, src, value, got[fig], len(train), fig))
    return rows


def published_figures(p: PublishedPoint) -> dict[str, float]:
    """The figures a point publishes that the model predicts."""
    if p.kind != "llm_serve":
        return {"sequences_per_s": p.throughput_per_s}
    out = {k: v for k, v in (("tpot_ms", p.tpot_ms), ("ttft_ms", p.ttft_ms),
                             ("output_tokens_per_s", p.output_tokens_per_s)) if v}
    return out  # type: ignore[return-value]


def fit_all() -> Fit:
    """The fit on every packaged point the model is fitted on (what the analytic backend uses)."""
    from ecobench.hardware.published import is_fitted

    return fit([p for p in prepared_points() if is_fitted(p.point)])


def fitted_stacks() -> list[str]:
    """Software stacks with a fitted factor (what a configuration's ``stack`` may name; not the
    points whose source does not state its engine, ``UNSTATED_STACK``)."""
    return sorted(k.removeprefix("stack.") for k in current_fit().values
                  if k.startswith("stack.") and k != f"stack.{UNSTATED_STACK}")


@functools.cache
def current_fit() -> Fit:
    """The stored fit (``data/efficiency_fit.json``, written by ``python tools/refit.py``
    after the published points change); a test checks it equals a fresh fit."""
    doc: dict[str, Any] = json.loads(
        resources.files("ecobench.hardware").joinpath(FIT_FILE).read_text(encoding="utf-8"))
    return Fit(doc["values"], tuple(doc["points"]))


def write_fit(path: str) -> Fit:
    """Fit on every point and store the parameters."""
    f = fit_all()
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"values": f.values, "points": list(f.points)}, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return f
