"""Serving traffic: request lengths as distributions and arrivals as a renewal stream.

A length is its mean and coefficient of variation (``gamma`` or ``lognormal``), or the empirical
distribution of a CSV's rows (``input_tokens,output_tokens``). Arrivals are Poisson (CV 1) or bursty:
gamma inter-arrival times with a given CV. The queue models read a length through ``UNIT_QUANTILES``
points of its distribution over its mean (a length of CV 0 is 1 everywhere).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

POINTS = 64  # quantile points a length distribution is read through
UNIT_QUANTILES = (np.arange(POINTS) + 0.5) / POINTS
TAIL_BINS, TAIL_LEAST = 40, 1e-7  # tail bins of a length (the longest of a batch) and how far they go
FAMILIES = ("gamma", "lognormal")
MAX_CV = 10.0  # the schema's bound on a coefficient of variation


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

    def scaled(self, factor: float) -> Lengths:
        """Every length times ``factor`` (the same coefficient of variation)."""
        samples = None if self.samples is None else tuple(x * factor for x in self.samples)
        return Lengths(self.mean * factor, self.cv, self.family, samples)

    @functools.cached_property
    def unit(self) -> np.ndarray:
        """``POINTS`` equally likely values of length / mean (read-only: shared by equal lengths)."""
        return _unit(self)

    @functools.cached_property
    def bins(self) -> tuple[np.ndarray, np.ndarray]:
        """(edges, tokens): probability bins, ``POINTS`` even ones then ``TAIL_BINS`` that narrow
        geometrically to ``1 - TAIL_LEAST`` and one last, and the length at each bin's middle
        probability (the largest of many draws lands in the narrow ones; read-only: shared by equal
        lengths)."""
        return _bins(self)

    @property
    def second_moment_ratio(self) -> float:
        """E[L^2] / E[L]^2."""
        return 1.0 + self.cv ** 2

    def quantile(self, q: np.ndarray | float) -> np.ndarray:
        """Tokens at probability ``q`` (arrays too)."""
        return self.mean * unit_quantiles(self, np.asarray(q, dtype=float))

    def cdf(self, tokens: float) -> float:
        """P(length < ``tokens``)."""
        if self.samples is not None:
            return float(np.mean(np.asarray(self.samples) < tokens))
        if self.cv == 0:
            return float(self.mean < tokens)
        from scipy.special import gammainc, ndtr

        if self.family == "lognormal":
            s = math.sqrt(math.log1p(self.cv ** 2))
            return float(ndtr((math.log(tokens / self.mean) + s * s / 2) / s))
        k = 1.0 / self.cv ** 2
        return float(gammainc(k, tokens * k / self.mean))

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


# Every plan of a scenario builds its own Lengths of the same figures: their quantile points (an inverse
# incomplete gamma each) are worked out once per distribution.
@functools.lru_cache(maxsize=256)
def _unit(length: Lengths) -> np.ndarray:
    """:attr:`Lengths.unit`, read-only."""
    unit = unit_quantiles(length, UNIT_QUANTILES)
    unit.flags.writeable = False
    return unit


@functools.lru_cache(maxsize=256)
def _bins(length: Lengths) -> tuple[np.ndarray, np.ndarray]:
    """:attr:`Lengths.bins`, read-only."""
    tail = 1 - np.geomspace(1 / POINTS, TAIL_LEAST, TAIL_BINS)
    edges = np.unique(np.concatenate([np.linspace(0.0, 1.0, POINTS + 1), tail]))
    tokens = length.quantile((edges[:-1] + edges[1:]) / 2)
    edges.flags.writeable = tokens.flags.writeable = False
    return edges, tokens


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
