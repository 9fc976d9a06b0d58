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
            "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "max_concurrency", "request_rate")


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
    return ServingBench(path, figures["request_throughput"], figures["median_ttft_ms"],
                        figures["median_tpot_ms"], figures)


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
