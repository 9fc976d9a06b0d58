"""ecobench's version and distribution name: the one module every other may import for them (the
package's ``__init__`` re-exports both), so nothing imports the package root."""

__version__ = "0.1.0"
# The name on PyPI (`pip install ecobench-ml`). The import package and the `ecobench` command keep
# their name; the PyPI project `ecobench` belongs to an unrelated tool.
DISTRIBUTION = "ecobench-ml"
