"""ecobench's exceptions and the exit codes they map to.

    EcobenchError                 base of everything ecobench raises on purpose (exit code 3)
    ├── InputError                bad scenario, argument or file (exit code 2)
    │   └── UnknownNameError      an instance type, region or preset that is not known
    ├── BackendError              a backend cannot evaluate a configuration (exit code 2)
    ├── OutputError               a result could not be written: read-only or full disk (exit code 4)
    └── NoisyMeasurementError     measured rows too noisy to gate, and no --allow-noisy (exit code 5)

    EcobenchWarning (UserWarning) what ``ecobench run`` prints as ``ecobench: warning:``, issued by
                                  ``ecobench.run`` (the Python API) with ``warnings.warn``

The CLI prints one line (``ecobench: error: ...``) and exits with the error's ``exit_code``. Anything
else that escapes a command is a bug: one line, exit code 3, the traceback only with ``--debug``.
Exit code 1 is reserved for a gate that found a regression; no error ever uses it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Self

__all__ = ["EXIT_BAD_INPUT", "EXIT_BROKEN_PIPE", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_NOISY",
           "EXIT_OK", "EXIT_OUTPUT", "EXIT_REGRESSION", "EXIT_TERMINATED", "BackendError",
           "EcobenchError", "EcobenchWarning", "InputError", "NoisyMeasurementError", "OutputError",
           "UnknownNameError"]

EXIT_OK = 0
EXIT_REGRESSION = 1  # only `ecobench check` returns it, and only for a regression it found
EXIT_BAD_INPUT = 2  # also argparse's code for usage errors
EXIT_INTERNAL = 3
EXIT_OUTPUT = 4
EXIT_NOISY = 5
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of stdout went away (`ecobench catalog | head`)
EXIT_TERMINATED = 143  # 128 + SIGTERM


class EcobenchError(Exception):
    """Base class; the CLI prints the message and exits with ``exit_code``.

    An error about one configuration of a scenario is raised without its location, marked with
    :meth:`in_config`; the evaluation loop, which knows the configuration, adds the location once
    (``ecobench.planning.configs.locate``): ``configs[0].parallelism: ...``, ``configs[a]: ...``,
    ``configs[a] (g4dn.xlarge, bf16): ...``."""

    exit_code = EXIT_INTERNAL
    config_field: str | None = None  # the configuration's field it is about ("": the whole); None: none
    config_by_id: bool = False  # name the configuration by its id (else by its index in ``configs``)
    config_detail: bool = False  # and add its instance type and data type (a backend's error)
    cause: str | None = None  # the message's cause alone, without this configuration's own figures

    def in_config(self, field: str = "", *, by_id: bool = False, detail: bool = False,
                  cause: str | None = None) -> Self:
        """Mark the error as about one configuration's ``field`` (see the class docstring); ``cause``:
        the part of the message that other configurations share (a sweep counts skips by it)."""
        self.config_field, self.config_by_id, self.config_detail = field, by_id, detail
        self.cause = cause
        return self


class InputError(EcobenchError):
    """The user's input is wrong: the message names the file, the field and what is allowed."""

    exit_code = EXIT_BAD_INPUT


class UnknownNameError(InputError):
    """A name that is not in a known set; the message suggests the nearest known names."""

    def __init__(self, kind: str, name: str, known: Iterable[str], where: str = "") -> None:
        known = sorted(known)
        folded = {k.lower(): k for k in known}  # 'vLLM' or 'P5.48xlarge' is nearest 'vllm', 'p5.48xlarge'
        close = [folded[c] for c in difflib.get_close_matches(name.lower(), list(folded), n=3, cutoff=0.5)]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        prefix = f"{where}: " if where else ""
        shown = repr(name) if len(name) <= 40 else f"{name[:40]!r}..."  # from a file: 40 characters at most
        super().__init__(f"{prefix}unknown {kind} {shown}{hint} (known: {', '.join(known)})")
        self.name = name


class BackendError(EcobenchError):
    """A backend cannot give a figure for a configuration (e.g. no peak for a data type)."""

    exit_code = EXIT_BAD_INPUT


class OutputError(EcobenchError):
    """A file or run directory could not be written (read-only or full disk, permissions)."""

    exit_code = EXIT_OUTPUT


class StaleFitError(EcobenchError):
    """The stored fit predates a packaged published point (maintenance: ``python tools/refit.py``)."""

    def __init__(self, point_id: str) -> None:
        super().__init__(f"published point {point_id!r} has no stored held-out error: the stored fit "
                         "predates it; run python tools/refit.py")


class EcobenchWarning(UserWarning):
    """Something a reader of the results must know (a latency target no batch meets, an empty cost, a
    deprecated field name, a measurement that is not reproducible...): the lines ``ecobench run``
    prints on stderr, issued by the Python API as warnings of this class."""


class NoisyMeasurementError(EcobenchError):
    """Measured figures were flagged as not reproducible and the command was not told to go on."""

    exit_code = EXIT_NOISY
