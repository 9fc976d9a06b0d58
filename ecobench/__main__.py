"""``python -m ecobench``."""

from ecobench.cli import entry

entry()
