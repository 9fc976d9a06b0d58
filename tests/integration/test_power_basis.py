"""power_basis through the CLI: each basis on a row, a published footprint replayed from its
device-hours and stated draw, and the bad inputs (exit 2 naming the field and what is allowed)."""

import json

import pytest
import yaml

from ecobench.cli import main

# Llama 2 7B as its paper reports it (Touvron et al. 2023, table 2): 184,320 A100-80GB GPU-hours at
# 400 W (the power "adjusted for power usage efficiency", so PUE 1 here), 31.22 tCO2eq.
LLAMA2_7B_GPU_HOURS = 184_320.0
LLAMA2_7B_DRAW_W = 400.0
INSTANCES = 16  # p4d.24xlarge, 8 A100s each: 1,440 h
SEQUENCES = 2.0e12 / 4096


def scenario(**top):
    hours = LLAMA2_7B_GPU_HOURS / (INSTANCES * 8)
    base = {"instance_type": "p4d.24xlarge", "precision": "bf16", "instances": INSTANCES,
            "parallelism": "auto",
            "measured_throughput_per_s": SEQUENCES / (INSTANCES * hours * 3600)}
    s = {"schema_version": 2, "name": "basis", "pue": 1.0,
         "workload": {"model": "llama2-7b",
                      "training": {"total_tokens": 2.0e12, "phases": [{"seq_len": 4096, "fraction": 1.0}],
                                   "global_batch_size": 1024}},
         "configs": [base | {"id": "tdp", "power_basis": "tdp"}, base | {"id": "modelled"},
                     base | {"id": "measured", "measured_power_w": 8 * 330.0,
                             "measured_power_scope": "accelerator", "power_basis": "measured"}],
         "baseline": "modelled", "uncertainty": {"draws": 200}}
    return s | top


def run(tmp_path, s):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(s))
    out = tmp_path / "out"
    code = main(["run", str(f), "-q", "--out", str(out)])
    rows = json.loads((out / "results.json").read_text())["rows"] if code == 0 else None
    return code, rows


def test_each_basis_on_its_row_and_a_published_footprint_replayed_to_a_tenth_of_a_percent(tmp_path, capsys):
    code, rows = run(tmp_path, scenario())
    assert code == 0
    by = {r["config_id"]: r for r in rows}
    assert {k: r["power_basis"] for k, r in by.items()} == {"tdp": "tdp", "modelled": "modelled",
                                                           "measured": "measured"}
    tdp = by["tdp"]
    device_hours = tdp["instances"] * tdp["accelerator_count"] * tdp["duration_h"]
    assert device_hours == pytest.approx(LLAMA2_7B_GPU_HOURS, rel=1e-9)
    published_kwh = LLAMA2_7B_GPU_HOURS * LLAMA2_7B_DRAW_W / 1000.0  # 73,728 kWh
    assert tdp["energy_kwh"] == pytest.approx(published_kwh, rel=1e-3)
    assert tdp["energy_accelerator_kwh"] == pytest.approx(published_kwh, rel=1e-3)
    assert tdp["power_cpu_w"] == 0 and tdp["power_memory_w"] == 0 and tdp["power_network_w"] == 0
    # CO2 at the paper's grid: 31.22 t (its rounding leaves 0.2%)
    (tmp_path / "grid").mkdir()
    code, rows = run(tmp_path / "grid", scenario(overrides={"grid_g_per_kwh": {"us-east-1": 423.0}}))
    assert code == 0 and rows[0]["co2_operational_kg"] == pytest.approx(31_220.0, rel=2e-3)
    # measured: the supplied accelerator draw; modelled: the draw model (a host share too)
    assert by["measured"]["power_accelerator_w"] == pytest.approx(8 * 330.0)
    assert by["modelled"]["power_cpu_w"] > 0
    out = capsys.readouterr().out
    assert "power basis: tdp: tdp; modelled: modelled; measured: measured" in out


def test_scenario_wide_tdp_with_a_pue(tmp_path, capsys):
    s = scenario(power_basis="tdp", pue=1.1)
    s["configs"] = s["configs"][:2]
    del s["configs"][0]["power_basis"]
    code, rows = run(tmp_path, s)
    assert code == 0
    for r in rows:
        assert r["power_basis"] == "tdp"
        assert r["energy_kwh"] == pytest.approx(
            r["instances"] * 8 * r["duration_h"] * 400.0 * 1.1 / 1000.0, rel=1e-9)
        assert r["power_w_low"] <= r["power_w"] <= r["power_w_high"]
    assert "power basis: tdp (accelerator device-hours x datasheet TDP x PUE, no host share), every row" \
        in capsys.readouterr().out


