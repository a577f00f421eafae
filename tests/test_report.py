"""hbl report: one HTML file that needs nothing else, checked in a real headless browser (Debian's
chromium driven by playwright): it loads without a console error or a request past the file, a
click on a header sorts the table by that column (again: the other way), every figure is drawn."""
import re
import shutil

import pytest

from helpers import hbl

pytest.importorskip("matplotlib")

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def run(*args):
    return hbl(*args)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    run("compare", "--trace", "bundled:mds_0", "--trace", "bundled:hm_1", "--trace", "bundled:wdev_1", "--hss",
        "perf,cost", "--policies", "fast-only,oracle,lru,cde,harmonia", "--seeds", "2", "--quiet",
        "--output", str(d / "small.json"))
    out = run("report", str(d / "small.json"), "-o", str(d / "report.html")).stdout
    assert out.strip() == "report written to %s" % (d / "report.html")
    return d / "report.html"


def test_self_contained(page_file):
    text = page_file.read_text()
    # namespaces (xmlns="http://www.w3.org/2000/svg") are names, not fetches; nothing else may leave the file
    assert not re.search(r"""(?:src|href|url)\s*[=(]\s*["']?(?:https?:)?//""", text)
    assert "<link" not in text and "<script src" not in text and "@import" not in text
    assert text.count("<svg") == 3 and text.count("<table") == 4      # 2 HSS: figures per HSS + geomean; 2 tables each


def _chromium():
    for name in CHROMIUM:
        path = shutil.which(name)
        if path:
            return path
    return None


def test_in_a_headless_browser(page_file):
    path = _chromium()
    if path is None:
        print("no chromium on PATH (scripts/bootstrap.sh installs Debian's): the browser test is skipped")
        pytest.skip("no chromium on PATH (scripts/bootstrap.sh installs Debian's)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright is not installed (pip install playwright; bootstrap.sh does): the browser test is skipped")
        pytest.skip("playwright is not installed (pip install playwright; scripts/bootstrap.sh does)")
    url = page_file.as_uri()
    errors, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url, wait_until="load")
            assert errors == [] and requests == [url]

            table = page.locator("table.workloads").first
            heads = table.locator("thead th").all_inner_texts()
            col = heads.index("harmonia")
            values = lambda: [float(v) for v in table.locator("tbody tr").evaluate_all(
                "(rows, c) => rows.map(r => r.cells[c].getAttribute('data-v'))", col)]
            names = lambda: table.locator("tbody tr td:first-child").all_inner_texts()
            before = values()
            assert len(before) == 3 and before != sorted(before)     # the run's order is not by harmonia
            table.locator("thead th").nth(col).click()
            assert values() == sorted(before)
            assert table.locator("thead th").nth(col).get_attribute("aria-sort") == "ascending"
            table.locator("thead th").nth(col).click()
            assert values() == sorted(before, reverse=True)
            table.locator("thead th").nth(0).click()
            assert names() == sorted(names())

            figures = page.locator("figure svg")
            assert figures.count() == 3
            for i in range(figures.count()):
                box = figures.nth(i).bounding_box()
                assert box and box["width"] > 100 and box["height"] > 100
                assert figures.nth(i).locator("path").count() > 50     # drawn: axes, glyphs, markers
            assert errors == []
        finally:
            browser.close()
