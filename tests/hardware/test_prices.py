import pytest

from ecobench.errors import InputError
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.prices import on_demand_price, priced_regions, regional_prices
from ecobench.planning.evaluate import evaluate
from ecobench.scenario.model import scenario_from_dict

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
