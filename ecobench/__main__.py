"""``python -m ecobench``."""

from ecobench.cli import main

raise SystemExit(main())
