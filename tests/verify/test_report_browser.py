"""The report opened in a real browser (headless Chromium from Debian's ``chromium`` package):
no network request, every <math> element laid out with a non-empty box and none wider than its
box (long formulas break over lines), every SVG visible.
Screenshots are kept as test artifacts ($TEST_ARTIFACTS, default build/test-artifacts): the
page, and one per claim in SCREENSHOT_CLAIMS scrolled to its section.

The report of every registered claim (one quick-fidelity ``check`` of the whole registry, run
once per test session by this module's fixture) is rendered and opened too.

Browser tests are skipped where Chromium or its driver is missing, except under CI (CI=true),
where .ci/run installs them and a skip would hide a broken report.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.planted import gauss_off_by_one, make_claim, planted
from verify.registry import all_claims, get
from verify.report.files import write_report
from verify.results import run_record
from verify.runner import run_claim

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
# the browser's own pages and inline data: URLs (no network involved)
BROWSER_INTERNAL = ("chrome://", "chrome-untrusted://", "devtools://", "chrome-extension://",
                    "data:")
ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))
#: Claims whose sections are screenshotted (long derivations, big figures, exact values).
SCREENSHOT_CLAIMS = ("li2.thm2", "li2.thm5", "li2.appA2", "li2.fig3", "li2.prop3", "ns.table1")
WINDOW = (1400, 1800)


def _webdriver():
    if not (CHROMIUM and DRIVER):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI must have chromium and chromedriver (.ci/run installs them)",
                        pytrace=False)
        pytest.skip("chromium/chromedriver not installed")
    return pytest.importorskip("selenium.webdriver")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    results = [run_claim(get(name)).as_record() for name in ("li2.eq2", "ns.def3.3")]
    with planted(make_claim("test.false", stated=gauss_off_by_one)) as claim:
        results.append(run_claim(claim).as_record())
    record = json.loads(json.dumps(run_record({"fidelity": "quick"}, results, started="s",
                                              finished="f")))
    return write_report(record, tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def registry_report(tmp_path_factory):
    """The report of every registered claim: one quick-fidelity ``check`` of the whole
    registry in a subprocess (2 worker processes), rendered once. Module scope, and this
    module runs on one xdist worker (--dist loadfile): once per test session."""
    out = tmp_path_factory.mktemp("registry")
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "verify", "check", "--jobs", "2", "--no-store", "--fidelity",
         "quick", "--json", str(out / "all.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=1200,
        env={**os.environ, "THEORY_VERIFY_STORE": "off"})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    checked = time.monotonic()
    record = json.loads((out / "all.json").read_text())
    index = write_report(record, out / "report")  # a failure names the claim and the step
    rendered = time.monotonic()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "registry-report-times.txt").write_text(
        f"check of {len(record['claims'])} claims: {checked - started:.1f} s\n"
        f"report (HTML + Markdown): {rendered - checked:.1f} s\n")
    return record, index


def test_every_registered_claim_renders(registry_report):
    """HTML and Markdown of the whole registry: every claim has its section, and no
    traceback or internal error is shown in either."""
    record, index = registry_report
    ids = sorted(c.id for c in all_claims())
    assert sorted(c["id"] for c in record["claims"]) == ids
    page = index.read_text(encoding="utf-8")
    markdown = (index.parent / "report.md").read_text(encoding="utf-8")
    for name, text in (("HTML", page), ("Markdown", markdown)):
        for bad in ("Traceback", "internal error"):
            assert bad not in text, f"{name} report shows {bad!r}: {_around(text, bad)}"
    for claim_id in ids:
        assert f"<section id='{claim_id}'>" in page, claim_id
        assert f"## {claim_id}:" in markdown, claim_id
    assert "{&#x27;latex&#x27;" not in page and "{'latex'" not in markdown


def _around(text: str, needle: str, width: int = 300) -> str:
    i = text.index(needle)
    start = max(text.rfind("<section id=", 0, i), text.rfind("\n## ", 0, i), i - width)
    return text[start: i + width]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    webdriver = _webdriver()
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 f"--window-size={WINDOW[0]},{WINDOW[1]}",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield driver
    driver.quit()


def _check_page(browser, index: Path) -> None:
    """Open ``index``: no network request; with every <details> opened, every <math> has a
    layout box, fractions are stacked, no <math> is wider than its box, every SVG is visible
    and nothing is wider than the window. Failures name the claim's section."""
    url = index.resolve().as_uri()
    fetched = _fetched(browser, url)
    assert fetched <= {url}, f"the page fetched {sorted(fetched - {url})}"
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = true);")

    boxes = browser.execute_script(
        "return Array.from(document.querySelectorAll('math')).map(m => {"
        "const r = m.getBoundingClientRect(), s = m.closest('section');"
        "return [r.width, r.height, (s ? s.id : '') + ': '"
        "  + Array.from(m.textContent).slice(0, 80).join('')];});")  # whole characters
    assert len(boxes) > 10
    empty = [text for w, h, text in boxes if not (w > 0 and h > 0)]
    assert not empty, f"{len(empty)} <math> elements without a layout box, e.g. {empty[:3]}"
    # MathML laid out as math, not as inline text: a fraction is taller than its numerator
    stacked = browser.execute_script(
        "const f = document.querySelector('mfrac'); if (!f) return null;"
        "return [f.getBoundingClientRect().height, f.firstElementChild"
        ".getBoundingClientRect().height];")
    assert stacked is None or stacked[0] > 1.5 * stacked[1]

    svgs = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg')).map(s => {"
        "const r = s.getBoundingClientRect(), st = getComputedStyle(s), c = s.closest('section');"
        "return [r.width, r.height, st.visibility, st.display, c ? c.id : ''];});")
    assert svgs, "the report has plots"
    hidden = [sec for w, h, vis, disp, sec in svgs
              if not (w > 0 and h > 0 and vis == "visible" and disp != "none")]
    assert not hidden, f"{len(hidden)} SVGs not visible, in {sorted(set(hidden))}"

    # no formula wider than its box (a statement's, a table cell's, a step's): long ones
    # break over lines, so none is cut at the box's edge or scrolls
    clipped = browser.execute_script(
        "return Array.from(document.querySelectorAll('math')).map(m => {"
        "let box = m.parentElement;"
        "while (getComputedStyle(box).display.startsWith('inline')) box = box.parentElement;"
        "const r = m.getBoundingClientRect(), b = box.getBoundingClientRect(),"
        "  st = getComputedStyle(box), s = m.closest('section');"
        "const right = b.right - parseFloat(st.paddingRight) - parseFloat(st.borderRightWidth);"
        "return [r.left + Math.max(r.width, m.scrollWidth) - right,"
        "  (s ? s.id : 'summary') + ': ' + Array.from(m.textContent).slice(0, 60).join('')];})"
        ".filter(([over]) => over > 1).map(([over, text]) => Math.round(over) + ' px: ' + text);")
    assert not clipped, (f"{len(clipped)} <math> elements wider than their box at "
                         f"{WINDOW[0]} px, e.g. {clipped[:5]}")

    # nothing wider than the window, outside a box that scrolls (long formulas, LaTeX)
    wide = browser.execute_script(
        "const w = document.documentElement.clientWidth;"
        "const scrolls = el => { for (let p = el.parentElement; p && p !== document.body;"
        "  p = p.parentElement) if (getComputedStyle(p).overflowX !== 'visible') return true;"
        "  return false; };"
        "return Array.from(document.querySelectorAll('body *'))"
        ".filter(e => e.getBoundingClientRect().right > w + 1 && !scrolls(e))"
        ".map(e => (e.closest('section') || {id: 'summary'}).id + ' ' + e.tagName);")
    assert not wide, (f"{len(wide)} elements wider than the {WINDOW[0]} px window, in "
                      f"{sorted(set(wide))[:10]}")