def test_a_pick_on_another_basis_than_the_baseline_says_so(tmp_path):
    """tdp counts no host share: a tdp row's energy and CO2 'against the baseline' mix the convention
    with the hardware, so its recommendation says which basis each side uses (it said nothing)."""
    code, _ = run(tmp_path, scenario(pue=1.135))
    assert code == 0
    recs = json.loads((tmp_path / "out" / "results.json").read_text())["recommendations"]
    note = "(energy and CO2 on the tdp power basis, the baseline's modelled: part of the change is"
    by = {r["objective"]: r for r in recs}
    assert by["energy"]["config_id"] == "tdp" and note in by["energy"]["reason"]
    assert by["balanced"]["config_id"] != "tdp" or note in by["balanced"]["reason"]
    for r in recs:
        assert ("power basis" in r["reason"]) == (r["config_id"] != "modelled")


@pytest.mark.parametrize(("change", "expect"), [
    ({"instance_type": "trn1.32xlarge", "power_basis": "tdp"},
     ["configs[0].power_basis", "trainium", "evidence range", "allowed: modelled, tdp", "measured"]),
    ({"power_basis": "measured"},
     ["configs[0].power_basis", "measured_power_w", "allowed: modelled, tdp"]),
    ({"power_basis": "nameplate"}, ["power_basis", "modelled", "tdp", "measured"]),
])
def test_bad_bases_are_exit_2_with_the_field_and_what_is_allowed(tmp_path, capsys, change, expect):
    s = scenario()
    s["configs"] = [s["configs"][1] | change]
    s["baseline"] = s["configs"][0]["id"]
    code, _ = run(tmp_path, s)
    assert code == 2
    err = capsys.readouterr().err
    for e in expect:
        assert e in err, (e, err)


NEW_BANDS = {"serving": ("power_w", "ttft_ms_p50", "tpot_ms_p50", "energy_j_per_output_token",
                         "energy_it_j_per_output_token", "energy_accelerator_j_per_output_token"),
             "training": ("power_w", "mfu"), "inference": ("power_w",)}


@pytest.mark.parametrize("name", ["llama3_8b_chat", "llama2_7b_pretrain", "layoutlm_realtime"])
def test_the_new_bands_contain_their_central_value(name):
    import ecobench

    from ..conftest import SCENARIOS

    s = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    mode = next(m for m in NEW_BANDS if m in s["workload"])
    s["uncertainty"] = {"draws": 300, "seed": 1}
    for r in ecobench.run(s).rows:
        for k in NEW_BANDS[mode]:
            lo, mid, hi = r[f"{k}_low"], r[k], r[f"{k}_high"]
            assert lo <= mid <= hi, (name, r["config_id"], k, lo, mid, hi)
            assert lo < hi or k == "mfu", (name, r["config_id"], k)  # something moves each of them
    # per token at every scope: accelerator <= IT <= facility
    if mode == "serving":
        for r in ecobench.run(s).rows:
            assert r["energy_accelerator_j_per_output_token"] < r["energy_it_j_per_output_token"] \
                < r["energy_j_per_output_token"]


@pytest.mark.parametrize(("basis", "instance", "expect"), [
    ("measured", "p4d.24xlarge", "power_basis measured needs measured_power_w"),
    ("tdp", "trn1.32xlarge", "power_basis tdp needs a datasheet TDP and trainium has none"),
])
def test_a_scenario_wide_basis_a_configuration_cannot_use_names_the_scenario_not_the_configs_field(
        tmp_path, capsys, basis, instance, expect):
    """The error named ``configs[0].power_basis``, a field the user had not written."""
    s = scenario(power_basis=basis)
    s["configs"] = [s["configs"][1] | {"instance_type": instance}]
    s["baseline"] = s["configs"][0]["id"]
    code, _ = run(tmp_path, s)
    assert code == 2
    err = capsys.readouterr().err
    assert f": configs[0]: the scenario's power_basis {basis} applies here (this configuration sets none): " \
        f"{expect}" in err, err
    assert "configs[0].power_basis" not in err and err.rstrip().endswith("or give this configuration its own "
                                                                          "power_basis")


def test_the_tdp_refusal_names_an_override_that_runs_as_written(tmp_path, capsys):
    """It said 'state the draw to count as overrides.accelerator_power_w.trainium.max_w'; a max_w alone
    is refused (idle_w: missing), so the advice taken as written failed."""
    s = scenario(power_basis="tdp")
    s["configs"] = [s["configs"][1] | {"instance_type": "trn1.32xlarge"}]
    s["baseline"] = s["configs"][0]["id"]
    assert run(tmp_path, s)[0] == 2
    err = capsys.readouterr().err
    said = "overrides.accelerator_power_w.trainium: {idle_w: W, max_w: W} (max_w is counted)"
    assert said in err, err
    block = yaml.safe_load(said.replace("{idle_w: W, max_w: W}", "{idle_w: 40, max_w: 300}")
                           .split(" (max_w")[0].replace("overrides.accelerator_power_w.trainium", "trainium"))
    (tmp_path / "taken").mkdir()
    code, rows = run(tmp_path / "taken", s | {"overrides": {"accelerator_power_w": block}})
    assert code == 0, capsys.readouterr().err
    r = rows[0]
    assert r["energy_accelerator_kwh"] == pytest.approx(
        r["instances"] * r["accelerator_count"] * r["duration_h"] * 300 / 1000.0, rel=1e-9)
