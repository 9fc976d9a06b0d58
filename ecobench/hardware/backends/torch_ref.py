"""Reference backend: build the model with PyTorch (random weights, nothing downloaded), run it on
this host's CPU or GPU, and measure throughput and energy.

Measurement discipline: warm-up, then ``repetitions`` windows each lasting at least
``min_window_s`` and ``min_batches``; the mean throughput with a 95% confidence interval (Student's
t); energy per window through codecarbon, with the method it used recorded. On an NVIDIA GPU, with
the ``gpu`` extra installed, Zeus meters the GPU over each window (NVML's energy counter,
``measure/zeus_meter.py``) and codecarbon the CPU and RAM.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ecobench.errors import BackendError
from ecobench.hardware.backends.base import Capabilities, Job, Measurement, Performance, Utilization, register
from ecobench.hardware.catalog import LOCAL_INSTANCE, Catalog, Instance
from ecobench.measure.codecarbon_meter import (
    GPU_PREFIX,
    EnergySample,
    Tracker,
    codecarbon_version,
    describe,
    provenance,
    require_codecarbon,
)
from ecobench.measure.defaults import MIN_PAIRS_PER_WINDOW
from ecobench.measure.hostload import CpuClock, cv_pct, other_cpu_pct, probe_other_cpu_pct, quality_warnings
from ecobench.measure.zeus_meter import GpuMeter, open_zeus
from ecobench.units import DEFAULT_REQUEST_BYTES_PER_TOKEN
from ecobench.version import install_extra
from ecobench.workloads.architecture import Architecture
from ecobench.workloads.hf_config import to_transformers_config
from ecobench.workloads.transformer import build_kernels, totals

EXTRA_HINT = f"the reference backend needs PyTorch and transformers: {install_extra('torch')}"


def require_torch() -> tuple[Any, Any]:
    """Import torch and transformers, or explain which extra to install."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise BackendError(f"{EXTRA_HINT} ({exc.name} is missing)") from None
    return torch, transformers


def resolve_device(torch: Any, device: str) -> str:
    """'auto' is cuda when a GPU is visible, else cpu; 'cuda' without a GPU is an error."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise BackendError("device cuda was asked for but PyTorch sees no CUDA GPU")
    return device


def model_class(arch: Architecture, mode: str, task: str, tf: Any) -> Any:
    """The ``transformers`` class that runs ``arch`` for the mode and task."""
    if mode == "training" and task == "classification":
        if arch.kind == "decoder":
            return (tf.LlamaForSequenceClassification if arch.ffn == "swiglu"
                    else tf.GPT2ForSequenceClassification)
        return tf.LayoutLMForSequenceClassification if arch.layout_2d else tf.BertForSequenceClassification
    if arch.kind == "decoder":
        return tf.LlamaForCausalLM if arch.ffn == "swiglu" else tf.GPT2LMHeadModel
    if arch.layout_2d:
        return tf.LayoutLMForMaskedLM if mode == "training" else tf.LayoutLMModel
    return tf.BertForPreTraining if mode == "training" else tf.BertModel


def build_model(arch: Architecture, mode: str, layers: int | None, device: str, task: str = "pretrain",
                num_labels: int = 2) -> tuple[Any, Any]:
    """(model, transformers config) for the architecture, randomly initialised."""
    torch, tf = require_torch()
    cfg = to_transformers_config(arch, tf, layers)
    cfg.num_labels = num_labels
    torch.manual_seed(0)
    model = model_class(arch, mode, task, tf)(cfg).to(device)
    return (model.train() if mode == "training" else model.eval()), cfg


def synthetic_inputs(arch: Architecture, cfg: Any, seq_len: int, batch: int, device: str,
                     mode: str, task: str = "pretrain") -> dict[str, Any]:
    """Random token ids (and bounding boxes for LayoutLM; labels for training)."""
    torch, _ = require_torch()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, cfg.vocab_size, (batch, seq_len), generator=g)
    inputs: dict[str, Any] = {"input_ids": ids}
    if arch.layout_2d:
        xy = torch.randint(0, 900, (batch, seq_len, 2), generator=g)
        wh = torch.randint(1, 100, (batch, seq_len, 2), generator=g)
        inputs["bbox"] = torch.cat([xy, xy + wh], dim=-1)
    if mode == "training":
        if task == "classification":
            inputs["labels"] = torch.zeros(batch, dtype=torch.long)
        else:
            inputs["labels"] = ids.clone()
            if arch.kind == "encoder" and not arch.layout_2d:
                inputs["next_sentence_label"] = torch.zeros(batch, dtype=torch.long)
    return {k: v.to(device) for k, v in inputs.items()}


def _autocast(torch: Any, device: str, dtype: str) -> Any:
    if dtype == "fp32":
        return torch.autocast(device_type=device, enabled=False)
    if dtype == "bf16":
        return torch.autocast(device_type=device, dtype=torch.bfloat16)
    if dtype == "fp16" and device == "cuda":
        return torch.autocast(device_type=device, dtype=torch.float16)
    if dtype == "tf32" and device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        return torch.autocast(device_type=device, enabled=False)
    raise BackendError(f"precision {dtype} is not supported by the reference backend on {device} "
                       "(cpu: fp32, bf16; cuda: fp32, tf32, bf16, fp16)")


def optimizer_share(job: Job) -> float:
    """The share of a training job's micro-batches that end in an optimizer step: one every
    global batch / (micro-batch x instances) on each instance, as the scenario's global batch has it."""
    if job.mode != "training" or not job.global_batch_size:
        return 1.0
    return min(1.0, job.batch_size * max(job.instances, 1) / job.global_batch_size)


