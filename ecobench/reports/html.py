"""The HTML report: one self-contained file rendered from a jinja2 template (autoescaped)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2


def render(doc: dict[str, Any]) -> str:
    """Render a results document (the content of results.json) to HTML."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ecobench.reports", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined)
    return env.get_template("report.html.j2").render(
        scenario=doc["scenario"], rows=doc["rows"], meta=doc, mode=doc["mode"])


def write_html(doc: dict[str, Any], path: Path) -> None:
    path.write_text(render(doc), encoding="utf-8")
