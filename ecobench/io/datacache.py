"""Packaged data, parsed and validated once per version, kept in the user's cache directory.

Parsing the catalog's YAML and validating it into pydantic models was about 40 ms of every run's
start-up. The result depends only on the packaged files, the versions of ecobench, pydantic and
Python, and the source of the classes it is made of, so it is pickled under a name hashed from
those. It is read back with an unpickler that builds only the classes defined in that module (the
pickle documentation's "restricting globals"), so a tampered file cannot run code; a file that
cannot be read, written or trusted is ignored and the data parsed again. ``ECOBENCH_CACHE_DIR``
moves the cache; ``ECOBENCH_CACHE_DIR=off`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ecobench.errors import OutputError
from ecobench.io.rundir import write_bytes_atomic
from ecobench.version import __version__

__all__ = ["CACHE_ENV", "cache_dir", "cached"]

CACHE_ENV = "ECOBENCH_CACHE_DIR"
T = TypeVar("T")


def cache_dir() -> Path | None:
    """Where cached data lives (``$ECOBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/ecobench``, else
    ``~/.cache/ecobench``), or None when turned off."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return None if env == "off" else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ecobench"


class _OnlyFrom(pickle.Unpickler):
    """An unpickler that builds the classes defined in one module and nothing else."""

    def __init__(self, data: bytes, module: str) -> None:
        super().__init__(io.BytesIO(data))
        self.module = module

    def find_class(self, module: str, name: str) -> Any:
        if module != self.module or name.startswith("_"):
            raise pickle.UnpicklingError(f"{module}.{name} is not a class of {self.module}")
        found = getattr(sys.modules[module], name, None)
        if not isinstance(found, type) or found.__module__ != module:
            raise pickle.UnpicklingError(f"{module}.{name} is not a class defined there")
        return found


def cached(name: str, sources: list[str], kind: type[T], build: Callable[[], T]) -> T:
    """``build()``, or what an earlier call with the same ``sources`` (the texts it reads) saved:
    a ``kind``, made of the classes defined in ``kind``'s module."""
    module = kind.__module__
    folder = cache_dir()
    if folder is None:
        return build()
    try:
        path = folder / f"{name}-{_key(module, sources)}.pickle"
    except OSError:  # the classes' source is not a readable file (a frozen or zipped install)
        return build()
    with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError,
                             TypeError, IndexError):
        value = _OnlyFrom(path.read_bytes(), module).load()
        if isinstance(value, kind):
            return value
    value = build()
    with contextlib.suppress(OSError, OutputError, pickle.PicklingError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_bytes_atomic(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return value


def _key(module: str, sources: list[str]) -> str:
    """A hash of the versions, the source of ``module`` and the ``sources`` texts."""
    import pydantic

    code = Path(sys.modules[module].__file__ or "").read_text(encoding="utf-8")
    parts = [__version__, pydantic.VERSION, sys.version, code, *sources]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
