"""Serving traffic: request lengths as distributions and arrivals as a renewal stream.

A length is its mean and coefficient of variation (``gamma`` or ``lognormal``), or the empirical
distribution of a CSV's rows (``input_tokens,output_tokens``). Arrivals are Poisson (CV 1) or bursty:
gamma inter-arrival times with a given CV. The queue models read a length through ``UNIT_QUANTILES``
points of its distribution over its mean (a length of CV 0 is 1 everywhere).
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ecobench.errors import InputError

POINTS = 64  # quantile points a length distribution is read through
UNIT_QUANTILES = (np.arange(POINTS) + 0.5) / POINTS
TAIL_BINS, TAIL_LEAST = 40, 1e-7  # tail bins of a length (the longest of a batch) and how far they go
FAMILIES = ("gamma", "lognormal")
MAX_CV = 10.0  # the schema's bound on a coefficient of variation
MAX_CSV_ROWS = 1_000_000
MAX_CSV_BYTES = 64 << 20  # a million rows of two lengths and a count: about 20 MB


@dataclass(frozen=True)
class Lengths:
    """A token count per request: ``mean`` with coefficient of variation ``cv`` in ``family``, or the
    empirical distribution of ``samples`` (then ``mean`` and ``cv`` are the samples')."""

    mean: float
    cv: float = 0.0
    family: str = "gamma"
    samples: tuple[float, ...] | None = field(default=None, repr=False)

    @classmethod
    def of_samples(cls, samples: np.ndarray) -> Lengths:
        """The empirical distribution of ``samples``."""
        s = np.asarray(samples, dtype=float)
        return cls(float(s.mean()), float(s.std() / s.mean()), "empirical", tuple(s.tolist()))

    @functools.cached_property
    def unit(self) -> np.ndarray:
        """``POINTS`` equally likely values of length / mean."""
        return unit_quantiles(self, UNIT_QUANTILES)

    @functools.cached_property
    def bins(self) -> tuple[np.ndarray, np.ndarray]:
        """(edges, tokens): probability bins, ``POINTS`` even ones then ``TAIL_BINS`` that narrow
        geometrically to ``1 - TAIL_LEAST`` and one last, and the length at each bin's middle
        probability (the largest of many draws lands in the narrow ones)."""
        tail = 1 - np.geomspace(1 / POINTS, TAIL_LEAST, TAIL_BINS)
        edges = np.unique(np.concatenate([np.linspace(0.0, 1.0, POINTS + 1), tail]))
        return edges, self.quantile((edges[:-1] + edges[1:]) / 2)

    @property
    def second_moment_ratio(self) -> float:
        """E[L^2] / E[L]^2."""
        return 1.0 + self.cv ** 2

    def quantile(self, q: np.ndarray | float) -> np.ndarray:
        """Tokens at probability ``q`` (arrays too)."""
        return self.mean * unit_quantiles(self, np.asarray(q, dtype=float))

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` random lengths (at least one token)."""
        if self.samples is not None:
            return rng.choice(np.asarray(self.samples), n)
        if self.cv == 0:
            return np.full(n, self.mean)
        if self.family == "lognormal":
            s = math.sqrt(math.log1p(self.cv ** 2))
            return self.mean * np.exp(rng.normal(-s * s / 2, s, n))
        k = 1.0 / self.cv ** 2
        return rng.gamma(k, self.mean / k, n)


def unit_quantiles(length: Lengths, q: np.ndarray) -> np.ndarray:
    """Quantiles of length / mean at probabilities ``q``."""
    q = np.clip(np.asarray(q, dtype=float), 1e-9, 1 - 1e-9)
    if length.samples is not None:
        return np.quantile(np.asarray(length.samples) / length.mean, q)
    if length.cv == 0:
        return np.ones_like(q)
    from scipy.special import gammaincinv, ndtri

    if length.family == "lognormal":
        s = math.sqrt(math.log1p(length.cv ** 2))
        return np.exp(s * ndtri(q) - s * s / 2)
    k = 1.0 / length.cv ** 2
    return gammaincinv(k, q) / k


@dataclass(frozen=True)
class Traffic:
    """What a serving configuration is asked: input and output lengths and how requests arrive."""

    input: Lengths
    output: Lengths
    arrival_cv: float = 1.0  # 1: Poisson; otherwise gamma inter-arrival times of this CV

    def arrivals(self, rng: np.random.Generator, rate_per_s: float, n: int) -> np.ndarray:
        """Arrival times of ``n`` requests at ``rate_per_s``."""
        if self.arrival_cv == 1.0:
            gaps = rng.exponential(1.0 / rate_per_s, n)
        elif self.arrival_cv == 0:
            gaps = np.full(n, 1.0 / rate_per_s)
        else:
            k = 1.0 / self.arrival_cv ** 2
            gaps = rng.gamma(k, 1.0 / (rate_per_s * k), n)
        return np.cumsum(gaps)


def read_lengths_csv(path: Path, where: str, max_tokens: int | None = None,
                     model: str = "the model") -> tuple[Lengths, Lengths]:
    """Input and output lengths from a CSV with columns ``input_tokens`` and ``output_tokens`` (one row
    per request, or a histogram with a third column ``count``). Bad rows are bad input naming the file,
    row and field (``where``: the scenario field that names the file); with ``max_tokens`` (the
    model's context), so is a request longer than it."""
    def bad(msg: str) -> InputError:
        return InputError(f"{where}: {path}: {msg}")

    from ecobench.io.bounded import read_text

    try:
        # the bounded reader: a regular file under a size cap (a FIFO or /dev/zero is refused before a
        # byte is read), UTF-8 with a byte-order mark dropped (a spreadsheet's "CSV UTF-8" export)
        text = read_text(path, MAX_CSV_BYTES, "lengths CSV")
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    try:
        reader = csv.DictReader(text.splitlines())
        rows = list(reader)
    except csv.Error as exc:
        raise bad(f"not a CSV file ({exc})") from None
    need = {"input_tokens", "output_tokens"}
    if not rows or not need <= set(rows[0]):
        raise bad("a lengths CSV needs a header with input_tokens and output_tokens (and optionally count), "
                  "then one row per request or histogram bin")
    if len(rows) > MAX_CSV_ROWS:
        raise bad(f"{len(rows)} rows; at most {MAX_CSV_ROWS} allowed")
    width = len(reader.fieldnames or [])
    ins, outs, counts = [], [], []
    for i, r in enumerate(rows, 2):
        if None in r:
            raise bad(f"row {i}: more fields than the header's {width} columns; allowed: one value per "
                      "column")
        if any(v is None for v in r.values()):
            raise bad(f"row {i}: fewer fields than the header's {width} columns; allowed: one value per "
                      "column (a count left empty is 1)")
        vals = []
        for col, least in (("input_tokens", 1), ("output_tokens", 1), ("count", 0)):
            raw = r.get(col)
            if raw is None or (col == "count" and raw == ""):
                vals.append(1.0)
                continue
            try:
                v = float(raw)
            except ValueError:
                raise bad(f"row {i}, {col}: {raw!r} is not a number; allowed: a whole number >= {least}") \
                    from None
            if not math.isfinite(v) or v < least or v != int(v):
                raise bad(f"row {i}, {col}: {raw} is not allowed; allowed: a whole number >= {least} "
                          f"(nearest valid: {max(least, round(v)) if math.isfinite(v) else least})")
            vals.append(v)
        if max_tokens is not None and vals[2] > 0 and vals[0] + vals[1] > max_tokens:
            raise bad(f"row {i}: input_tokens + output_tokens {vals[0] + vals[1]:.0f} exceeds {model}'s "
                      f"max_position_embeddings ({max_tokens}); allowed: requests of at most {max_tokens} "
                      "tokens, as the server would refuse longer ones")
        ins.append(vals[0])
        outs.append(vals[1])
        counts.append(vals[2])
    c = np.asarray(counts)
    if c.sum() <= 0:
        raise bad("every count is 0: no request to read lengths from")
    keep = c > 0
    # A histogram's bins become samples weighted by their count (at most 100000 samples in all).
    reps = np.maximum(1, np.round(c[keep] * min(1.0, 100_000 / c.sum()))).astype(int)
    return (Lengths.of_samples(np.repeat(np.asarray(ins)[keep], reps)),
            Lengths.of_samples(np.repeat(np.asarray(outs)[keep], reps)))
