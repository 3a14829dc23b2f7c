"""Real browser, every page of the registry: it renders (charts drawn, formulas typeset, every number in its cell,
nothing cut, nothing failing behind the screen) and, on every step page, a picked entry then shows what the link it
writes opens; it is usable on a 390 px phone.

The same server, browser and helpers as tests/app/test_browser.py (imported from it), started for this file on its
own: the test command runs test files on one worker process per core (scripts/test.sh), and these per-page tests are
most of the browser's time, so they run beside the rest of the browser tests instead of after them.
"""

from __future__ import annotations

import pytest
import test_browser
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from test_browser import (
    PAGES,
    assert_charts_and_formulas_render,
    assert_every_chart_fits_its_column,
    assert_every_number_fits_its_cell,
    assert_no_exception,
    assert_no_label_is_cut,
    assert_nothing_fails_behind_the_screen,
    new_page,
    open_registered_page,
    phone_check,
    save_screenshot,
    settle,
    wait_for_app_run,
)

from attention_core import registry

pytestmark = pytest.mark.browser

#: The URL paths of the step pages whose walk-through is built from the settings (the model pages': a model's head).
_FRAGMENT_PATHS = frozenset("/" + p.url_path for p in registry.PAGES
                            if p.stages and p.key not in ("trained_model", "modern_lm"))
assert len(_FRAGMENT_PATHS) >= 17 and _FRAGMENT_PATHS <= {path for path, _ in PAGES}, sorted(_FRAGMENT_PATHS)

# This file's own server (module-scoped), browser and page per test: test_browser.py's fixtures.
app_url, browser, page = test_browser.app_url, test_browser.browser, test_browser.page


@pytest.mark.parametrize(("path", "title"), PAGES, ids=[p.strip("/") or "overview" for p, _ in PAGES])
def test_page_renders(page: Page, app_url: str, path: str, title: str):
    """The page renders, with nothing in the browser's console but Streamlit's deep-link 404s (no error, no warning:
    :func:`assert_nothing_fails_behind_the_screen`); on a page whose step-through reruns alone, a picked entry then
    shows what its link opens (:func:`_assert_a_picked_entry_is_what_the_link_opens`, on the page this test opened:
    one page load less for each of the 17 step pages in the suite's run), and the console stays quiet."""
    open_registered_page(page, app_url, path, title)
    assert_no_exception(page)
    assert_charts_and_formulas_render(page)
    assert_every_number_fits_its_cell(page)
    assert_every_chart_fits_its_column(page)
    assert_no_label_is_cut(page)
    assert_nothing_fails_behind_the_screen(page, app_url, path)
    assert save_screenshot(page, "page-" + (path.strip("/") or "overview")).stat().st_size > 0
    if path in _FRAGMENT_PATHS and not page.locator(".ae-stepper").count():  # the element's: test_browser_stepper
        _assert_a_picked_entry_is_what_the_link_opens(page)
        assert_nothing_fails_behind_the_screen(page, app_url, path)  # the pick's run and the link's page too


