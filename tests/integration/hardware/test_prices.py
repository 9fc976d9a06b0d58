import pytest

from ecobench.errors import InputError
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.prices import on_demand_price, priced_regions, regional_prices
from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict

CAT = load_catalog()


def test_snapshot_is_dated_and_the_catalog_price_comes_first():
    snap = regional_prices()
    assert snap.as_of == "2026-01-21" and "instances.vantage.sh" in snap.source
    price, source = on_demand_price(CAT.instance("inf2.xlarge"), "eu-north-1")
    assert price == 0.83402 and "tsaol/aws-gpu" in source
    price, source = on_demand_price(CAT.instance("inf1.2xlarge"), "us-east-1")
    assert price == 0.362 and "vantage.sh" in source and "aws-gpu" not in source  # instances.yaml
    assert set(snap.prices_usd_per_h) <= set(CAT.instances)
    assert all(set(p) <= set(CAT.regions) for p in snap.prices_usd_per_h.values())


def test_a_region_move_needs_no_hand_typed_price_and_a_gap_says_where_prices_exist(scenario_dict):
    data = scenario_dict | {"region": "eu-west-1"}
    df = evaluate(scenario_from_dict(data)).set_index("config_id")
    assert df.loc["a", "price_usd_per_h"] == on_demand_price(CAT.instance("inf1.xlarge"), "eu-west-1")[0]
    assert "aws-gpu" in df.loc["a", "price_source"]
    gap = scenario_dict | {"configs": [{"id": "t", "instance_type": "trn1.32xlarge", "precision": "bf16"},
                                       scenario_dict["configs"][1]], "region": "ap-east-2", "baseline": "b"}
    where = ", ".join(priced_regions(CAT.instance("trn1.32xlarge")))
    with pytest.raises(InputError, match=f"priced regions: {where}"):
        evaluate(scenario_from_dict(gap))


def test_trn2_has_its_dated_capacity_blocks_rate_in_us_east_2_only():
    inst = CAT.instance("trn2.48xlarge")
    block = inst.price_usd_per_h
    assert block.regions == {"us-east-2": 35.7608} and block.as_of == "2026-07-22"
    assert "capacityblocks" in block.source and block.note and "Capacity Blocks" in block.note
    assert on_demand_price(inst, "us-east-2") == (35.7608, f"{block.source} ({block.as_of})")
    assert priced_regions(inst) == ["us-east-2"]


def test_an_instance_priced_nowhere_runs_with_its_cost_empty_and_a_warning(scenario_dict, monkeypatch):
    import math

    from ecobench.planning import configs
    from ecobench.planning.evaluate import row_warnings

    # No catalog instance lacks a price today (trn2.48xlarge was the last): stand one in.
    monkeypatch.setattr(configs, "on_demand_price", lambda inst, region: None)
    monkeypatch.setattr(configs, "priced_regions", lambda inst: [])
    df = evaluate(scenario_from_dict(scenario_dict))
    assert df["cost_usd"].isna().all()
    warns = row_warnings(df.to_dict("records"))
    assert any("no sourced inf1.xlarge price in any region" in w for w in warns)
    assert not math.isnan(df.set_index("config_id").loc["a", "energy_kwh"])


def test_the_local_host_without_a_price_is_not_free(scenario_dict):
    """It was priced at 0 and so ranked first on cost (and led the cost recommendation): its cost is
    empty, as any unpriced row's, until price_usd_per_h is set."""
    import math

    from ecobench.hardware.catalog import local_instance
    from ecobench.planning.configs import _price
    from ecobench.planning.evaluate import row_warnings

    s = scenario_from_dict(scenario_dict)
    host = s.configs[0].model_copy(update={"instance_type": "local", "price_usd_per_h": None})
    price, source = _price(s, host, local_instance(s.region, None), s.region)
    assert math.isnan(price) and "set price_usd_per_h" in source
    given = host.model_copy(update={"price_usd_per_h": 0.5})
    assert _price(s, given, local_instance(s.region, 0.5), s.region) == (0.5, "scenario price_usd_per_h")
    row = {"config_id": "host", "instance_type": "local", "price_usd_per_h": price}
    assert row_warnings([row]) == ["host: no price for the local host: cost columns are empty (set "
                                   "price_usd_per_h)"]