# A step runs one batch and returns the seconds of it that the scenario's workload does not spend
# (the optimizer step's time beyond its share, :func:`optimizer_share`); timing leaves them out.
Step = Callable[[], float]


def make_step(job: Job, device: str) -> tuple[Step, int]:
    """A function running one batch (inference) or one training micro-batch, and its sample count.

    A training micro-batch runs forward, backward and an AdamW step, and returns the optimizer
    step's time times 1 - :func:`optimizer_share`: every step does the same work (no window catches
    more optimizer steps than another), and the time counted is that of a micro-batch with its share
    of an optimizer step, as in a global batch of many micro-batches."""
    torch, _ = require_torch()
    model, cfg = build_model(job.arch, job.mode, job.layers, device, job.task, job.num_labels)
    inputs = synthetic_inputs(job.arch, cfg, job.seq_len, job.batch_size, device, job.mode, job.task)
    ctx = _autocast(torch, device, job.dtype)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    if job.mode == "inference":
        def step() -> float:
            with torch.inference_mode(), ctx:
                model(**inputs)
            sync()
            return 0.0
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        left_out = 1.0 - optimizer_share(job)

        def step() -> float:
            opt.zero_grad(set_to_none=True)
            with ctx:
                loss = model(**inputs).loss
            loss.backward()
            if not left_out:
                opt.step()
                sync()
                return 0.0
            sync()
            t0 = time.perf_counter()
            opt.step()
            sync()
            return left_out * (time.perf_counter() - t0)
    return step, job.batch_size


def memory_needed_bytes(job: Job) -> float:
    """A rough upper estimate of what running the job takes: weights (with gradients and AdamW
    state when training) and the activations of one batch (kept for every layer when training)."""
    arch = dataclasses.replace(job.arch, layers=job.layers or job.arch.layers)
    b, s, h = job.batch_size, job.seq_len, arch.hidden_size
    per_layer = b * s * (16 * h + 2 * arch.intermediate_size) + 2 * b * arch.heads * s * s
    if job.mode == "training":
        return 4.0 * (4 * arch.params + arch.layers * per_layer + b * s * arch.vocab_size)
    return 4.0 * (arch.params + 2 * per_layer)


