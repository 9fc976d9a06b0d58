"""Small inline-SVG charts for the HTML report: bars with a value axis and 90% whiskers, a Pareto
scatter and parity plots.

Hand-built rather than matplotlib or pygal: importing matplotlib alone takes about 0.9 s here, more
than an entire `ecobench run`. Every chart has axes with round (1-2-5) ticks and the unit in the axis
title; money is never written in scientific notation. Text is XML-escaped; nothing is fetched. Charts
scale down to the page width (viewBox), so a phone shows them whole.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from ecobench.words import fmt_num
from ecobench.words import is_number as _isnum

PALETTE = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d69e2e", "#e53e3e", "#319795", "#718096"]
BASELINE_COLOUR = "#a0aec0"
AXIS_COLOUR = "#718096"
GRID_COLOUR = "#e2e8f0"
MISSED_COLOUR = "#b3261e"
FONT_PX = 13  # every chart's text; with charts at most MAX_W wide, text stays >= 10 px at 400 px
CHAR_W = 7.2  # average width of a 13 px system-ui character, for laying out labels
DIGIT_W = 0.64 * FONT_PX  # a digit in the widest common fallback (DejaVu Sans), for spacing ticks
MAX_W = 480  # widest chart (viewBox units): a 400 px screen scales it by about 0.79


def _fmt(v: float) -> str:
    return fmt_num(v)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round ticks in steps of 1, 2 or 5 times a power of ten covering [lo, hi]."""
    if not (_isnum(lo) and _isnum(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(n, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * 0.999)
    digits = max(0, 2 - math.floor(math.log10(step)))
    k0 = math.floor(lo / step)
    k1 = math.ceil(hi / step)
    return [round(k * step, digits) for k in range(k0, k1 + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis: each power of ten from below lo to above hi, with 2 and 5 between them
    when the range spans fewer than three decades."""
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if k1 == k0:
        k1 += 1
    mults = (1, 2, 5) if k1 - k0 < 3 else (1,)
    ticks = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in mults]
    first = max(t for t in ticks if t <= lo * 1.0000001)
    last = min(t for t in ticks if t >= hi * 0.9999999)
    return [t for t in ticks if first <= t <= last]


def tick_labels(ticks: Sequence[float], money: bool = False) -> list[str]:
    """Tick labels with as many decimals as the ticks' spacing needs (0, 0.5, 1.0 is '0 0.5 1'
    written with one decimal: 0.0, 0.5, 1.0); log ticks each with their own decimals."""
    steps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    even = len(steps) > 1 and max(steps) - min(steps) <= 1e-9 * max(abs(t) for t in ticks)
    if even and steps[0] > 0:
        decimals = max(0, -math.floor(math.log10(steps[0]) + 1e-9))
        return [f"{t:,.{decimals}f}" for t in ticks]
    return [f"{t:,.0f}" if abs(t) >= 1 else f"{t:.10f}".rstrip("0").rstrip(".") for t in ticks]


def axis_title(quantity: str, unit: str) -> str:
    """'energy (kWh)', or the quantity alone without a unit."""
    return f"{quantity} ({unit})" if unit else quantity


def _is_money(unit: str) -> bool:
    return unit.startswith(("USD", "$"))


def _svg_open(width: float, height: float, title: str) -> list[str]:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" style="max-width:100%;height:auto" role="img" '
            f'aria-label="{escape(title)}" font-family="system-ui,sans-serif" font-size="{FONT_PX}">',
            f'<text x="0" y="16" font-weight="600" font-size="{FONT_PX + 1}">'
            f'{escape(_fit(title, width))}</text>']


def _fit(title: str, width: float) -> str:
    """The title cut at a word with an ellipsis where it would run past the chart's width (the whole
    title stays in the chart's aria-label)."""
    room = int(width / (CHAR_W * 1.1))
    if len(title) <= room:
        return title
    cut = title[:room - 1].rsplit(" ", 1)[0]
    return cut.rstrip(":,;") + "…"


@dataclass(frozen=True)
class _Axis:
    """A linear or log mapping from data to pixels."""

    lo: float
    hi: float
    p0: float
    p1: float
    log: bool

    def __call__(self, v: float) -> float:
        if self.log:
            v = max(v, self.lo)
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return self.p0 + (self.p1 - self.p0) * f


def _axis(values: Sequence[float], p0: float, p1: float, log: bool | None = None,
          zero: bool = False) -> tuple[_Axis, list[float]]:
    """The axis and its ticks for these values; log when asked, or (log=None) when they are all
    positive and spread over more than 10x."""
    vs = [v for v in values if _isnum(v)] or [0.0, 1.0]
    lo, hi = min(vs), max(vs)
    if log is None:
        log = lo > 0 and hi / lo > 10
    if log and lo > 0:
        ticks = log_ticks(lo, hi)
        return _Axis(ticks[0], ticks[-1], p0, p1, True), ticks
    if zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi == lo:
        lo, hi = (lo - abs(lo) * 0.1 - 1e-12, hi + abs(hi) * 0.1 + 1e-12) if lo else (0.0, 1.0)
    ticks = nice_ticks(lo, hi)
    return _Axis(ticks[0], ticks[-1], p0, p1, False), ticks


def _x_axis(ax: _Axis, ticks: Sequence[float], y0: float, y1: float, title: str, money: bool) -> list[str]:
    """Vertical grid lines, tick labels under y1 and the axis title."""
    out = [f'<line x1="{ax.p0:.1f}" y1="{y1:.1f}" x2="{ax.p1:.1f}" y2="{y1:.1f}" stroke="{AXIS_COLOUR}"/>']
    labels = tick_labels(ticks, money)
    gap = abs(ax.p1 - ax.p0) / max(len(ticks) - 1, 1)
    every = math.ceil((DIGIT_W * max(len(la) for la in labels) + 12) / gap) if gap > 0 else 1
    for i, (t, label) in enumerate(zip(ticks, labels, strict=True)):
        x = ax(t)
        out += [f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y1:.1f}" stroke="{GRID_COLOUR}"/>',
                f'<line x1="{x:.1f}" y1="{y1:.1f}" x2="{x:.1f}" y2="{y1 + 4:.1f}" stroke="{AXIS_COLOUR}"/>']
        if i % max(every, 1) == 0:  # labels too close together to read: every other one (or fewer)
            out.append(f'<text class="tick" x="{x:.1f}" y="{y1 + 16:.1f}" text-anchor="middle" '
                       f'fill="#4a5568">{escape(label)}</text>')
    out.append(f'<text class="axis-title" x="{(ax.p0 + ax.p1) / 2:.1f}" y="{y1 + 32:.1f}" '
               f'text-anchor="middle" fill="#2d3748">{escape(title)}</text>')
    return out


def _y_axis(ax: _Axis, ticks: Sequence[float], x0: float, x1: float, title: str, money: bool) -> list[str]:
    """Horizontal grid lines, tick labels left of x0 and the rotated axis title."""
    out = [f'<line x1="{x0:.1f}" y1="{ax.p0:.1f}" x2="{x0:.1f}" y2="{ax.p1:.1f}" stroke="{AXIS_COLOUR}"/>']
    for t, label in zip(ticks, tick_labels(ticks, money), strict=True):
        y = ax(t)
        out += [f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="{GRID_COLOUR}"/>',
                f'<text class="tick" x="{x0 - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" fill="#4a5568">'
                f'{escape(label)}</text>']
    mid = (ax.p0 + ax.p1) / 2
    out.append(f'<text class="axis-title" x="14" y="{mid:.1f}" text-anchor="middle" fill="#2d3748" '
               f'transform="rotate(-90 14 {mid:.1f})">{escape(title)}</text>')
    return out


def _whisker_h(x_lo: float, x_hi: float, y: float, cap: float = 4.0) -> str:
    """A horizontal 90% whisker with end caps (one path element, class 'errbar')."""
    return (f'<path class="errbar" d="M{x_lo:.1f} {y:.1f}H{x_hi:.1f}M{x_lo:.1f} {y - cap:.1f}V{y + cap:.1f}'
            f'M{x_hi:.1f} {y - cap:.1f}V{y + cap:.1f}" stroke="#1a202c" stroke-width="1.2" fill="none"/>')


def _whisker_v(x: float, y_lo: float, y_hi: float, cap: float = 3.0) -> str:
    return (f'<path class="errbar" d="M{x:.1f} {y_lo:.1f}V{y_hi:.1f}M{x - cap:.1f} {y_lo:.1f}H{x + cap:.1f}'
            f'M{x - cap:.1f} {y_hi:.1f}H{x + cap:.1f}" stroke="#4a5568" stroke-width="1" fill="none"/>')



LABEL_LEFT_MAX = 180  # widest label column of a bar chart (viewBox units)
LABEL_CHARS = int((LABEL_LEFT_MAX - 14) / CHAR_W)  # characters a label line holds there


def label_lines(label: str, width: int = LABEL_CHARS) -> list[str]:
    """A bar's label on one line, or two where it is longer than the label column holds (a sweep's
    'inf1.2xlarge_bf16_eu-north-1' was cut at the SVG's left edge to "'1.2xlarge_bf16_eu-north-1",
    inf1 or inf2 unreadable): split after the '_', '-', '.' or ' ' nearest the middle whose two parts
    both fit, else at the column's width; a second line still too long ends in '…' (the full label
    is the bar's tooltip)."""
    if len(label) <= width:
        return [label]
    cuts = [i + 1 for i, c in enumerate(label[:-1]) if c in "_-. " and i + 1 <= width]
    fitting = [i for i in cuts if len(label) - i <= width]
    cut = min(fitting, key=lambda i: abs(i - len(label) / 2)) if fitting else (max(cuts) if cuts else width)
    first, rest = label[:cut], label[cut:]
    return [first, rest if len(rest) <= width else rest[:width - 1] + "…"]


def _label_svg(x: float, y: float, row: int, lines: list[str], full: str) -> str:
    """A bar's label, right-aligned at x, centred on a row of height ``row`` starting at y."""
    if len(lines) == 1:
        return f'<text x="{x}" y="{y + row / 2 + 2:.0f}" text-anchor="end">{escape(lines[0])}</text>'
    spans = "".join(f'<tspan x="{x}" y="{y + row / 2 - 3 + 14 * k:.0f}">{escape(t)}</tspan>'
                    for k, t in enumerate(lines))
    return f'<text text-anchor="end"><title>{escape(full)}</title>{spans}</text>'

def hbar(title: str, labels: Sequence[str], values: Sequence[float], unit: str,
         baseline: str | None = None, notes: Sequence[str] | None = None, width: int | None = None,
         left: int | None = None, colour: str | None = None, quantity: str | None = None,
         lows: Sequence[float | None] | None = None, highs: Sequence[float | None] | None = None,
         span: int = 320, target: float | None = None) -> str:
    """Horizontal bars, one per label, on a value axis with round ticks titled 'quantity (unit)'; the
    baseline in grey; the 90% band (lows, highs) as a whisker and in the value label; value, band and
    note at each bar's end (a note ending 'MISSES': that word in red); ``target`` a dashed line
    across the bars.
    ``width`` is kept for callers; the chart is as wide as its labels need, at most MAX_W."""
    del width
    money = _is_money(unit)
    row, top = 26, 28 if target is None else 44
    n = len(labels)
    lows = lows or [None] * n
    highs = highs or [None] * n
    texts = []
    for i, v in enumerate(values):
        lo, hi = lows[i], highs[i]
        t = f"{fmt_num(v, money)} {unit}".strip() if _isnum(v) else "no value"
        if lo is not None and hi is not None and _isnum(lo) and _isnum(hi) and hi > lo:
            t += f" ({fmt_num(lo, money)}–{fmt_num(hi, money)})"
        texts.append(t)
    full = [t + (f" {notes[i]}" if notes and notes[i] else "") for i, t in enumerate(texts)]
    wrapped = [label_lines(str(la)) for la in labels]
    row = 26 if all(len(w) == 1 for w in wrapped) else 36  # two-line labels: taller rows
    left = left or int(min(LABEL_LEFT_MAX, 14 + CHAR_W * max([len(t) for w in wrapped for t in w] + [4])))
    right = int(8 + CHAR_W * max([len(t) for t in full] + [4]))
    span = max(120, min(span, MAX_W - left - right))  # long labels: shorter bars, same overall width
    total_w = left + span + right
    plot_h = row * n
    height = top + plot_h + 44
    scale_vals = [v for v in values if _isnum(v)] + [h for h in highs if h is not None and _isnum(h)]
    scale_vals += [target] if target is not None and _isnum(target) else []
    ax, ticks = _axis(scale_vals + [0.0], left, left + span, log=False, zero=True)
    parts = _svg_open(total_w, height, title)
    parts += _x_axis(ax, ticks, top, top + plot_h, axis_title(quantity or title.lower(), unit), money)
    if target is not None and _isnum(target):
        tx = ax(target)
        anchor = "end" if tx > left + span / 2 else "start"
        parts += [f'<line class="target" x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" y2="{top + plot_h}" '
                  f'stroke="{MISSED_COLOUR}" stroke-width="1.5" stroke-dasharray="5 3"/>',
                  f'<text x="{tx:.1f}" y="{top - 8}" text-anchor="{anchor}" fill="{MISSED_COLOUR}">'
                  f'target {escape(fmt_num(target, money))} {escape(unit)}</text>']
    for i, (lab, v) in enumerate(zip(labels, values, strict=True)):
        y = top + i * row
        x0 = ax(0.0)
        end = x0 if not _isnum(v) else ax(v)
        w = abs(end - x0) if _isnum(v) else 0.0
        w = max(w, 1.0) if _isnum(v) and v != 0 else w
        fill = BASELINE_COLOUR if lab == baseline else (colour or PALETTE[i % len(PALETTE) if n <= 8 else 0])
        parts += [_label_svg(left - 6, y, row, wrapped[i], str(lab)),
                  f'<rect x="{min(x0, end):.1f}" y="{y + (row - 18) / 2:.0f}" width="{w:.1f}" height="16" '
                  f'fill="{fill}"><title>{escape(str(lab) + ": " + texts[i])}</title></rect>']
        lo, hi = lows[i], highs[i]
        label_x = max(x0, end)
        if lo is not None and hi is not None and _isnum(lo) and _isnum(hi) and hi > lo:
            parts.append(_whisker_h(ax(lo), ax(hi), y + row / 2 - 1))
            label_x = max(label_x, ax(hi))
        note = notes[i] if notes and notes[i] else ""
        missed = note.endswith("MISSES")
        head = note.removesuffix("MISSES").rstrip() if missed else note
        tail = (f" {escape(head)}" if head else "") + (
            f' <tspan fill="{MISSED_COLOUR}" font-weight="600">MISSES</tspan>' if missed else "")
        # over a target line (a latency chart's dashed target), a white halo keeps the label legible
        halo = ' stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"' \
            if target is not None and _isnum(target) else ""
        parts.append(f'<text x="{label_x + 6:.1f}" y="{y + row / 2 + 2:.0f}"{halo}>'
                     f'{escape(texts[i])}{tail}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stacked_hbar(title: str, labels: Sequence[str], parts_by_name: dict[str, Sequence[float]],
                 unit: str, width: int | None = None, quantity: str | None = None, span: int = 320) -> str:
    """Horizontal stacked bars (e.g. power per component) with a legend and a value axis."""
    del width
    money = _is_money(unit)
    n = len(labels)
    totals = [sum(vals[i] for vals in parts_by_name.values()) for i in range(n)]
    wrapped = [label_lines(str(la)) for la in labels]
    left = int(min(LABEL_LEFT_MAX, 14 + CHAR_W * max([len(t) for w in wrapped for t in w] + [4])))
    right = int(8 + CHAR_W * max([len(fmt_num(t, money) + unit) + 1 for t in totals] + [4]))
    span = max(120, min(span, MAX_W - left - right))
    total_w = left + span + right
    spots, x, ly = [], 0.0, 26.0  # the legend, wrapped onto as many lines as the width needs
    for name in parts_by_name:
        w = 16 + CHAR_W * len(name) + 14
        if x and x + w > total_w:
            x, ly = 0.0, ly + 18
        spots.append((x, ly))
        x += w
    row, top = 26 if all(len(w) == 1 for w in wrapped) else 36, int(ly + 22)
    plot_h = row * n
    height = top + plot_h + 44
    ax, ticks = _axis(totals + [0.0], left, left + span, log=False, zero=True)
    out = _svg_open(total_w, height, title)
    out += _x_axis(ax, ticks, top, top + plot_h, axis_title(quantity or title.lower(), unit), money)
    for j, (name, (x, ly)) in enumerate(zip(parts_by_name, spots, strict=True)):
        out += [f'<rect x="{x:.1f}" y="{ly:.0f}" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>',
                f'<text x="{x + 14:.1f}" y="{ly + 10:.0f}">{escape(name)}</text>']
    for i, lab in enumerate(labels):
        y = top + i * row
        out.append(_label_svg(left - 6, y, row, wrapped[i], str(lab)))
        x0 = ax(0.0)
        for j, (name, vals) in enumerate(parts_by_name.items()):
            w = ax(vals[i]) - ax(0.0)
            tip = escape(f"{name}: {fmt_num(vals[i], money)} {unit}")
            out.append(f'<rect x="{x0:.1f}" y="{y + (row - 18) / 2:.0f}" width="{w:.1f}" height="16" '
                       f'fill="{PALETTE[j % len(PALETTE)]}"><title>{tip}</title></rect>')
            x0 += w
        total = escape(fmt_num(totals[i], money) + " " + unit)
        out.append(f'<text x="{x0 + 5:.1f}" y="{y + row / 2 + 2:.0f}">{total}</text>')
    out.append("</svg>")
    return "".join(out)


def lines(title: str, series: dict[str, Sequence[float]], xlabel: str, ylabel: str,
          width: int = MAX_W, height: int = 260) -> str:
    """Line chart of several series over their index (e.g. loss curves), with both axes ticked."""
    left, right, top, bottom = 64, 12 + int(CHAR_W * max(len(n) for n in series)), 28, 48
    ys = [v for s in series.values() for v in s if _isnum(v)]
    n = max(len(s) for s in series.values())
    pw, ph = width - left - right, height - top - bottom
    xa, xt = _axis([0.0, float(max(n - 1, 1))], left, left + pw, log=False)
    ya, yt = _axis(ys, top + ph, top, log=False)
    out = _svg_open(width, height, title)
    out += _x_axis(xa, xt, top, top + ph, xlabel, False) + _y_axis(ya, yt, left, left + pw, ylabel, False)
    for j, (name, s) in enumerate(series.items()):
        pts = " ".join(f"{xa(float(i)):.1f},{ya(v):.1f}" for i, v in enumerate(s) if _isnum(v))
        colour = PALETTE[j % len(PALETTE)]
        out += [f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>',
                f'<text x="{left + pw + 8}" y="{top + 14 + 16 * j}" fill="{colour}">{escape(name)}</text>']
    out.append("</svg>")
    return "".join(out)


def pareto_mask(points: Sequence[Sequence[float]]) -> list[bool]:
    """Which points no other point dominates (every objective minimised; a point with a missing or
    NaN objective is never on the front). Duplicates of a front point are all on it."""
    import numpy as np

    from ecobench.planning.pareto import front

    ok = [i for i, p in enumerate(points) if all(_isnum(v) for v in p)]
    out = [False] * len(points)
    if ok:
        for i, on in zip(ok, front(np.array([points[i] for i in ok], dtype=float)), strict=True):
            out[i] = bool(on)
    return out


@dataclass(frozen=True)
class Point:
    """One point of a scatter: where it is, its 90% bands, and how it is drawn."""

    label: str
    x: float
    y: float
    x_low: float | None = None
    x_high: float | None = None
    y_low: float | None = None
    y_high: float | None = None
    flag: bool | None = None  # scatter: on the front; parity: within target (None: no target)
    baseline: bool = False


def _band(p: Point, attr: str) -> tuple[float, float] | None:
    """The point's 90% band along 'x' or 'y', or None without one."""
    lo, hi = getattr(p, f"{attr}_low"), getattr(p, f"{attr}_high")
    return (float(lo), float(hi)) if _isnum(lo) and _isnum(hi) and hi > lo else None


def _marker(shape: str, x: float, y: float, fill: str, stroke: str, tip: str, cls: str,
            r: float = 4.5) -> str:
    t = f"<title>{escape(tip)}</title>"
    if shape == "circle":
        return (f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{fill}" '
                f'stroke="{stroke}">{t}</circle>')
    if shape == "diamond":
        d = r * 4 / 3
        return (f'<path class="{cls}" d="M{x:.1f} {y - d:.1f}L{x + d:.1f} {y:.1f}L{x:.1f} {y + d:.1f}'
                f'L{x - d:.1f} {y:.1f}Z" fill="{fill}" stroke="{stroke}">{t}</path>')
    if shape == "cross":
        return (f'<path class="{cls}" d="M{x - r:.1f} {y - r:.1f}L{x + r:.1f} {y + r:.1f}'
                f'M{x - r:.1f} {y + r:.1f}L{x + r:.1f} {y - r:.1f}" stroke="{stroke}" '
                f'stroke-width="2" fill="none">{t}</path>')
    return (f'<rect class="{cls}" x="{x - r + 0.5:.1f}" y="{y - r + 0.5:.1f}" width="{2 * r - 1:g}" '
            f'height="{2 * r - 1:g}" fill="{fill}" stroke="{stroke}">{t}</rect>')


def _labels(items: Sequence[tuple[float, float, str]], box: tuple[float, float, float, float],
            size: float = FONT_PX, halo: bool = False) -> list[str]:
    """Point labels placed greedily at the first of four spots beside each point that overlaps no
    label placed before it and stays inside ``box``; a label with no free spot is left out (its point
    keeps its tooltip)."""
    placed: list[tuple[float, float, float, float]] = []
    out = []
    cw = size * 0.58
    for x, y, text in items:
        w, h = cw * len(text), size
        for dx, dy, anchor in ((7, -6, "start"), (7, 13, "start"), (-7, -6, "end"), (-7, 13, "end")):
            x0 = x + dx if anchor == "start" else x + dx - w
            r = (x0, y + dy - h + 2, x0 + w, y + dy + 2)
            inside = (r[0] >= box[0] - 60 and r[2] <= box[2] + 10
                      and r[1] >= box[1] - 4 and r[3] <= box[3])
            clash = any(r[0] < q[2] and q[0] < r[2] and r[1] < q[3] and q[1] < r[3] for q in placed)
            if inside and not clash:
                placed.append(r)
                ring = ' stroke="#fff" stroke-width="3" paint-order="stroke"' if halo else ""
                out.append(f'<text class="plabel" x="{x + dx:.1f}" y="{y + dy:.1f}" text-anchor="{anchor}" '
                           f'font-size="{size:g}"{ring}>{escape(text)}</text>')
                break
    return out


def _legend(entries: Sequence[tuple[str, str, str, str]], x: float, y: float) -> list[str]:
    """One line of (shape, fill, stroke, text) entries above a plot."""
    out = []
    for shape, fill, stroke, text in entries:
        if shape == "band":
            out.append(f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="{fill}"/>')
        else:
            out.append(_marker(shape, x, y, fill, stroke, text, "legend"))
        out.append(f'<text x="{x + 9:.1f}" y="{y + 4:.1f}">{escape(text)}</text>')
        x += 9 + CHAR_W * len(text) + 14
    return out


def _margins(ticks: Sequence[float], left: int, right: int) -> tuple[int, int]:
    """Left and right margins wide enough for these ticks' labels: the y labels and the rotated axis
    title on the left, half the last x label on the right."""
    labels = tick_labels(ticks)
    return (int(max(left, DIGIT_W * max(len(la) for la in labels) + 34)),
            int(max(right, DIGIT_W * len(labels[-1]) / 2 + 6)))


def pareto_scatter(title: str, points: Sequence[Point], x_quantity: str, x_unit: str, y_quantity: str,
                   y_unit: str, width: int = MAX_W, height: int = 400, max_labels: int = 12) -> str:
    """Cost against CO2 (or any two minimised objectives): every configuration a point, those on the
    front (``flag``) filled and joined by a step line, the baseline a diamond, 90% whiskers where
    bands exist. Log axes where an axis spreads over more than 10x. All points are labelled when
    there are few; otherwise only the front and the baseline."""
    pts = [p for p in points if _isnum(p.x) and _isnum(p.y)]
    xs = [p.x for p in pts] + [v for p in pts for v in (_band(p, "x") or ())]
    ys = [p.y for p in pts] + [v for p in pts for v in (_band(p, "y") or ())]
    xs = [v for v in xs if v > 0] if min(xs, default=1) > 0 else xs
    ys = [v for v in ys if v > 0] if min(ys, default=1) > 0 else ys
    left = _margins(_axis(ys, 0, 1)[1], 74, 34)[0]
    right = _margins(_axis(xs, 0, 1)[1], 74, 34)[1]
    top, bottom = 52, 50
    pw, ph = width - left - right, height - top - bottom
    xa, xt = _axis(xs, left, left + pw)
    ya, yt = _axis(ys, top + ph, top)
    x_money = _is_money(x_unit)
    y_money = _is_money(y_unit)
    xtitle = axis_title(x_quantity, x_unit) + (", log scale" if xa.log else "")
    ytitle = axis_title(y_quantity, y_unit) + (", log scale" if ya.log else "")
    out = _svg_open(width, height, title)
    out += _x_axis(xa, xt, top, top + ph, xtitle, x_money) + _y_axis(ya, yt, left, left + pw, ytitle, y_money)
    front = sorted((p for p in pts if p.flag), key=lambda p: (p.x, p.y))
    # the step line joins the points that are also on the two-objective front (a row's own `pareto`
    # flag may count a third objective, such as time, that this plane does not show)
    mask = pareto_mask([(p.x, p.y) for p in front])
    step = [p for p, m in zip(front, mask, strict=True) if m]
    many = len(pts) > max_labels
    labelled = pts if not many else ([p for p in pts if p.baseline]
                                     + [p for p in pts if p.flag and not p.baseline])
    for p in pts:
        if p.flag or p.baseline:
            continue
        tip = f"{p.label}: {fmt_num(p.x, x_money)} {x_unit}, {fmt_num(p.y, y_money)} {y_unit}"
        if many:  # a cloud: small, light, no whiskers
            out.append(f'<circle class="point" cx="{xa(p.x):.1f}" cy="{ya(p.y):.1f}" r="2.5" fill="#cbd5e0" '
                       f'fill-opacity="0.7"><title>{escape(tip)}</title></circle>')
        else:
            out.append(_marker("circle", xa(p.x), ya(p.y), "#ffffff", "#a0aec0", tip, "point"))
    for p in labelled:  # 90% whiskers: every point when few, else the front and the baseline
        if bx := _band(p, "x"):
            out.append(_whisker_h(xa(bx[0]), xa(bx[1]), ya(p.y), 2.5))
        if by := _band(p, "y"):
            out.append(_whisker_v(xa(p.x), ya(by[0]), ya(by[1]), 2.5))
    if len(step) > 1:
        d = f"M{xa(step[0].x):.1f} {ya(step[0].y):.1f}" + "".join(
            f"H{xa(p.x):.1f}V{ya(p.y):.1f}" for p in step[1:])
        out.append(f'<path class="front" d="{d}" fill="none" stroke="{PALETTE[0]}" stroke-width="1.8" '
                   f'stroke-dasharray="5 3"/>')
    for p in pts:
        tip = (f"{p.label}: {fmt_num(p.x, x_money)} {x_unit}, {fmt_num(p.y, y_money)} {y_unit}"
               + (" (on the front)" if p.flag else ""))
        if p.baseline:
            out.append(_marker("diamond", xa(p.x), ya(p.y), BASELINE_COLOUR, "#2d3748", tip + " (baseline)",
                               "point baseline"))
        elif p.flag:
            out.append(_marker("circle", xa(p.x), ya(p.y), PALETTE[0], "#1a365d", tip, "point front"))
    out += _labels([(xa(p.x), ya(p.y), p.label) for p in labelled], (left, top, left + pw, top + ph))
    out += _legend([("circle", PALETTE[0], "#1a365d", "on the Pareto front"),
                    ("circle", "#ffffff", "#a0aec0", "dominated"),
                    ("diamond", BASELINE_COLOUR, "#2d3748", "baseline")], left, 36)
    out.append("</svg>")
    return "".join(out)


def parity(title: str, points: Sequence[Point], target_pct: float | None, quantity: str = "value",
           width: int = 460, height: int = 460, whiskers: bool = True,
           numbers: Sequence[str | None] | None = None) -> str:
    """Predicted (y) against published (x) on log-log axes with the y = x line and the target band
    (±target_pct) shaded. Within target: a filled circle; missed: a red cross; no target: a grey
    square. ``numbers[i]``, where given, is a short tag written beside point i (matching a table).
    Points that are not positive (percentage changes) cannot go on a log scale and are left out."""
    tags = list(numbers) if numbers else [None] * len(points)
    keep = [i for i, p in enumerate(points) if _isnum(p.x) and _isnum(p.y) and p.x > 0 and p.y > 0]
    pts, tags = [points[i] for i in keep], [tags[i] for i in keep]
    vals = [v for p in pts for v in (p.x, p.y)] or [1.0, 10.0]
    lo, hi = min(vals) / 1.15, max(vals) * 1.15
    left, right = _margins(_axis([lo, hi], 0, 1, log=True)[1], 70, 30)
    top, bottom = 52, 50
    pw, ph = width - left - right, height - top - bottom
    xa, ticks = _axis([lo, hi], left, left + pw, log=True)
    ya = _Axis(xa.lo, xa.hi, top + ph, top, True)
    out = _svg_open(width, height, title)
    out += _x_axis(xa, ticks, top, top + ph, f"published {quantity}, log scale", False)
    out += _y_axis(ya, ticks, left, left + pw, f"ecobench {quantity}, log scale", False)
    a, b = xa.lo, xa.hi
    clip = f"clip{zlib.crc32(title.encode()):x}"
    out.append(f'<clipPath id="{clip}"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/></clipPath>')
    if target_pct:
        f_lo, f_hi = max(1e-9, 1 - target_pct / 100), 1 + target_pct / 100
        corners = ((a, f_lo), (b, f_lo), (b, f_hi), (a, f_hi))
        poly = " ".join(f"{xa(x):.1f},{ya(x * f):.1f}" for x, f in corners)
        out.append(f'<polygon class="target-band" points="{poly}" fill="#c6f6d5" fill-opacity="0.6" '
                   f'clip-path="url(#{clip})"><title>target ±{target_pct:g}%</title></polygon>')
    out.append(f'<line class="identity" x1="{xa(a):.1f}" y1="{ya(a):.1f}" x2="{xa(b):.1f}" y2="{ya(b):.1f}" '
               f'stroke="#2d3748" stroke-width="1" stroke-dasharray="4 3"><title>y = x</title></line>')
    r = 4.5 if len(pts) <= 60 else 3.0
    tagged = []
    for i, p in enumerate(pts):
        x, y = xa(p.x), ya(p.y)
        if whiskers and (by := _band(p, "y")):
            out.append(_whisker_v(x, ya(max(by[0], a)), ya(min(by[1], b)), 2.0))
        verdict = {True: "ok", False: "MISSED", None: "no target"}[p.flag]
        tip = f"{p.label}: published {fmt_num(p.x)}, ecobench {fmt_num(p.y)} ({verdict})"
        if p.flag is False:
            out.append(_marker("cross", x, y, "none", MISSED_COLOUR, tip, "point missed", r))
        elif p.flag:
            out.append(_marker("circle", x, y, PALETTE[0], "#1a365d", tip, "point ok", r))
        else:
            out.append(_marker("square", x, y, "#cbd5e0", "#4a5568", tip, "point untargeted", r))
        if tags[i]:
            tagged.append((x, y, str(tags[i])))
    out += _labels(tagged, (left, top, left + pw, top + ph), halo=True)
    entries = [("circle", PALETTE[0], "#1a365d", "ok"), ("cross", "none", MISSED_COLOUR, "MISSED")]
    if any(p.flag is None for p in pts):
        entries.append(("square", "#cbd5e0", "#4a5568", "no target"))
    if target_pct:
        entries.append(("band", "#c6f6d5", "", f"target ±{target_pct:g}%"))
    out += _legend(entries, left, 36)
    out.append("</svg>")
    return "".join(out)
