"""The garbage collector during a command's start-up.

Importing the modules, building the pydantic models and reading the catalog allocate hundreds of
thousands of long-lived objects and almost no reference cycles, yet the cyclic collector ran about
130 times while `ecobench run` started, its full passes walking every one of them: 50 ms of a seed
run's 550. :func:`paused` stops it for a command; a command that goes on to long work calls
:func:`settled` once its modules and inputs are loaded, which freezes what exists (later passes skip
it) and lets collection resume. Runs and `validate` reach the same peak memory either way.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

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