def check_memory(job: Job, device: str) -> None:
    """Refuse, before allocating, a job that cannot fit in this host's free memory."""
    torch, _ = require_torch()
    need = memory_needed_bytes(job)
    if device == "cuda":
        # an earlier measurement's models are garbage by now, but PyTorch's caching allocator keeps
        # their blocks reserved: collect and hand them back first, or they read as taken
        gc.collect()
        torch.cuda.empty_cache()
        free = float(torch.cuda.mem_get_info()[0])
    else:
        import psutil

        free = float(psutil.virtual_memory().available)
    if need > free:
        raise BackendError(f"running this model needs about {need / 2**30:,.1f} GiB and {device} has "
                           f"{free / 2**30:,.1f} GiB free; measure fewer layers (configs[].layers), "
                           "a smaller batch or a shorter sequence")


def host_vcpus_used(threads: int) -> tuple[float, str]:
    """The host's vCPUs that PyTorch's ``threads`` intra-op threads occupy, and the threads in words.

    PyTorch starts one thread a physical core by default, which occupies every vCPU (a core's
    hyper-threads share it); fewer threads (``OMP_NUM_THREADS``, ``torch.set_num_threads``) occupy
    that share of the cores, and so of the vCPUs, that a projection by vCPUs scales from."""
    import psutil

    vcpus = os.cpu_count() or 1
    cores = psutil.cpu_count(logical=False) or vcpus
    used = vcpus * min(1.0, threads / cores)
    return used, (f"{threads} PyTorch thread{'s' if threads != 1 else ''} on a host of {vcpus} vCPUs, "
                  f"{cores} cores")


def gemm_peak_tflops(device: str, dtype: str, seconds: float, n: int = 2048) -> float:
    """Achieved matmul FLOP/s of this host (the ceiling the model's matmuls are compared with)."""
    torch, _ = require_torch()
    tdt = torch.bfloat16 if dtype in ("bf16",) else (torch.float16 if dtype == "fp16" else torch.float32)
    a = torch.randn(n, n, device=device, dtype=tdt)
    b = torch.randn(n, n, device=device, dtype=tdt)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    torch.mm(a, b)
    sync()
    count, t0 = 0, time.perf_counter()
    while True:
        torch.mm(a, b)
        sync()
        count += 1
        dt = time.perf_counter() - t0
        if dt >= seconds and count >= 3:
            return 2.0 * n**3 * count / dt / 1e12


def ci95(samples: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): Student's t interval of the mean."""
    from scipy import stats

    m = statistics.fmean(samples)
    half = float(stats.t.ppf(0.975, len(samples) - 1)) * statistics.stdev(samples) / math.sqrt(len(samples))
    return m, m - half, m + half


@dataclass(frozen=True)
class Windows:
    """What :func:`measure` observed: per-window throughput and energy, how energy was measured,
    when, and how busy the rest of the host was before and during the windows."""

    rates_per_s: list[float]
    energy: list[EnergySample] | None
    method: str
    power_method: str | None
    energy_provenance: str | None
    start_utc: str
    end_utc: str
    other_cpu_pct_before: float
    other_cpu_pct_during: float
    cpu_power_fallback: bool | None = None  # codecarbon modelled the CPU (no RAPL); None: not tracked


GpuMeterFactory = Callable[[str], tuple[GpuMeter | None, str]]


def zeus_for(device: str) -> tuple[GpuMeter | None, str]:
    """Zeus on the CUDA device PyTorch uses, or None and why not ('' off an NVIDIA GPU)."""
    if device != "cuda":
        return None, ""
    torch, _ = require_torch()
    if getattr(torch.version, "hip", None):
        return None, "Zeus is used on NVIDIA GPUs only here (ROCm build)"
    return open_zeus(torch.cuda.current_device())


