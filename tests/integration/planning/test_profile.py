"""Load profiles: static, autoscaled and batch fleets over a day (``ecobench/planning/profile.py``)."""

import copy
import csv
import json
import math

import numpy as np
import pytest
import yaml

from ecobench.cli import main
from ecobench.planning.evaluate import evaluate
from ecobench.planning.profile import Fleet, profile_strategies, sized_rates
from ecobench.scenario.load import load_scenario, scenario_from_dict
from ecobench.scenario.profile import AutoscaleSpec
from tests.conftest import SCENARIOS

PEAKY = [0.1] * 8 + [1.0] * 8 + [0.3] * 8


@pytest.fixture
def profiled(scenario_dict):
    """The conftest scenario (BERT-base) at 20 million inferences/h with a profile, no Monte Carlo."""
    d = copy.deepcopy(scenario_dict)
    d["workload"]["inference"]["rate_per_h"] = 20_000_000
    d["uncertainty"] = {"draws": 0}
    d["workload"]["inference"]["profile"] = {"multipliers": PEAKY}
    return d


def _rows(d, tmp_path=None):
    return {r["config_id"]: r for r in evaluate(scenario_from_dict(d, base_dir=tmp_path)).to_dict("records")}


def test_flat_profile_autoscales_to_the_static_fleet(profiled):
    profiled["workload"]["inference"]["profile"] = {"multipliers": [1.0] * 24}
    for row in _rows(profiled).values():
        p = row["profile"]
        for k in ("instance_hours", "energy_kwh", "cost_usd", "co2_kg"):
            assert p["autoscaled"][k] == pytest.approx(p["static"][k])
        assert p["idle_avoided_pct"] == 0
        # a flat day at the workload's rate is the existing row, 24 times over
        assert p["static"]["instance_hours"] == 24 * row["instances"]
        assert p["static"]["energy_kwh"] == pytest.approx(24 * row["energy_kwh"])


def test_peaky_profile_autoscaled_is_cheaper_than_static(profiled):
    for row in _rows(profiled).values():
        p = row["profile"]
        assert p["hourly"]["static_instances"] >= 3  # enough instances to scale
        assert p["autoscaled"]["cost_usd"] < p["static"]["cost_usd"]
        assert p["autoscaled"]["energy_kwh"] < p["static"]["energy_kwh"]
        assert p["idle_avoided_pct"] > 0
        assert row["profile_idle_avoided_pct"] == p["idle_avoided_pct"]
        assert row["profile_autoscaled_co2_kg"] == p["autoscaled"]["co2_kg"]


@pytest.mark.parametrize("lag", [0, 1, 3, 23])
@pytest.mark.parametrize("seed", [0, 1])
def test_capacity_is_never_below_the_hours_rate(profiled, lag, seed):
    rng = np.random.default_rng(seed)
    profiled["workload"]["inference"]["profile"] = {
        "rates_per_h": rng.uniform(0, 40_000_000, 24).round().tolist(), "autoscale": {"lag_h": lag}}
    for row in _rows(profiled).values():
        h = row["profile"]["hourly"]
        rates = np.array(h["rate_per_h"])
        assert (np.array(h["autoscaled_capacity_per_h"]) >= rates).all()
        assert h["static_capacity_per_h"] >= rates.max()
        # with lag L the fleet is already there for every hour up to L ahead
        need = np.array(h["sized_rate_per_h"])
        for k in range(lag + 1):
            assert (need >= np.roll(rates, -k)).all()
        if lag == 23:
            p = row["profile"]
            assert p["autoscaled"]["instance_hours"] == p["static"]["instance_hours"]


def test_batch_needs_no_more_energy_than_static(profiled):
    for row in _rows(profiled).values():
        p = row["profile"]
        assert p["batch"]["energy_kwh"] <= p["static"]["energy_kwh"]
        assert p["batch"]["energy_kwh"] <= p["autoscaled"]["energy_kwh"]
        assert p["batch"]["batch_size"] >= 1


def test_sized_rates_look_ahead_across_midnight():
    r = np.zeros(24)
    r[0] = 5.0
    assert sized_rates(r, 0).tolist() == r.tolist()
    s = sized_rates(r, 2)
    assert s[22] == s[23] == s[0] == 5.0 and s[1] == 0.0 and s[21] == 0.0


