"""Machine, git and version information stored with every result."""

from __future__ import annotations

import platform
import subprocess
from datetime import UTC, datetime
from typing import Any


def machine_info() -> dict[str, Any]:
    """Where the run was made."""
    return {"node": platform.node(), "system": platform.system(), "release": platform.release(),
            "machine": platform.machine(), "python": platform.python_version()}


def git_info(cwd: str = ".") -> dict[str, Any]:
    """Commit, branch (``HEAD`` when detached) and dirtiness of the working tree, or ``{}`` outside
    a repository or before its first commit; one ``git`` process (porcelain v2 headers)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain=v2", "--branch", "--untracked-files=no"],
                             cwd=cwd, capture_output=True, text=True, timeout=5, check=True).stdout
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
