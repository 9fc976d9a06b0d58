"""The issue's scenario: Llama 2 7B emulated on Trn1 and Trn2, layouts searched, rows marked."""

import json

import pandas as pd

from ecobench.cli import main
from tests.conftest import SCENARIOS


def test_llama_emulated_runs_and_trainium2_finishes_sooner(tmp_path, capsys):
    assert main(["run", str(SCENARIOS / "llama_emulated.yaml"), "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    df = pd.read_csv(tmp_path / "r" / "results.csv").set_index("config_id")
    assert set(df["provenance"]) == {"emulated"}
    assert df.loc["trn2", "duration_h"] < df.loc["trn1", "duration_h"]
    assert "backend_disagreement" in df.columns
    rows = json.loads((tmp_path / "r" / "results.json").read_text())["rows"]  # the CSV keys long texts
    assert all(r["layout_choice"].startswith("auto") for r in rows)
    # trn2.48xlarge is priced in us-east-2 only (Capacity Blocks): the scenario charges that rate
    assert "no sourced" not in err and df.loc["trn2", "cost_usd"] > 0
    assert df.loc["trn2", "price_usd_per_h"] == 35.7608