def test_min_instances_floor_and_scale_to_zero():
    fleet = Fleet(size=lambda r: (math.ceil(r / 10), 10.0),
                  hour=lambda n, r: {"instance_hours": n, "energy_kwh": n * 0.1 + r * 0.001,
                                     "cost_usd": n * 1.0, "co2_kg": n * 0.01},
                  batch=lambda v: {"instance_hours": v / 10, "energy_kwh": v / 100, "cost_usd": v / 10,
                                   "co2_kg": v / 1000, "batch_size": 8, "throughput_per_instance_per_s": 1.0})
    rates = [0.0] * 12 + [50.0] * 12
    zero = profile_strategies(rates, AutoscaleSpec(lag_h=0, min_instances=0), fleet)
    assert zero["hourly"]["autoscaled_instances"] == [0] * 12 + [5] * 12
    assert zero["autoscaled"]["instance_hours"] == 60 and zero["static"]["instance_hours"] == 120
    assert zero["idle_avoided_pct"] == pytest.approx(50.0)
    floor = profile_strategies(rates, AutoscaleSpec(lag_h=0, min_instances=2), fleet)
    assert floor["hourly"]["autoscaled_instances"] == [2] * 12 + [5] * 12
    assert floor["hourly"]["autoscaled_capacity_per_h"][0] == 20.0
    # issue 24: the static fleet is the busiest hour's need, never inflated by the autoscaler's floor
    high_floor = profile_strategies(rates, AutoscaleSpec(lag_h=0, min_instances=9), fleet)
    assert high_floor["static"]["instance_hours"] == 5 * 24
    assert high_floor["hourly"]["autoscaled_instances"] == [9] * 24


def test_csv_profile_is_read_relative_to_the_scenario(tmp_path, profiled):
    rates = [1000.0 * (h + 1) for h in range(24)]
    with (tmp_path / "day.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["hour", "requests_per_h"])
        w.writerows([h, r] for h, r in reversed(list(enumerate(rates))))
    profiled["workload"]["inference"]["profile"] = {"csv": "day.csv"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(profiled))
    s = load_scenario(tmp_path / "s.yaml")
    assert s.workload.inference.profile.hourly(1.0) == rates
    assert s.workload.inference.profile.csv == str((tmp_path / "day.csv").resolve())


def test_serving_profile_runs():
    d = yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text())
    d["configs"] = [c for c in d["configs"] if c["id"] == "g6e"]
    d["baseline"], d["uncertainty"] = "g6e", {"draws": 0}
    d["workload"]["serving"]["profile"] = {"multipliers": PEAKY}
    p = _rows(d)["g6e"]["profile"]
    assert p["autoscaled"]["cost_usd"] < p["static"]["cost_usd"]
    assert p["batch"]["energy_kwh"] <= p["static"]["energy_kwh"]
    assert (np.array(p["hourly"]["autoscaled_capacity_per_h"]) >= np.array(p["hourly"]["rate_per_h"])).all()


