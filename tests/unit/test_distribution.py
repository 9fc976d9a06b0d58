"""The distribution name (PyPI's `ecobench` is someone else's) and the GitHub Action."""

import re
import tomllib

import yaml

from ecobench import DISTRIBUTION
from tests.conftest import ROOT

ACTION = ROOT / ".github" / "actions" / "ecobench-check" / "action.yml"


def test_distribution_name_is_ours_everywhere():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["name"] == DISTRIBUTION == "ecobench-ml"
    assert meta["project"]["scripts"]["ecobench"] == "ecobench.cli:entry"
    wrong = re.compile(r"pip install\s+['\"]?ecobench(\[|['\"\s]|$)")
    files = [ROOT / "README.md", ACTION, *ROOT.glob("scenarios/*.yaml"), *ROOT.glob("ecobench/**/*.py"),
             *ROOT.glob("docs/*.md")]
    for f in files:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if "Do not `pip install ecobench`" in line:
                continue
            assert not wrong.search(line), f"{f}:{n}: {line}"



def test_action_installs_from_its_own_ref_never_from_an_index():
    action = yaml.safe_load(ACTION.read_text())
    assert "ecobench-spec" not in action["inputs"]  # no package name to install at all
    install = next(s for s in action["runs"]["steps"] if s.get("id") == "install")
    assert install["env"]["ACTION_ROOT"] == "${{ github.action_path }}/../../.."
    assert '-m pip install --disable-pip-version-check --quiet "$spec"' in install["run"]
    assert 'spec="$root${extras:+[$extras]}"' in install["run"]  # the ref itself, with its extras if any
    assert (ACTION.parent / ".." / ".." / ".." / "pyproject.toml").resolve() == ROOT / "pyproject.toml"
    workflow = (ROOT / ".github" / "workflows" / "energy-gate.yml").read_text()
    assert "ecobench-spec" not in workflow and "pip install" not in workflow


def test_action_outputs_a_verdict_and_uploads_results_json():
    """verdict is `error` when the install step failed too (a caller's Python 3.10, no network): the
    run step never ran and set nothing, and `verdict == 'error'` in the caller missed it."""
    action = yaml.safe_load(ACTION.read_text())
    assert action["outputs"]["verdict"]["value"] == "${{ steps.run.outputs.verdict || 'error' }}"
    run = next(s for s in action["runs"]["steps"] if s.get("id") == "run")["run"]
    for verdict, code in (("pass", "0"), ("regression", "1"), ("error", "*")):
        assert f"{code}) verdict={verdict} ;;" in run
    assert '"verdict=$verdict" >> "$GITHUB_OUTPUT"' in run and 'exit "$rc"' in run
    assert "--export benchmark-action" in run and "--markdown" in run
    upload = next(s for s in action["runs"]["steps"] if s.get("uses", "").startswith("actions/upload"))
    assert "/run/results.json" in upload["with"]["path"] and "summary.md" in upload["with"]["path"]
    assert "--export benchmark-action-bigger" in run
    assert "benchmark-action-bigger.json" in upload["with"]["path"]


def test_readme_shows_the_action_from_another_repository():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Gate energy in CI"):]
    section = section[:section.index("\n## ", 3)]
    assert "uses: <owner>/ecobench/.github/actions/ecobench-check@<ref>" in section
    action = yaml.safe_load(ACTION.read_text())
    for name in [*action["inputs"], *action["outputs"]]:
        assert f"`{name}`" in section, name


def test_action_passes_inputs_through_env_and_uploads_its_outputs():
    action = yaml.safe_load(ACTION.read_text())
    steps = action["runs"]["steps"]
    for step in steps:
        assert "${{" not in step.get("run", ""), step["run"]  # no expression pasted into a script
    uploads = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(uploads) == 1 and "always()" in uploads[0]["if"]
    paths = uploads[0]["with"]["path"]
    assert "junit.xml" in paths and "report.html" in paths
    run = next(s for s in steps if s.get("id") == "run")["run"]
    assert 'mktemp -d "$RUNNER_TEMP/ecobench-XXXXXX"' in run  # a fresh directory per use
    assert "${{ steps.run.outputs.artifact }}" == uploads[0]["with"]["name"]


def test_the_package_is_marked_typed_for_the_code_that_calls_it():
    """The API is annotated (Result.rows: list[dict[str, Any]], ...), but without a py.typed marker
    in the installed package mypy refused to read it in a user's script ("module is installed, but
    missing library stubs or py.typed marker") and pyright treated every name as unknown."""
    assert (ROOT / "ecobench" / "py.typed").is_file()
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["ecobench"]


def test_readme_charts_the_figures_after_a_regression_too():
    """`--export` is written on exit 0 and 1, but the README's github-action-benchmark step had no
    `if:`: after a regression the gate step has failed, so the step was skipped and the chart missed
    the one point it is for."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Gate energy in CI"):]
    snippet = next(block.split("```", 1)[0] for block in section.split("```yaml\n")[1:]
                   if "github-action-benchmark@" in block.split("```", 1)[0])
    [step] = yaml.safe_load(snippet)
    assert "!cancelled()" in step["if"] and "regression" in step["if"] and "pass" in step["if"]
    assert step["with"]["output-file-path"] == "${{ steps.gate.outputs.benchmark-json }}"


def test_the_workflows_are_valid_yaml():
    """`run: echo "energy gate: $VERDICT"` is not YAML (a plain scalar holding ': '): GitHub refuses
    such a file ("Invalid workflow file") and runs none of its jobs. The README's workflow and
    .github/workflows/energy-gate.yml both had one, so neither the example a team copies nor the
    project's own energy gate ever ran."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Gate energy in CI"):]
    section = section[:section.index("\n## ", 3)]
    workflows = [("README.md", block.split("```", 1)[0]) for block in section.split("```yaml\n")[1:]]
    workflows += [(f.name, f.read_text()) for f in (ROOT / ".github" / "workflows").glob("*.yml")]
    assert len(workflows) >= 3
    for name, text in workflows:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise AssertionError(f"{name}: not valid YAML: {exc}") from None
        if isinstance(doc, dict) and "jobs" in doc:  # a whole workflow, as GitHub reads it
            for job in doc["jobs"].values():
                for step in job["steps"]:
                    assert "uses" in step or isinstance(step.get("run"), str), (name, step)