def energy_methods(tracker: Tracker, gpu: GpuMeter | None, note: str = "") -> tuple[str, str, str]:
    """(method, power_method, energy_provenance) of codecarbon's components, the GPU's from
    ``gpu`` (Zeus) when given; ``note`` says why Zeus is not used on a GPU."""
    parts = tracker.components()
    if gpu is None:
        return tracker.method + (f" (Zeus not used: {note})" if note else ""), describe(parts), \
            provenance(parts)
    host = [p for p in parts if not p[0].startswith(GPU_PREFIX)]
    method = (f"{gpu.description} for the GPU; codecarbon {codecarbon_version()} ({describe(host)}) "
              "for the CPU and RAM")
    return method, describe([*host, gpu.component]), provenance([*host, gpu.component])


@contextmanager
def metered(tracker: Tracker, gpu: GpuMeter | None, name: str) -> Iterator[list[EnergySample]]:
    """Measure the block with codecarbon and, inside its task, ``gpu``'s window; the yielded list
    receives one EnergySample, whose GPU energy is ``gpu``'s when given (codecarbon's is dropped):
    the GPU's mean draw over its window, over the seconds codecarbon timed, so that every component
    covers the same seconds (the two windows differ by the meters' own milliseconds)."""
    out: list[EnergySample] = []
    with tracker.task(name) as host, (gpu.window(name) if gpu else nullcontext([])) as dev:
        yield out
    sample = host[0]
    if gpu:
        w = dev[0]
        kwh = w.energy_kwh * (sample.duration_s / w.duration_s) if w.duration_s > 0 else w.energy_kwh
        sample = dataclasses.replace(sample, gpu_kwh=kwh)
    out.append(sample)


def measure(step: Step, samples_per_step: int, spec: Any, label: str,
            track_energy: bool, untracked_reason: str = "", gpu: GpuMeter | None = None,
            gpu_note: str = "") -> Windows:
    """Read the host's load, warm up, then measure ``spec.repetitions`` windows; ``gpu`` meters
    the GPU of each window (``gpu_note``: why there is none on a GPU)."""
    if track_energy:
        require_codecarbon()  # before the warm-up: a missing meter is said at once
    before = probe_other_cpu_pct()
    # the meter is set up before the warm-up (the first time in a process it takes up to 2 s of
    # codecarbon reading its CPU table), so that the warm-up runs right before the first window
    tracker = Tracker() if track_energy else None
    reason = untracked_reason or "measurement.track_energy: false"
    rates: list[float] = []
    energy: list[EnergySample] = []
    others: list[float] = []
    try:
        if tracker:
            method, power_method, energy_provenance = energy_methods(tracker, gpu, gpu_note)
        else:
            method, power_method, energy_provenance = f"not tracked ({reason})", None, None
        _warm_up(step, spec.warmup_s)
        start = datetime.now(UTC).isoformat(timespec="seconds")
        bar = _progress(spec.repetitions, label)
        for rep in range(spec.repetitions):
            clock = CpuClock.now()
            if tracker:
                with metered(tracker, gpu, f"rep{rep}") as got:
                    rates.append(_window(step, samples_per_step, spec))
                energy.append(got[0])
            else:
                rates.append(_window(step, samples_per_step, spec))
            others.append(other_cpu_pct(clock, CpuClock.now()))
            bar(rep + 1, rates[-1])
    finally:
        if tracker:
            tracker.close()
    end = datetime.now(UTC).isoformat(timespec="seconds")
    return Windows(rates, energy if tracker else None, method, power_method, energy_provenance, start, end,
                   before, statistics.fmean(others), tracker.cpu_power_fallback if tracker else None)


def _warm_up(step: Callable[[], object], seconds: float) -> None:
    """Run ``step`` once, then until ``seconds`` have passed."""
    t_end = time.perf_counter() + seconds
    step()
    while time.perf_counter() < t_end:
        step()


def _window(step: Step, samples_per_step: int, spec: Any) -> float:
    """Samples a second over at least ``min_window_s`` and ``min_batches``, the seconds the steps
    say the workload does not spend left out."""
    n, left_out, t0 = 0, 0.0, time.perf_counter()
    while True:
        left_out += step()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= spec.min_window_s and n >= spec.min_batches:
            return n * samples_per_step / (dt - left_out)


