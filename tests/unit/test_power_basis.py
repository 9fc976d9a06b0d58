"""power_basis: resolution (configuration over scenario, the measured default) and the tdp arithmetic."""

import numpy as np
import pytest

from ecobench.errors import InputError
from ecobench.hardware.catalog import load_catalog
from ecobench.power.basis import resolve_basis, tdp_w
from ecobench.power.draw import Activity, DrawParams, draw_w
from ecobench.power.setup import power_setup

CAT = load_catalog()


@pytest.mark.parametrize(("scenario", "scenario_set", "config", "measured", "want"), [
    ("modelled", False, None, None, "modelled"),  # the default
    ("modelled", False, None, 250.0, "measured"),  # a supplied power replays, as before the field
    ("tdp", True, None, None, "tdp"),  # scenario-wide
    ("tdp", True, "modelled", None, "modelled"),  # the configuration overrides
    ("modelled", True, None, 250.0, "modelled"),  # explicit: the model beside the supplied figure
    ("modelled", False, "measured", 250.0, "measured"),
    ("tdp", True, "measured", 250.0, "measured"),
])
def test_the_basis_is_the_configurations_then_the_scenarios(scenario, scenario_set, config, measured, want):
    assert resolve_basis(scenario, scenario_set, config, measured) == want


@pytest.mark.parametrize(("scenario", "scenario_set", "config"), [("measured", True, None),
                                                                 ("modelled", False, "measured")])
def test_measured_without_a_measured_power_is_refused(scenario, scenario_set, config):
    with pytest.raises(InputError) as e:
        resolve_basis(scenario, scenario_set, config, None)
    assert e.value.config_field == "power_basis"
    assert "measured_power_w" in str(e.value) and "allowed: modelled, tdp" in str(e.value)


def test_tdp_is_the_datasheet_figure_or_the_stated_one_and_never_an_evidence_range():
    a100 = CAT.accelerators["a100-40gb"]
    assert tdp_w("a100-40gb", a100, None) == 400.0  # the datasheet's, not CCF's 407 W maximum
    assert tdp_w("trainium", CAT.accelerators["trainium"], 250.0) == 250.0  # stated by the scenario
    for chip in ("trainium", "trainium2", "inferentia", "inferentia2", "a10g"):
        with pytest.raises(InputError) as e:
            tdp_w(chip, CAT.accelerators[chip], None)
        assert e.value.config_field == "power_basis"
        assert chip in str(e.value) and "allowed: modelled" in str(e.value)
    with pytest.raises(InputError, match="no accelerator"):
        tdp_w(None, None, None)


def test_tdp_draw_is_devices_times_tdp_times_pue_with_no_host():
    setup = power_setup(CAT, CAT.instance("p4d.24xlarge"), None, None, None, None, "tdp")
    p = DrawParams(0.9, 0.6, 0.1, 0.8, 1.0, 0.4, np.array([1.1, 1.2]))
    for busy, act in ((1.0, Activity(1.0, 0.0, 0.0)), (0.3, Activity(0.2, 0.3, 0.5))):  # work does not matter
        w = draw_w(setup.spec(act, 1e9), p, busy=busy)
        assert np.allclose(w["accelerator"], 8 * 400.0) and np.allclose(w["it"], 8 * 400.0)
        assert np.allclose(w["total"], 8 * 400.0 * np.array([1.1, 1.2]))
        for k in ("cpu", "memory", "network"):
            assert np.allclose(w[k], 0.0)
    # a supplied power is not what tdp counts
    assert power_setup(CAT, CAT.instance("p4d.24xlarge"), None, None, 3000.0, "accelerator",
                       "tdp").measured_power_w is None
    # explicit modelled beside a supplied power: the model's draw
    assert power_setup(CAT, CAT.instance("p4d.24xlarge"), None, None, 3000.0, "accelerator",
                       "modelled").measured_power_w is None
