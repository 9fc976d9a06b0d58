"""ecobench: what an ML workload costs in instances, energy, money and CO2 on each kind of hardware.

The Python API (``ecobench.api``): :func:`run` evaluates a scenario (a YAML path or a dict) into a
:class:`Result` (``.rows``, ``.recommendations``, ``.to_pandas()``, ``.write(directory)``);
:func:`load_run` reads a run directory back; :func:`serve_point` gives one static batch's serving
figures, as ``ecobench serve-point``. Errors derive from ``ecobench.errors.EcobenchError``.
They are imported on first use, so ``import ecobench`` stays cheap.
"""

from __future__ import annotations

from ecobench.version import DISTRIBUTION, __version__

__all__ = ["DISTRIBUTION", "Result", "__version__", "load_run", "run", "serve_point"]

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing would double this import's cost
if TYPE_CHECKING:
    from typing import Any

    from ecobench.api import Result, load_run, run, serve_point

_API = ("Result", "load_run", "run", "serve_point")


def __getattr__(name: str) -> Any:
    """The API's names, imported from ``ecobench.api`` when first used; ``ecobench.errors`` too, so
    ``except ecobench.errors.InputError`` works after a bare ``import ecobench``."""
    if name == "errors":
        import importlib

        return importlib.import_module("ecobench.errors")
    if name in _API:
        from ecobench import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ecobench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API) | {"errors"})
