"""Machine, git and version information stored with every result."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def machine_info() -> dict[str, Any]:
    """Where the run was made."""
    return {"node": platform.node(), "system": platform.system(), "release": platform.release(),
            "machine": platform.machine(), "python": platform.python_version()}


def ecobench_git_info() -> dict[str, Any]:
    """:func:`git_info` of ecobench's own source checkout (the repository whose top level holds the
    ``ecobench`` package that is running), never of the directory ecobench is run from; ``{}`` for an
    installed ecobench (its ``ecobench_version`` says what ran), even inside someone's repository."""
    root = Path(__file__).resolve().parents[2]  # <root>/ecobench/reports/metadata.py
    return git_info(str(root)) if (root / ".git").exists() else {}  # .git: a directory, or a worktree's file


def git_info(cwd: str = ".") -> dict[str, Any]:
    """Commit, branch (``HEAD`` when detached) and dirtiness of the working tree at ``cwd``, or ``{}``
    outside a repository, before its first commit or without git; one ``git`` process (porcelain v2
    headers), its output and errors captured (nothing printed), the caller's ``GIT_DIR`` and kin ignored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        out = subprocess.run(["git", "status", "--porcelain=v2", "--branch", "--untracked-files=no"],
                             cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8",
                             errors="replace", timeout=5, check=True).stdout  # git writes UTF-8
    except (OSError, subprocess.SubprocessError):
        return {}
    lines = out.splitlines()
    head = {key: value for key, _, value in (line[2:].partition(" ") for line in lines
                                             if line.startswith("# branch."))}
    commit = head.get("branch.oid", "(initial)")
    if commit == "(initial)":
        return {}
    branch = head.get("branch.head", "HEAD")
    return {"commit": commit, "branch": "HEAD" if branch == "(detached)" else branch,
            "dirty": any(not line.startswith("#") for line in lines)}


def now_utc() -> str:
    """ISO-8601 UTC timestamp."""
    return datetime.now(UTC).isoformat(timespec="seconds")
