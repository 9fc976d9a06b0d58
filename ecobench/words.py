"""Words and numbers for messages: counted nouns ("1 run", "2 runs"), articles ("a scenario", "run
results") and numbers for people ("19,340", never 1.934e+04)."""

from __future__ import annotations

import difflib
import math


def counted(n: float, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for exactly 1 (``1 run``, ``2 runs``, ``1,000 rows``, ``1.5 hours``)."""
    word = noun if n == 1 else (plural or noun + "s")
    return f"{n:,} {word}" if isinstance(n, int) else f"{n:,g} {word}"


def a(what: str) -> str:
    """``what`` with the indefinite article where it is one thing (``a scenario``, ``an architecture``);
    a plural name (``run results``, ``calibration points``) stands alone."""
    if what.split()[-1].endswith("s") and not what.endswith(("CSV", "ss")):
        return what
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def parsed_kind(data: object) -> str:
    """What a parsed file holds where a mapping was expected, in words: ``an empty file``, ``a list``,
    ``a single int value``."""
    if data is None:
        return "an empty file"
    return "a list" if isinstance(data, list) else f"a single {type(data).__name__} value"


def shown(text: str, width: int = 40) -> str:
    """A value as written, cut to ``width`` characters (a 400-digit integer is not repeated in full)."""
    return text if len(text) <= width else f"{text[:width - 3]}..."


def is_number(v: float | None) -> bool:
    """Whether ``v`` is a finite number (not None, NaN or infinite)."""
    return v is not None and v == v and not math.isinf(v)


def fmt_num(v: float, money: bool = False, digits: int = 3) -> str:
    """A number for people: thousands separated, ``digits`` significant figures, never 1e+05
    notation; money with cents below 100."""
    if not is_number(v):
        return "n/a"
    if v == 0:
        return "0"
    size = abs(v)
    if size >= 1000 or (money and size >= 100):
        return f"{v:,.0f}"
    if money and size >= 1:
        return f"{v:,.2f}"
    if not money and float(v).is_integer():
        return f"{v:.0f}"
    decimals = min(8, max(0, digits - 1 - math.floor(math.log10(size))))
    text = f"{v:.{decimals}f}"
    return text if money or "." not in text else text.rstrip("0").rstrip(".")


def signed_pct(v: float) -> str:
    """A change in whole percent with its sign; ``0%`` where it rounds to none (never ``-0%``)."""
    whole = round(v)
    return "0%" if whole == 0 else f"{whole:+d}%"


def close_names(name: str, allowed: list[str]) -> list[str]:
    """The allowed names nearest a misspelt ``name`` (its suggestions), case aside: ``BF16`` is
    nearest ``bf16``, which difflib alone, comparing the characters as written, finds too far."""
    folded = {a.lower(): a for a in allowed}
    if name.lower() in folded:  # the name itself, in another case: that one alone
        return [folded[name.lower()]]
    return [folded[c] for c in difflib.get_close_matches(name.lower(), list(folded), n=3, cutoff=0.6)]


def did_you_mean(name: str, allowed: list[str]) -> str:
    """'; did you mean 'a', 'b'?' for the allowed names nearest a misspelt ``name`` ('' for none): the
    hint of an unknown field, of a sweep axis that is no field, of an unknown CSV column."""
    close = close_names(name, allowed)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