# A formula wider than its box says so (ui/layout.py): "scroll →" under it, while it is scrolled to its start; a
# formula that fits has no cue and no fade. The cue is the ::after of the formula's line, drawn by layout alone; where
# the box's scroll timeline runs, its right edge fades out too (the mask's --cut-right). A timeline that Chromium left
# inactive on a box that scrolls (seen twice in ~20 runs of the suite, /backward and /dropout) leaves the formula
# unfaded: the cue must show all the same, which is what the student needs. Only Streamlit's formulas (st.latex, in
# stMarkdown): the step-through element's scroll in their own box and a wide entry is a part a line
# (tests/app/test_browser_stepper.py). Boxes in a closed expander are skipped:
# Chromium lays them out (a width, at times wider than their box) but does not show them (checkVisibility() is false;
# the width alone let one through once, on two workers). ``agrees``: the box shows what its width asks for.
# ``animations``: each scroll-driven animation's state and progress (null: an inactive timeline) and its timeline.
# ``over`` (_OVER): by how much the formula's line and the box's 2 px of end padding exceed the room Streamlit gives the
# box (its stMarkdown element's content width: 100cqw in ui/layout.py), in the unrounded CSS px the cue is drawn from;
# the cue shows past 0.5 px. Past 1.5 px the formula is cut: the box must scroll and show the cue. Under -0.5 px it
# fits: neither a cue nor a fade. Within a pixel of the cue's threshold the box's scroll width, in whole pixels, may
# round either way, and at most a pixel of blank padding is out of view: either is right there.
_OVER = """(box) => {
  const room = box.closest('[data-testid="stMarkdown"]'), edges = getComputedStyle(room);
  const roomWidth = room.getBoundingClientRect().width - ['paddingLeft', 'paddingRight', 'borderLeftWidth',
                                                          'borderRightWidth'].reduce((sum, e) => sum + parseFloat(edges[e]), 0);
  return box.querySelector('.katex-html').getBoundingClientRect().width + 2 - roomWidth;
}"""
_FORMULA_CUES = """() => [...document.querySelectorAll('[data-testid="stMarkdown"] .katex-display')]
  .filter(box => box.checkVisibility() && box.getBoundingClientRect().width > 0 && box.scrollLeft === 0)
  .map(box => {
    const line = box.querySelector('.katex-html');
    const cue = getComputedStyle(line, '::after');
    const animations = document.getAnimations().filter(a => a.effect?.target === box);
    const over = (OVER)(box);
    const f = {formula: box.querySelector('annotation')?.textContent.slice(0, 60) || box.innerText.slice(0, 60),
               over: Math.round(over * 100) / 100, wider: over > 1.5, fits: over < -0.5,
               widths: [box.scrollWidth, box.clientWidth],
               cue: cue.content, cue_size: [parseFloat(cue.width) || 0, parseFloat(cue.height) || 0],
               cue_opacity: parseFloat(cue.opacity),
               fade: parseFloat(getComputedStyle(box).getPropertyValue('--cut-right')) || 0,
               animations: animations.map(a =>
                 `${a.animationName}${a.effect.pseudoElement || ''} ${a.playState} at ${a.effect.getComputedTiming().progress}`
                 + ` on ${a.timeline?.source === box ? 'its own scroll' : a.timeline?.constructor.name}`)};
    const timeline_runs = animations.some(a => a.effect.getComputedTiming().progress !== null);
    f.agrees = f.wider ? box.scrollWidth > box.clientWidth && f.cue.includes('scroll →')
                         && f.cue_size[0] >= box.clientWidth - 2 && f.cue_size[1] > 0 && f.cue_opacity > 0
                         && (f.fade > 0 || !timeline_runs)
             : f.fits ? f.cue_size[1] === 0 && f.fade === 0 : true;
    return f;
  })""".replace("OVER", _OVER)

# The formula boxes whose formula is cut (``over`` past 1.5 px, as in _FORMULA_CUES) but that do not scroll (see
# test_every_page_is_usable_on_a_phone).
_STALE_FORMULA_BOXES = """() => [...document.querySelectorAll('[data-testid="stMarkdown"] .katex-display')]
  .filter(box => box.checkVisibility() && box.scrollWidth <= box.clientWidth && (OVER)(box) > 1.5)""".replace(
    "OVER", _OVER)

# On a touch screen Streamlit shows a table's toolbar all the time, above the table: what text it covers (a caption,
# a label, a line of Markdown outside its own table). Only text one sees counts: a closed expander's content keeps a
# box there at times (the Tokens page's vocabulary, 195 px tall) but shows nothing.
_TOOLBAR_OVER_TEXT = """() => {
  const covered = [];
  const texts = [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stMarkdownContainer"],'
                 + ' [data-testid="stCaptionContainer"], [data-testid="stWidgetLabel"], h1, h2, h3)')]
    .filter(text => text.innerText.trim() && text.checkVisibility({opacityProperty: true, visibilityProperty: true}));
  for (const table of document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')) {
    const bar = table.closest('[data-testid="stElementContainer"]').querySelector('[data-testid="stElementToolbar"]');
    if (!bar || parseFloat(getComputedStyle(bar).opacity) === 0) continue;
    const b = bar.getBoundingClientRect();
    for (const text of texts) {
      const t = text.getBoundingClientRect();
      if (t.width && t.height && t.bottom > b.top + 1 && t.top < b.bottom - 1 && t.right > b.left + 1
          && t.left < b.right - 1) covered.push(text.innerText.slice(0, 60));
    }
  }
  return covered;
}"""


