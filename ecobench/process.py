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

__all__ = ["Terminated", "deferred_signals", "exit_on_signal", "interrupted", "note_output", "out_of_memory",
           "paused", "reset_outputs", "settled", "sigint_raises", "sigterm_raises", "silence_stdout",
           "terminated", "written"]


class Terminated(BaseException):  # noqa: N818 - named for the signal, like KeyboardInterrupt
    """The process received SIGTERM."""


_TERMINATED = threading.Event()  # SIGTERM arrived (a library may have swallowed the Terminated)


def terminated() -> bool:
    """Whether SIGTERM arrived inside :func:`sigterm_raises`: a library that turns every exception
    into its own (pydantic building a schema while the signal lands) must not make it a bug report."""
    return _TERMINATED.is_set()


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: let the clean-up finish
    _TERMINATED.set()
    raise Terminated


_INTERRUPTED = threading.Event()  # SIGINT arrived (a library may have swallowed the KeyboardInterrupt)


def interrupted() -> bool:
    """Whether SIGINT arrived after :func:`sigint_raises`: as :func:`terminated`, for Ctrl-C."""
    return _INTERRUPTED.is_set()


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    _INTERRUPTED.set()
    raise KeyboardInterrupt


def sigint_raises() -> None:
    """From here on SIGINT raises ``KeyboardInterrupt`` (as Python's default handler) and is
    remembered, so :func:`interrupted` tells a bug from a Ctrl-C that pydantic wrapped in its own
    ``SchemaError`` while building a model."""
    _INTERRUPTED.clear()
    signal.signal(signal.SIGINT, _raise_interrupted)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _TERMINATED.clear()
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


# What this command has written (or is renaming into place): the message after a signal says
# exactly which of them are complete. A path is noted just before its rename; it is reported
# only if it exists when the message is written (a rename that did not happen left nothing).
_outputs: list[tuple[str, str]] = []  # (kind, path): kind "run" for a run directory, "file" else


def note_output(path: str | os.PathLike[str], kind: str = "file") -> None:
    """Record an output about to be renamed (or appended) into place."""
    _outputs.append((kind, os.fspath(path)))


def reset_outputs() -> None:
    """Forget the outputs of an earlier command (a caller may run several in one process)."""
    _outputs.clear()


def written() -> str:
    """What was written, for the message after a signal: the complete run directory, the files,
    or that nothing was."""
    done = [(k, p) for k, p in _outputs if os.path.lexists(p)]
    runs = [p for k, p in done if k == "run"]
    files = [p for k, p in done if k != "run" and not any(p.startswith(r + os.sep) for r in runs)]
    parts = [f"the run is complete at {r}" for r in runs]
    if files:
        parts.append("wrote " + ", ".join(files))
    return "; ".join(parts) + "; nothing else was written" if parts else "nothing was written"


_SIGNAL_NAMES = {signal.SIGINT: ("interrupted", "SIGINT"), signal.SIGTERM: ("terminated", "SIGTERM")}


_phase = ["while starting"]  # when a signal that exit_on_signal's handler gets came


def exit_on_signal(when: str) -> None:
    """Until a command's own handling takes over (or after it ends), SIGINT and SIGTERM end the
    process at once with one line saying ``when`` it came and what was written: no
    ``KeyboardInterrupt`` traceback while the modules load, none while the interpreter tears down.
    Only for the ``ecobench`` process itself (:func:`ecobench.cli.entry`)."""
    _phase[0] = when
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        word, name = _SIGNAL_NAMES.get(signum, ("stopped", str(signum)))
        with contextlib.suppress(Exception):
            os.write(2, f"ecobench: {word} ({name}) {_phase[0]}; {written()}\n".encode())
        os._exit(128 + signum)

    for sig in _SIGNAL_NAMES:
        signal.signal(sig, handler)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """SIGINT and SIGTERM held back while the block runs (removing a half-written run directory),
    then delivered: the clean-up finishes, the signal is still honoured. (The handlers are swapped
    rather than the signals masked: a signal sent to the process may land on another thread.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    previous = {sig: signal.signal(sig, hold) for sig in _SIGNAL_NAMES}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held:
            signal.raise_signal(held[0])


# Built at import: when memory has run out, writing this allocates nothing.
_OOM = (b"ecobench: error: out of memory (MemoryError); this is a bug in ecobench: a bound on the "
        b"input should have refused it first. Exit code 3.\n")


def out_of_memory(exiting: bool) -> None:
    """Report a MemoryError with no allocation; when the process is ``exiting``, end it at once
    (exit 3), with no clean-up that could allocate or spin."""
    with contextlib.suppress(BaseException):
        os.write(2, _OOM)
    if exiting:
        os._exit(3)
