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
    """Commit and dirtiness of the working tree, or ``{}`` outside a repository."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
    try:
        return {"commit": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return {}


def now_utc() -> str:
    """ISO-8601 UTC timestamp."""
    return datetime.now(UTC).isoformat(timespec="seconds")
