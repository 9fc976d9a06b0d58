"""The one way ecobench reads a user's file: a regular file only, under a size cap, and JSON under
depth, value-count and number-size caps.

Every file a user names goes through :func:`read_bytes` (scenarios, HF configs, load-profile CSVs,
results and baseline files, Neuron sysfs files): a FIFO, a device (``/dev/zero``), a socket or a
directory is refused before a byte is read, so nothing blocks or grows without bound; a path with a
NUL byte or a symlink loop is bad input, not a crash. Errors name the file and the cap, and never
echo more of the file than :func:`snippet` allows (40 printable characters).
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from ecobench.errors import InputError
from ecobench.words import a

__all__ = ["MAX_JSON_DEPTH", "MAX_JSON_INT_DIGITS", "MAX_JSON_VALUES", "MAX_SNIPPET_CHARS", "check_path",
           "load_json", "read_bytes", "read_text", "resolve_path", "snippet"]

MAX_JSON_DEPTH = 64  # a results file nests 5 deep (rows[].samples{}.metric[]); a config.json 3
MAX_JSON_VALUES = 5_000_000  # values in one JSON document (a 10,000-row results.json: about 1.5M)
MAX_JSON_INT_DIGITS = 40  # 2**128 has 39 digits; a longer integer is no figure ecobench reads
MAX_SNIPPET_CHARS = 40  # at most this much of a file is ever echoed in an error

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def snippet(text: str, limit: int = MAX_SNIPPET_CHARS) -> str:
    """At most ``limit`` characters of ``text`` from a file, control characters escaped, in single
    quotes; escaped once: a backslash in the text is shown as it is (``'12\\34'`` for ``12\\34``, not
    ``repr``'s doubled one)."""
    from ecobench.io.textsafe import terminal

    short = text[:limit]
    shown = terminal(short, keep_newlines=False)
    return f"'{shown}'" + ("..." if len(text) > limit else "")


def _show(p: Path | str) -> str:
    """A path for a message: a NUL or control character is escaped, a very long path shortened."""
    from ecobench.io.textsafe import terminal

    s = terminal(str(p), keep_newlines=False)
    return s if len(s) <= 300 else s[:150] + "..." + s[-100:]


def check_path(text: str, where: str) -> None:
    """Refuse a path no file system can hold (a NUL byte) or longer than 4,096 bytes, before
    anything resolves it."""
    if "\x00" in text:
        raise InputError(f"{where}: {_show(text)}: a path may not contain a NUL byte")
    if len(text.encode("utf-8", "surrogatepass")) > 4096:
        raise InputError(f"{where}: a path of {len(text):,} characters; at most 4,096 bytes")


def resolve_path(path: Path, where: str) -> Path:
    """``path.resolve()``, with a symlink loop (RuntimeError before Python 3.13) or an unusable
    path as bad input naming ``where``."""
    try:
        return path.resolve()
    except (RuntimeError, OSError, ValueError) as exc:
        raise InputError(f"{where}: {_show(path)}: cannot be resolved ({exc.__class__.__name__}: "
                         f"{'a symlink loop' if isinstance(exc, RuntimeError) else exc})") from None


def read_bytes(path: str | Path, max_bytes: int, what: str) -> bytes:
    """The content of a regular file of at most ``max_bytes``; ``what`` names it in errors."""
    p = Path(path)
    if "\x00" in str(p):
        raise InputError(f"{_show(p)}: a {what} path may not contain a NUL byte")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{_show(p)}: no such {what} file" if what == "scenario"
                         else f"{_show(p)}: no such file (the {what})") from None
    except OSError as exc:
        raise InputError(f"{_show(p)}: cannot read {what} ({exc.strerror or exc})") from None
    except ValueError as exc:  # a path the OS cannot represent
        raise InputError(f"{_show(p)}: not a usable {what} path ({exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise InputError(f"{_show(p)}: is {kind}; give a regular {what} file")
        if st.st_size > max_bytes:
            raise InputError(f"{_show(p)}: {st.st_size:,} bytes; {a(what)} may be at most "
                             f"{max_bytes:,} bytes")
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise InputError(f"{_show(p)}: grew past {max_bytes:,} bytes while being read "
                                 f"({a(what)} may be at most {max_bytes:,} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"{_show(p)}: cannot read {what} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_text(path: str | Path, max_bytes: int, what: str) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a byte-order mark dropped)."""
    data = read_bytes(path, max_bytes, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{_show(path)}: {a(what)} must be UTF-8 text ({exc.reason} at byte "
                         f"{exc.start})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-')):,} digits; at most {MAX_JSON_INT_DIGITS}")
    return int(text)


def _float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"the number {snippet(text)} is too large for a 64-bit float")
    return v


def _check_shape(doc: Any, max_depth: int, max_values: int) -> str | None:
    """What is wrong with the shape of a parsed document (None: nothing), without recursion."""
    stack = [(doc, 1)]
    values = 0
    while stack:
        node, depth = stack.pop()
        values += 1
        if values > max_values:
            return f"more than {max_values:,} values"
        if isinstance(node, dict | list):
            if depth > max_depth:
                return f"nested more than {max_depth} levels deep"
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children)
    return None


def load_json(path: str | Path, what: str, max_bytes: int, *, max_depth: int = MAX_JSON_DEPTH,
              max_values: int = MAX_JSON_VALUES) -> Any:
    """Parse a JSON file under the caps: size, nesting, value count, integer digits; no NaN,
    Infinity or overflowing numbers. Errors name the file and the cap."""
    p = Path(path)
    text = read_text(p, max_bytes, what)
    if not text.strip():
        raise InputError(f"{_show(p)}: an empty file; allowed: the {what} as JSON")
    try:
        doc = json.loads(text, parse_constant=_no_constant, parse_int=_int, parse_float=_float)
    except RecursionError:
        raise InputError(f"{_show(p)}: nested too deeply to be {a(what)} (at most {max_depth} "
                         "levels)") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise InputError(f"{_show(p)}: not a valid {what} JSON file ({exc})") from None
    if problem := _check_shape(doc, max_depth, max_values):
        raise InputError(f"{_show(p)}: {problem}; allowed in {a(what)}: at most {max_depth} levels and "
                         f"{max_values:,} values")
    return doc
