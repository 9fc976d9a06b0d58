"""The report in a real headless Chromium: no console errors, no requests, a screenshot that shows
something. Skips without Chromium or Playwright (CI installs both)."""

import base64
import shutil
from pathlib import Path

import pytest
import yaml

from ecobench.cli import main
from tests.conftest import SCENARIOS


def _playwright_chromium() -> str | None:
    """The Chromium that `playwright install chromium` put in Playwright's own cache, if any."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    try:
        with sync_playwright() as p:
            path = p.chromium.executable_path
    except Exception:  # noqa: BLE001 - no driver or no browser: not there
        return None
    return path if path and Path(path).is_file() else None


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or _playwright_chromium()
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="no Chromium: neither Debian's chromium nor "
                                                          "Playwright's (playwright install chromium)")]
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _report(tmp_path, scenario, mutate=None):
    s = yaml.safe_load((SCENARIOS / scenario).read_text())
    if mutate:
        mutate(s)
    f = tmp_path / scenario
    f.write_text(yaml.safe_dump(s))
    out = tmp_path / scenario.removesuffix(".yaml")
    assert main(["run", str(f), "-q", "--out", str(out)]) == 0
    return out / "report.html"


def _emulated_trn1(s):
    s["configs"][0]["backend"] = "emulated"


@pytest.mark.parametrize("scenario,mutate", [("layoutlm_realtime.yaml", None),
                                             ("bert_large_pretrain.yaml", _emulated_trn1)])
def test_report_loads_clean_and_is_not_blank(tmp_path, scenario, mutate):
    sync_api = pytest.importorskip("playwright.sync_api")
    html = _report(tmp_path, scenario, mutate)
    assert html.stat().st_size < 2 * 2**20
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors, requests = [], []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(html.as_uri())
        png = page.screenshot(full_page=True)
        (tmp_path / "report.png").write_bytes(png)
        assert errors == []
        assert requests == [html.as_uri()]  # the page itself, nothing else
        assert page.locator("svg").count() >= 6
        # share of non-white pixels in the screenshot, computed in the browser from the PNG
        blank = browser.new_page()
        share = blank.evaluate("""async (src) => {
            const img = new Image(); img.src = src; await img.decode();
            const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
            const g = c.getContext('2d'); g.drawImage(img, 0, 0);
            const d = g.getImageData(0, 0, c.width, c.height).data; let ink = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i] < 240 || d[i+1] < 240 || d[i+2] < 240) ink++;
            return ink / (d.length / 4); }""", "data:image/png;base64," + base64.b64encode(png).decode())
        browser.close()
    assert share > 0.03


def _overflow_at(path, width):
    """(document width, widest element's right edge) of a page opened at this viewport width."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(path.as_uri())
        doc_w = page.evaluate("document.documentElement.scrollWidth")
        body_w = page.evaluate("document.body.scrollWidth")
        browser.close()
    return doc_w, body_w


def test_report_fits_a_400px_screen(tmp_path):
    """Tables scroll inside their own box and charts scale down: the page itself never scrolls sideways."""
    html = _report(tmp_path, "layoutlm_realtime.yaml")
    assert max(_overflow_at(html, 400)) <= 400


def test_validation_page_fits_a_400px_screen(tmp_path):
    from ecobench.reports.html import render_validation

    rows = [{"experiment": f"encoder_infer_point_with_a_long_name_{i}", "figure": "sequences_per_s",
             "mode": "holdout", "published": 100.0 + i, "ecobench": 100.0 + 3 * i, "error_pct": 2.0 * i,
             "error_points": None, "target": "±35%", "within_target": i < 15, "kind": "encoder_infer",
             "source": None, "low": None, "high": None, "in_band": None} for i in range(30)]
    page = tmp_path / "validation.html"
    page.write_text(render_validation(rows))
    assert max(_overflow_at(page, 400)) <= 400


LEGIBILITY = """() => {
    const small = [];
    for (const svg of document.querySelectorAll('svg')) {
        const box = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
        if (!box.width || !vb || !vb.width) continue;
        const scale = box.width / vb.width;
        for (const t of svg.querySelectorAll('text')) {
            const px = parseFloat(getComputedStyle(t).fontSize) * scale;
            if (px < 10) small.push([svg.getAttribute('aria-label'), t.textContent, px.toFixed(1)]);
        }
    }
    return small;
}"""
OFF_SCREEN = """(sel) => [...document.querySelectorAll(sel)].filter(e => e.getClientRects().length)
    .map(e => [e.textContent.trim().slice(0, 40), e.getBoundingClientRect().left,
               e.getBoundingClientRect().right])
    .filter(([_, l, r]) => l < 0 || r > window.innerWidth + 0.5)"""


def _at_400(path, checks):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 400, "height": 900})
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        out = {name: page.evaluate(js, arg) if arg else page.evaluate(js)
               for name, (js, arg) in checks.items()}
        out["requests"] = requests
        out["width"] = page.evaluate("document.documentElement.scrollWidth")
        browser.close()
    return out


