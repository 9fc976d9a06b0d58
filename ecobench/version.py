"""ecobench's version, distribution name and the kinds of the documents it writes: the one module
every other may import for them (the package's ``__init__`` re-exports the version and name), so
nothing imports the package root."""

__version__ = "0.1.0"
# The name on PyPI (`pip install ecobench-ml`). The import package and the `ecobench` command keep
# their name; the PyPI project `ecobench` belongs to an unrelated tool.
DISTRIBUTION = "ecobench-ml"


def install_extra(extra: str) -> str:
    """How to install an extra: from PyPI, and in a checkout (the only way while ecobench-ml is not
    published: `pip install 'ecobench-ml[...]'` finds no version)."""
    return f"pip install '{DISTRIBUTION}[{extra}]', or in a checkout pip install -e '.[{extra}]'"


# The "kind" of the documents ecobench writes: a run's results.json and a committed baseline (the gate
# reads both; a scenario loader names either when it is given one as a scenario).
RESULTS_KIND = "ecobench-results"
BASELINE_KIND = "ecobench-baseline"
