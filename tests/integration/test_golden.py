"""Every shipped scenario gives the results recorded in tests/golden/ (values to 1e-9 relative), and
the shipped bad-input cases keep their exit codes and messages. Regenerate with tools/golden.py only
when a change is meant to change results."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("golden", ROOT / "tools" / "golden.py")
assert _spec and _spec.loader
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)


@pytest.mark.parametrize("name", golden.scenario_names())
def test_scenario_matches_golden(name: str, tmp_path: Path) -> None:
    diffs = golden.compare(name, golden.run_scenario(name, tmp_path))
    assert not diffs, "\n".join(diffs[:30])


def test_bad_input_matches_golden(tmp_path: Path) -> None:
    diffs: list[str] = []
    golden._close(json.loads((golden.GOLDEN / "bad_input.json").read_text()),
                  golden.bad_input_outcomes(tmp_path), "bad_input", diffs)
    assert not diffs, "\n".join(diffs)


def test_comparison_catches_a_change() -> None:
    diffs: list[str] = []
    before = {"rows": [{"energy_kwh": 1.0, "id": "a"}]}
    after = {"rows": [{"energy_kwh": 1.0 + 1e-6, "id": "a"}]}
    golden._close(before, after, "r", diffs)
    assert diffs == ["r.rows[0].energy_kwh: golden 1.0, now 1.000001"]