@pytest.mark.parametrize("scenario", ["llama3_8b_chat.yaml", "llama2_7b_pretrain.yaml",
                                      "layoutlm_realtime_p99.yaml"])
def test_a_report_is_legible_at_400px(tmp_path, scenario):
    """Chart text at least 10 px on a 400 px screen; the decisions' why, the changes against the
    baseline and the cards all on screen (stacked, not scrolled away); nothing fetched."""
    html = _report(tmp_path, scenario)
    shown = "td.why, td[data-label*='Δ'], .card, .caveat, details > summary"
    got = _at_400(html, {"small": (LEGIBILITY, None), "off": (OFF_SCREEN, shown)})
    assert got["small"] == []
    assert got["off"] == []
    assert got["width"] <= 400
    assert got["requests"] == [html.as_uri()]


def test_validation_page_is_grouped_and_shows_missed_at_400px(tmp_path):
    from ecobench.reports.html import render_validation

    rows = [{"experiment": f"llm_serve_point_with_a_long_name_{i}", "figure": "ttft_ms", "mode": "holdout",
             "published": 100.0 + i, "ecobench": 100.0 + 3 * i, "error_pct": 2.0 * i, "error_points": None,
             "target": "±35%", "within_target": i < 15, "kind": "llm_serve", "source": None, "low": None,
             "high": None, "in_band": None} for i in range(30)]
    rows.append({"experiment": "all", "figure": "all", "mode": "holdout_summary", "kind": "llm_serve",
                 "count": 30, "median_abs_error_pct": 20.0, "worst_abs_error_pct": 58.0,
                 "worst": "llm_serve_point_with_a_long_name_29", "target": "median ≤ 15%, worst ≤ 35%",
                 "within_target": False})
    page = tmp_path / "validation.html"
    page.write_text(render_validation(rows))
    missed = """() => [...document.querySelectorAll('summary .bad, td.bad')]
        .filter(e => e.getClientRects().length).map(e => [e.textContent, e.getBoundingClientRect().right])"""
    got = _at_400(page, {"small": (LEGIBILITY, None), "missed": (missed, None),
                         "off": (OFF_SCREEN, "summary .bad, td.bad")})
    assert got["off"] == [] and got["small"] == []
    texts = [t for t, _ in got["missed"]]
    assert "15 MISSED" in texts and "MISSED" in texts  # the group's summary line and the holdout verdict
    assert got["width"] <= 400


# Boxes (a table that scrolls inside its own box) wider than the box, at the window's width: the
# heading above each, its content width and the box's. Written to the title, so Chromium's
# --dump-dom reads it back without Playwright.
WIDE_BOXES = """(() => { const out = [];
    for (const box of document.querySelectorAll('.scroll')) {
        if (!box.querySelector('table.stack') || box.scrollWidth <= box.clientWidth + 1) continue;
        let h = box.previousElementSibling;
        while (h && h.tagName !== 'H2') h = h.previousElementSibling;
        out.push((h ? h.textContent : '?') + ' ' + box.scrollWidth + '>' + box.clientWidth); }
    document.title = 'WIDE[' + out.join('; ') + ']'; })();"""


def _wide_boxes_at(path, width, tmp_path):
    """The stacked tables (read row by row: the comparison, energy by scope, serving plans) that do not
    fit their box at this window width, by headless Chromium's own layout."""
    import html
    import re
    import subprocess

    probe = tmp_path / f"probe_{path.parent.name}.html"
    probe.write_text(path.read_text().replace("</body>", f"<script>{WIDE_BOXES}</script></body>"))
    dom = subprocess.run([CHROMIUM, *ARGS, f"--window-size={width},900", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    m = re.search(r"<title>WIDE\[(.*?)\]</title>", dom, re.S)
    assert m is not None, "Chromium did not run the probe"
    return [w for w in html.unescape(m.group(1)).split("; ") if w]


def _late_trn1n(s):
    """gpt3_175b_deadline's trn1n as 64 instances: 1,173 h, over the 336 h deadline (a marked row)."""
    s["configs"][1]["instances"] = 64


@pytest.mark.parametrize("scenario,mutate", [("gpt3_175b_deadline.yaml", None),
                                             ("gpt3_175b_deadline.yaml", _late_trn1n),
                                             ("mixtral_train.yaml", None), ("llama2_7b_pretrain.yaml", None),
                                             ("layoutlm_realtime_p99.yaml", None),
                                             ("llama3_8b_chat.yaml", None)])
def test_row_tables_fit_a_1280px_window(tmp_path, scenario, mutate):
    """At 1280 px the comparison with the baseline lost its last column (CO2 change) to a sideways
    scroll in gpt3_175b_deadline (1,276 px in a 1,216 px box: seven-figure bands that could not wrap),
    energy by scope its draw basis (a 12rem column for the one-word power basis) and llama3_8b_chat's
    serving plans the text of 'how chosen'."""
    html = _report(tmp_path, scenario, mutate)
    assert _wide_boxes_at(html, 1280, tmp_path) == []