def test_report_renders_in_chromium(report, browser):
    _check_page(browser, report)
    browser.get(report.resolve().as_uri())  # as a reader first sees it: derivations folded
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


def test_every_registered_claim_in_chromium(registry_report, browser):
    """The whole registry's report in Chromium, and a screenshot of the sections of
    SCREENSHOT_CLAIMS (as a reader first sees them: derivations folded)."""
    _, index = registry_report
    _check_page(browser, index)
    browser.refresh()  # as a reader first sees it: derivations folded
    _wait_loaded(browser, len(registry_report[0]["claims"]))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for claim_id in SCREENSHOT_CLAIMS:
        assert browser.execute_script(
            "const s = document.getElementById(arguments[0]); if (!s) return false;"
            "s.scrollIntoView(); return true;", claim_id), claim_id
        shot = ARTIFACTS / f"report-{claim_id}.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


def _wait_loaded(browser, sections: int, timeout: float = 120) -> None:
    """Wait until the page has loaded with its ``sections`` claim sections (a reload of a
    large page can return before it is parsed)."""
    deadline = time.monotonic() + timeout
    while browser.execute_script(
            "return document.readyState !== 'complete' || "
            "document.querySelectorAll('section').length < arguments[0];", sections):
        assert time.monotonic() < deadline, "the page did not finish loading"
        time.sleep(0.2)


def _fetched(browser, url: str) -> set[str]:
    browser.get_log("performance")  # drop what came before
    browser.get(url)
    requests = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    return {m["params"]["request"]["url"] for m in requests
            if m["method"] == "Network.requestWillBeSent"
            and not m["params"]["request"]["url"].startswith(BROWSER_INTERNAL)}


def test_the_network_check_sees_a_page_that_fetches(browser, tmp_path):
    page = tmp_path / "leaky.html"
    page.write_text("<!DOCTYPE html><img src='http://192.0.2.1/x.png'>")
    assert "http://192.0.2.1/x.png" in _fetched(browser, page.resolve().as_uri())
