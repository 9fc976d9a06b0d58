import pytest

from ecobench.hardware.catalog import load_catalog
from ecobench.power import embodied_kg, grid_intensity

CAT = load_catalog()


def test_grid_intensity_read_from_the_pinned_table():
    va = grid_intensity(CAT, "us-east-1", {})
    assert va.g_per_kwh == 244.8 and "eGRID2023" in va.source and "virginia" in va.source
    assert va.year == 2023 and va.low == 244.8 and va.high > 369  # up to the US averages
    qc = grid_intensity(CAT, "ca-central-1", {})  # Quebec's hydro mix, not Canada's average
    assert 25 < qc.g_per_kwh < 40 and "quebec" in qc.source
    assert grid_intensity(CAT, "eu-north-1", {}).g_per_kwh == 27.0  # Nordic zone SE3
    over = grid_intensity(CAT, "us-east-1", {"us-east-1": 379.1})
    assert over.g_per_kwh == 379.1 and not over.uncertain


def test_embodied_amortised_by_share_and_lifespan():
    inst = CAT.instance("inf1.2xlarge")  # 8 of 96 vCPUs of a 3,100 kg server over 4 years
    assert embodied_kg(inst, 8766 * 4) == pytest.approx(3100 * 8 / 96)