def _progress(total: int, label: str) -> Callable[[int, float], None]:
    """A bar redrawn in place (carriage returns) on a terminal; elsewhere (a log, a pipe, CI) one
    plain line per repetition, never a carriage return; nothing when the run is quiet (``-q``)."""
    from ecobench.measure.defaults import SHOW_PROGRESS

    tty = sys.stderr.isatty()
    shown = SHOW_PROGRESS.get()

    def show(done: int, rate: float) -> None:
        if not shown:
            return
        if not tty:
            print(f"  measuring {label}: {done}/{total}  {rate:,.1f} samples/s", file=sys.stderr, flush=True)
            return
        bar = "#" * done + "." * (total - done)
        end = "\n" if done == total else ""
        print(f"\r  measuring {label} [{bar}] {done}/{total}  {rate:,.1f} samples/s", end=end,
              file=sys.stderr, flush=True)
    return show


def flops_per_sample(arch: Architecture, job: Job) -> float:
    """The workload model's FLOPs per sample of ``arch`` for the job's shape."""
    return totals(build_kernels(arch, job.seq_len, job.batch_size, job.dtype, job.mode, job.task,
                                job.num_labels))[0]


def depth_pair(layers: int) -> tuple[int, int]:
    """The two depths whose alternated steps time one layer when ``layers`` are measured: one layer
    and ``layers`` (two when ``layers`` is one), so that a first layer dearer than the others (one
    round on a 2-core host read 9.2-10.2 ms against 7.0-8.6 ms, 2026-11-27; interleaved single steps
    later that day read within 3%) is paid once, in the measured time, not by every layer."""
    return 1, max(layers, 2)


def paired_steps(step_lo: Step, step_hi: Step, samples_per_step: int,
                 spec: Any, label: str) -> list[tuple[float, float]]:
    """(seconds of a ``step_lo``, seconds of a ``step_hi``) pair by pair, in time order: after
    warming both up, the two alternate (lo hi, hi lo, ...) on the same inputs, so the host's drift
    hits both steps of a pair alike. The pairs run for ``repetitions`` x ``min_window_s``, and at
    least ``repetitions`` x max(``min_batches``, 5) of them."""
    _warm_up(lambda: (step_lo(), step_hi()), spec.warmup_s)
    need = spec.repetitions * max(spec.min_batches, MIN_PAIRS_PER_WINDOW)
    span_s = spec.repetitions * spec.min_window_s
    bar = _progress(spec.repetitions, label)
    pairs: list[tuple[float, float]] = []
    shown, t0 = 0, time.perf_counter()
    while True:
        lo_first = len(pairs) % 2 == 0
        a = time.perf_counter()
        first = (step_lo if lo_first else step_hi)()
        b = time.perf_counter()
        second = (step_hi if lo_first else step_lo)()
        c = time.perf_counter()
        pairs.append((b - a - first, c - b - second) if lo_first else (c - b - second, b - a - first))
        done = min(spec.repetitions, int(spec.repetitions * min((c - t0) / span_s, len(pairs) / need)))
        if done > shown:
            shown = done
            bar(done, samples_per_step / pairs[-1][1])
        if c - t0 >= span_s and len(pairs) >= need:
            return pairs


