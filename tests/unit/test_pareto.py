"""The Pareto front against brute force, and the picks."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ecobench.planning.pareto import front


def _brute(p: np.ndarray) -> np.ndarray:
    n = len(p)
    out = np.ones(n, dtype=bool)
    for i in range(n):
        for j in range(n):
            if np.all(p[j] <= p[i]) and np.any(p[j] < p[i]):
                out[i] = False
                break
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers(2, 3), st.integers(0, 2**31 - 1), st.booleans())
def test_front_matches_brute_force(n, k, seed, coarse):
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 4, size=(n, k)).astype(float) if coarse else rng.random((n, k))  # coarse: ties
    assert np.array_equal(front(p), _brute(p))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2), st.integers(0, 2**31 - 1))
def test_first_pick_is_the_full_lexsorts_first(n, keys, seed):
    """The picks sort only the rows at the lowest value; the first is a full lexsort's (NaN last)."""
    from ecobench.planning.pareto import _lexfirst

    rng = np.random.default_rng(seed)
    primary = rng.integers(0, 4, n).astype(float)
    primary[rng.random(n) < 0.3] = np.nan
    ties = [rng.integers(0, 3, n).astype(float) for _ in range(keys)]
    assert _lexfirst(primary, ties) == np.lexsort([*ties, primary])[0]


def test_identical_points_are_both_kept():
    p = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 3.0]])
    assert front(p).tolist() == [True, True, False]


def test_large_front_is_fast_enough_to_use():
    rng = np.random.default_rng(0)
    p = rng.random((100_000, 3))
    mask = front(p)
    assert 0 < mask.sum() < 2_000
    sample = rng.choice(np.flatnonzero(mask), 20)
    for i in sample:  # nothing dominates a front point
        assert not np.any(np.all(p <= p[i], axis=1) & np.any(p < p[i], axis=1))


def _serving_scenario(**serving):
    from ecobench.scenario.model import Scenario

    spec = {"requests_per_h": 36000, "input_tokens": 1024, "output_tokens": 256, "ttft_ms": 1000,
            "tpot_ms": 50, **serving}
    return Scenario.model_validate({
        "schema_version": 2, "name": "t", "workload": {"model": "llama3-8b", "serving": spec},
        "configs": [{"id": "a", "instance_type": "g6e.xlarge", "precision": "bf16"},
                    {"id": "b", "instance_type": "p5.48xlarge", "precision": "bf16"}],
        "baseline": "b"})


def _table(cost, co2, energy, tpot, ttft=(100.0, 100.0)):
    from ecobench.table import column

    n = len(cost)
    return {"config_id": column(["a", "b", "c"][:n]), "instance_type": column(["g6e.xlarge", "p5.48xlarge",
                                                                                "p4d.24xlarge"][:n]),
            "region": column(["us-east-1"] * n), "precision": column(["bf16"] * n),
            "cost_usd": np.array(cost, float), "co2_kg": np.array(co2, float),
            "energy_kwh": np.array(energy, float), "tpot_ms_p50": np.array(tpot, float),
            "ttft_ms_p50": np.array(ttft, float)}


def test_met_latency_target_is_a_constraint_not_an_objective():
    """Issue 23: a $5,360 g6e and a $39,600 p5 both meet the 50 ms TPOT target: the balanced pick is
    the g6e, although the p5 is much faster."""
    from ecobench.planning.pareto import recommendations

    recs = {r["objective"]: r for r in recommendations(_serving_scenario(), _table(
        [5360, 39600], [262, 741], [1000, 2100], [41.4, 16.1]))}
    assert recs["balanced"]["config_id"] == "a"
    assert "the lowest sum of cost, CO2 and energy" in recs["balanced"]["reason"]
    assert recs["latency"]["config_id"] == "b"  # the fastest is still named


def test_a_missed_target_makes_a_row_ineligible():
    from ecobench.planning.pareto import recommendations

    recs = recommendations(_serving_scenario(), _table([100, 39600, 50], [10, 741, 5], [10, 2100, 5],
                                                       [41.4, 16.1, 60.0], ttft=(100, 100, 100)))
    assert "c" not in {r["config_id"] for r in recs}  # tpot 60 ms over the 50 ms target


def test_one_line_when_the_baseline_is_best_on_everything():
    from ecobench.planning.pareto import recommendations

    recs = recommendations(_serving_scenario(), _table([5360, 1000], [262, 100], [1000, 500], [41.4, 16.1]))
    assert len(recs) == 1
    assert recs[0]["objective"] == "all" and recs[0]["config_id"] == "b"
    assert "same cost" not in recs[0]["reason"]
    assert "best on every objective" in recs[0]["reason"]


