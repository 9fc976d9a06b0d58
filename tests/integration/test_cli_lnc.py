"""``configs[].lnc`` and ``serve-point --lnc`` through the CLI: Trainium2 planned at LNC=1 and at its
default LNC=2, and the setting refused where no chip offers it."""

import json

import pytest
import yaml

from ecobench.cli import main
from tests.conftest import exit_code

PRICE = 35.7608  # trn2.48xlarge's Capacity Blocks rate (catalog), so every row stays on us-east-1


def _write(tmp_path, workload: dict, configs: list[dict], name: str = "s.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"schema_version": 2, "name": "lnc", "workload": workload,
                                    "configs": configs, "baseline": configs[0]["id"],
                                    "uncertainty": {"draws": 0}}))
    return path


SERVING = {"model": "llama3-8b", "serving": {"requests_per_h": 3600, "input_tokens": 1024,
                                             "output_tokens": 256, "median_ttft_ms": 2000,
                                             "median_tpot_ms": 60}}


def _rows(out) -> dict[str, dict]:
    return {r["config_id"]: r for r in json.loads((out / "results.json").read_text())["rows"]}


def test_serving_on_trn2_at_lnc_1_plans_physical_cores(tmp_path):
    trn2 = {"instance_type": "trn2.48xlarge", "precision": "bf16", "price_usd_per_h": PRICE}
    path = _write(tmp_path, SERVING, [{"id": "default", **trn2}, {"id": "lnc2", **trn2, "lnc": 2},
                                      {"id": "lnc1", **trn2, "lnc": 1},
                                      {"id": "emu1", **trn2, "lnc": 1, "backend": "emulated"}])
    assert main(["run", str(path), "--out", str(tmp_path / "r")]) == 0
    rows = _rows(tmp_path / "r")
    # Llama 3 8B's 15 GiB of weights fit one 24 GiB logical core, not one 12 GiB physical core
    assert rows["default"]["tensor_parallel"] == rows["lnc2"]["tensor_parallel"] == 1
    assert rows["lnc1"]["tensor_parallel"] == rows["emu1"]["tensor_parallel"] == 2
    assert rows["lnc1"]["replicas_per_instance"] == 64  # 128 ranks / tensor 2
    # the default is LNC=2: giving it changes no figure, and says so only where given
    assert rows["lnc2"]["energy_kwh"] == rows["default"]["energy_kwh"]
    assert "LNC=" not in rows["default"]["method"]
    assert rows["lnc2"]["method"].endswith("LNC=2: 4 ranks a chip, 2 physical NeuronCores each")
    assert rows["lnc1"]["method"].endswith("LNC=1: 8 ranks a chip, one physical NeuronCore each")
    assert rows["lnc1"]["energy_kwh"] != rows["default"]["energy_kwh"]


def test_emulated_training_on_trn2_at_lnc_1_runs_on_8_cores_a_chip(tmp_path):
    workload = {"model": "llama2-7b", "training": {"total_tokens": 1.0e10, "global_batch_size": 1024,
                                                   "phases": [{"seq_len": 4096, "fraction": 1.0}]}}
    trn2 = {"instance_type": "trn2.48xlarge", "precision": "bf16", "price_usd_per_h": PRICE, "instances": 2,
            "parallelism": "auto", "backend": "emulated"}
    path = _write(tmp_path, workload, [{"id": "lnc2", **trn2}, {"id": "lnc1", **trn2, "lnc": 1}])
    assert main(["run", str(path), "--out", str(tmp_path / "r")]) == 0
    rows = _rows(tmp_path / "r")
    assert "NeuronCore-v3 (LNC=2) engine model (4 cores x 16 chips)" in rows["lnc2"]["method"]
    assert "NeuronCore-v3 (LNC=1) engine model (8 cores x 16 chips)" in rows["lnc1"]["method"]
    assert rows["lnc1"]["duration_h"] != rows["lnc2"]["duration_h"]