def extrapolate_depth(rates_part: list[float], pairs_s: list[tuple[float, float]], depths: tuple[int, int],
                      layers: int, full_layers: int) -> tuple[list[float], str]:
    """Full-depth rates from windows at ``layers``: a sample takes the measured time times
    1 + (``full_layers`` - ``layers``) x (a layer's time / the measured depth's time), that ratio
    read from each alternated pair of steps at ``depths`` (:func:`paired_steps`: a layer is the
    pair's difference over the layers between them), so that the two steps of a ratio ran under
    the same load, and the windows' own speed (when energy was metered) sets the level. The median
    ratio over as many consecutive runs of pairs as there are windows scales each window, so the
    rates' spread carries the ratio's. What does not grow with depth (embeddings, head, dispatch,
    the first layer's extra) is in the measured time once, not charged per layer."""
    lo, hi = depths
    extra = full_layers - layers
    factors = [1.0 + extra * (t_hi - t_lo) / (hi - lo) / (t_lo if layers == lo else t_hi)
               for t_lo, t_hi in pairs_s]
    n = len(rates_part)
    scale = [statistics.median(factors[i * len(factors) // n:(i + 1) * len(factors) // n]) for i in range(n)]
    if min(scale) <= 1.0:
        raise BackendError(f"{hi}-layer steps ran no slower than {lo}-layer ones, alternated "
                           f"({len(pairs_s)} pairs): the host is too noisy to time one layer; measure "
                           "more layers (configs[].layers) or longer windows")
    full = [r / f for r, f in zip(rates_part, scale, strict=True)]
    t_layer = statistics.median((t_hi - t_lo) / (hi - lo) for t_lo, t_hi in pairs_s)
    t_full = statistics.median(t_lo if layers == lo else t_hi for t_lo, t_hi in pairs_s) + extra * t_layer
    share = (t_full - full_layers * t_layer) / t_full
    return full, (f"extrapolated to {full_layers} layers: {extra} more, a layer's share of a step "
                  f"from {len(pairs_s)} alternated {lo}- and {hi}-layer steps ({t_layer * 1e3:,.3g} ms a "
                  f"layer a batch; what does not grow with depth: {share:.0%} of the full-depth time)")


class ReferenceBackend:
    """Runs the model for real and measures it; projects to catalog CPU instances by vCPUs."""

    name = "reference"
    capabilities = Capabilities(sweepable=False, error_model=None, measures_host=True, experts=False)

    def __init__(self, gpu_meter: GpuMeterFactory = zeus_for) -> None:
        """``gpu_meter(device)`` gives the GPU meter of a measurement (None: codecarbon's NVML
        reading) and why there is none; tests pass one replaying recorded windows."""
        self.gpu_meter = gpu_meter

    def evaluate(self, job: Job, instance: Instance, catalog: Catalog) -> Performance:
        torch, _ = require_torch()
        device = resolve_device(torch, job.device)
        projected = instance.name != LOCAL_INSTANCE
        if projected and instance.spec.accelerator:
            raise BackendError(f"a host measurement cannot be projected to {instance.name}'s "
                               f"{instance.spec.accelerator}; use backend: analytic for it")
        if projected and device != "cpu":
            raise BackendError("projection to a catalog CPU instance needs a CPU measurement (device: cpu)")
        spec = job.measurement
        check_memory(job, device)
        step, per_step = make_step(job, device)
        depth = f"{job.layers} of {job.arch.layers} layers" if job.layers else f"{job.arch.layers} layers"
        tracked = spec.track_energy and not projected
        gpu, gpu_note = self.gpu_meter(device) if tracked else (None, "")
        w = measure(step, per_step, spec, f"{job.arch.name} {job.mode} {job.seq_len} tok ({depth}, {device})",
                    tracked, "projection: power from the catalog model" if projected else "", gpu, gpu_note)
        flops = flops_per_sample(job.arch, job)
        rates_full, extrapolation = w.rates_per_s, ""
        during, pairs_load = w.other_cpu_pct_during, ""
        if job.layers and job.layers < job.arch.layers:
            lo_layers, hi_layers = depth_pair(job.layers)
            other, _ = make_step(dataclasses.replace(job, layers=hi_layers if job.layers == lo_layers
                                                     else lo_layers), device)
            step_lo, step_hi = (step, other) if job.layers == lo_layers else (other, step)
            clock = CpuClock.now()
            pairs = paired_steps(step_lo, step_hi, per_step, spec, f"{job.arch.name} {job.mode} "
                                 f"({lo_layers} and {hi_layers} layers alternated, {device})")
            # the pairs set every window's depth factor: the host's load while they ran counts too
            others_pairs = other_cpu_pct(clock, CpuClock.now())
            during = max(during, others_pairs)
            pairs_load = f" ({others_pairs:.0f}% during the alternated steps)"
            rates_full, extrapolation = extrapolate_depth(w.rates_per_s, pairs, (lo_layers, hi_layers),
                                                          job.layers, job.arch.layers)
        mean, lo, hi = ci95(rates_full)
        gemm = gemm_peak_tflops(device, job.dtype, spec.gemm_s) if spec.gemm_s > 0 else None
        mfu = (mean * flops / 1e12 / gemm) if gemm else None  # on the host, before any projection
        power = power_samples = window_s = None
        e_per_sample = None
        if w.energy:
            dur = sum(e.duration_s for e in w.energy)
            power = {"accelerator": sum(e.gpu_kwh for e in w.energy) * 3.6e6 / dur,
                     "cpu": sum(e.cpu_kwh for e in w.energy) * 3.6e6 / dur,
                     "memory": sum(e.ram_kwh for e in w.energy) * 3.6e6 / dur}
            power_samples = tuple({"accelerator": e.gpu_kwh * 3.6e6 / e.duration_s,
                                   "cpu": e.cpu_kwh * 3.6e6 / e.duration_s,
                                   "memory": e.ram_kwh * 3.6e6 / e.duration_s} for e in w.energy)
            window_s = tuple(e.duration_s for e in w.energy)
            e_per_sample = tuple(e.total_kwh / (r * e.duration_s) for e, r in zip(w.energy, rates_full,
                                                                                   strict=True))
        cv = cv_pct(rates_full)
        warnings = tuple(quality_warnings(w.other_cpu_pct_before, during, cv))
        host_vcpus, threads = host_vcpus_used(torch.get_num_threads())
        share = optimizer_share(job)
        optimizer = (f", an AdamW step's time counted at {share:.3g} of each micro-batch's (global batch "
                     f"{job.global_batch_size} over {job.instances} instance(s))" if share < 1 else "")
        how = (f"measured on this host ({device}, {job.dtype}, batch {job.batch_size}{optimizer}, {depth}, "
               f"{threads}"
               + (f", {extrapolation}" if extrapolation else "")
               + f"; {spec.repetitions} windows >= {spec.min_window_s:g} s; mean {mean:,.2f}/s, "
               f"95% CI {lo:,.2f}-{hi:,.2f}, CV {cv:.1f}%; other processes {w.other_cpu_pct_before:.0f}% "
               f"of the CPU before, {during:.0f}% during{pairs_load}; energy: {w.method})")
        if projected:
            factor = instance.spec.vcpus / host_vcpus
            mean, lo, hi = mean * factor, lo * factor, hi * factor
            rates_full = [r * factor for r in rates_full]
            how = (f"projected (calibrated what-if): host measurement scaled by vCPUs "
                   f"{instance.spec.vcpus}/{host_vcpus:g} (the host's vCPUs its threads occupied); power "
                   "from the catalog model; " + how)
        return Performance(
            throughput_per_instance_per_s=mean,
            utilization=Utilization(accelerator=1.0 if device == "cuda" else 0.0, cpu=1.0, memory=1.0,
                                    network=0.0),
            provenance="projected" if projected else "measured",
            method=how,
            network_bytes_per_sample=job.seq_len * DEFAULT_REQUEST_BYTES_PER_TOKEN,
            measured=Measurement(tuple(rates_full), e_per_sample, power, w.method, w.start_utc, w.end_utc,
                                 lo, hi, gemm, mfu, power_w_samples=power_samples,
                                 power_method=w.power_method if not projected else
                                 "catalog power model (projection; nothing measured)",
                                 energy_provenance=w.energy_provenance if not projected else "modelled",
                                 other_cpu_pct_before=w.other_cpu_pct_before,
                                 other_cpu_pct_during=during,
                                 throughput_cv_pct=cv, warnings=warnings,
                                 cpu_power_fallback=w.cpu_power_fallback if not projected else None,
                                 window_s=window_s if not projected else None),
        )


register(ReferenceBackend())
