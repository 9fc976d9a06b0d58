"""Serving planned from a team's own benchmark (``configs[].measured_serving``: a ``vllm bench serve``
result measured on one instance of the configuration's type) instead of the serving model.

One instance carries the measured ``request_throughput`` at the measured latencies, so the rate needs
``ceil(rate / request_throughput)`` instances, each at a share of that load. The measured medians (and
99th percentiles, where the file has them) must meet the scenario's targets: the benchmark says
nothing about other loads, so a run that misses a target is bad input (run the benchmark at a lower
request rate or concurrency). The latencies reported are the measured ones (at or above those of
the planned, lighter load). Draw: ``measured_power_w`` where given; otherwise the draw model at the
planned load with no kernel split known (compute-bound: its upper end).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ecobench.errors import InputError
from ecobench.hardware.backends import Performance, Utilization
from ecobench.io import vllm_bench
from ecobench.planning.serving import STAT_LABEL, latency_stats, slo_verdicts, traffic_of
from ecobench.planning.traffic import Traffic
from ecobench.scenario.model import HardwareConfig, ServingSpec
from ecobench.units import DEFAULT_HOST_CPU_UTILIZATION, DEFAULT_REQUEST_BYTES_PER_TOKEN, SECONDS_PER_HOUR

LENGTH_MISMATCH = 0.10  # a benchmark whose mean lengths differ more than this from the scenario's is named


def _bench_field(metric: str, label: str) -> str:
    """The `vllm bench serve` field of a column's statistic (``p50``: ``median_ttft_ms``, ``p99``:
    ``p99_tpot_ms``, ``mean``: ``mean_ttft_ms``)."""
    return f"{'median' if label == 'p50' else label}_{metric}_ms"


def _check_targets(spec: ServingSpec, b: vllm_bench.ServingBench) -> None:
    for metric, q, limit, name in spec.targets:
        field = _bench_field(metric, STAT_LABEL[q])
        got = b.get(field)
        if got is None:
            raise InputError(f"{b.path}: has no {field!r}, which the target {name} needs (vllm bench serve "
                             "--percentile-metrics ttft,tpot --metric-percentiles 90,95,99 writes them)"
                             ).in_config("measured_serving")
        if got > limit:
            raise InputError(f"{b.path}: the measured {field} {got:g} misses the target {name} {limit:g}; "
                             "measure at a lower request rate or concurrency (the benchmark says nothing "
                             "about other loads)").in_config("measured_serving")


LENGTHS_NOTE = " (differs from the workload: "  # how the row's method says the benchmark's lengths differ


def lengths_mismatch(method: str | None) -> str:
    """What a row's ``method`` says differs between its benchmark's lengths and the workload's
    (:func:`_lengths_note`); '' when nothing does."""
    return (method or "").partition(LENGTHS_NOTE)[2].removesuffix(")")


def _lengths_note(t: Traffic, b: vllm_bench.ServingBench) -> str:
    notes = []
    for name, want, got in (("input", t.input.mean, b.input_tokens),
                            ("output", t.output.mean, b.output_tokens)):
        if got is not None and abs(got - want) > LENGTH_MISMATCH * want:
            notes.append(f"its mean {name} is {got:.0f} tokens, the scenario's {want:.0f}")
    return f"{LENGTHS_NOTE}{'; '.join(notes)})" if notes else ""


def measured_bench(spec: ServingSpec, cfg: HardwareConfig) -> vllm_bench.ServingBench:
    """The configuration's benchmark; bad input where it misses a target or lacks a figure one needs
    (needs no evaluation: checked for every configuration before the first is evaluated)."""
    assert cfg.measured_serving is not None
    b = vllm_bench.read(cfg.measured_serving)
    _check_targets(spec, b)
    return b


def measured_serving_performance(spec: ServingSpec,
                                 cfg: HardwareConfig) -> tuple[Performance, dict[str, Any]]:
    """The Performance and the serving columns of a configuration planned from its benchmark."""
    b = measured_bench(spec, cfg)
    rate = spec.requests_per_h / SECONDS_PER_HOUR
    capacity = b.request_throughput
    instances = max(1, math.ceil(rate / capacity - 1e-9))
    busy = rate / (instances * capacity)
    cpu = cfg.host_cpu_utilization if cfg.host_cpu_utilization is not None else DEFAULT_HOST_CPU_UTILIZATION
    t = traffic_of(spec)
    figures = {f"{m}_ms_{label}": b.get(_bench_field(m, label))
               for label, _ in latency_stats(spec) for m in ("ttft", "tpot")}
    perf = Performance(
        capacity, Utilization(1.0, cpu, cpu, 0.0), "measured",
        method=(f"measured serving: {b.path}, {capacity:.3g} requests/s per instance at median TTFT "
                f"{b.median_ttft_ms:.3g} ms, TPOT {b.median_tpot_ms:.3g} ms{_lengths_note(t, b)}"),
        network_bytes_per_sample=DEFAULT_REQUEST_BYTES_PER_TOKEN * (t.input.mean + t.output.mean))

    def latency(speed: Any = 1.0) -> dict[str, Any]:
        ones = np.ones_like(np.asarray(speed, dtype=float))
        return {"ttft_ms_p50": b.median_ttft_ms * ones, "tpot_ms_p50": b.median_tpot_ms * ones}

    latencies = {k: v if v is not None else math.nan for k, v in figures.items()}
    concurrency = b.get("max_concurrency")
    return perf, {"instances": instances, "busy": busy, "latency": latency,
                  "replicas": instances, "replicas_per_instance": 1,
                  "batch": concurrency if concurrency is not None else math.nan,
                  **latencies, "slo": slo_verdicts(spec, latencies),
                  "tensor_parallel": math.nan, "max_batch": math.nan, "memory_per_device_gib": math.nan,
                  "accelerator_activity": busy, "layout_choice": f"measured ({b.path})"}
