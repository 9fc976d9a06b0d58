import importlib.util
import subprocess
import sys
from importlib.metadata import version

import pytest

from ecobench.hardware.catalog import load_catalog
from ecobench.power.grid import grid_table, grid_warnings

# The "aws" partition of botocore 1.44.5's endpoints.json: every commercial region.
COMMERCIAL = {"af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2",
              "ap-northeast-3", "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2",
              "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6", "ap-southeast-7",
              "ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1",
              "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1",
              "me-south-1", "mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1",
              "us-west-2"}


def test_every_commercial_region_has_a_dated_sourced_row():
    table = grid_table()
    assert set(load_catalog().regions) == COMMERCIAL == set(table.rows)
    assert table.version.startswith("20") and "codecarbon" in table.version
    for r in table.rows.values():
        assert r.g_per_kwh_low <= r.g_per_kwh <= r.g_per_kwh_high, r.region
        assert r.source and r.range_from and 2019 <= r.year <= 2026


def test_sub_national_rows_where_codecarbon_has_them():
    rows = grid_table().rows
    assert rows["ca-central-1"].basis == "province" and rows["ca-central-1"].g_per_kwh < 40  # Quebec hydro
    assert rows["ca-west-1"].location == "alberta" and rows["ca-west-1"].g_per_kwh > 400
    assert rows["eu-north-1"].location == "SE3" and rows["us-east-1"].location == "virginia"


@pytest.mark.skipif(importlib.util.find_spec("codecarbon") is None, reason="codecarbon not installed")
def test_table_equals_a_rebuild_from_the_codecarbon_it_was_built_from():
    from tools.grid_build import Sources, codecarbon_dir, rows

    if f"codecarbon {version('codecarbon')}" not in grid_table().version:
        pytest.skip("another codecarbon release is installed: the pinned table does not follow it")
    fresh = {r["region"]: r for r in rows(Sources(codecarbon_dir()))}
    for region, r in grid_table().rows.items():
        assert (fresh[region]["g_per_kwh"], fresh[region]["year"], fresh[region]["source"]) == \
            (r.g_per_kwh, r.year, r.source), region


def test_an_analytic_run_needs_no_codecarbon():
    code = ("import sys; from ecobench.planning.evaluate import evaluate; "
            "from ecobench.scenario.load import load_scenario; "
            "evaluate(load_scenario('scenarios/layoutlm_inf2_upgrade.yaml')); "
            "print('codecarbon' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_check_warns_when_grid_data_differ():
    base = {"grid_data_version": "2026-11-22; codecarbon 3.3.2",
            "rows": [{"config_id": "a", "grid_source": "eGRID [virginia, 2023]", "grid_year": 2023}]}
    assert grid_warnings(base, base) == []
    cur = {"grid_data_version": "2027-02-01; codecarbon 3.4.0",
           "rows": [{"config_id": "a", "grid_source": "eGRID [virginia, 2024]", "grid_year": 2024}]}
    warn = grid_warnings(cur, base)
    assert any("grid data differs" in w for w in warn) and any("grid_year" in w for w in warn)
    assert "not recorded" in grid_warnings(cur, {"rows": []})[0]
