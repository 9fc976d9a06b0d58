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


# A sweep row that a regression pushes off the rows results.json shows (the T4 drawing 2 kW:
# g4dn.xlarge_fp16_eu-north-1 x16 the energy): it stays in results.csv only.
HOT_SWEEP_ROW = "g4dn.xlarge_fp16_eu-north-1"


def sweep_runs_with_a_hot_t4(tmp_path: Path) -> tuple[Path, Path]:
    """(layoutlm_sweep's run, the same with the T4 at 300-2,000 W): run directories under ``tmp_path``."""
    import yaml

    from ecobench.cli import main

    s = yaml.safe_load((SCENARIOS / "layoutlm_sweep.yaml").read_text())
    s["overrides"] = {"accelerator_power_w": {"t4": {"idle_w": 300, "max_w": 2000}}}
    (tmp_path / "hot.yaml").write_text(yaml.safe_dump(s))
    base, hot = tmp_path / "base", tmp_path / "hot"
    assert main(["run", str(SCENARIOS / "layoutlm_sweep.yaml"), "-q", "--out", str(base)]) == 0
    assert main(["run", str(tmp_path / "hot.yaml"), "-q", "--out", str(hot)]) == 0
    return base, hot


def exit_code(argv: list[str]) -> int | str | None:
    """``ecobench.cli.main(argv)``'s exit code, also where argparse refuses the arguments itself (it
    raises SystemExit, 2 for a usage error)."""
    from ecobench.cli import main

    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code
