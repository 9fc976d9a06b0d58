"""Rewrite docs/results.md (the results data dictionary) and docs/schemas/*.schema.json from the code,
which the tests compare them with. Usage: python tools/results_docs.py"""

from __future__ import annotations

from pathlib import Path

from ecobench.reports.schemas import dump, results_markdown, results_schema, scenario_schema

DOCS = Path(__file__).resolve().parents[1] / "docs"


def generated() -> dict[Path, str]:
    """Each generated file and its text."""
    return {DOCS / "results.md": results_markdown(),
            DOCS / "schemas" / "results.schema.json": dump(results_schema()),
            DOCS / "schemas" / "scenario.schema.json": dump(scenario_schema())}


def main() -> None:
    for path, text in generated().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
