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


@pytest.mark.parametrize("scope", ["accelerator", "it", "facility"])
def test_a_services_co2_per_token_is_at_the_headline_scope(tmp_path, capsys, scope):
    """The serving summary's gCO2/Mtok was the facility's whatever headline_scope said, beside a CO2 Δ%
    and a J/tok at the headline scope: under headline_scope accelerator a row read 30.1 g/Mtok against the
    baseline's 118 (-74.6%) and 'CO2 Δ% -61.8'. Each scope has its CO2 per million output tokens (embodied
    included, as the scope's CO2), and the summary leads with the headline's."""
    from ecobench.power.scopes import co2_column, co2_token_column, token_column
    from ecobench.reports.summary import number

    from ...conftest import SCENARIOS

    s = yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text())
    s["configs"] = [c for c in s["configs"] if c["id"] in ("g6e", "p5")]
    s |= {"headline_scope": scope, "pue": 1.2, "uncertainty": {"draws": 100}}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(s))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    rows = {r["config_id"]: r for r in json.loads((tmp_path / "run" / "results.json").read_text())["rows"]}
    col = co2_token_column(scope)
    for r in rows.values():
        assert r[col] == pytest.approx(r[co2_column(scope)] * 1e3 / r["output_tokens"] * 1e6, rel=1e-9)
        assert r[f"{col}_low"] <= r[col] <= r[f"{col}_high"]
        assert r["co2_accelerator_g_per_million_output_tokens"] < r["co2_it_g_per_million_output_tokens"] \
            < r["co2_g_per_million_output_tokens"]
        assert r[token_column(scope)] * 1e6 / 3.6e6 * r["grid_g_per_kwh"] <= r[col]  # operational only
    g6e, p5 = rows["g6e"], rows["p5"]
    change = "co2_change_pct" if scope == "facility" else f"co2_{scope}_change_pct"
    assert (g6e[col] / p5[col] - 1) * 100 == pytest.approx(g6e[change], rel=1e-9)
    table = out.split("90% bands")[0]
    assert f" {number(g6e[col])} " in table and f" {number(g6e[change])} " in table
    bands = out.split("90% bands")[1].split("\n\n")[0]
    assert f"{number(g6e[f'{col}_low'])} to {number(g6e[f'{col}_high'])}" in bands


@pytest.mark.parametrize("scope,header", [("accelerator", "facility W"), ("it", "facility W"),
                                          ("facility", "power W")])
def test_the_summarys_power_column_says_its_scope(tmp_path, scenario_dict, capsys, scope, header):
    """The summary's 'power W' is power_w, the facility's draw (IT x PUE), beside energy kWh at the
    headline scope: under headline_scope accelerator a row read 'energy kWh' of the accelerators and
    'power W' of the facility under one 'headline: accelerator scope' line, so power x time was not the
    energy shown. Under another scope it is headed as the facility's."""
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario_dict | {"headline_scope": scope, "uncertainty": {"draws": 50}}))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "run")]) == 0
    table, bands = capsys.readouterr().out.split("90% bands")
    assert f" {header} " in table.splitlines()[3] + " "
    assert (" power W" in table) == (scope == "facility") and (" power W" not in bands or scope == "facility")
