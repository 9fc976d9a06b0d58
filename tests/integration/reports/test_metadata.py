import shutil
import subprocess

import pytest

from ecobench.reports.metadata import git_info

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
