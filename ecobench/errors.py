"""ecobench's exceptions.

    EcobenchError                 base of everything ecobench raises on purpose
    ├── InputError                bad scenario, argument or file (exit code 2)
    │   └── UnknownNameError      an instance type, region or preset that is not known
    └── BackendError              a backend cannot evaluate a configuration (exit code 2)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["BackendError", "EcobenchError", "InputError", "UnknownNameError"]


class EcobenchError(Exception):
    """Base class; the CLI prints the message and exits with ``exit_code``."""

    exit_code = 2


class InputError(EcobenchError):
    """The user's input is wrong: the message names the file, the field and what is allowed."""


class UnknownNameError(InputError):
    """A name that is not in a known set; the message suggests the nearest known names."""

    def __init__(self, kind: str, name: str, known: Iterable[str], where: str = "") -> None:
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}unknown {kind} {name!r}{hint} (known: {', '.join(known)})")
        self.name = name


class BackendError(EcobenchError):
    """A backend cannot give a figure for a configuration (e.g. no peak for a data type)."""
