"""The figures the README quotes from a shipped scenario's output are what that output holds now, to
the digits the README shows: they had gone stale after refits (the daily-profile table, the g6e
worked example, the sweep's front). After a change of model outputs, copy the new figures in."""

from __future__ import annotations

import json
import re
from typing import Any

from ecobench.cli import main
from tests.conftest import ROOT, SCENARIOS

README = (ROOT / "README.md").read_text(encoding="utf-8")
GOLDEN = ROOT / "tests" / "golden"


def _rows(scenario: str) -> dict[str, dict[str, Any]]:
    doc = json.loads((GOLDEN / scenario / "results.json").read_text(encoding="utf-8"))
    return {r["config_id"]: r for r in doc["rows"]}


def _shown(text: str, value: float) -> bool:
    """Whether ``value`` rounds to the number ``text`` shows, at the digits it shows."""
    digits = len(text.split(".", 1)[1]) if "." in text else 0
    return round(value, digits) == float(text.replace(",", ""))


def _section(start: str, end: str) -> str:
    return README.split(start, 1)[1].split(end, 1)[0]


def test_the_daily_profile_table_is_what_the_run_gives():
    table = _section("Example (`ecobench run scenarios/layoutlm_daily_profile.yaml`", "Autoscaling avoids")
    lines = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    rows = _rows("layoutlm_daily_profile")
    by_label = {"g4dn.2xlarge fp32": rows["gpu"], "inf1.2xlarge bf16": rows["inf1"]}
    row: dict[str, Any] = {}
    checked = 0
    for line in lines:
        label, strategy, *figures = (c.strip() for c in line.strip("|").split("|"))
        row = by_label.get(label, row)
        name = strategy.split()[0]
        plan = row["profile"][name]
        for key, text in zip(("instance_hours", "energy_kwh", "cost_usd", "co2_kg"), figures, strict=True):
            where = f"{row['config_id']} {name} {key}"
            assert _shown(text, plan[key]), f"{where}: README {text}, run {plan[key]}"
            checked += 1
        if name == "batch":
            rate = re.search(r"([\d.]+)/s", strategy).group(1)
            assert _shown(rate, plan["throughput_per_instance_per_s"]), (strategy, plan)
    assert checked == 24


def test_the_daily_profile_savings_sentence_is_what_the_run_gives():
    text = "Autoscaling avoids" + _section("Autoscaling avoids", "\n## ")
    gpu, inf1 = (_rows("layoutlm_daily_profile")[c]["profile"] for c in ("gpu", "inf1"))
    hours = re.search(r"avoids (\d+)% of the GPU fleet's instance-hours \((\d+)% on Inf1", text).groups()
    energy = re.search(r"energy falls less \((\d+)% and (\d+)%\)", text).groups()
    for shown, p in zip(hours, (gpu, inf1), strict=True):
        assert _shown(shown, p["idle_avoided_pct"])
    for shown, p in zip(energy, (gpu, inf1), strict=True):
        fall = 100 * (1 - p["autoscaled"]["energy_kwh"] / p["static"]["energy_kwh"])
        assert _shown(shown, fall), f"README {shown}%, run {fall:.2f}%"


def test_the_serving_worked_example_is_what_the_run_gives():
    text = " ".join(_section("Worked example (the `g6e` row of `llama3_8b_chat`", "**Options**").split())
    g6e = _rows("llama3_8b_chat")["g6e"]
    pattern = (r"TTFT (\S+) ms median \(p99 (\S+) ms\), TPOT (\S+) ms median \(p99 (\S+) ms\).*"
               r"Power (\S+) W per instance \((\S+) W of it the accelerator\): (\S+) kWh over 720 h.*"
               r"so (\S+) J per output token, and per million output tokens \$(\S+) \(at \$1\.861/h\) "
               r"and (\S+) g CO2")
    shown = re.search(pattern, text).groups()
    keys = ("ttft_ms_p50", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p99", "power_w", "power_accelerator_w",
            "energy_kwh", "energy_j_per_output_token", "cost_usd_per_million_output_tokens",
            "co2_g_per_million_output_tokens")
    for key, figure in zip(keys, shown, strict=True):
        assert _shown(figure, g6e[key]), f"{key}: README {figure}, run {g6e[key]}"


def test_the_sweep_output_shown_is_what_the_run_prints(tmp_path, capsys):
    block = _section("sweep:\n  instance_type: [inf1.2xlarge", "- **Every run**").split("```")[2]
    shown = [" ".join(line.split()) for line in block.splitlines() if line.strip() not in ("", "...")]
    assert main(["run", str(SCENARIOS / "layoutlm_sweep.yaml"), "-q", "--out", str(tmp_path / "run")]) == 0
    printed = {" ".join(line.split()) for line in capsys.readouterr().out.splitlines()}
    missing = [line for line in shown if line not in printed]
    assert len(shown) >= 8 and not missing, f"README shows lines the run does not print: {missing}"
