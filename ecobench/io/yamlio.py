"""Reading user files safely: regular files only, under a size cap; YAML through libyaml's C loader
with duplicate keys rejected and nesting and alias expansion bounded; JSON with no NaN or Infinity.

Every failure is an :class:`InputError` naming the file and what is wrong, never a hang (a FIFO or a
device is refused before it is read) and never a ``RecursionError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ecobench.errors import InputError
from ecobench.io import bounded
from ecobench.io.bounded import read_bytes
from ecobench.words import a

__all__ = ["MAX_JSON_BYTES", "MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "dump_yaml",
           "load_json", "load_yaml", "read_bytes"]

MAX_YAML_BYTES = 1 << 20  # 1 MiB: the shipped scenarios are 1-2 KiB
MAX_JSON_BYTES = 64 << 20  # 64 MiB: a results.json with kernels and samples is well under 1 MiB
MAX_YAML_DEPTH = 32  # a scenario nests 4 deep (configs[].overrides...); 32 leaves room
MAX_YAML_NODES = 100_000  # after expanding aliases: stops "billion laughs" documents

# libyaml's C loader when PyYAML was built with it (the wheels are); the pure-Python one otherwise.
_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BASE_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
C_LOADER = _BASE_LOADER is not yaml.SafeLoader


def load_packaged(text: str) -> Any:
    """A data file shipped with ecobench (trusted, plain YAML), with libyaml's loader where present:
    about ten times faster than the pure-Python one, which was a tenth of a run's start-up."""
    return yaml.load(text, Loader=_BASE_LOADER)  # noqa: S506 - CSafeLoader or SafeLoader

def dump_yaml(data: Any) -> str:
    """``yaml.safe_dump(data, sort_keys=False)`` through libyaml's emitter where present (the same
    text, a tenth of the time)."""
    text: str = yaml.dump(data, Dumper=_BASE_DUMPER, sort_keys=False)
    return text


def _decode(data: bytes, p: Path, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: {a(what)} must be UTF-8 text ({exc.reason} at byte {exc.start})") from None


class _StrictLoader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, refusing a key that appears twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults`: explicit keys may override merged ones
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    "found a key that is not a scalar", key_node.start_mark) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                    key_node.start_mark)
            seen[key] = key_node
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result


def _check_shape(text: str, p: Path) -> None:
    """Refuse deep nesting and alias bombs from the event stream, before anything is built."""
    nodes = 0
    stack: list[list[Any]] = []  # per open collection: [anchor, node count at its start, deepest child]
    anchored: dict[str, tuple[int, int]] = {}  # anchor -> (values, depth) it expands to
    for ev in yaml.parse(text, Loader=_BASE_LOADER):
        if isinstance(ev, yaml.CollectionStartEvent):
            nodes += 1
            stack.append([ev.anchor, nodes, 0])
            reach = len(stack)
        elif isinstance(ev, yaml.CollectionEndEvent):
            anchor, start, child = stack.pop()
            if anchor:
                anchored[anchor] = (nodes - start + 1, child + 1)
            if stack:
                stack[-1][2] = max(stack[-1][2], child + 1)
            continue
        elif isinstance(ev, yaml.AliasEvent | yaml.ScalarEvent):
            size, depth = (anchored.get(ev.anchor or "", (1, 0)) if isinstance(ev, yaml.AliasEvent)
                           else (1, 0))
            if isinstance(ev, yaml.ScalarEvent) and ev.anchor:
                anchored[ev.anchor] = (1, 0)
            nodes += size
            if stack:
                stack[-1][2] = max(stack[-1][2], depth)
            reach = len(stack) + depth
        else:
            continue
        if reach > MAX_YAML_DEPTH:
            line = f"line {ev.start_mark.line + 1}; " if ev.start_mark else ""
            raise InputError(f"{p}: nested more than {MAX_YAML_DEPTH} levels deep ({line}a scenario "
                             "nests 4 levels)")
        if nodes > MAX_YAML_NODES:
            raise InputError(f"{p}: more than {MAX_YAML_NODES:,} values once aliases are expanded")


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _tab_hint(mark: Any, text: str) -> str:
    """What to do where the parser stopped at a tab in ``text`` (PyYAML says only 'found character
    that cannot start any token')."""
    lines = text.splitlines()
    line = lines[mark.line] if 0 <= mark.line < len(lines) else ""
    return "; it is a tab: YAML indents with spaces only" if line[mark.column:mark.column + 1] == "\t" else ""


def yaml_error(exc: yaml.YAMLError, text: str = "") -> str:
    """A parser's error on one line: ``invalid YAML at line L, column C: what (the construct it was
    reading)``; PyYAML's own text spans four lines and names the file ``<unicode string>``. ``text``:
    the document, to say when the parser stopped at a tab."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        context = f" ({exc.context} at {_at(exc.context_mark)})" if exc.context and exc.context_mark else ""
        hint = _tab_hint(exc.problem_mark, text)
        return f"invalid YAML at {_at(exc.problem_mark)}: {exc.problem}{context}{hint}"
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "\0")
        return f"invalid YAML at character {exc.position + 1}: character #x{char:04x}: {exc.reason}"
    return "invalid YAML: " + " ".join(str(exc).split())


def load_yaml(path: str | Path, what: str = "scenario") -> Any:
    """Parse a YAML file under the limits above; errors name the file and the line."""
    p = Path(path)
    text = _decode(read_bytes(p, MAX_YAML_BYTES, what), p, what)
    try:
        _check_shape(text, p)
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise InputError(f"{p}: {yaml_error(exc, text)}") from None


def load_json(path: str | Path, what: str) -> Any:
    """Parse a results or baseline JSON file under :data:`MAX_JSON_BYTES` and the caps of
    :func:`ecobench.io.bounded.load_json` (nesting, values, digits; no NaN or Infinity)."""
    return bounded.load_json(path, what, MAX_JSON_BYTES)
