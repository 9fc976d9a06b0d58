"""Small inline-SVG charts for the HTML report.

Hand-built rather than matplotlib: importing matplotlib alone takes about 0.9 s here, more than
an entire `ecobench run`, whose budget is under twice pandas' import time. Text is XML-escaped;
nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d69e2e", "#e53e3e", "#319795", "#718096"]
BASELINE_COLOUR = "#a0aec0"


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def hbar(title: str, labels: Sequence[str], values: Sequence[float], unit: str,
         baseline: str | None = None, notes: Sequence[str] | None = None, width: int = 520,
         left: int = 130, colour: str | None = None) -> str:
    """Horizontal bars, one per label; the baseline in grey; value (and note) at each bar's end."""
    row, top = 26, 28
    height = top + row * len(labels) + 8
    vmax = max([v for v in values if v == v] + [1e-12])
    span = width - left - 150
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}" font-family="system-ui,sans-serif" font-size="12">',
             f'<text x="0" y="16" font-weight="600" font-size="13">{escape(title)}</text>']
    for i, (lab, v) in enumerate(zip(labels, values, strict=True)):
        y = top + i * row
        w = 0 if v != v else max(1.0, span * v / vmax)
        fill = BASELINE_COLOUR if lab == baseline else (colour or PALETTE[i % len(PALETTE)])
        note = f" {notes[i]}" if notes and notes[i] else ""
        parts += [f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{escape(lab)}</text>',
                  f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" fill="{fill}"/>',
                  f'<text x="{left + w + 5:.1f}" y="{y + 15}">{escape(_fmt(v) + " " + unit + note)}</text>']
    parts.append("</svg>")
    return "".join(parts)


def stacked_hbar(title: str, labels: Sequence[str], parts_by_name: dict[str, Sequence[float]],
                 unit: str, width: int = 620) -> str:
    """Horizontal stacked bars (e.g. power per component) with a legend."""
    row, left, top = 26, 130, 48
    height = top + row * len(labels) + 8
    totals = [sum(vals[i] for vals in parts_by_name.values()) for i in range(len(labels))]
    vmax = max(totals + [1e-12])
    span = width - left - 90
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}" font-family="system-ui,sans-serif" font-size="12">',
           f'<text x="0" y="16" font-weight="600" font-size="13">{escape(title)}</text>']
    x = left
    for j, name in enumerate(parts_by_name):
        out += [f'<rect x="{x}" y="26" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>',
                f'<text x="{x + 14}" y="35">{escape(name)}</text>']
        x += 16 + 7 * len(name) + 14
    for i, lab in enumerate(labels):
        y = top + i * row
        out.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{escape(lab)}</text>')
        x0 = float(left)
        for j, vals in enumerate(parts_by_name.values()):
            w = span * vals[i] / vmax
            out.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" '
                       f'fill="{PALETTE[j % len(PALETTE)]}"><title>{escape(f"{_fmt(vals[i])} {unit}")}'
                       f'</title></rect>')
            x0 += w
        out.append(f'<text x="{x0 + 5:.1f}" y="{y + 15}">{escape(_fmt(totals[i]) + " " + unit)}</text>')
    out.append("</svg>")
    return "".join(out)


def lines(title: str, series: dict[str, Sequence[float]], xlabel: str, ylabel: str,
          width: int = 620, height: int = 260) -> str:
    """Line chart of several series over their index (e.g. loss curves)."""
    left, right, top, bottom = 50, 110, 28, 34
    ys = [v for s in series.values() for v in s]
    lo, hi = min(ys), max(ys)
    hi = hi if hi > lo else lo + 1
    n = max(len(s) for s in series.values())
    pw, ph = width - left - right, height - top - bottom
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}" font-family="system-ui,sans-serif" font-size="12">',
           f'<text x="0" y="16" font-weight="600" font-size="13">{escape(title)}</text>',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#cbd5e0"/>',
           f'<text x="{left}" y="{height - 8}">{escape(xlabel)} (0–{n - 1})</text>',
           f'<text x="4" y="{top + 10}">{escape(_fmt(hi))}</text>',
           f'<text x="4" y="{top + ph}">{escape(_fmt(lo))}</text>',
           f'<text x="{left + pw / 2}" y="{height - 8}">{escape(ylabel)}</text>']
    for j, (name, s) in enumerate(series.items()):
        pts = " ".join(f"{left + pw * i / max(n - 1, 1):.1f},{top + ph * (1 - (v - lo) / (hi - lo)):.1f}"
                       for i, v in enumerate(s))
        colour = PALETTE[j % len(PALETTE)]
        out += [f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>',
                f'<text x="{left + pw + 8}" y="{top + 14 + 16 * j}" fill="{colour}">{escape(name)}</text>']
    out.append("</svg>")
    return "".join(out)
