import time
from dataclasses import replace

import numpy as np
import pytest

from ecobench.hardware.backends import BACKENDS
from ecobench.hardware.catalog import load_catalog
from ecobench.planning.configs import evaluate_config
from ecobench.planning.evaluate import evaluate
from ecobench.power.uncertainty import PERCENTILES, ZeroDraws, bands, percentiles, simulate
from ecobench.scenario.load import load_scenario, scenario_from_dict
from tests.conftest import SCENARIOS

CAT = load_catalog()
FIGURES = ("throughput_per_instance_per_s", "energy_kwh", "energy_it_kwh", "energy_accelerator_kwh",
           "cost_usd", "co2_kg", "co2_it_kg", "co2_accelerator_kg")


def central_case(s, i):
    """The row and its Monte Carlo configuration with every ranged input held at its centre."""
    result = evaluate_config(s, s.configs[i], CAT, BACKENDS, i)
    row, mc = result.row, result.mc
    s0 = replace(mc.setup, throughput_mode=None, chip=None, grid_key=None, pue_uncertain=False)
    return row, simulate(replace(mc, setup=s0), ZeroDraws(3, 0))


OWN = {"inference": ("instances", "power_w"), "training": ("duration_h", "power_w", "mfu"),
       "serving": ("instances", "power_w", "ttft_ms_p50", "tpot_ms_p50", "energy_j_per_output_token",
                   "energy_it_j_per_output_token", "energy_accelerator_j_per_output_token")}


@pytest.mark.parametrize("name", ["layoutlm_inf2_upgrade", "bert_large_pretrain", "llama3_8b_chat"])
def test_monte_carlo_arithmetic_equals_the_plan_at_the_centre(name):
    s = load_scenario(SCENARIOS / f"{name}.yaml")
    for i in range(len(s.configs)):
        row, sim = central_case(s, i)
        for k in FIGURES + OWN[s.workload.mode]:
            if row.get(k) is None:  # MFU on a chip without a peak for the precision
                continue
            assert sim[k] == pytest.approx(np.full(3, row[k]), rel=1e-12), (s.configs[i].id, k)


def test_bands_are_reproducible_shared_and_independent_of_other_configs():
    s = load_scenario(SCENARIOS / "layoutlm_inf2_upgrade.yaml")
    df = evaluate(s).set_index("config_id")
    again = evaluate(s).set_index("config_id")
    assert df["energy_kwh_low"].equals(again["energy_kwh_low"])  # seeded
    for col in ("energy_kwh", "cost_usd", "co2_kg", "instances", "energy_change_pct"):
        assert (df[f"{col}_low"] <= df[f"{col}_high"]).all()
    # Same chip, mode and data type: one throughput draw, so the same instance counts in both regions;
    # Stockholm's grid band is its own.
    assert df.loc["inf2", "instances_low"] == df.loc["inf2-stockholm", "instances_low"]
    assert df.loc["inf2-stockholm", "co2_kg_high"] < df.loc["inf2", "co2_kg_low"]
    # Dropping a configuration leaves the others' bands as they were (one random stream per input).
    data = s.model_dump(mode="json")
    data["configs"] = [c for c in data["configs"] if c["id"] != "trn1"]
    fewer = evaluate(scenario_from_dict(data)).set_index("config_id")
    assert fewer.loc["inf2", "energy_kwh_high"] == df.loc["inf2", "energy_kwh_high"]
    other_seed = evaluate(s.model_copy(update={"uncertainty": s.uncertainty.model_copy(update={"seed": 7})}))
    moved = other_seed.set_index("config_id").loc["inf2", "energy_kwh_high"]
    assert moved != df.loc["inf2", "energy_kwh_high"]


def test_no_draws_no_bands_and_a_fixed_input_gives_no_width(scenario_dict):
    off = scenario_from_dict(scenario_dict | {"uncertainty": {"draws": 0}})
    assert not [c for c in evaluate(off).columns if c.endswith("_low")]
    # A supplied throughput and power, a set PUE and an overridden grid leave nothing to vary.
    fixed = scenario_dict | {"pue": 1.2, "overrides": {"grid_g_per_kwh": {"us-east-1": 300}}}
    fixed["configs"] = [c | {"measured_throughput_per_s": 500.0, "measured_power_w": 150.0,
                             "measured_power_scope": "instance"} for c in scenario_dict["configs"]]
    df = evaluate(scenario_from_dict(fixed))
    assert (df["energy_kwh_low"] == df["energy_kwh_high"]).all()
    assert df["power_w"].tolist() == pytest.approx([180.0, 180.0])


def test_thousand_draws_of_ten_configurations_are_fast(scenario_dict):
    data = scenario_dict | {"configs": [scenario_dict["configs"][i % 2] | {"id": f"c{i}"} for i in range(10)],
                            "baseline": "c1"}
    s = scenario_from_dict(data)
    mcs = []
    for i in range(10):
        mcs.append(evaluate_config(s, s.configs[i], CAT, BACKENDS, i).mc)
    bands(mcs, "c1", 1000, 0)  # warm caches (the error fits)
    t0 = time.perf_counter()
    bands(mcs, "c1", 1000, 0)
    assert time.perf_counter() - t0 < 0.5  # benchmarks/bench_uncertainty.py measures it properly


def test_percentiles_are_numpys_linear_percentiles() -> None:
    rng = np.random.default_rng(3)
    a = rng.lognormal(0.0, 1.0, size=(6, 1000))
    a[2, 17] = np.nan  # a row with NaN gives NaN, as np.percentile does
    a[4] = 1.5  # a constant row
    got = percentiles(a, PERCENTILES)
    want = np.percentile(a, PERCENTILES, axis=1).T
    assert got.shape == (6, 2)
    assert np.isnan(got[2]).all() and np.isnan(want[2]).all()
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-12)
    for n in (1, 2, 7):  # the interpolation at the ends and with few draws
        b = rng.normal(size=(3, n))
        np.testing.assert_allclose(percentiles(b, (0.0, 5.0, 50.0, 95.0, 100.0)),
                                   np.percentile(b, (0.0, 5.0, 50.0, 95.0, 100.0), axis=1).T, rtol=1e-12)


def test_an_instance_band_is_whole_instances():
    # layoutlm_realtime_p99 (a p99 target sizes each draw) printed inf1's band as "1 to 91.1" instances:
    # the 95th percentile fell between two draws of 91 and 92
    df = evaluate(load_scenario(SCENARIOS / "layoutlm_realtime_p99.yaml")).set_index("config_id")
    for c in df.index:
        lo, hi = df.loc[c, "instances_low"], df.loc[c, "instances_high"]
        assert lo == int(lo) and hi == int(hi) and lo <= df.loc[c, "instances"] <= hi, (c, lo, hi)
