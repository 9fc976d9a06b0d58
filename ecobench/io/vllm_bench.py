"""A ``vllm bench serve`` result (the JSON ``--save-result`` writes) read as measured serving figures.

vLLM's ``benchmarks/benchmark_serving.py`` (``vllm bench serve``) writes one JSON object with, among
others, ``completed``, ``total_input_tokens``, ``total_output_tokens``, ``request_throughput``
(requests/s), ``output_throughput`` (tokens/s) and ``mean_/median_/p99_`` ``ttft_ms``, ``tpot_ms``
and ``itl_ms`` (https://github.com/vllm-project/vllm/blob/main/vllm/benchmarks/serve.py, read
2026-11-25). Only those fields are read; per-request lists (``--save-detailed``) are ignored. The
file is read bounded (a regular file of at most :data:`MAX_BYTES`), and a missing, non-numeric,
negative or inconsistent figure is bad input naming the field.
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecobench.errors import InputError
from ecobench.io.yamlio import read_bytes

MAX_BYTES = 64 * 2**20  # a --save-detailed result of 100k requests is about 30 MB
WHAT = "vllm bench serve result"
REQUIRED = ("request_throughput", "median_ttft_ms", "median_tpot_ms")
OPTIONAL = ("completed", "total_input_tokens", "total_output_tokens", "output_throughput", "mean_ttft_ms",
            "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p90_tpot_ms", "p95_tpot_ms",
            "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "max_concurrency", "request_rate",
            "duration")
# vLLM writes request_throughput = completed / duration and output_throughput = total_output_tokens /
# duration from the same counts (vllm/benchmarks/serve.py, calculate_metrics), so a saved result agrees
# to float rounding. The tolerance admits figures copied from the console, which prints the rates with
# two decimals and the duration with two (0.21 req/s for 32 / 150.87 = 0.2121: 1% off): 5% relative,
# or half the console's last digit (0.005) for rates below 0.1/s. Anything further is a wrong figure.
AGREE_REL = 0.05
AGREE_ABS = 0.005


@dataclass(frozen=True)
class ServingBench:
    """The figures of one measured serving run (per second and milliseconds, as vLLM writes them)."""

    path: str
    request_throughput: float  # requests/s
    median_ttft_ms: float
    median_tpot_ms: float
    figures: dict[str, float]  # every numeric field read (REQUIRED and OPTIONAL that are present)

    def get(self, name: str) -> float | None:
        """A figure, or None where the file has none."""
        return self.figures.get(name)

    @property
    def input_tokens(self) -> float | None:
        """Mean prompt tokens per completed request, where the file says."""
        n, t = self.get("completed"), self.get("total_input_tokens")
        return t / n if n and t is not None else None

    @property
    def output_tokens(self) -> float | None:
        """Mean output tokens per completed request, where the file says."""
        n, t = self.get("completed"), self.get("total_output_tokens")
        return t / n if n and t is not None else None


def _number(data: dict[str, Any], name: str, p: str) -> float | None:
    v = data.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise InputError(f"{p}: field {name!r} is {v!r}; a {WHAT} gives it as a finite number >= 0")
    return float(v)


def parse(data: object, path: str) -> ServingBench:
    """The figures of a parsed result; bad input names the file and the field."""
    if not isinstance(data, dict):
        raise InputError(f"{path}: a {WHAT} is a JSON object, got {type(data).__name__}")
    figures: dict[str, float] = {}
    for name in REQUIRED + OPTIONAL:
        v = _number(data, name, path)
        if v is None and name in REQUIRED:
            raise InputError(f"{path}: field {name!r} is missing; a {WHAT} needs "
                             f"{', '.join(REQUIRED)} (as `vllm bench serve --save-result` writes them)")
        if v is not None:
            figures[name] = v
    if figures["request_throughput"] <= 0:
        raise InputError(f"{path}: field 'request_throughput' is 0; no request completed, nothing to plan "
                         "from (allowed: > 0 requests/s)")
    for stat in ("ttft_ms", "tpot_ms"):
        med, p99 = figures.get(f"median_{stat}"), figures.get(f"p99_{stat}")
        if med is not None and p99 is not None and p99 < med:
            raise InputError(f"{path}: field 'p99_{stat}' {p99:g} is below 'median_{stat}' {med:g}; "
                             "a 99th percentile is at least the median")
    if figures.get("completed") == 0:
        raise InputError(f"{path}: field 'completed' is 0; no request completed (allowed: >= 1)")
    _agree(figures, path)
    return ServingBench(path, figures["request_throughput"], figures["median_ttft_ms"],
                        figures["median_tpot_ms"], figures)


def _agree(figures: dict[str, float], path: str) -> None:
    """Bad input where the rates disagree with the counts they are computed from: ``request_throughput``
    with ``completed / duration``, ``output_throughput`` with ``total_output_tokens / duration``; with no
    duration, the output tokens per request the two rates give with ``total_output_tokens / completed``."""
    n, out, duration = figures.get("completed"), figures.get("total_output_tokens"), figures.get("duration")
    rate, tok_rate = figures["request_throughput"], figures.get("output_throughput")
    checks: list[tuple[str, float, str, float]] = []
    if duration:
        if n is not None:
            checks.append(("request_throughput", rate, "completed / duration", n / duration))
        if out is not None and tok_rate is not None:
            checks.append(("output_throughput", tok_rate, "total_output_tokens / duration", out / duration))
    elif n and out is not None and tok_rate is not None:
        checks.append(("output_throughput / request_throughput", tok_rate / rate,
                       "total_output_tokens / completed", out / n))
    for name, got, what, want in checks:
        if abs(got - want) > max(AGREE_REL * want, AGREE_ABS if "/ request" not in name else 0.0):
            raise InputError(f"{path}: {name} {got:g} disagrees with {what} = {want:g} (more than "
                             f"{AGREE_REL:.0%} apart); vLLM computes the rate from those counts, so a "
                             "figure is wrong: give the file `vllm bench serve --save-result` wrote")


def read(path: str | Path) -> ServingBench:
    """A result file's figures (bounded read; cached by path, size and modification time)."""
    p = Path(path)
    try:
        st = os.stat(p)
        key = (st.st_size, st.st_mtime_ns)
    except OSError:
        key = (-1, -1)  # read_bytes says what is wrong
    return _read(str(p), key)


@functools.lru_cache(maxsize=64)
def _read(path: str, key: tuple[int, int]) -> ServingBench:
    raw = read_bytes(path, MAX_BYTES, WHAT)
    try:
        data = json.loads(raw.decode("utf-8-sig"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: a {WHAT} must be UTF-8 JSON ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                         f"give the file `vllm bench serve --save-result` writes") from None
    except InputError as exc:  # a NaN or Infinity constant
        raise InputError(f"{path}: {exc}") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply for a {WHAT}") from None
    return parse(data, path)


def _refuse_constant(name: str) -> float:
    raise InputError(f"JSON constant {name} is not a measured figure; give finite numbers")
