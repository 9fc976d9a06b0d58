"""Rewrite README.md's generated tables (scenario fields, input bounds) from the code, which the
tests compare them with. Usage: python tools/readme_tables.py"""

from __future__ import annotations

from pathlib import Path

from ecobench.bounds import RANGES
from ecobench.scenario.model import describe_fields

README = Path(__file__).resolve().parents[1] / "README.md"


def replace_table(text: str, header: str, rows: list[str]) -> str:
    start = text.index(header)
    end = text.index("\n\n", start)
    return text[:start] + "\n".join([header, "|" + "---|" * header.count(" | ") + "---|", *rows]) + text[end:]


def main() -> None:
    text = README.read_text(encoding="utf-8")
    text = replace_table(text, "| field | default | meaning |",
                         [f"| `{p}` | {d} | {h} |" for p, d, h in describe_fields()])
    text = replace_table(text, "| field | lowest | highest | unit |",
                         [f"| {r.what} | {r.low} | {r.high} | {r.unit} |" for r in RANGES])
    README.write_text(text, encoding="utf-8")
    print(f"rewrote the field and bounds tables of {README}")


if __name__ == "__main__":
    main()
