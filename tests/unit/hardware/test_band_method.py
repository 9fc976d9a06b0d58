"""The source-weighted conformal band of held-out errors (residuals.source_weighted_halfwidth):
its arithmetic, and its coverage on simulated errors that share an offset within each source."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ecobench.hardware.backends.residuals import scaled_fit, source_weighted_halfwidth


def test_every_source_weighs_the_same_however_many_points_it_has():
    # one source of 100 tiny errors and ten sources of one error each: point-weighted, the 90%
    # quantile would be tiny; source-weighted, the big source is one of eleven
    errors = [0.01] * 100 + [0.1 * k for k in range(1, 11)]
    groups = ["big"] * 100 + [f"s{k}" for k in range(1, 11)]
    q = source_weighted_halfwidth(errors, groups)
    assert q == pytest.approx(1.0)  # 11 sources: level 0.9 x 12 / 11 > 10 / 11, so the largest
    assert np.quantile(errors, 0.9) < 0.1


def test_split_conformal_rank_with_one_point_per_source():
    # S = 19 sources of one point: the ceil(0.9 x 20) = 18th smallest |error|, whatever the sign
    errors = [(-1) ** k * k for k in range(1, 20)]
    assert source_weighted_halfwidth(errors, list(range(19))) == 18.0
    assert source_weighted_halfwidth(errors, list(range(19)), level=0.5) == 10.0  # ceil(0.5 x 20) = 10th


def test_fewer_than_nine_sources_give_the_largest_error():
    errors = [0.1, -0.2, 0.3, 0.05, -0.4, 0.2, 0.1, 0.0]
    assert source_weighted_halfwidth(errors, list("abcdefgh")) == pytest.approx(0.4)


def test_points_of_one_source_share_its_weight():
    # two sources only: the largest error
    assert source_weighted_halfwidth([0.1, 0.1, 0.5], ["a", "a", "b"]) == pytest.approx(0.5)


@pytest.mark.parametrize("errors, groups", [([], []), ([0.1, 0.2], ["a"])])
def test_bad_input_is_refused(errors, groups):
    with pytest.raises(ValueError, match="one group per error"):
        source_weighted_halfwidth(errors, groups)


def test_scaled_fit_band_is_the_conformal_band():
    rng = np.random.default_rng(3)
    errors = rng.normal(0.02, 0.15, 60)
    groups = np.repeat(np.arange(12), 5)
    q = source_weighted_halfwidth(errors, groups)
    fit = scaled_fit(errors, groups)
    assert fit.loc == 0.0
    lo, hi = fit.band(1.0)
    assert (lo, hi) == pytest.approx((math.exp(-q), math.exp(q)), rel=1e-9)
    # the Monte Carlo's draws: 90% of truth / prediction inside the band
    m = fit.multipliers(np.random.default_rng(0).standard_t(fit.df, 200_000))
    assert np.mean((m >= lo) & (m <= hi)) == pytest.approx(0.90, abs=0.005)


def test_held_out_sources_are_covered_where_a_point_weighted_quantile_is_not():
    # Errors as the published points have them: each source an offset of its own (its software and
    # cluster) plus a small per-point spread, sources of 1 to 40 points. Holding each source out, the
    # source-weighted band covers at least 90% of its points; the point-weighted one does not.
    rng = np.random.default_rng(7)
    weighted, pointwise = [], []
    for _ in range(100):
        sizes = rng.choice([1, 2, 5, 10, 40], size=15)
        offsets = rng.normal(0.0, 0.15, 15)
        errors = np.concatenate([o + rng.normal(0.0, 0.05, n) for o, n in zip(offsets, sizes, strict=True)])
        groups = np.repeat(np.arange(15), sizes)
        for held in range(15):
            others = groups != held
            q = source_weighted_halfwidth(errors[others], groups[others])
            weighted.append(np.mean(np.abs(errors[~others]) <= q))
            n = int(others.sum())
            q_points = np.quantile(np.abs(errors[others]), min(1.0, 0.9 * (n + 1) / n))
            pointwise.append(np.mean(np.abs(errors[~others]) <= q_points))
    assert np.mean(weighted) >= 0.90
    assert np.mean(pointwise) < 0.90
