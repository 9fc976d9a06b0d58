import json

import pytest
import yaml

from ecobench.cli import main
from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict


def test_every_row_has_three_scopes_that_nest(scenario_dict):
    df = evaluate(scenario_from_dict(scenario_dict))
    assert (df["energy_accelerator_kwh"] < df["energy_it_kwh"]).all()
    assert (df["energy_it_kwh"] < df["energy_kwh"]).all()
    assert df["energy_kwh"].tolist() == pytest.approx((df["energy_it_kwh"] * 1.135).tolist())
    emb = df["co2_embodied_kg"]
    assert (df["co2_it_kg"] - emb).tolist() == pytest.approx((df["co2_kg"] - emb).div(1.135).tolist())
    assert set(df["headline_scope"]) == {"facility"}


def test_headline_scope_leads_the_summary(tmp_path, scenario_dict, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario_dict | {"headline_scope": "accelerator"}))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "headline: accelerator scope: accelerators only" in out
    assert "energy kWh" in out and "energy Δ%" in out  # the headline scope's columns, short headers
    assert "90% bands" in out
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    from ecobench.reports.summary import number

    assert number(doc["rows"][0]["energy_accelerator_kwh"]) in out.split("90% bands")[0]
    assert doc["rows"][0]["energy_accelerator_kwh_low"] <= doc["rows"][0]["energy_accelerator_kwh_high"]
    assert doc["grid_data_version"] and doc["uncertainty"]["draws"] == 1000
    assert "accelerator scope" in (tmp_path / "run" / "report.html").read_text()


@pytest.mark.parametrize("change,message", [
    ({"headline_scope": "rack"},
     "headline_scope: 'rack' is not allowed; allowed: 'accelerator', 'it' or 'facility'"),
    ({"configs": [{"id": "a", "instance_type": "inf1.xlarge", "measured_power_w": 40}]},
     "configs[0]: measured_power_w needs measured_power_scope: accelerator or instance"),
    ({"configs": [{"id": "a", "instance_type": "inf1.xlarge", "measured_power_scope": "instance"}]},
     "measured_power_scope is set but measured_power_w is not"),
    ({"configs": [{"id": "a", "instance_type": "inf1.xlarge", "measured_power_w": -1,
                   "measured_power_scope": "instance"}]},
     "configs[0].measured_power_w: -1 is out of range; allowed: a number from 0.1 to 100,000"),
    ({"configs": [{"id": "a", "instance_type": "inf1.xlarge", "measured_power_w": ".inf",
                   "measured_power_scope": "instance"}]},
     "configs[0].measured_power_w: inf is not a finite number; allowed: a number from 0.1 to 100,000"),
    ({"configs": [{"id": "a", "instance_type": "inf1.xlarge", "measured_power_w": 40,
                   "measured_power_scope": "rack"}]},
     "configs[0].measured_power_scope: 'rack' is not allowed; allowed:"),
    ({"uncertainty": {"draws": -5}},
     "uncertainty.draws: -5 is out of range; allowed: an integer from 0 to 100,000"),
    # one draw gave a "90% band (5th to 95th percentile of 1 draws)": the central value and that draw
    ({"uncertainty": {"draws": 1}},
     "uncertainty: draws 1 cannot give a 90% band (its ends are the 5th and 95th percentiles of the draws); "
     "allowed: 0 (no bands) or 20 to 100,000"),
    # a draw in kW (or a thousand times too much) was taken as watts: energy off by 1000x, silently
    ({"configs": [{"id": "a", "instance_type": "p5.48xlarge", "measured_power_w": 5.6,
                   "measured_power_scope": "accelerator"}]},
     "configs[0].measured_power_w: 5.6 W is outside 285-11,200 W, half the idle to twice the maximum draw "
     "of the 8 NVIDIA H100 80GB SXM of p5.48xlarge together; allowed: watts"),
    ({"configs": [{"id": "a", "instance_type": "p5.48xlarge", "measured_power_w": 56000,
                   "measured_power_scope": "accelerator"}]}, "56000 W is outside 285-11,200 W"),
    ({"configs": [{"id": "a", "instance_type": "p5.48xlarge", "measured_power_w": 8.4,
                   "measured_power_scope": "instance"}]},
     "configs[0].measured_power_w: 8.4 W is below 285 W, half the idle draw of the 8 NVIDIA H100 80GB SXM"),
])
def test_bad_power_input_exits_2_naming_file_field_and_what_is_allowed(tmp_path, scenario_dict, capsys,
                                                                         change, message):
    data = scenario_dict | change
    if "configs" in change:
        data["baseline"] = "a"
    text = yaml.safe_dump(data).replace("'.inf'", ".inf")
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and message in err and "Traceback" not in err


def test_supplied_accelerator_power_replaces_the_modelled_chip(scenario_dict):
    supplied = {"measured_power_w": 33.0, "measured_power_scope": "accelerator"}
    data = scenario_dict | {"configs": [scenario_dict["configs"][0] | supplied, scenario_dict["configs"][1]]}
    df = evaluate(scenario_from_dict(data)).set_index("config_id")
    assert df.loc["a", "power_accelerator_w"] == 33.0
    assert df.loc["a", "energy_accelerator_kwh"] == pytest.approx(33.0 * df.loc["a", "instances"] / 1000)
