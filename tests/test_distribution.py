"""The distribution name (PyPI's `ecobench` is someone else's) and the GitHub Action."""

import re
import tomllib

import yaml

from ecobench import DISTRIBUTION

from .conftest import ROOT

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
    action = yaml.safe_load(ACTION.read_text())
    assert action["inputs"]["ecobench-spec"]["default"] == DISTRIBUTION


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