@pytest.mark.parametrize(("config", "message"), [
    ({"instance_type": "inf2.48xlarge", "lnc": 1},
     "configs[0].lnc: 1: inf2.48xlarge's inferentia2 runs one physical NeuronCore a rank (LNC=1 only) and "
     "has no logical NeuronCore setting; allowed: lnc on trainium2 (trn2) instances only; remove it"),
    ({"instance_type": "p5.48xlarge", "lnc": 2}, "configs[0].lnc: 2: p5.48xlarge has no NeuronCores"),
    ({"instance_type": "trn2.48xlarge", "lnc": 4}, "configs[0].lnc: 4 is not allowed; allowed: 1 or 2"),
])
def test_run_refuses_a_setting_no_chip_offers(tmp_path, capsys, config, message):
    path = _write(tmp_path, SERVING, [{"id": "a", "precision": "bf16", "price_usd_per_h": PRICE, **config}])
    assert main(["run", str(path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message in err and "Traceback" not in err


def test_serve_point_lnc_1_counts_physical_cores(capsys):
    assert main(["serve-point", "llama3-8b", "--instance-type", "trn2.48xlarge", "--format", "json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert main(["serve-point", "llama3-8b", "--instance-type", "trn2.48xlarge", "--lnc", "1",
                 "--format", "json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert (default["lnc"], default["tensor"]) == (2, 1) and (one["lnc"], one["tensor"]) == (1, 2)
    assert main(["serve-point", "llama3-8b", "--instance-type", "trn2.48xlarge", "--lnc", "1",
                 "--tensor", "128"]) == 0
    assert "128 of the instance's 128 physical NeuronCores (16 chips, LNC=1)" in capsys.readouterr().out
    # tensor 128 is a degree of LNC=1's ranks only
    assert main(["serve-point", "llama3-8b", "--instance-type", "trn2.48xlarge", "--tensor", "128"]) == 2
    assert "must divide the 64 ranks" in capsys.readouterr().err


def test_serve_point_emulated_at_lnc_1_times_one_physical_core(capsys):
    assert main(["serve-point", "llama3-8b", "--instance-type", "trn2.48xlarge", "--backend", "emulated",
                 "--lnc", "1"]) == 0
    assert "emulated NeuronCore-v3 (LNC=1)" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    (["--instance-type", "inf2.48xlarge", "--lnc", "1"],
     "--lnc 1: inf2.48xlarge's inferentia2 runs one physical NeuronCore a rank"),
    (["--instance-type", "g6e.xlarge", "--lnc", "2"], "--lnc 2: g6e.xlarge has no NeuronCores"),
    (["--instance-type", "trn2.48xlarge", "--lnc", "4"], "'4': allowed: 1 or 2"),
])
def test_serve_point_refuses_a_setting_no_chip_offers(capsys, args, message):
    assert exit_code(["serve-point", "llama3-8b", *args]) == 2  # argparse's own refusal too
    assert message in capsys.readouterr().err


def test_emulate_breaks_down_a_trn2_configuration_at_lnc_1_per_physical_core(tmp_path):
    workload = {"model": "bert-base", "inference": {"rate_per_h": 1.0e7, "seq_len": 128, "batch_size": 8}}
    trn2 = {"instance_type": "trn2.48xlarge", "precision": "bf16", "price_usd_per_h": PRICE}
    path = _write(tmp_path, workload, [{"id": "lnc2", **trn2}, {"id": "lnc1", **trn2, "lnc": 1}])
    assert main(["emulate", str(path), "--out", str(tmp_path / "e")]) == 0
    report = json.loads((tmp_path / "e" / "emulation.json").read_text())
    rows = {c["config_id"]: c for c in report["configs"]}
    for cid, cores in (("lnc2", 4), ("lnc1", 8)):
        r = rows[cid]
        assert r["throughput_per_core_per_s"] == pytest.approx(r["throughput_per_chip_per_s"] / cores)
        assert f"(LNC={cid[-1]}) engine model ({cores} cores x 16 chips)" in r["method"]


def test_each_row_records_its_lnc_and_check_names_a_changed_one(tmp_path, capsys):
    """rec28: a run at lnc 1 checked against a baseline written at the default LNC=2 read '+5.45% FAIL'
    with nothing saying the setting had changed, and no results column held the setting (only the
    method's text, and only where a configuration gave one)."""
    trn2 = {"id": "trn2", "instance_type": "trn2.48xlarge", "precision": "bf16", "price_usd_per_h": PRICE}
    gpu = {"id": "g6e", "instance_type": "g6e.xlarge", "precision": "bf16"}
    runs = {}
    for name, extra in (("default", {}), ("lnc1", {"lnc": 1})):
        path = _write(tmp_path, SERVING, [{**trn2, **extra}, gpu], f"{name}.yaml")
        assert main(["run", str(path), "--out", str(tmp_path / name)]) == 0
        runs[name] = _rows(tmp_path / name)
    assert runs["default"]["trn2"]["lnc"] == 2 and runs["lnc1"]["trn2"]["lnc"] == 1
    assert "lnc" not in runs["lnc1"]["g6e"]  # a chip without the setting holds none
    header = (tmp_path / "lnc1" / "results.csv").read_text().splitlines()[0].split(",")
    assert "lnc" in header
    assert "bf16, LNC=1" in (tmp_path / "lnc1" / "report.html").read_text()
    capsys.readouterr()
    assert main(["check", str(tmp_path / "lnc1"), "--baseline", str(tmp_path / "default"),
                 "--fail-on", "energy_kwh:+50%"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("trn2 "))
    assert "configuration changed: lnc 2 -> 1" in row, out
    assert "configuration changed" not in next(line for line in out.splitlines() if line.startswith("g6e "))


def test_serve_point_says_its_ranks_without_loading_the_catalog_again(monkeypatch):
    """ux29: format_point's _ranks_of loaded the catalog and set its LNC again to name the ranks; the
    point carries what serve_point planned on."""
    from ecobench.planning import serve_point as sp

    p = sp.serve_point("llama3-8b", "trn2.48xlarge", "bf16", 1, 128, 128, tensor=128, lnc=1)
    monkeypatch.setattr(sp, "load_catalog", lambda: pytest.fail("the catalog loaded again"))
    text = sp.format_point(p)
    assert "one replica on 128 of the instance's 128 physical NeuronCores (16 chips, LNC=1)" in text
