"""The GitHub Action's `run and check` step, executed as GitHub runs a composite step's script
(`bash --noprofile --norc -eo pipefail`), with a stub in place of the `ecobench` it installed: the
arguments it passes and the outputs it sets. The static checks of action.yml are in
test_distribution.py."""

import shutil
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT

ACTION = ROOT / ".github" / "actions" / "ecobench-check" / "action.yml"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or sys.platform == "win32",
                                reason="the Action runs its steps under bash (Linux and macOS runners)")

# `ecobench run` writes the run directory; `ecobench check` records its arguments, one a line, and exits
# with $STUB_CHECK_RC
STUB = """#!/bin/sh
if [ "$1" = run ]; then
  while [ $# -gt 0 ]; do [ "$1" = --out ] && mkdir -p "$2"; shift; done
  exit "${STUB_RUN_RC:-0}"
fi
printf '%s\\n' "$@" > "$STUB_ARGS"
exit "${STUB_CHECK_RC:-0}"
"""


def _run_step(tmp_path, fail_on, check_rc=0):
    action = yaml.safe_load(ACTION.read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "run")
    stub = tmp_path / "ecobench"
    stub.write_text(STUB)
    stub.chmod(0o755)
    (tmp_path / "temp").mkdir()
    env = {
        "PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path / "temp"),
        "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "ECOBENCH": str(stub), "SCENARIO": "scenarios/my_model.yaml",
        "BASELINE": "results/baselines/my_model.json", "FAIL_ON": fail_on, "ALLOW_NOISY": "false",
        "ARTIFACT_NAME": "", "STUB_ARGS": str(tmp_path / "args"), "STUB_CHECK_RC": str(check_rc),
    }
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    args = (tmp_path / "args").read_text().splitlines()
    outputs = dict(line.split("=", 1) for line in (tmp_path / "output").read_text().splitlines())
    return done.returncode, args, outputs


def _rules(args):
    return [args[i + 1] for i, a in enumerate(args) if a == "--fail-on"]


@pytest.mark.parametrize("fail_on", [
    "energy_kwh:+5% ttft_ms_p99<1000 pareto_rank<3@inf2",
    "energy_kwh:+5%\nttft_ms_p99<1000\npareto_rank<3@inf2\n",  # `fail-on: |`, one rule a line
    "  energy_kwh:+5%\t ttft_ms_p99<1000 \n\n pareto_rank<3@inf2  ",
])
def test_every_rule_of_fail_on_reaches_the_check(tmp_path, fail_on):
    """A `fail-on: |` block (one rule a line, as YAML lists read best) passed its first line only:
    `read -a` stops at the first newline, so the other rules were dropped without a word and the
    gate passed runs they would have failed."""
    rc, args, _ = _run_step(tmp_path, fail_on)
    assert rc == 0
    assert _rules(args) == ["energy_kwh:+5%", "ttft_ms_p99<1000", "pareto_rank<3@inf2"]


def test_an_empty_fail_on_passes_no_rule_so_the_default_holds(tmp_path):
    rc, args, _ = _run_step(tmp_path, "")
    assert rc == 0 and _rules(args) == []


@pytest.mark.parametrize("check_rc,verdict", [(0, "pass"), (1, "regression"), (2, "error"), (5, "error")])
def test_the_verdict_and_exit_code_are_the_checks(tmp_path, check_rc, verdict):
    rc, _, outputs = _run_step(tmp_path, "energy_kwh:+5%", check_rc)
    assert rc == check_rc
    assert outputs["verdict"] == verdict and outputs["exit-code"] == str(check_rc)
