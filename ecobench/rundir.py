"""Run directories: written under a temporary name and renamed into place when complete."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from ecobench.errors import InputError


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file via a temporary sibling and rename, so readers never see half of it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


def target_dir(results_root: Path, scenario_name: str, out: Path | None) -> Path:
    """Where a run goes: exactly ``out`` (must not exist), else results/<scenario>/<run-id>/."""
    if out is not None:
        if out.exists():
            raise InputError(f"--out {out}: already exists; runs never overwrite an earlier run")
        return out
    return results_root / scenario_name / new_run_id()


@contextlib.contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``final`` to fill; rename it to ``final`` on success,
    remove it on any failure or interrupt (KeyboardInterrupt included)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        yield tmp
        if final.exists():
            raise InputError(f"{final}: appeared while the run was being written; not overwritten")
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
