"""Real browser, as a new user walks (issue 60): a bad cell typed into X, your own sentence on a step page, a
2,000-word paste and a link carrying one, a reload; every walk ends on a working page with the way back in sight.
Desktop 1440 × 900 and a 390 px phone; each walk's screenshots go to test-artifacts/ for a human to look at.

The same server, browser and helpers as tests/app/test_browser.py (imported from it), started for this file.
"""

from __future__ import annotations

import re
import urllib.parse

import pytest
import test_browser
from playwright.sync_api import Browser, Page, expect
from test_browser import APP_RUN_MS, assert_no_exception, new_page, save_screenshot, wait_for_app_run

pytestmark = pytest.mark.browser

app_url, browser = test_browser.app_url, test_browser.browser

LONG = " ".join(f"word{i}" for i in range(2000))


def alerts(page: Page) -> str:
    return "\n".join(page.locator('[data-testid="stAlert"]').all_inner_texts())


def query(page: Page) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)


def type_into_cell(page: Page, editor, row: int, col: int, text: str) -> None:
    """Double-click a cell of a matrix editor (``row``, ``col``: 0-based data cells), type ``text`` and press Enter:
    as a learner edits it. The grid draws on a canvas: the cell is found by its position (the header row and the
    index column come first, every row as high as the header)."""
    editor.scroll_into_view_if_needed()
    box = editor.bounding_box()
    header = page.evaluate("(e) => e.querySelector('[role=columnheader]')?.getBoundingClientRect().height || 35",
                           editor.element_handle())
    index = page.evaluate("(e) => e.querySelector('[role=rowheader], [aria-colindex=\"1\"]')"
                          "?.getBoundingClientRect().width || 0", editor.element_handle()) or box["width"] * 0.08
    cols = editor.locator('[role=columnheader]').count() or 1
    width = (box["width"] - index) / max(cols - 1, 1)
    editor.dblclick(position={"x": index + width * (col + 0.5), "y": header * (row + 1.5)})
    field = page.locator("textarea.gdg-input")
    expect(field).to_be_visible()
    field.fill(text)
    field.press("Enter")
    wait_for_app_run(page)


def test_a_bad_cell_typed_into_x_is_refused_there_and_every_page_keeps_working(browser: Browser, app_url: str):
    with new_page(browser, 1440, 900) as page:
        page.goto(app_url + "/tokens")
        wait_for_app_run(page)
        editor = page.locator('[data-testid="stDataFrame"]').nth(1)  # the tokens table, then X
        # The grid is drawn on a canvas: the cell is hit by its position, which puts the first row's first cells
        # under the pointer (which of them depends on the grid's column widths: the message names it).
        type_into_cell(page, editor, 0, 0, "abc")
        message = page.locator('[data-testid="stAlert"]').filter(has_text="“abc” is not a number")
        expect(message).to_be_visible()
        expect(message).to_contain_text(re.compile(r"X row 1, column \d: “abc” is not a number, so the cell keeps "
                                                   r"−?\d\.\d+\. Type a number between −1,000,000 and 1,000,000\."))
        assert "edit_x" not in query(page)  # the link keeps the last good matrix
        save_screenshot(page, "new-user-bad-cell", width=1440)
        type_into_cell(page, editor, 0, 0, "0,5")  # a decimal comma is a number: taken, and the message goes
        expect(page.locator('[data-testid="stAlert"]').filter(has_text="is not a number")).to_have_count(0)
        assert re.fullmatch(r"0,\d,0\.5", query(page)["edit_x"][0]), query(page)
        for path in ("/self-attention", "/causal", "/multi-head"):
            page.goto(app_url + path + "?" + urllib.parse.urlencode({"edit_x": "0,0,"}))  # an old link's bad edit
            wait_for_app_run(page)
            assert_no_exception(page)
            assert not page.locator('[data-testid="stAlertContentError"]').count(), alerts(page)
            expect(page.locator('[data-testid="stAlert"]').filter(
                has_text="X row 1, column 1 was left empty, so it keeps its value from the example")).to_be_visible()
            expect(page.locator(".katex").first).to_be_visible()
        page.reload()
        wait_for_app_run(page)
        assert_no_exception(page)
        expect(page.locator("h1").first).to_be_visible()


def test_your_own_sentence_typed_on_the_step_page_keeps_d_k_and_the_seed_on_a_phone(browser: Browser, app_url: str):
    with new_page(browser, 390, 844, phone=True) as page:
        page.goto(app_url + "/self-attention?d_k=4&seed=5")
        wait_for_app_run(page)
        box = page.get_by_role("textbox", name="Sentence")
        box.fill("attention is all you need")
        box.press("Enter")
        wait_for_app_run(page)
        expect(page.locator('[data-testid="stAlert"]').filter(
            has_text="So your sentence now runs as “Your own sentence”")).to_be_visible()
        params = query(page)
        assert (params["preset"], params["d_k"], params["seed"]) == (["custom"], ["4"], ["5"])
        assert params["sentence"] == ["attention is all you need"]
        assert_no_exception(page)
        expect(page.locator(".katex").first).to_be_visible()
        save_screenshot(page, "new-user-own-sentence-phone", width=390)
        page.reload()  # the link holds it: a reload opens the same sentence and numbers
        wait_for_app_run(page)
        expect(page.get_by_role("textbox", name="Sentence")).to_have_value("attention is all you need")


@pytest.mark.parametrize("width", [1440, 390])
def test_a_2000_word_paste_and_link_are_cut_with_a_message_not_a_wall(browser: Browser, app_url: str, width: int):
    with new_page(browser, width, 900, phone=width < 500) as page:
        page.goto(app_url + "/tokens")
        wait_for_app_run(page)
        box = page.get_by_role("textbox", name="Sentence")
        box.fill(LONG)  # as a paste: the whole text at once
        box.press("Enter")
        wait_for_app_run(page)
        kept = " ".join(f"word{i}" for i in range(12))
        expect(box).to_have_value(kept)
        expect(page.locator('[data-testid="stAlert"]').filter(has_text="1,988 more words")).to_be_visible()
        save_screenshot(page, f"new-user-long-paste-{width}", width=width)
        page.goto(app_url + "/self-attention?" + urllib.parse.urlencode({"sentence": LONG}))
        wait_for_app_run(page)
        assert_no_exception(page)
        expect(page.locator('[data-testid="stAlert"]').filter(has_text="1,988 more words")).to_be_visible()
        # no wall of text: the message is at the top, its text a few lines, not the 2,000 words
        assert "word1999" not in page.locator('[data-testid="stMain"]').inner_text()
        assert page.locator('[data-testid="stAlert"]').first.bounding_box()["height"] < 400
        expect(page.locator(".katex").first).to_be_visible(timeout=APP_RUN_MS)
