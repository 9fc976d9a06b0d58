"""The process: SIGTERM handled like Ctrl-C, a closed stdout handled quietly, and the garbage
collector paused while a command starts.

SIGTERM is what ``timeout``, ``docker stop``, Kubernetes and CI cancellation send. Python's default
ends the process on the spot, so a run directory being written stays behind as a hidden temporary
directory. Here SIGTERM raises :class:`Terminated` (a ``BaseException``, like ``KeyboardInterrupt``,
so no ``except Exception`` swallows it); the code that is writing removes what it wrote and the CLI
exits with 143. Later SIGTERMs are ignored while that clean-up runs.

Garbage collection during start-up: importing the modules, building the pydantic models and reading
the catalog allocate hundreds of thousands of long-lived objects and almost no reference cycles, yet
the cyclic collector ran about 130 times while `ecobench run` started, its full passes walking every
one of them: 50 ms of a seed run's 550. :func:`paused` stops it for a command; a command that goes
on to long work calls :func:`settled` once its modules and inputs are loaded, which freezes what
exists (later passes skip it) and lets collection resume. Runs and `validate` reach the same peak
memory either way.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "paused", "settled", "sigterm_raises", "silence_stdout"]


class Terminated(BaseException):  # noqa: N818 - named for the signal, like KeyboardInterrupt
    """The process received SIGTERM."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: let the clean-up finish
    raise Terminated


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def silence_stdout() -> None:
    """Point stdout at /dev/null after its reader went away, so the final flush does not fail."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


_resume = True  # whether the collector ran before paused(): settled() turns it back on only then


@contextlib.contextmanager
def paused(exiting: bool = False) -> Iterator[None]:
    """No cyclic collection until :func:`settled` or the end of the block, which restores the
    collector's state (an in-process caller, such as a test, keeps its own). When the process
    ``exiting`` ends right after, everything is frozen instead: the interpreter's last collection at
    exit then skips it, which was another 70 ms of a seed run."""
    global _resume
    was_enabled = _resume = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if exiting:
            gc.freeze()
        else:
            gc.unfreeze()
        if was_enabled:
            gc.enable()


def settled() -> None:
    """Start-up is over: freeze the objects made so far and resume collection (if it ran before)."""
    gc.freeze()
    if _resume:
        gc.enable()
