"""Counted nouns and articles for messages: "1 run", "2 runs", "a scenario", "run results"."""

from __future__ import annotations


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
