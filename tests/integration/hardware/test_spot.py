import math

import pytest

from ecobench.errors import InputError
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.prices import on_demand_price
from ecobench.hardware.spot import spot_price, spot_regions, spot_snapshot
from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict

CAT = load_catalog()
# Regions where the snapshot's zones all showed the on-demand price (capacity short there): spot is
# not below on-demand. Reported, not hidden; inf2.8xlarge's spot rounds 0.00001 above on-demand.
AT_ON_DEMAND = {("inf1.24xlarge", "me-south-1"), ("inf1.6xlarge", "me-south-1"),
                ("inf2.8xlarge", "ap-northeast-1"), ("inf2.8xlarge", "eu-central-1")}


def test_snapshot_loads_with_its_source_date_and_only_catalog_names():
    snap = spot_snapshot()
    assert "skypilot-catalog" in snap.source and "00148f2a" in snap.source and "2026-11-22" in snap.as_of
    assert set(snap.spot_usd_per_h) == set(snap.instance_types) and "inf2.xlarge" in snap.instance_types
    assert set(snap.spot_usd_per_h) <= set(CAT.instances)
    assert all(set(r) <= set(CAT.regions) for r in snap.spot_usd_per_h.values())
    assert spot_price("inf2.xlarge", "us-east-1") == pytest.approx((0.1318 + 0.1614) / 2)  # 4 zones' median


def test_spot_is_below_on_demand_except_where_every_zone_showed_on_demand():
    at_or_above = set()
    for name, regions in spot_snapshot().spot_usd_per_h.items():
        for region, spot in regions.items():
            od = on_demand_price(CAT.instance(name), region)
            assert od is not None, (name, region)
            assert spot <= od[0] * (1 + 1e-4), (name, region, spot, od[0])
            if spot >= od[0]:
                at_or_above.add((name, region))
    assert at_or_above == AT_ON_DEMAND


def _spot(scenario_dict, **pricing):
    return scenario_dict | {"region": "us-east-1", "pricing": {"model": "spot", **pricing}}


def test_the_snapshot_price_is_used_without_a_discount_and_a_given_discount_wins(scenario_dict):
    df = evaluate(scenario_from_dict(_spot(scenario_dict) | {"configs": [
        {"id": "a", "instance_type": "inf1.xlarge", "precision": "bf16"},
        {"id": "b", "instance_type": "inf1.xlarge", "precision": "bf16", "pricing": "on_demand"}]})) \
        .set_index("config_id")
    # the median of us-east-1's 5 zones
    assert df.loc["a", "price_usd_per_h"] == spot_price("inf1.xlarge", "us-east-1") == 0.0624
    assert df.loc["a", "price_source"].startswith("spot snapshot https://github.com/skypilot-org")
    assert df.loc["b", "price_usd_per_h"] == 0.228 and df.loc["b", "spot_overhead_pct"] == 0
    given = evaluate(scenario_from_dict(_spot(scenario_dict, spot_discount_pct=50))).set_index("config_id")
    assert given.loc["a", "price_usd_per_h"] == pytest.approx(0.228 * 0.5)
    assert "50% off" in given.loc["a", "price_source"]


def test_a_fleet_keeps_the_interrupted_share_as_headroom(scenario_dict):
    df = evaluate(scenario_from_dict(_spot(scenario_dict, spot_interruption_pct_per_month=10) | {"configs": [
        {"id": "a", "instance_type": "inf1.xlarge", "precision": "bf16"},
        {"id": "b", "instance_type": "inf1.xlarge", "precision": "bf16", "pricing": "on_demand"}]})) \
        .set_index("config_id")
    a, b = df.loc["a"], df.loc["b"]
    assert a["spot_interruption_pct_per_month"] == 10 and a["spot_overhead_pct"] == pytest.approx(10)
    assert math.isnan(b["spot_interruption_pct_per_month"])
    assert a["instance_hours"] == pytest.approx(1.1 * b["instance_hours"])
    assert a["energy_kwh"] == pytest.approx(1.1 * b["energy_kwh"])
    assert a["cost_usd"] == pytest.approx(a["instance_hours"] * 0.0624)
    assert a["energy_kwh_low"] == pytest.approx(1.1 * b["energy_kwh_low"])  # the bands carry it too


def _training(interval_h: float) -> dict:
    return {"schema_version": 2, "name": "t", "region": "us-east-1",
            "workload": {"model": "bert-base", "training": {
                "total_sequences": 1e8, "batch_size": 16, "global_batch_size": 1024,
                "phases": [{"seq_len": 128, "fraction": 1}]}},
            "configs": [{"id": "spot", "instance_type": "inf2.xlarge", "precision": "bf16", "instances": 8,
                         "pricing": "spot"},
                        {"id": "od", "instance_type": "inf2.xlarge", "precision": "bf16", "instances": 8}],
            "baseline": "od", "pricing": {"checkpoint_interval_h": interval_h, "restart_h": 0.5},
            "uncertainty": {"draws": 0}}


