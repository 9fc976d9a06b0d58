"""The example scenarios shipped in the package (``ecobench/examples/``; ``scenarios/`` in a checkout
is a link to it), for ``ecobench examples``: list them, or write one and the files it reads into a
folder, so that ``ecobench run DIR/NAME.yaml`` works from a pip install."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from ecobench.errors import InputError, UnknownNameError
from ecobench.io.yamlio import load_packaged

__all__ = ["describe", "names", "referenced", "text", "write"]


def _folder() -> Traversable:
    return resources.files("ecobench") / "examples"


def names() -> list[str]:
    """Every packaged example's name (its file name without ``.yaml``), sorted."""
    return sorted(f.name.removesuffix(".yaml") for f in _folder().iterdir() if f.name.endswith(".yaml"))


def _source(name: str) -> Traversable:
    if name not in names():
        raise UnknownNameError("example", name, names())
    return _folder() / f"{name}.yaml"


def text(name: str) -> str:
    """The example's YAML, as shipped."""
    return _source(name).read_text(encoding="utf-8")


def describe(name: str) -> str:
    """One line about an example: its description's first sentence, else its first comment line."""
    text = _source(name).read_text(encoding="utf-8")
    desc = " ".join(str(load_packaged(text).get("description") or "").split())
    if desc:
        return desc.split(". ", 1)[0].rstrip(".") + "."
    comment = next((line for line in text.splitlines() if line.startswith("#")), "")
    return comment.lstrip("# ").strip()


def _strings(v: object) -> list[str]:
    if isinstance(v, dict):
        return [s for x in v.values() for s in _strings(x)]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    return [v] if isinstance(v, str) else []


def referenced(name: str) -> list[str]:
    """The packaged files an example reads (a config.json, a lengths or profile CSV, ...): each of
    its values that names a file beside it, as the path relative to the scenario file."""
    doc = load_packaged(_source(name).read_text(encoding="utf-8"))
    return sorted({s for s in _strings(doc) if _is_packaged_file(s)})


def _is_packaged_file(s: str) -> bool:
    """``s`` names a file in the examples folder (a description or an id is not a path: False)."""
    if not s or ".." in Path(s).parts or Path(s).is_absolute():
        return False
    try:
        return (_folder() / s).is_file()
    except (OSError, ValueError):  # a name too long, a NUL: not a file
        return False


def write(name: str, to: Path) -> list[Path]:
    """Write ``name``.yaml and the files it reads into ``to`` (created if need be) and return the
    paths written. Nothing is written when any of them exists: bad input, never an overwrite."""
    from ecobench.io.rundir import check_folder, make_folder, write_bytes_atomic

    given = f"--to {to}"
    files = [f"{name}.yaml", *referenced(name)]  # _source(name) first: an unknown name says so
    for rel in files:
        target = to / rel
        check_folder(target.parent, given)
        if target.exists() or target.is_symlink():
            raise InputError(f"{given}: {target} already exists; not overwritten (remove it or write the "
                             "example to another folder)")
    for rel in files:
        make_folder((to / rel).parent, given)
        write_bytes_atomic(to / rel, (_folder() / rel).read_bytes())
    return [to / rel for rel in files]
