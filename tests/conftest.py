"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from ecobench.io.datacache import CACHE_ENV

# The tests keep ecobench's data cache (ecobench.io.datacache) in a folder of their own, not the user's.
_CACHE = tempfile.mkdtemp(prefix="ecobench-test-cache-")
os.environ[CACHE_ENV] = _CACHE


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE, ignore_errors=True)


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