def test_an_objective_the_baseline_wins_says_the_baseline_is_already_best():
    """trial14: 'cost: g6e ...: same cost for same CO2, same energy ... against the baseline g6e'. The
    baseline b is cheapest, lowest in CO2 and energy, and balanced; a is faster."""
    from ecobench.planning.pareto import recommendations

    recs = {r["objective"]: r for r in recommendations(_serving_scenario(), _table(
        [39600, 5360], [741, 262], [2100, 1000], [16.1, 41.4]))}
    for objective, words in (("cost", "cost"), ("co2", "CO2"), ("energy", "energy")):
        assert recs[objective]["config_id"] == "b"
        assert recs[objective]["reason"].endswith(f": the baseline b already has the lowest {words}")
    assert recs["balanced"]["config_id"] == "b"
    assert "the baseline b already has the lowest sum of cost, CO2 and energy" in recs["balanced"]["reason"]
    assert not any("same cost" in r["reason"] for r in recs.values())
    assert recs["latency"]["config_id"] == "a"  # another row: its changes against the baseline
    assert recs["latency"]["reason"].endswith("+639% cost, +183% CO2, +110% energy against the baseline b")


def _with_bands(t, **bands):
    for col, (lo, hi) in bands.items():
        t[f"{col}_low"], t[f"{col}_high"] = np.array(lo, float), np.array(hi, float)
    return t


def test_a_pick_whose_gain_the_90_pct_band_does_not_settle_says_so():
    """User26, 2026-11-29: a pick's -8% CO2 whose 90% band is -43% to +30% read as a gain like any
    other. The pick is the same; its reason says the band reaches above 0 (and says nothing where it
    does not)."""
    from ecobench.planning.pareto import recommendations

    t = _with_bands(_table([5360, 39600], [700, 741], [1000, 2100], [41.4, 16.1]),
                    cost_change_pct=([-90, 0], [-80, 0]), co2_change_pct=([-43, 0], [30, 0]),
                    energy_change_pct=([-60, 0], [-40, 0]))
    recs = {r["objective"]: r for r in recommendations(_serving_scenario(), t)}
    assert recs["co2"]["config_id"] == "a"
    assert recs["co2"]["reason"].endswith(
        "; its CO2 change's 90% band is -43% to +30%: the gain is not certain")
    assert "not certain" not in recs["cost"]["reason"] and "not certain" not in recs["energy"]["reason"]
    plain = {r["objective"]: r for r in recommendations(_serving_scenario(), _table(
        [5360, 39600], [700, 741], [1000, 2100], [41.4, 16.1]))}
    assert {k: r["config_id"] for k, r in plain.items()} == {k: r["config_id"] for k, r in recs.items()}
    assert not any("90% band" in r["reason"] for r in plain.values())  # no bands (draws: 0): no clause


def test_a_baseline_best_on_everything_names_the_rows_its_bands_do_not_rule_out():
    from ecobench.planning.pareto import recommendations

    t = _with_bands(_table([5360, 5200], [262, 250], [1000, 990], [41.4, 16.1]),
                    cost_change_pct=([-31, 0], [51, 0]), co2_change_pct=([2, 0], [30, 0]),
                    energy_change_pct=([-5, 0], [20, 0]))
    (rec,) = recommendations(_serving_scenario(), t)
    assert rec["objective"] == "all" and rec["config_id"] == "b"
    assert rec["reason"].endswith(
        "; within their 90% bands the changes of a (cost -31% to +51%, energy -5% to +20%) reach below the "
        "baseline's: the central values rank the baseline first; the bands do not settle it")


def test_rows_with_equal_objectives_share_their_pareto_rank():
    """Two configurations with the same cost, CO2 and time per token (a bf16 and an fp16 row that plan
    alike) are equally good: one rank for both (as scipy's rankdata 'min'), not 2 and 3 by row order,
    so `pareto_rank<3` cannot pass one and fail its twin."""
    from ecobench.planning.pareto import pareto_columns

    t = _table([100, 100, 50], [10, 10, 20], [1, 1, 1], [40.0, 40.0, 45.0], ttft=(100, 100, 100))
    flags, rank = pareto_columns(_serving_scenario(), t)
    assert flags.tolist() == [True, True, True]
    assert rank.tolist() == [2.0, 2.0, 1.0]
