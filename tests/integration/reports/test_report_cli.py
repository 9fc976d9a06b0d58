import json

from ecobench.cli import main
from ecobench.reports import charts
from tests.conftest import SCENARIOS


def test_report_regenerates_from_saved_results_without_recomputing(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(out)]) == 0
    (out / "report.html").unlink()
    import ecobench.planning.evaluate

    def no(*a, **k):
        raise AssertionError("report must not recompute")

    monkeypatch.setattr(ecobench.planning.evaluate, "evaluate", no)
    assert main(["report", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "Where the power goes" in html and "eu-north-1" in html and "instances.vantage.sh" in html
    assert main(["report", str(tmp_path / "missing")]) == 2
    doc = json.loads((out / "results.json").read_text())
    del doc["rows"][0]["energy_kwh"]
    (out / "results.json").write_text(json.dumps(doc))
    assert main(["report", str(out)]) == 2  # a damaged results.json is bad input, not a bug


def test_emulated_training_report_has_kernels_and_loss_curves(tmp_path):
    import yaml

    s = yaml.safe_load((SCENARIOS / "bert_large_pretrain.yaml").read_text())
    s["configs"][0]["backend"] = "emulated"
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(s))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "r")]) == 0
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    assert doc["training_demo"]["final_loss"]["bf16_sr"] > 0
    html = (tmp_path / "r" / "report.html").read_text()
    assert "time per sample by kernel" in html and "<polyline" in html


def test_validation_page(tmp_path):
    assert main(["validate", "--mode", "replay", "--html", str(tmp_path / "v.html")]) == 0
    html = (tmp_path / "v.html").read_text()
    assert "energy_change_pct" in html and "<svg" in html
    page = str(tmp_path / "h.html")
    assert main(["validate", "--mode", "replay", "--mode", "holdout", "--html", page]) == 0
    html = (tmp_path / "h.html").read_text()
    assert "Out of sample (holdout)" in html and "llm_train_megatron_sc21_gpt_1.7b_32gpu" in html


def test_chart_text_is_escaped():
    svg = charts.hbar("<b>t</b>", ["<script>x</script>"], [1.0], "W")
    assert "<script>" not in svg and "&lt;script&gt;" in svg
