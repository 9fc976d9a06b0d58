"""One catalog instance and its accelerator as a readable table (``ecobench catalog INSTANCE``): a
line per figure with a numbered source, the sources listed below.

A figure's source is the nearest provenance: ``<figure>_source`` beside it (``max_zero_stage_source``),
else its mapping's ``source`` or ``<prefix>_source`` where no field is named ``<prefix>``
(``spec_source``), else the enclosing mapping's. ``as_of``, ``inferred_from`` and ``note`` (or with
the same prefix) go with their source.
"""

from __future__ import annotations

from typing import Any

_PROVENANCE = ("source", "as_of", "inferred_from", "note")


def _provenance(d: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """prefix -> {source, as_of, ...} of the provenance fields of mapping ``d`` ('' for the plain
    ones, 'spec_' for spec_source, ...); a prefix without a ``source`` field is no provenance (its
    ``cpu_power_note`` is a figure)."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in d.items():
        for what in _PROVENANCE:
            if key == what or key.endswith(f"_{what}"):
                out.setdefault(key[:-len(what)], {})[what] = value
                break
    return {prefix: p for prefix, p in out.items() if "source" in p}


def _owns(prefix: str, figure: str) -> bool:
    """Whether provenance ``prefix`` ('max_zero_stage_', 'tdp_') is that of ``figure`` alone."""
    return bool(prefix) and (figure == prefix[:-1] or figure.startswith(prefix))


def _source_text(p: dict[str, Any]) -> str:
    """'source (as of X; inferred from: Y; note: Z)', the parts given."""
    extra = [f"as of {p['as_of']}" if p.get("as_of") else "",
             f"inferred from: {p['inferred_from']}" if p.get("inferred_from") else "",
             f"note: {p['note']}" if p.get("note") else ""]
    extra = [e for e in extra if e]
    return str(p["source"]) + (f" ({'; '.join(extra)})" if extra else "")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list | tuple):
        return ", ".join(map(_value, v))
    return str(v)


def figure_rows(d: dict[str, Any], sources: list[str], where: str = "",
                mark: int | None = None) -> list[tuple[str, str, int | None]]:
    """(figure path, value, source number) of every figure of ``d`` given (None and empty lists left
    out), in order;
    ``sources`` gathers the source texts (a source's number is its index + 1)."""
    def number(p: dict[str, Any]) -> int | None:
        if not p.get("source"):
            return None
        text = _source_text(p)
        if text not in sources:
            sources.append(text)
        return sources.index(text) + 1

    prov = _provenance(d)
    hidden = {prefix + what for prefix, p in prov.items() for what in p}
    figures = [k for k in d if k not in hidden]
    level = [number(p) for prefix, p in prov.items() if not any(_owns(prefix, f) for f in figures)]
    mark = next((m for m in level if m is not None), mark)
    rows: list[tuple[str, str, int | None]] = []
    for key in figures:
        v, path = d[key], f"{where}.{key}" if where else key
        own = [number(p) for prefix, p in prov.items() if _owns(prefix, key)]
        m = next((o for o in own if o is not None), mark)
        if isinstance(v, dict):
            rows += figure_rows(v, sources, path, m)
        elif isinstance(v, list | tuple) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                rows += figure_rows(x, sources, f"{path}[{i}]", m)
        elif v is not None and not (isinstance(v, list | tuple) and not v):
            rows.append((path, _value(v), m))
    return rows


def _wrapped(text: str, first: str, width: int | None) -> list[str]:
    """``first`` + ``text``, its words wrapped at ``width`` under the text's start (a link or any
    word longer than the line is never split); one line when ``width`` is None."""
    import textwrap

    if width is None or len(first) + len(text) <= width:
        return [first + text]
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=" " * len(first),
                         break_long_words=False, break_on_hyphens=False) or [first]


def instance_table(doc: dict[str, Any], width: int | None = None) -> str:
    """``{"instance": ..., "accelerator": ...}`` (the catalog's records) as a line per figure,
    ``figure  [source]  value``, and the numbered sources below; with ``width`` (a terminal's), long
    values and sources are wrapped under their column."""
    sources: list[str] = []
    rows = figure_rows({k: v for k, v in doc.items() if v is not None}, sources)
    figure_width = max(len(f) for f, _, _ in rows)
    mark_width = max(len("source"), len(f"[{len(sources)}]"))
    lines = [f"{'figure':<{figure_width}}  {'source':<{mark_width}}  value"]
    for f, v, m in rows:
        lines += _wrapped(v, f"{f:<{figure_width}}  {f'[{m}]' if m else '':<{mark_width}}  ", width)
    lines += ["", "sources:"]
    for i, src in enumerate(sources, 1):
        lines += _wrapped(src, f"[{i}] ", width)
    return "\n".join(lines)
