"""`sieve web` in a real browser: headless Chromium (Debian's `chromium` and `chromium-driver`)
driven by Selenium. Type a query, read the cards, open a section, see an error marked; untrusted
text never runs. Each test saves a screenshot in its output folder."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="sieve web needs the web extra (starlette, uvicorn, jinja2)")
webdriver = pytest.importorskip("selenium.webdriver", reason="browser tests need selenium (pip install selenium)")
if not (shutil.which("chromium") and shutil.which("chromedriver")):
    pytest.skip("browser tests need Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)", allow_module_level=True)

from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from sieve.index.index import build_index  # noqa: E402
from sieve.web import create_app  # noqa: E402
from test_web import DOCS, EVIL, RICH, Server  # noqa: E402


@pytest.fixture(scope="module")
def site() -> Iterator[Server]:
    ix = build_index(DOCS, fields={"year": "number"})
    with Server(create_app({"news": ix})) as s:
        yield s
    ix.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(30)
    driver.implicitly_wait(10)  # a lookup right after a click or Enter waits for the next page
    yield driver
    driver.quit()


def _absent(browser: Any, by: str, what: str) -> bool:
    """No such element on the loaded page (asked without the implicit wait, which would wait it out)."""
    browser.implicitly_wait(0)
    try:
        return not browser.find_elements(by, what)
    finally:
        browser.implicitly_wait(10)


def _shot(browser: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    assert browser.save_screenshot(str(path)) and path.stat().st_size > 1000


def test_type_a_query_read_the_cards_open_a_section(site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{site.port}/")
    box = browser.find_element(By.NAME, "q")
    box.send_keys('heatwave "school closure"[section]' + Keys.ENTER)
    summary = browser.find_element(By.ID, "summary").text
    assert "1 document matches" in summary and browser.find_element(By.ID, "canonical").text == 'heatwave AND "school closure"[section]'
    card = browser.find_element(By.ID, "card-1")
    assert "Heatwave plan" in card.text and "year 2021" in card.text
    _shot(browser, tmp_path, "results")
    card.find_element(By.LINK_TEXT, "School closure").click()
    assert browser.find_element(By.ID, "heading").text == "School closure"
    assert "A school closure starts when the heatwave lasts three days." in browser.find_element(By.ID, "section").text
    _shot(browser, tmp_path, "section")
    browser.find_element(By.LINK_TEXT, "back to the results").click()
    assert browser.find_element(By.ID, "card-1")


def test_a_syntax_error_is_marked(site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{site.port}/")
    browser.find_element(By.NAME, "q").send_keys("heatwave[titel]" + Keys.ENTER)
    error = browser.find_element(By.ID, "error")
    assert "unknown field 'titel'" in error.text and "did you mean title?" in error.text
    pointer = browser.find_element(By.ID, "error-pointer").text.splitlines()
    assert pointer == ["  heatwave[titel]", "           ^"]
    _shot(browser, tmp_path, "error")


def test_documents_cannot_run_scripts(site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{site.port}/search?index=news&q=evil")
    time.sleep(0.3)
    assert browser.title != "pwned" and EVIL[:20] in browser.find_element(By.ID, "card-1").text
    with pytest.raises(NoAlertPresentException):
        _ = browser.switch_to.alert.text
    browser.get(f"http://127.0.0.1:{site.port}/doc?index=news&id=evil&section=0")
    time.sleep(0.3)
    assert browser.title != "pwned" and EVIL in browser.find_element(By.ID, "section").text
    assert _absent(browser, By.TAG_NAME, "img") and _absent(browser, By.TAG_NAME, "script")
    _shot(browser, tmp_path, "escaped")


import json  # noqa: E402

from test_runs_view import evil_record, runs  # noqa: E402,F401  (the fixture: two real eval runs and their report)
from sieve.web.runs import load_all  # noqa: E402


@pytest.fixture(scope="module")
def run_site(runs: Path) -> Iterator[Server]:  # noqa: F811
    (runs / "evil.json").write_text(json.dumps(evil_record()))
    with Server(create_app({}, runs=load_all([str(runs / "runA"), str(runs / "runB"), str(runs / "evil.json")]))) as s:
        yield s


def test_model_outputs_cannot_run_scripts(run_site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{run_site.port}/episode?run=evil&q=x")
    time.sleep(0.3)
    assert browser.title != "pwned" and EVIL in browser.find_element(By.ID, "step-1").text
    with pytest.raises(NoAlertPresentException):
        _ = browser.switch_to.alert.text
    assert _absent(browser, By.CSS_SELECTOR, "div.episode img") and _absent(browser, By.TAG_NAME, "script")
    _shot(browser, tmp_path, "escaped-run")


def test_open_a_run_step_through_a_question_see_the_gold_document(run_site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{run_site.port}/")
    browser.find_element(By.LINK_TEXT, "runA").click()
    assert browser.find_element(By.ID, "run").text == "runA"
    assert all(img.get_property("naturalWidth") > 100 for img in browser.find_elements(By.TAG_NAME, "img"))  # the report's figures load
    _shot(browser, tmp_path, "run")
    browser.find_element(By.LINK_TEXT, "q1").click()
    steps = browser.find_elements(By.CSS_SELECTOR, "div.step")
    assert len(steps) == 3 and "search(query='Fort Santiago[title]')" in steps[0].text and "fetch(sections=" in steps[1].text
    assert any(m.text == "d1" for m in browser.find_elements(By.CSS_SELECTOR, "mark.gold"))
    assert browser.find_element(By.ID, "em-1").text == "EM 1.0"
    _shot(browser, tmp_path, "episode")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()  # side by side with runB
    assert browser.find_element(By.ID, "episode-2")
    _shot(browser, tmp_path, "side-by-side")


# Issue 50: the "more" toggle, the outline beside the text, zero-hit suggestions, emphasis.
@pytest.fixture(scope="module")
def rich_site() -> Iterator[Server]:
    ix = build_index(RICH + DOCS[:2])
    with Server(create_app({"rich": ix})) as s:
        yield s
    ix.close()


def test_more_headings_open_with_a_toggle(rich_site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{rich_site.port}/search?index=rich&q=zeppelin")
    card = browser.find_element(By.ID, "card-1")
    more = card.find_element(By.CSS_SELECTOR, "details.more")
    # (a link text lookup sees only what is shown)
    hidden = more.find_element(By.XPATH, ".//a[normalize-space(.)='Part 29']")
    assert not hidden.is_displayed() and card.find_element(By.LINK_TEXT, "Part 20").is_displayed()
    _shot(browser, tmp_path, "folded")
    more.find_element(By.TAG_NAME, "summary").click()
    assert hidden.is_displayed() and more.get_attribute("open") is not None
    _shot(browser, tmp_path, "unfolded")
    hidden.click()
    assert browser.find_element(By.ID, "heading").text == "Part 29"


def test_the_outline_is_beside_the_text_and_above_it_on_a_narrow_screen(
        rich_site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{rich_site.port}/doc?index=rich&id=long&section=20")
    outline, text = browser.find_element(By.ID, "outline"), browser.find_element(By.ID, "section")
    assert outline.rect["x"] + outline.rect["width"] <= text.rect["x"]  # to its left ...
    heading = browser.find_element(By.ID, "heading")
    assert abs(outline.rect["y"] - heading.rect["y"]) < 40  # ... on the same line
    assert browser.find_element(By.CSS_SELECTOR, "#outline a.current").text == "Part 20"
    _shot(browser, tmp_path, "outline-beside")
    size = browser.get_window_size()
    try:
        browser.set_window_size(500, 900)
        browser.refresh()
        outline = browser.find_element(By.ID, "outline")
        text = browser.find_element(By.ID, "section")
        assert outline.rect["y"] + outline.rect["height"] <= text.rect["y"]  # above it
        _shot(browser, tmp_path, "outline-above")
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_a_zero_hit_query_offers_suggestions_that_lead_to_results(
        rich_site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{rich_site.port}/")
    browser.find_element(By.NAME, "q").send_keys("heatwave AND snap" + Keys.ENTER)
    box = browser.find_element(By.ID, "suggestions")
    assert "One change would admit documents" in box.text
    _shot(browser, tmp_path, "suggestions")
    box.find_element(By.LINK_TEXT, "1 without heatwave").click()
    assert browser.find_element(By.ID, "canonical").text == "snap"
    assert "Cold snap" in browser.find_element(By.ID, "card-1").text


def test_emphasis_is_styled_and_a_hostile_one_stays_text(
        rich_site: Server, browser: Any, tmp_path: Path) -> None:
    browser.get(f"http://127.0.0.1:{rich_site.port}/doc?index=rich&id=marked&section=0")
    section = browser.find_element(By.ID, "section")
    assert section.find_element(By.TAG_NAME, "em").text == "emphasis"
    assert section.find_element(By.TAG_NAME, "strong").text == "strong"
    assert "*emphasis*" not in section.text and "f(*args, **kwargs)" in section.text
    _shot(browser, tmp_path, "emphasis")
    browser.get(f"http://127.0.0.1:{rich_site.port}/doc?index=rich&id=marked&section=1")
    time.sleep(0.3)
    section = browser.find_element(By.ID, "section")
    assert section.find_element(By.TAG_NAME, "em").text == "<script>alert(1)</script>"
    assert section.find_element(By.TAG_NAME, "strong").text == "<img src=x onerror=alert(1)>"
    assert _absent(browser, By.CSS_SELECTOR, "#section script")
    assert _absent(browser, By.TAG_NAME, "img")
    with pytest.raises(NoAlertPresentException):
        _ = browser.switch_to.alert.text
