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


def _step(step_id, tmp_path, program, stub):
    """The Action's step ``step_id``, with a stub ``program`` (its script ``stub``) and a RUNNER_TEMP
    in ``tmp_path``."""
    action = yaml.safe_load(ACTION.read_text())
    path = tmp_path / program
    path.write_text(stub)
    path.chmod(0o755)
    (tmp_path / "temp").mkdir()
    return next(s for s in action["runs"]["steps"] if s.get("id") == step_id)


def _run_step(tmp_path, fail_on, check_rc=0):
    step = _step("run", tmp_path, "ecobench", STUB)
    env = {
        "PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path / "temp"),
        "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "ECOBENCH": str(tmp_path / "ecobench"), "SCENARIO": "scenarios/my_model.yaml",
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


def test_both_directions_are_exported_for_the_charts(tmp_path):
    """Only the metrics whose rise fails were exported: a throughput gated on its fall had no history
    chart through the Action (the CLI's benchmark-action-bigger was never asked for)."""
    _, args, outputs = _run_step(tmp_path, "throughput_per_instance_per_s:-5%")
    exports = {args[i + 1]: args[i + 2] for i, a in enumerate(args) if a == "--export"}
    assert exports == {"benchmark-action": outputs["benchmark-json"],
                       "benchmark-action-bigger": outputs["benchmark-bigger-json"]}
    assert len(set(exports.values())) == 2


def test_an_empty_fail_on_passes_no_rule_so_the_default_holds(tmp_path):
    rc, args, _ = _run_step(tmp_path, "")
    assert rc == 0 and _rules(args) == []


@pytest.mark.parametrize("check_rc,verdict", [(0, "pass"), (1, "regression"), (2, "error"), (5, "error")])
def test_the_verdict_and_exit_code_are_the_checks(tmp_path, check_rc, verdict):
    rc, _, outputs = _run_step(tmp_path, "energy_kwh:+5%", check_rc)
    assert rc == check_rc
    assert outputs["verdict"] == verdict and outputs["exit-code"] == str(check_rc)


# `python3 -m venv DIR` makes DIR/bin/python, a stub that records `pip install`'s arguments and puts an
# `ecobench` there; any other call goes to the real Python (the step hashes the spec with it)
PYTHON_STUB = """#!/bin/sh
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin"
  cat > "$3/bin/python" <<'STUB'
#!/bin/sh
bin=$(dirname "$0")
printf '%s\\n' "$@" >> "$STUB_PIP"
printf '#!/bin/sh\\necho ecobench 0.0.0\\n' > "$bin/ecobench"
chmod +x "$bin/ecobench"
STUB
  chmod +x "$3/bin/python"
  exit 0
fi
exec "$REAL_PYTHON" "$@"
"""


def _install(tmp_path, *uses):
    """The install step once per use (one job: one RUNNER_TEMP); the `pip install` arguments each made."""
    step = _step("install", tmp_path, "python3", PYTHON_STUB)
    root = tmp_path / "ecobench-ref"
    (root / ".github" / "actions" / "ecobench-check").mkdir(parents=True)
    (root / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())  # its extras
    results = []
    for i, extras in enumerate(uses):
        pip = tmp_path / f"pip{i}"
        env = {"PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path / "temp"),
               "GITHUB_OUTPUT": str(tmp_path / f"output{i}"), "PYTHON": str(tmp_path / "python3"),
               "REAL_PYTHON": sys.executable, "STUB_PIP": str(pip),
               "ACTION_ROOT": f"{root}/.github/actions/ecobench-check/../../..", "EXTRAS": extras}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        pip_args = pip.read_text().splitlines() if pip.exists() else []
        results.append((done.returncode, pip_args, done.stderr))
    return root.resolve(), results


def test_extras_are_installed_with_the_actions_ref(tmp_path):
    """A scenario measured on the runner (backend reference) needs the torch extra; the Action
    installed ecobench-ml without extras and had no input for them, so such a scenario could only
    fail with exit 2 ("pip install 'ecobench-ml[torch]'"), which no caller could do in the Action's
    own environment."""
    root, [plain, torch, again, gpu] = _install(tmp_path, "", "torch", "torch", " torch, gpu ")
    assert plain[:2] == (0, ["-m", "pip", "install", "--disable-pip-version-check", "--quiet", str(root)])
    assert torch[:2] == (0, ["-m", "pip", "install", "--disable-pip-version-check", "--quiet",
                             f"{root}[torch]"])
    assert again[:2] == (0, [])  # the same ref and extras: the environment built by the use before
    assert gpu[0] == 0 and gpu[1][-1] == f"{root}[torch,gpu]"


@pytest.mark.parametrize("extras", ["torch] requests[", "torch;rm", "../other", "torch gpu[x]"])
def test_extras_that_are_not_names_are_refused_before_anything_is_installed(tmp_path, extras):
    _, [(rc, pip_args, err)] = _install(tmp_path, extras)
    assert rc == 2 and pip_args == []
    assert err.startswith(f"ecobench-check: input extras: '{extras}' is not a list of extras; allowed: ")


def test_an_unknown_extra_is_refused_naming_the_known_ones(tmp_path):
    """pip only warns about an extra the project does not have ('torhc') and installs without it; the
    run then failed asking for the extra the caller believed installed."""
    _, [(rc, pip_args, err)] = _install(tmp_path, "torch,torhc")
    assert rc == 2 and pip_args == []
    assert err.strip() == ("ecobench-check: input extras: unknown torhc; allowed: torch, gpu, parquet, dev, "
                           "comma-separated")