@pytest.mark.parametrize(("path", "title"), PAGES, ids=[p.strip("/") or "overview" for p, _ in PAGES])
def test_every_page_is_usable_on_a_phone(browser: Browser, app_url: str, path: str, title: str):
    """At 390 px on a touch screen: nothing is cut off without a way to scroll to it, a formula wider than its box
    shows that it scrolls, no table's toolbar covers text, and the stepper and the explained entry are there. Each
    page's phone screenshot goes to test-artifacts/phone-*.png."""
    with new_page(browser, 390, 844, phone=True) as page:
        page.goto(app_url + path)
        wait_for_app_run(page)
        expect(page.locator('[data-testid="stSidebarNavLink"][aria-current="page"]')).to_contain_text(title)
        expect(page.locator("h1").first).to_be_visible()
        result = phone_check(page)  # once the tables' and the charts' code is loaded and every chart is drawn
        assert result["cut"] == [], f"{path}: cut off at 390 px with no way to scroll: {result['cut']}"
        assert result["page"] <= 1, f"{path}: the page scrolls sideways by {result['page']} px"
        # the cue and a scroll timeline follow a box's new width (a late font, a chart drawn above) on the next frame:
        # wait until every box agrees with its width on three frames in a row, for up to 20 s (5 s were too few once,
        # with the suite on two workers beside this browser), then check and name the ones that do not. Once in a
        # fresh clone's run Chromium kept a box's scroll width at its width for the whole 20 s while the formula inside
        # was 35 px wider (the cue, drawn from the same layout, was right): the box could not be scrolled. Not seen in
        # 156 loads since, nor with the formula's fonts held back. Such a box is laid out again once (display none,
        # then back) and must then scroll.
        settle(page, f"({_FORMULA_CUES})().every(f => f.agrees)", _STALE_FORMULA_BOXES)
        for formula in page.evaluate(_FORMULA_CUES):
            assert formula["agrees"], f"{path}: " + ("a formula cut with no cue (or not scrolling)" if formula["wider"]
                                                     else "a cue on a formula that fits") + f": {formula}"
        covered = page.evaluate(_TOOLBAR_OVER_TEXT)
        assert not covered, f"{path}: a table's toolbar covers {covered}"
        if page.get_by_role("button", name="Next ▶").count():
            expect(page.get_by_role("button", name="Next ▶")).to_be_visible()
            expect(page.get_by_text("Explain this entry").first).to_be_attached()
        assert_no_exception(page)
        save_screenshot(page, f"phone-{path.strip('/') or 'overview'}", width=390)


#: What the step-through shows: the main area's text and every chart's text (numbers, labels, titles, legends).
_SHOWN_TEXT = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const charts = [...main.querySelectorAll('.vega-embed svg')].map(svg => svg.textContent);
  return main.innerText + '\\n' + charts.join('\\n');
}"""


#: Click the first option of the open list that is not ``before`` (the current row) and return its text, or null while
#: the list shows none.
_PICK_ANOTHER_OPTION = """before => {
  const option = [...document.querySelectorAll('[role="option"]')].find(o => o.innerText !== before);
  if (!option) return null;
  option.click();
  return option.innerText;
}"""


def _settled_text(page: Page, attempts: int = 20) -> str:
    """:data:`_SHOWN_TEXT` once two captures a few animation frames apart agree (Vega draws its charts after the
    app's script has finished)."""
    frames = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done())))"
    text = page.evaluate(_SHOWN_TEXT)
    for _attempt in range(attempts):
        page.evaluate(frames)
        again = page.evaluate(_SHOWN_TEXT)
        if again == text:
            return text
        text = again
    return text


def _assert_a_picked_entry_is_what_the_link_opens(page: Page) -> None:
    """Picking another row reruns only the step-through's fragment, with the walk-through built before the pick.
    Whatever it draws must be what a whole page opened from the same link draws: every panel, formula and number
    (the backward pages' softmax Jacobian stayed on the old row). ``page``: a step page, as opened."""
    row = page.get_by_role("combobox", name="Row", exact=True)
    for _step in range(8):  # to the first step with an explained entry
        if row.count():
            break
        page.get_by_role("button", name="Next ▶").click()
        wait_for_app_run(page)
    before, url = row.input_value(), page.url
    for attempt in range(3):  # a click and ArrowDown open the list; once in a run on two workers they did not
        row.click()
        row.press("ArrowDown")
        try:
            # find another row's option and click it in one step of the page: read first and clicked after, the list
            # was read while still being drawn (no other row, in a fresh clone's run on two workers), and once an
            # option seen listed was gone when its text was read. The click is the option's own event, wherever
            # the list is drawn (a click at the option's place failed for a minute under load, the list drawn past
            # the screen's edge: "element is outside of the viewport").
            other = page.wait_for_function(_PICK_ANOTHER_OPTION, arg=before, timeout=10_000).json_value()
            break
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
            row.press("Escape")
    expect(row).to_have_value(other)
    page.wait_for_url(lambda now: now != url)  # the fragment run writes the entry into the link last
    wait_for_app_run(page)
    chosen, link = row.input_value(), page.url
    charts = page.locator('[data-testid="stMain"] .vega-embed svg')
    drawn = charts.count()
    picked = _settled_text(page)
    page.goto(link)  # a new session from the link the pick wrote: the whole page, built for that entry
    wait_for_app_run(page)
    expect(row).to_have_value(chosen)
    expect(charts).to_have_count(drawn)
    wait_for_app_run(page)
    assert_no_exception(page)
    assert _settled_text(page) == picked
