import json
import shutil
import subprocess

import pytest

from ecobench.reports import metadata
from ecobench.reports.metadata import ecobench_git_info, git_info

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def test_git_info_reads_commit_branch_and_dirtiness(tmp_path):
    assert git_info(str(tmp_path)) == {}  # not a repository
    git(tmp_path, "init", "-q", "-b", "trunk")
    assert git_info(str(tmp_path)) == {}  # no commit yet
    (tmp_path / "f.txt").write_text("a")
    git(tmp_path, "add", "f.txt")
    git(tmp_path, "commit", "-q", "-m", "one")
    head = git(tmp_path, "rev-parse", "HEAD")
    assert git_info(str(tmp_path)) == {"commit": head, "branch": "trunk", "dirty": False}
    (tmp_path / "untracked.txt").write_text("u")  # untracked files do not make it dirty
    assert git_info(str(tmp_path))["dirty"] is False
    (tmp_path / "f.txt").write_text("b")
    assert git_info(str(tmp_path))["dirty"] is True
    git(tmp_path, "checkout", "-q", "--detach")
    assert git_info(str(tmp_path))["branch"] == "HEAD"


def _repo(path):
    """A repository at ``path`` with one commit; its commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "trunk")
    (path / "f.txt").write_text("a")
    git(path, "add", "f.txt")
    git(path, "commit", "-q", "-m", "one")
    return git(path, "rev-parse", "HEAD")


def test_a_run_records_ecobench_s_commit_not_the_working_directory_s(tmp_path, monkeypatch, capsys):
    """results.json's git was the repository of the directory ecobench ran from (a user's project),
    not the code that ran."""
    from ecobench.cli import main
    from tests.conftest import ROOT, SCENARIOS

    elsewhere = _repo(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "project" / ".git"))  # a git hook's environment
    scenario = SCENARIOS / "layoutlm_realtime.yaml"
    code = main(["run", str(scenario), "-q", "--results", str(tmp_path / "res")])
    assert code == 0, capsys.readouterr().err
    recorded = json.loads(next((tmp_path / "res").rglob("results.json")).read_text())["git"]
    assert recorded.get("commit") != elsewhere
    if (ROOT / ".git").exists():  # ecobench runs from its checkout (the tests' case)
        monkeypatch.delenv("GIT_DIR")
        assert recorded["commit"] == git(ROOT, "rev-parse", "HEAD")
    else:
        assert recorded == {}


def test_an_installed_ecobench_records_no_commit_even_inside_a_repository(tmp_path, monkeypatch):
    """ecobench installed in a virtual environment inside a user's repository: no commit (the
    ecobench_version says what ran), not the user's."""
    _repo(tmp_path)
    installed = tmp_path / ".venv" / "lib" / "site-packages" / "ecobench" / "reports" / "metadata.py"
    monkeypatch.setattr(metadata, "__file__", str(installed))
    assert ecobench_git_info() == {}


def test_no_git_is_no_commit_and_no_noise(monkeypatch, capfd):
    monkeypatch.setenv("PATH", "")
    assert git_info(".") == {} and ecobench_git_info() == {}
    assert capfd.readouterr() == ("", "")