def _run(tmp_path, capsys, data):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    code = main(["run", str(f), "-q", "--results", str(tmp_path / "res")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("profile", "expect"), [
    # trial: 23 values said "allowed: at least 24", 25 "at most 24", where exactly 24 are allowed
    ({"multipliers": [1.0] * 23},
     ["workload.inference.profile.multipliers: has 23 items; allowed: exactly 24, one per hour"]),
    ({"rates_per_h": [1.0] * 25},
     ["workload.inference.profile.rates_per_h: has 25 items; allowed: exactly 24, one per hour"]),
    ({"rates_per_h": [-1.0] + [1.0] * 23},
     ["workload.inference.profile.rates_per_h[0]: -1.0 is out of range; allowed: a number from 0 to 10^12"]),
    ({"multipliers": [0.0] * 24}, ["every hour is 0"]),
    ({"multipliers": [1.0] * 24, "rates_per_h": [1.0] * 24}, ["exactly one of rates_per_h"]),
    ({}, ["exactly one of rates_per_h", "got none"]),
    ({"multipliers": [1.0] * 24, "autoscale": {"lag_h": 24}},
     ["autoscale.lag_h", "24 is out of range; allowed: an integer from 0 to 23"]),
    ({"multipliers": [1.0] * 24, "autoscale": {"min_instances": -1}}, ["autoscale.min_instances"]),
    ({"multipliers": [1000.0] * 24, "autoscale": {"lag": 1}}, ["autoscale.lag: unknown field"]),
    ({"csv": "nowhere.csv"}, ["workload.inference.profile.csv", "no such file"]),
])
def test_profile_schema_errors_exit_2(tmp_path, capsys, profiled, profile, expect):
    profiled["workload"]["inference"]["profile"] = profile
    code, err = _run(tmp_path, capsys, profiled)
    assert code == 2, err
    assert "Traceback" not in err and "s.yaml" in err
    for e in expect:
        assert e in err, err
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize(("text", "expect"), [
    ("hour,rate\n0,1\n", "missing column rate_per_h or requests_per_h (columns found: hour, rate"),
    ("h,rate_per_h\n0,1\n", "missing column hour"),
    ("hour,rate_per_h\n" + "".join(f"{h},10\n" for h in range(23)), "no row for hour 23"),
    ("hour,rate_per_h\n0,-5\n", "line 2: rate_per_h '-5' must be 0 (a quiet hour) or 0.001 to 10^12"),
    ("hour,rate_per_h\n24,5\n", "line 2: hour '24' must be a whole hour 0 to 23"),
    # issue 24's reproducers: an extra field, a subnormal rate, a file that is not a CSV header
    ("hour,rate_per_h\n0,5,extra\n", "line 2: more fields than the header's 2 columns"),
    ("hour,rate_per_h\n0\n", "line 2: fewer fields than the header's 2 columns"),
    ("hour,rate_per_h\n" + "".join(f"{h},1e-320\n" for h in range(24)), "'1e-320' must be 0 (a quiet hour)"),
    ("root:$6$abcdefgh$secretsecretsecret:19000:0:99999:7:::\n", "its first line is not a CSV header"),
    ("hour,rate_per_h\n0,5\n0,6\n", "hour 0 appears twice"),
    ("hour,rate_per_h\n0,lots\n", "must be numbers"),
    # both rate columns, with different rates: the first was read and the other passed over
    ("hour,rate_per_h,requests_per_h\n" + "".join(f"{h},1000,5\n" for h in range(24)),
     "both rate_per_h and requests_per_h columns; allowed: one of them"),
])
def test_profile_csv_errors_exit_2(tmp_path, capsys, profiled, text, expect):
    (tmp_path / "day.csv").write_text(text)
    profiled["workload"]["inference"]["profile"] = {"csv": "day.csv"}
    code, err = _run(tmp_path, capsys, profiled)
    assert code == 2, err
    assert "workload.inference.profile.csv" in err and "day.csv" in err and expect in err, err


def test_multiplied_peak_beyond_the_rate_bound_exits_2(tmp_path, capsys, profiled):
    profiled["workload"]["inference"]["rate_per_h"] = 1e11
    profiled["workload"]["inference"]["profile"] = {"multipliers": [100.0] * 24}
    code, err = _run(tmp_path, capsys, profiled)
    assert code == 2 and "exceeds 10^12" in err, err


def test_a_peak_hour_beyond_the_instance_bound_exits_2(tmp_path, capsys, profiled):
    """The row's own rate is held to bounds.MAX_INSTANCES; the day's busiest hour, planned from the same
    configuration, was not (1.24 million g4dn instances in a day's static fleet)."""
    profiled["workload"]["inference"]["rate_per_h"] = 1e8
    profiled["workload"]["inference"]["profile"] = {"multipliers": [1.0] * 23 + [1000.0]}
    code, err = _run(tmp_path, capsys, profiled)
    assert code == 2, err
    assert "the load profile's busiest hour needs" in err and "above the 100,000 instances" in err, err
    assert "workload.inference.profile" in err and "Traceback" not in err, err


def test_run_writes_profile_to_json_and_flat_columns_to_csv(tmp_path, capsys, profiled):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(profiled, sort_keys=False))
    code = main(["run", str(f), "--results", str(tmp_path / "res")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "A day of the load profile" in out and "autoscaling avoids" in out
    run = next((tmp_path / "res").glob("*/*/"))
    header = (run / "results.csv").read_text().splitlines()[0].split(",")
    assert "profile" not in header and "profile_autoscaled_cost_usd" in header
    assert "profile_idle_avoided_pct" in header
    doc = json.loads((run / "results.json").read_text())
    assert set(doc["rows"][0]["profile"]) >= {"static", "autoscaled", "batch", "hourly", "rule"}
    html = (run / "report.html").read_text()
    assert "Load profile" in html and "autoscaled" in html


def test_a_spot_day_counts_the_fleets_headroom_as_its_row_does(profiled):
    """On spot every fleet of the day keeps the interrupted share as headroom, as the row's own plan
    does (``spot_overhead_pct``); the day left it out: 24 x 2 instance-hours where the row had 2.1."""
    profiled["pricing"] = {"model": "spot", "spot_discount_pct": 60, "spot_interruption_pct_per_month": 10}
    for row in _rows(profiled).values():
        p, factor = row["profile"], 1 + row["spot_overhead_pct"] / 100
        assert row["spot_overhead_pct"] == pytest.approx(10)
        assert row["instance_hours"] == pytest.approx(row["instances"] * row["duration_h"] * factor)
        static_n = p["hourly"]["static_instances"]
        assert p["static"]["instance_hours"] == pytest.approx(24 * static_n * factor)
        auto_n = sum(p["hourly"]["autoscaled_instances"])
        assert p["autoscaled"]["instance_hours"] == pytest.approx(auto_n * factor)
        for k in ("static", "autoscaled", "batch"):
            assert p[k]["cost_usd"] == pytest.approx(p[k]["instance_hours"] * row["price_usd_per_h"])


def test_the_report_says_the_days_figures_are_at_the_facility_scope(tmp_path, capsys, profiled):
    """The day's energy and CO2 are facility-scope (``energy_kwh``, ``co2_kg``) whatever the headline's
    scope; under ``headline_scope: it`` the report's table and the terminal said only 'kWh'."""
    profiled["headline_scope"] = "it"
    profiled["pricing"] = {"model": "spot", "spot_discount_pct": 60}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(profiled, sort_keys=False))
    assert main(["run", str(f), "--results", str(tmp_path / "res")]) == 0
    out = capsys.readouterr().out
    assert "energy and CO2 at the facility scope" in out
    html = next((tmp_path / "res").glob("*/*/report.html")).read_text()
    section = html[html.index("Load profile: a day of load"):html.index("Region: the same energy")]
    assert "facility scope (IT × PUE 1.135), whatever the headline's scope" in section
    assert "energy (kWh, facility)" in section and "CO2 (kg, facility + embodied)" in section
    assert "headroom for reclaimed capacity" in section and "cost (USD at " in section
    assert "annual-average grid intensity (no time of day)" in section


def test_each_hours_figures_are_in_the_plan_and_sum_to_the_day(profiled):
    """results.json's hourly plan carries each hour's instance-hours, energy, cost and CO2 for the static
    and autoscaled fleets (it had only rates and instances: the day's totals could not be checked).
    Each hour's cost is its instances at the price; its CO2 its energy on the grid plus the embodied
    share of its instance-hours; the hours add up to the day."""
    profiled["workload"]["inference"]["profile"] = {"multipliers": PEAKY, "autoscale": {"min_instances": 0}}
    for row in _rows(profiled).values():
        p, h = row["profile"], row["profile"]["hourly"]
        embodied_per_h = row["co2_embodied_kg"] / row["instance_hours"]
        for s, n in (("static", [h["static_instances"]] * 24), ("autoscaled", h["autoscaled_instances"])):
            for k in ("instance_hours", "energy_kwh", "cost_usd", "co2_kg"):
                assert len(h[f"{s}_{k}"]) == 24
                assert sum(h[f"{s}_{k}"]) == pytest.approx(p[s][k], rel=1e-12)
            assert h[f"{s}_instance_hours"] == pytest.approx(n)
            assert h[f"{s}_cost_usd"] == pytest.approx([x * row["price_usd_per_h"] for x in n])
            assert h[f"{s}_co2_kg"] == pytest.approx(
                [e * row["grid_g_per_kwh"] / 1000 + x * embodied_per_h
                 for e, x in zip(h[f"{s}_energy_kwh"], n, strict=True)])
        # the busiest hour of a static fleet sized for it draws what the row's own plan draws
        assert max(h["static_energy_kwh"]) == pytest.approx(row["energy_kwh"] / row["duration_h"])


def test_a_sweeps_shown_rows_carry_their_day_in_the_table_as_in_the_json():
    """A sweep's shown rows are evaluated again with their day of load (results.json had it), but
    results.csv's profile_* columns stayed empty for every swept row."""
    from ecobench.planning.evaluate import evaluate_all

    d = yaml.safe_load((SCENARIOS / "layoutlm_sweep.yaml").read_text())
    d["uncertainty"] = {"draws": 0}
    d["sweep"] = {"instance_type": ["inf1.2xlarge", "inf2.xlarge"], "region": ["us-east-1", "eu-north-1"],
                  "precision": ["bf16"]}
    d["workload"]["inference"]["profile"] = {"multipliers": PEAKY}
    ev = evaluate_all(scenario_from_dict(d))
    table = {k: ev.table[k] for k in ("config_id", "profile_static_cost_usd", "profile_autoscaled_co2_kg")}
    by_id = {c: i for i, c in enumerate(table["config_id"])}
    assert len(ev.rows) == len(by_id) == 5  # the baseline and 4 combinations, all shown
    for r in ev.rows:
        i = by_id[r["config_id"]]
        assert table["profile_static_cost_usd"][i] == pytest.approx(r["profile"]["static"]["cost_usd"])
        assert table["profile_autoscaled_co2_kg"][i] == pytest.approx(r["profile"]["autoscaled"]["co2_kg"])


def test_a_floor_above_the_static_fleet_is_said_to_add_not_avoid(tmp_path, capsys, profiled):
    """min_instances above the busiest hour's need: the terminal said 'autoscaling avoids -900% of the
    static instance-hours' and the report 'idle capacity avoided: -432 instance-hours'."""
    profiled["workload"]["inference"]["profile"] = {"multipliers": PEAKY, "autoscale": {"min_instances": 500}}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(profiled, sort_keys=False))
    assert main(["run", str(f), "--results", str(tmp_path / "res")]) == 0
    out = capsys.readouterr().out
    assert "avoids -" not in out and "to the static instance-hours: its floor of 500 instances" in out
    html = next((tmp_path / "res").glob("*/*/report.html")).read_text()
    assert "avoided: -" not in html and "the floor of 500 instances is above the static fleet" in html



