"""Whether the `ecobench` import package in use is ecobench-ml's, checked when the command starts.

PyPI's `ecobench` is an unrelated project whose import package is also `ecobench`. Installed beside
ecobench-ml (`pip install ecobench` by mistake), the two write into one ``site-packages/ecobench/``
and whichever was installed last wins file by file. :func:`foreign_install` says so in one line:

- a distribution named ``ecobench`` is installed (its metadata found on ``sys.path``), or
- the package directory in use sits in an environment with no ecobench-ml, or holds top-level files
  that ecobench-ml's ``RECORD`` does not list, or an ``__init__.py`` whose hash differs from it.

A source checkout or an editable install (no package files in ``RECORD``), and a checkout placed
ahead of an installed copy on the path, are deliberate and pass. The check reads two small metadata
files and lists one directory; it never scans every installed distribution
(``importlib.metadata.packages_distributions`` would read them all): about 1 ms.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

from ecobench.version import DISTRIBUTION

__all__ = ["foreign_install"]

_FIX = ("`pip uninstall ecobench`, then reinstall ecobench-ml (`pip install --force-reinstall "
        "ecobench-ml`, or from its repository)")


def _record_hash(path: Path) -> str:
    import base64
    import hashlib

    digest = hashlib.sha256(path.read_bytes()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def foreign_install(package_dir: Path | None = None) -> str | None:
    """One line naming a different distribution installed under the ``ecobench`` import name, or
    None. ``package_dir``: the ``ecobench`` package directory in use (default: this one)."""
    here = (package_dir or Path(__file__).parent).resolve()
    try:
        other = metadata.distribution("ecobench")
    except metadata.PackageNotFoundError:
        pass
    else:
        return (f"another distribution, 'ecobench' {other.version} (an unrelated PyPI project), is installed "
                f"under the same import name 'ecobench' as ecobench-ml; its files may replace ours: {_FIX}")
    try:
        ours = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        if {"site-packages", "dist-packages"} & set(here.parts):
            return (f"the 'ecobench' package in {here} does not belong to ecobench-ml (not installed in this "
                    f"environment); {_FIX}")
        return None  # a source checkout on the path
    record = ours.read_text("RECORD") or ""
    listed = {}
    for line in record.splitlines():
        path, _, rest = line.partition(",")
        if path.startswith("ecobench/"):
            listed[path.split("/")[1]] = rest.partition(",")[0]
    if "__init__.py" not in listed:
        return None  # an editable install: the package is a source tree
    if Path(str(ours.locate_file("ecobench"))).resolve() != here:
        return None  # a checkout ahead of the installed copy on the path: deliberate
    try:
        names = set(os.listdir(here)) - {"__pycache__"}
        changed = listed["__init__.py"] != "" and _record_hash(here / "__init__.py") != listed["__init__.py"]
    except OSError:
        return None
    strangers = sorted(names - set(listed))
    if strangers or changed:
        what = ", ".join(strangers[:5]) + (", ..." if len(strangers) > 5 else "")
        detail = (f"files ecobench-ml {ours.version} did not install ({what})" if strangers
                  else "an __init__.py that is not ecobench-ml's")
        return f"the 'ecobench' package in {here} holds {detail}; another distribution wrote into it: {_FIX}"
    return None
