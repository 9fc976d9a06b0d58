"""The serving figures' conditional bands (hardware/backends/serve_bands.py): split-conformal quantile,
regime cells, leave-one-source-out, fallback to wider cells."""

import math

import numpy as np
import pytest

from ecobench.hardware.backends import serve_bands as sb
from ecobench.hardware.backends.serve_bands import Regime, band_of, conformal_log_factor


def _rows(errors, source, figure="tpot_ms", model="analytic", vendor="nvidia", tensor=1, batch=1.0):
    return [{"id": f"{source}_{i}", "source": source, "figure": figure, "model": model, "vendor": vendor,
             "tensor": tensor, "batch": batch, "log_error": e} for i, e in enumerate(errors)]


def test_conformal_factor_is_the_level_quantile_of_absolute_errors():
    e = [-0.1 * k for k in range(1, 20)]  # 19 errors: the 18th smallest is the first with 90% below
    assert conformal_log_factor(e) == pytest.approx(1.8)
    assert conformal_log_factor(e[:5]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        conformal_log_factor([])


def test_each_source_weighs_the_same_however_many_errors_it_has():
    # 90 small errors from one source and 10 large ones from each of two others: the large ones are
    # two thirds of the weight, so the 90% quantile is large (pooled rows would give the small one)
    errors = [0.01] * 90 + [0.5] * 10 + [0.6] * 10
    sources = ["big"] * 90 + ["x"] * 10 + ["y"] * 10
    assert conformal_log_factor(errors) == pytest.approx(0.5)
    assert conformal_log_factor(errors, sources) == pytest.approx(0.6)


def test_conformal_band_covers_at_least_its_level_of_new_exchangeable_draws():
    rng = np.random.default_rng(0)
    hits = []
    for _ in range(400):
        cal, new = rng.standard_t(4, 30) * 0.2, rng.standard_t(4) * 0.2
        hits.append(abs(new) <= conformal_log_factor(cal))
    assert 0.87 <= np.mean(hits) <= 0.97


def test_the_quantile_is_taken_at_the_finite_sample_level_of_its_sources():
    # one error per source: 10 sources -> level 0.9 x 11 / 10 = 0.99, the largest (0.9 at the bare
    # level); 20 sources -> 0.945, the 19th (the 18th at the bare level); fewer than 9: the largest
    ten = [0.1 * k for k in range(1, 11)]
    assert conformal_log_factor(ten, [str(k) for k in range(10)]) == pytest.approx(1.0)
    twenty = [0.1 * k for k in range(1, 21)]
    assert conformal_log_factor(twenty, [str(k) for k in range(20)]) == pytest.approx(1.9)
    assert conformal_log_factor([0.1, 0.2, 0.3, 0.9], ["a", "b", "c", "c"]) == pytest.approx(0.9)


def _new_source_coverage(sources: int, draws: int = 2000) -> tuple[float, float]:
    """Share of a new source's errors inside the band of ``sources`` others, each off by its own
    offset (sd 0.3) with little spread of its own (sd 0.03): the band's, and the bare 0.9 quantile's."""
    from ecobench.hardware.backends.residuals import group_weighted_quantile

    rng = np.random.default_rng(0)
    band, bare = [], []
    for _ in range(draws):
        off = rng.normal(0.0, 0.3, sources + 1)
        cal = np.concatenate([o + rng.normal(0.0, 0.03, 8) for o in off[:sources]])
        src = np.repeat(np.arange(sources).astype(str), 8)
        new = abs(off[-1] + rng.normal(0.0, 0.03))
        band.append(new <= conformal_log_factor(cal, src))
        bare.append(new <= group_weighted_quantile(np.abs(cal), src, 0.9))
    return float(np.mean(band)), float(np.mean(bare))


def test_the_band_holds_90_percent_of_a_new_sources_errors_from_ten_sources():
    # the bare 0.9 quantile of 10 sources' pooled errors holds about 9 / 11 of a new source's
    band, bare = _new_source_coverage(10)
    assert band >= 0.9 > 0.86 > bare


def test_with_fewer_than_9_sources_the_band_is_the_largest_error_and_holds_less():
    # four sources: the largest error, which a fifth source's offset exceeds about 1 time in 5
    band, bare = _new_source_coverage(4)
    assert 0.78 <= band < 0.9 and band >= bare


def test_the_narrowest_cell_with_enough_errors_from_enough_sources_sets_the_band():
    rows = [r for src in "abe" for r in _rows([0.05] * 10, src, batch=1)] \
        + [r for src in "cdf" for r in _rows([0.8] * 10, src, batch=64)]
    small = band_of(rows, "tpot_ms", Regime("analytic", "nvidia", 1, 1))
    big = band_of(rows, "tpot_ms", Regime("analytic", "nvidia", 1, 64))
    assert small.factor == pytest.approx(math.exp(0.05)) and small.cell == ("analytic", "nvidia", "1", "1")
    assert big.factor == pytest.approx(math.exp(0.8)) and big.n == 30
    # a regime no cell holds: the widest cell that has errors (every nvidia error)
    other = band_of(rows, "tpot_ms", Regime("analytic", "nvidia", 8, 4))
    assert other.cell == ("analytic", "nvidia") and other.factor == pytest.approx(math.exp(0.8))
    # too few sources in the narrow cell: a wider one
    assert band_of(rows, "tpot_ms", Regime("analytic", "nvidia", 1, 1), exclude_source="a").cell == \
        ("analytic", "nvidia", "1")


def test_a_points_own_source_never_sets_its_band():
    rows = _rows([0.01] * 30, "own") + [r for src in "xyz" for r in _rows([0.3] * 30, src)]
    regime = Regime("analytic", "nvidia", 1, 1)
    assert band_of(rows, "tpot_ms", regime, exclude_source="own").factor == pytest.approx(math.exp(0.3))
    assert band_of(rows, "tpot_ms", regime, exclude_source="own").n == 90
    doctored = [r | {"log_error": 5.0} if r["source"] == "own" else r for r in rows]
    assert band_of(doctored, "tpot_ms", regime, exclude_source="own") == \
        band_of(rows, "tpot_ms", regime, exclude_source="own")


def test_fewer_sources_set_a_cell_only_when_no_cell_of_the_vendor_has_enough():
    rows = (_rows([0.1] * 30, "a", tensor=1, batch=64) + _rows([0.2] * 30, "b", tensor=1, batch=64)
            + _rows([0.3] * 30, "c", tensor=8, batch=1))
    regime = Regime("analytic", "nvidia", 1, 64)
    b = band_of(rows, "tpot_ms", regime)
    assert b.cell == ("analytic", "nvidia") and b.n == 90  # three sources in the vendor's cell: it wins
    b = band_of(rows, "tpot_ms", regime, exclude_source="c")
    assert b.cell == ("analytic", "nvidia", "1", "17+") and b.n == 60  # two sources: the narrowest with two
    b = band_of(rows, "tpot_ms", regime, exclude_source="b")
    assert b.cell == ("analytic", "nvidia") and b.n == 60


def test_a_vendor_with_few_sources_is_never_banded_by_another_vendors_errors():
    # NVIDIA: two sources of small errors; Neuron (aws): three sources of large ones
    rows = (_rows([0.05] * 30, "n1") + _rows([0.1] * 30, "n2")
            + [r for src in "xyz" for r in _rows([1.0] * 30, src, vendor="aws", tensor=32)])
    nvidia = Regime("analytic", "nvidia", 1, 1)
    b = band_of(rows, "tpot_ms", nvidia)
    assert b.cell == ("analytic", "nvidia", "1", "1") and b.factor == pytest.approx(math.exp(0.1))
    # one NVIDIA source left: its errors, not the model's cell with three Neuron sources
    b = band_of(rows, "tpot_ms", nvidia, exclude_source="n2")
    assert b.n == 30 and b.factor == pytest.approx(math.exp(0.05))
    # and Neuron's band is Neuron's
    assert band_of(rows, "tpot_ms", Regime("analytic", "aws", 32, 1)).factor == pytest.approx(math.exp(1.0))


def test_a_vendor_without_enough_errors_takes_the_model_cell_across_vendors():
    rows = (_rows([0.1] * 30, "a", vendor="aws", tensor=32) + _rows([0.9] * 30, "n", vendor="nvidia")
            + _rows([0.9] * 5, "m", vendor="google"))
    b = band_of(rows, "tpot_ms", Regime("analytic", "google", 4, 1))  # five errors: too few for a cell
    assert b.cell == ("analytic",) and b.n == 65
    assert band_of(rows, "tpot_ms", Regime("analytic", "amd", 1, 1)).cell == ("analytic",)
    # the model's cell too has too few: every error of the figure, whichever model
    emulated = band_of(rows, "tpot_ms", Regime("emulated", "aws", 32, 1))
    assert emulated.cell == ("all",) and emulated.n == 65


def test_decode_figures_share_errors_and_ttft_has_its_own():
    rows = (_rows([0.1] * 20, "a") + _rows([0.1] * 20, "b", figure="output_tokens_per_s")
            + _rows([0.1] * 20, "c") + _rows([0.6] * 20, "a", figure="ttft_ms")
            + _rows([0.6] * 20, "b", figure="ttft_ms"))
    regime = Regime("analytic", "nvidia", 1, 1)
    assert band_of(rows, "output_tokens_per_s", regime).n == band_of(rows, "tpot_ms", regime).n == 60
    assert band_of(rows, "ttft_ms", regime).factor == pytest.approx(math.exp(0.6))


def test_monte_carlo_multipliers_put_the_band_edges_at_5_and_95_percent():
    b = sb.Band(1.5, ("analytic",), 40)
    m = b.multipliers(np.random.default_rng(1).standard_normal(200_000))
    assert np.percentile(m, [5, 95]) == pytest.approx([1 / 1.5, 1.5], rel=0.01)
    assert b.around(10.0) == pytest.approx((10 / 1.5, 15.0))


def test_regime_classes():
    assert Regime("analytic", "nvidia", 4, 17.2).cells()[0] == ("analytic", "nvidia", "3+", "17+")
    assert Regime("analytic", "nvidia", 2, 1.0).cells()[0] == ("analytic", "nvidia", "2", "1")
    assert Regime("emulated", "aws", 24, 8).cells()[0] == ("emulated", "aws", "3+", "2-16")


def test_a_tensor_degree_of_3_is_named_by_the_class_it_falls_in():
    # `serve-point --tensor 3` on inf2.48xlarge said its band came from "tensor 4+"
    assert Regime("analytic", "aws", 3, 7).cells()[0] == ("analytic", "aws", "3+", "2-16")


def test_a_point_the_stored_fit_predates_is_named_not_a_stop_iteration():
    """A packaged point added since the last refit has no stored error: the message says what to run
    (it was an internal StopIteration, exit 3 without a word)."""
    from ecobench.errors import StaleFitError
    from ecobench.hardware.backends.residuals import holdout_band
    from ecobench.hardware.backends.serve_bands import point_band

    for band in (lambda: point_band("no_such_point", "tpot_ms"), lambda: holdout_band("no_such_point")):
        with pytest.raises(StaleFitError, match="'no_such_point'.*tools/refit.py"):
            band()
