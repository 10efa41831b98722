"""The report opened in a real browser (headless Chromium from Debian's ``chromium`` package):
no network request, every <math> element laid out with a non-empty box, every SVG visible.
A screenshot is kept as a test artifact ($TEST_ARTIFACTS, default build/test-artifacts).

Skipped where Chromium or its driver is missing, except under CI (CI=true), where .ci/run
installs them and a skip would hide a broken report.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.planted import gauss_off_by_one, make_claim, planted
from verify.registry import get
from verify.report.files import write_report
from verify.results import run_record
from verify.runner import run_claim

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
# the browser's own pages and inline data: URLs (no network involved)
BROWSER_INTERNAL = ("chrome://", "chrome-untrusted://", "devtools://", "chrome-extension://",
                    "data:")
ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "build" /
                                "test-artifacts"))

if not (CHROMIUM and DRIVER):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("CI must have chromium and chromedriver (.ci/run installs them)",
                    pytrace=False)
    pytest.skip("chromium/chromedriver not installed", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    results = [run_claim(get(name)).as_record() for name in ("li2.eq2", "ns.def3.3")]
    with planted(make_claim("test.false", stated=gauss_off_by_one)) as claim:
        results.append(run_claim(claim).as_record())
    record = json.loads(json.dumps(run_record({"fidelity": "quick"}, results, started="s",
                                              finished="f")))
    return write_report(record, tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1280,4000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield driver
    driver.quit()


def test_report_renders_in_chromium(report, browser):
    url = report.resolve().as_uri()
    fetched = _fetched(browser, url)
    assert fetched <= {url}, f"the page fetched {sorted(fetched - {url})}"

    boxes = browser.execute_script(
        "return Array.from(document.querySelectorAll('math')).map(m => {"
        "const r = m.getBoundingClientRect(); return [r.width, r.height, m.textContent];});")
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
        "const r = s.getBoundingClientRect(), st = getComputedStyle(s);"
        "return [r.width, r.height, st.visibility, st.display];});")
    assert svgs, "the report has plots"
    assert all(w > 0 and h > 0 and vis == "visible" and disp != "none"
               for w, h, vis, disp in svgs)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


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
