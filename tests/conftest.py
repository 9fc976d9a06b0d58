"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def scenario_dict() -> dict:
    """A small valid inference scenario as a dict."""
    return {
        "schema_version": 1,
        "name": "t",
        "workload": {"model": "bert-base", "inference": {"rate_per_h": 100000, "seq_len": 128}},
        "configs": [
            {"id": "a", "instance_type": "inf1.xlarge", "precision": "bf16"},
            {"id": "b", "instance_type": "g4dn.xlarge", "precision": "fp16"},
        ],
        "baseline": "b",
    }
