"""The committed baselines (results/baselines/) are what the seed scenarios give today: .ci/run gates
the seeds against them, so a change of the model that moves a seed must rewrite its baseline
(`ecobench baseline RUN --to results/baselines/NAME.json --force`) in the same commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecobench.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["layoutlm_realtime", "bert_large_pretrain"])
def test_seed_passes_the_ci_energy_gate_against_its_committed_baseline(tmp_path, name, capsys):
    run = tmp_path / name
    assert main(["run", str(ROOT / "scenarios" / f"{name}.yaml"), "-q", "--out", str(run)]) == 0
    code = main(["check", str(run), "--baseline", str(ROOT / "results" / "baselines" / f"{name}.json"),
                 "--fail-on", "energy_kwh:+5%", "--fail-on", "cost_usd:+5%", "--fail-on", "co2_kg:+5%"])
    assert code == 0, capsys.readouterr().out