def test_a_day_of_a_row_that_misses_its_latency_target_says_so(tmp_path, capsys, profiled):
    """A 5 ms p99 target no GPU load meets: the row said 'MISSED latency p99' but its day of load was
    printed and tabled beside the others with no word of it."""
    profiled["workload"]["inference"]["latency_ms_p99"] = 5
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(profiled, sort_keys=False))
    assert main(["run", str(f), "--results", str(tmp_path / "res")]) == 0
    out = capsys.readouterr().out
    day = out[out.index("A day of the load profile"):].split("\n\n")[0]
    lines = {ln.split(":")[0].strip(): ln for ln in day.splitlines()[1:]}
    assert "at the workload's rate it MISSED latency p99" in lines["b"], day
    html = next((tmp_path / "res").glob("*/*/report.html")).read_text()
    section = html[html.index("Load profile: a day of load"):html.index("Region: the same energy")]
    assert '<th>b<br><span class="bad flag">MISSES latency p99</span></th>' in section


def test_a_sweep_combination_whose_peak_is_over_the_bound_has_no_day_and_the_run_goes_on(tmp_path):
    """The busiest hour's bound refused a whole sweep (exit 2) for one shown combination, where a
    combination over the instances bound is skipped and counted, not refused."""
    from ecobench.planning.evaluate import evaluate_all

    d = yaml.safe_load((SCENARIOS / "layoutlm_sweep.yaml").read_text())
    d["uncertainty"] = {"draws": 0}
    d["configs"] = [{"id": "base", "instance_type": "inf2.xlarge", "precision": "bf16"}]
    d["sweep"] = {"instance_type": ["inf1.2xlarge", "g4dn.xlarge"], "region": ["us-east-1"],
                  "precision": ["fp16"]}
    d["workload"]["inference"]["rate_per_h"] = 2e7
    d["workload"]["inference"]["profile"] = {"multipliers": [0.2] * 23 + [1000.0]}  # g4dn: 123,005 at peak
    ev = evaluate_all(scenario_from_dict(d))
    rows = {r["config_id"]: r for r in ev.rows}
    assert rows["g4dn.xlarge_fp16_us-east-1"]["profile"] is None
    assert math.isnan(rows["g4dn.xlarge_fp16_us-east-1"]["profile_static_cost_usd"])
    assert rows["inf1.2xlarge_fp16_us-east-1"]["profile"]["hourly"]["static_instances"] <= 100_000
    cost = dict(zip(ev.table["config_id"], ev.table["profile_static_cost_usd"], strict=True))
    assert math.isnan(cost["g4dn.xlarge_fp16_us-east-1"]) and cost["inf1.2xlarge_fp16_us-east-1"] > 0
