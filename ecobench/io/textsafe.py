"""Text from files (scenarios, results, baselines) made safe for where it is shown.

- ``terminal``: control and format characters (ANSI escapes, bidi overrides, NUL...) shown as
  ``\\xNN`` / ``\\uNNNN`` instead of being interpreted by the terminal.
- ``markdown``: no markup at all: every ASCII punctuation character backslash-escaped (CommonMark
  allows it for all of them), ``& < >`` as entities, line breaks as spaces; so a string cannot add
  a heading, a link, an image, a mention or a table cell.
- ``xml``: characters XML 1.0 does not allow removed (ElementTree escapes ``& < > "`` itself).
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata

__all__ = ["markdown", "terminal", "xml"]

_KEEP = {"\n", "\t"}
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_PUNCT = set(string.punctuation) - set(_MD_ENTITIES)


@functools.cache
def _xml_invalid() -> re.Pattern[str]:
    """XML 1.0 Char production: tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF
    (compiled on first use: 5 ms, and most commands never write XML)."""
    return re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape_char(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def _is_control(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") and c not in _KEEP


def terminal(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with control and format characters made visible (newlines kept unless told)."""
    out = "".join(_escape_char(c) if _is_control(c) else c for c in text)
    return out if keep_newlines else out.replace("\n", " ").replace("\t", " ")


def markdown(text: str) -> str:
    """``text`` as inert markdown (one line, no markup), for tables and summaries."""
    out = []
    for c in terminal(text, keep_newlines=False):
        if c in _MD_ENTITIES:
            out.append(_MD_ENTITIES[c])
        elif c in _MD_PUNCT:
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


def xml(text: str) -> str:
    """``text`` with the characters XML 1.0 forbids shown as escapes, so the document stays valid."""
    return _xml_invalid().sub(lambda m: _escape_char(m.group()), text)
