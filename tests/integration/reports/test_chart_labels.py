"""Bar labels longer than a chart's label column (a sweep's config ids) were drawn right-aligned past
the SVG's left edge and cut: 'inf1.2xlarge_bf16_eu-north-1' read "'1.2xlarge_bf16_eu-north-1", so
inf1 and inf2 could not be told apart. They now wrap onto two lines inside the chart."""

import re

import pytest

from ecobench.reports import charts

SWEEP_IDS = ["base", "inf1.2xlarge_bf16_eu-north-1", "inf2.xlarge_fp16_ap-southeast-2",
             "g4dn.xlarge_fp16_us-east-1"]


def _labels(svg: str) -> list[tuple[float, list[str]]]:
    """Each right-aligned label: its x and its lines (one <text>, or <tspan>s)."""
    out = []
    for m in re.finditer(r'<text([^>]*)text-anchor="end"[^>]*>(.*?)</text>', svg, re.S):
        body = re.sub(r"<title>.*?</title>", "", m.group(2))
        spans = re.findall(r'<tspan x="([\d.]+)"[^>]*>([^<]*)</tspan>', body)
        if spans:
            out.append((float(spans[0][0]), [t for _, t in spans]))
        else:
            out.append((float(re.search(r'x="([\d.]+)"', m.group(1)).group(1)), [body]))
    return out


@pytest.mark.parametrize("draw", [
    lambda ids: charts.hbar("Energy", ids, [1.0 + i for i in range(len(ids))], "kWh", ids[0]),
    lambda ids: charts.stacked_hbar("Power", ids, {"a": [1.0] * len(ids), "b": [2.0] * len(ids)}, "W")])
def test_long_bar_labels_stay_inside_the_chart_and_whole(draw):
    svg = draw(SWEEP_IDS)
    labels = [lab for lab in _labels(svg) if lab[1] != ["target"]]
    assert len(labels) == len(SWEEP_IDS)
    for (x, lines), full in zip(labels, SWEEP_IDS, strict=True):
        assert "".join(lines) == full  # nothing dropped: inf1 vs inf2 readable
        for line in lines:
            assert x - charts.CHAR_W * len(line) >= 0, (full, line)  # starts inside the SVG


def test_short_labels_keep_one_line_and_the_old_layout():
    svg = charts.hbar("Energy", ["inf2", "p5"], [1.0, 2.0], "kWh", "p5")
    assert "<tspan" not in svg
    assert re.search(r'<rect x="[\d.]+" y="32" width="[\d.]+" height="16"', svg)  # row 26, top 28


def test_label_lines_split_at_a_separator_near_the_middle():
    assert charts.label_lines("inf1.2xlarge_bf16_eu-north-1") == ["inf1.2xlarge_", "bf16_eu-north-1"]
    assert charts.label_lines("p5") == ["p5"]
    long = "x" * 60
    first, second = charts.label_lines(long)
    assert len(first) <= charts.LABEL_CHARS and second.endswith("…") and len(second) <= charts.LABEL_CHARS


def test_value_labels_over_a_target_line_carry_a_white_halo():
    """'12.5 ms (4.93–34.7) meets' ran across the red dashed 50 ms target line in llama3_8b_chat's TPOT
    chart, the line striking through the figures."""
    svg = charts.hbar("TPOT", ["p5", "g6e"], [12.5, 42.4], "ms", "p5", ["meets", "meets"],
                      lows=[4.93, 20.9], highs=[34.7, 83.4], target=50.0)
    values = re.findall(r'<text x="[\d.]+" y="\d+"([^>]*)>[\d.]+ ms', svg)
    assert len(values) == 2 and all('paint-order="stroke"' in v and 'stroke="#fff"' in v for v in values)
    plain = charts.hbar("Energy", ["p5", "g6e"], [1.0, 2.0], "kWh", "p5")
    assert "paint-order" not in plain  # no target: as before