def test_training_overhead_grows_with_the_checkpoint_interval():
    rows = {h: evaluate(scenario_from_dict(_training(h))).set_index("config_id") for h in (0.5, 4.0)}
    rate = 5 / 100 / (8766 / 12)  # the default 5% a month, per instance-hour
    for h, df in rows.items():
        lam = 8 * rate  # the cluster's interruptions an hour; the renewal result per interval h of work
        renewal = (1 / lam + 0.5) * math.expm1(lam * h) / h - 1
        assert df.loc["spot", "spot_overhead_pct"] == pytest.approx(100 * renewal)
        assert df.loc["spot", "spot_overhead_pct"] == pytest.approx(100 * lam * (h / 2 + 0.5), rel=2e-3)
        assert df.loc["spot", "duration_h"] == pytest.approx(
            df.loc["od", "duration_h"] * (1 + df.loc["spot", "spot_overhead_pct"] / 100))
    assert rows[4.0].loc["spot", "spot_overhead_pct"] > rows[0.5].loc["spot", "spot_overhead_pct"]
    assert rows[4.0].loc["spot", "energy_kwh"] > rows[0.5].loc["spot", "energy_kwh"]
    assert rows[0.5].loc["od", "spot_overhead_pct"] == 0


def test_a_spot_run_interrupted_past_any_checkpoint_exits_2(tmp_path, capsys):
    """8 instances at 100% a month with a checkpoint every 1,000 h: the cluster is interrupted 11 times
    in an interval, so the run never ends in practice (its first-order overhead said 1.5 times)."""
    import yaml

    from ecobench.cli import main

    d = _training(1000.0)
    d["pricing"]["spot_interruption_pct_per_month"] = 100
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(d))
    assert main(["run", str(tmp_path / "s.yaml"), "-q", "--results", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert "configs[spot]: on spot, 8 instances interrupted at 100% a month with a checkpoint every " \
           "1000 h would train" in err and "(allowed: at most 101 times)" in err, err
    assert "pricing.checkpoint_interval_h" in err and "Traceback" not in err


def test_an_unpriced_region_says_where_spot_prices_exist(scenario_dict):
    with pytest.raises(InputError, match="no spot price for inf1.xlarge in ap-east-2") as exc:
        evaluate(scenario_from_dict(_spot(scenario_dict) | {"region": "ap-east-2"}))
    assert ", ".join(spot_regions("inf1.xlarge")) in str(exc.value)
    with pytest.raises(InputError, match=r"p5.48xlarge in us-east-1 \(regions with one: none\)"):
        evaluate(scenario_from_dict(_spot(scenario_dict) | {"configs": [
            {"id": "b", "instance_type": "p5.48xlarge", "precision": "bf16"}]}))


def test_a_configuration_can_be_spot_in_an_on_demand_scenario(scenario_dict):
    data = scenario_dict | {"region": "us-east-1", "configs": [
        {"id": "a", "instance_type": "inf1.xlarge", "precision": "bf16", "pricing": "spot"},
        scenario_dict["configs"][1]]}
    df = evaluate(scenario_from_dict(data)).set_index("config_id")
    assert df.loc["a", "price_usd_per_h"] == 0.0624 and df.loc["a", "spot_overhead_pct"] == 5
    assert df.loc["b", "price_usd_per_h"] == on_demand_price(CAT.instance("g4dn.xlarge"), "us-east-1")[0]


def test_the_report_gives_each_rows_price_its_source_and_spot_overhead(tmp_path, capsys):
    """The report said only 'pricing: spot' for the scenario: not the price each row is costed at, where
    it comes from, nor that the on-demand baseline of layoutlm_spot is not on spot."""
    import re

    from ecobench.cli import main
    from tests.conftest import SCENARIOS

    out = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_spot.yaml"), "-q", "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    section = html[html.index("Method, provenance and sources"):]
    row = (r"<tr><td>([\w-]+) <span class=\"badge[^>]*>[^<]*</span></td>"
           r"(?:<td class=\"l\">.*?</td>){2}<td class=\"l\">(.*?)</td></tr>")
    cells = dict(re.findall(row, section))
    assert set(cells) == {"inf1-spot", "inf2-spot", "gpu-spot", "gpu"}, cells
    assert cells["gpu-spot"].startswith("0.3145 USD per instance-hour: spot snapshot ")
    assert "spot, interrupted 5% a month: +5% instance-hours" in cells["gpu-spot"]
    assert cells["gpu"].startswith("0.752 USD per instance-hour: ") and "spot" not in cells["gpu"]



def test_a_spot_runs_price_snapshot_names_the_spot_snapshot(scenario_dict):
    """results.json's price_snapshot named only the on-demand snapshot though spot rows are priced from
    spot.yaml, so `ecobench compare` could not say that two runs' spot prices came from different
    snapshots."""
    from ecobench.hardware.prices import regional_prices
    from ecobench.hardware.spot import spot_label
    from ecobench.reports.tables import records
    from ecobench.runner import results_document

    on_demand_label = f"{regional_prices().source} ({regional_prices().as_of})"
    for pricing, label in (("spot", f"{on_demand_label}; {spot_label()}"), ("on_demand", on_demand_label)):
        s = scenario_from_dict(_spot(scenario_dict) | {"uncertainty": {"draws": 0}, "configs": [
            {"id": "a", "instance_type": "inf1.xlarge", "precision": "bf16", "pricing": pricing},
            {"id": "b", "instance_type": "inf1.xlarge", "precision": "bf16", "pricing": "on_demand"}]})
        assert results_document(s, records(evaluate(s)), "run")["price_snapshot"] == label
    assert "2026-11-22" in spot_label()
