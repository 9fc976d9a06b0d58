"""``python -m ecobench``.

Until :func:`ecobench.cli.entry` installs its own handling, SIGINT and SIGTERM end the process at
once with one line (no ``KeyboardInterrupt`` traceback while the modules load)."""

import _signal  # the C module: `signal`'s own import (its enum conversion) is itself a window
import os


def _starting(signum: int, frame: object) -> None:
    os.write(2, b"ecobench: stopped by a signal while starting; nothing was written\n")
    os._exit(128 + signum)


_signal.signal(_signal.SIGINT, _starting)
_signal.signal(_signal.SIGTERM, _starting)

from ecobench.cli import entry  # noqa: E402 - after the handlers

entry()
