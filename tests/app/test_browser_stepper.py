"""Real browser: the step-through element (ui/stepper.py, frontend/stepper/) steps in the browser.

What AppTest cannot see: Next, Previous, the step picker, a clicked cell, the pickers and the arrow keys repaint
inside the element with no message to the server once a stage's entries are there; the link follows; a reload
opens where the learner was; KaTeX typesets from the app's own copy (nothing leaves the machine); the matrices are
tables a screen reader reads. Screenshots (desktop, projector 1920 x 1080, 390 px phone) go to test-artifacts/.

The same server, browser and helpers as tests/app/test_browser.py (imported from it), started for this file.
Every message the page sends to the server is counted in the page itself (WebSocket.send wrapped before Streamlit
loads): a count read after the element's own "after the paint" turn (two animation frames and a task) holds every
message a click sent.
"""

from __future__ import annotations

import re
import urllib.parse

import pytest
import test_browser
from playwright.sync_api import Browser, Page, expect
from test_browser import (
    APP_RUN_MS,
    ARTIFACTS,
    assert_no_exception,
    assert_nothing_fails_behind_the_screen,
    new_page,
    save_screenshot,
    wait_for_app_run,
)

pytestmark = pytest.mark.browser

app_url, browser = test_browser.app_url, test_browser.browser

TITLE = "Scaled dot-product self-attention, step by step"

COUNT_SENT = """
window.__sent = 0;
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (...args) { window.__sent += 1; return send.apply(this, args); };
"""

#: Resolves after the element's work of a click is done: its repaint, and the "need" it would send after the paint.
AFTER_THE_PAINT = """async () => {
  for (let k = 0; k < 2; k++) await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return window.__sent;
}"""


# Click ``selector`` (a setting) and wait, frame by frame, until the step shown shows new numbers: the messages the page
# sent by then and in the two frames after (read in the page: what the element sends at once is sent by then).
NEW_NUMBERS = """async (selector) => {
  const numbers = () => document.querySelector(".ae-stepper .stage:not([hidden]) .panels")?.innerText;
  const old = numbers();
  document.querySelector(selector).click();
  const start = performance.now();
  while (numbers() === old && performance.now() - start < 30000) {
    await new Promise((r) => requestAnimationFrame(r));
  }
  for (let k = 0; k < 2; k++) await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return window.__sent;
}"""


def open_element(page: Page, path: str = "/self-attention", title: str = TITLE) -> None:
    page.add_init_script(COUNT_SENT)
    page.goto(page.base_url + path)
    wait_for_app_run(page)
    expect(page.locator("h1").filter(has_text=title)).to_be_visible()
    expect(page.locator('.ae-stepper[data-ready="true"]')).to_have_count(1, timeout=APP_RUN_MS)
    settled(page)


def settled(page: Page) -> int:
    """Wait until the element's own messages (a stage's entries, asked after the paint when the learner pauses) were
    answered; the count."""
    expect(page.locator(".ae-stepper[data-prefetch]")).to_have_count(0, timeout=APP_RUN_MS)
    sent = page.evaluate(AFTER_THE_PAINT)
    wait_for_app_run(page)
    expect(page.locator(".ae-stepper .stage:not([hidden]) .loading")).to_have_count(0, timeout=APP_RUN_MS)
    return sent


def step_title(page: Page) -> str:
    return page.locator('.ae-stepper select[data-pick="stage"] option:checked').inner_text()


def shown(page: Page):
    return page.locator(".ae-stepper .stage:not([hidden])")


def query(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query).items()}


def link_has(page: Page, **fields: str) -> None:
    """The page's link comes to hold ``fields`` (name: value, a name's dot written as __): the element writes a
    click's position into it after the paint, when the browser is idle (within a second)."""
    for name, value in fields.items():
        field = urllib.parse.quote(name.replace("__", "."), safe="")
        expect(page).to_have_url(re.compile(rf"[?&]{re.escape(field)}={re.escape(urllib.parse.quote(value, safe=''))}"
                                            r"(&|$)"), timeout=APP_RUN_MS)


@pytest.fixture
def element_page(browser: Browser, app_url: str):
    with new_page(browser, 1280, 900) as page:
        page.base_url = app_url
        yield page


def test_next_previous_and_a_cell_repaint_with_no_message_to_the_server(element_page: Page):
    page = element_page
    open_element(page)
    first = step_title(page)
    number = int(re.match(r"(\d+) / 8", first)[1])
    next_button = page.get_by_role("button", name="Next ▶")
    previous = page.get_by_role("button", name="◀ Previous")

    # The page asked for its stage's entries and its neighbours'; Next to a neighbour asks for the next one in turn,
    # once: the counter sees that message (it can see one).
    before = page.evaluate("window.__sent")
    next_button.click()
    expect(page.locator('.ae-stepper select[data-pick="stage"]')).not_to_have_value(re.compile("^$"))
    assert step_title(page).startswith(f"{number + 1} / 8")
    assert settled(page) > before, "the next stage's entries were asked for"

    # Back and forth over stages already there: repainted in the browser, nothing sent.
    before = page.evaluate("window.__sent")
    for button, expected in ((previous, number), (next_button, number + 1), (previous, number)):
        button.click()
        assert step_title(page).startswith(f"{expected} / 8")
        expect(shown(page).locator(".formula .katex").first).to_be_visible()
    assert page.evaluate(AFTER_THE_PAINT) == before, "Next / Previous over loaded stages sent a message"

    # A cell of the explained matrix: framed, the pickers and the explained entry follow, nothing sent.
    cells = shown(page).locator("button.cell")
    target = cells.nth(2 * cells.evaluate_all("cs => new Set(cs.map(c => c.dataset.col)).size") + 1)  # row 3, col 2
    target.click()
    expect(target).to_have_attribute("aria-pressed", "true")
    expect(shown(page).locator('select[data-pick="row"] option:checked')).to_have_text("3 Machine")
    expect(shown(page).locator('select[data-pick="col"] option:checked')).to_have_text("2 Like")
    expect(shown(page).locator(".entry-formula .katex").filter(has_text=re.compile(r"3,2"))).to_have_count(1)
    assert page.evaluate(AFTER_THE_PAINT) == before, "a cell of a loaded stage sent a message"

    # The arrow keys move the framed cell, ] the stage.
    target.press("ArrowRight")
    expect(shown(page).locator('select[data-pick="col"] option:checked')).to_have_text("3 Machine")
    expect(cells.nth(2 * 7 + 2)).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(shown(page).locator('select[data-pick="row"] option:checked')).to_have_text("4 Learning")
    assert page.evaluate(AFTER_THE_PAINT) == before, "the arrow keys sent a message"
    link_has(page, entry_row="3", entry_col="2")  # 0-based in the link
    assert_no_exception(page)
    assert not page.js_errors and not page.outside_requests, (page.js_errors, page.outside_requests)


def test_the_link_follows_and_a_reload_opens_where_the_learner_was(element_page: Page):
    page = element_page
    open_element(page)
    page.get_by_role("combobox", name="Step", exact=True).select_option("weights")
    settled(page)
    assert step_title(page).startswith("7 / 8")
    cells = shown(page).locator("button.cell")
    cells.nth(5).click()  # row 1, column 6
    link_has(page, self_attention__stage="weights", entry_row="0", entry_col="5")
    page.reload()
    wait_for_app_run(page)
    expect(page.locator('.ae-stepper[data-ready="true"]')).to_have_count(1, timeout=APP_RUN_MS)
    assert step_title(page).startswith("7 / 8")
    expect(shown(page).locator('button.cell[aria-pressed="true"]')).to_have_attribute("data-col", "5")

    # A setting changed keeps the learner's step and cell; the numbers are new, with one script run (the entries
    # around are asked for when the learner pauses: a second message, after the paint)
    before = settled(page)
    old = shown(page).locator(".panels").inner_text()
    sent_at_paint = page.evaluate(NEW_NUMBERS, ".st-key-setting_d_k [data-testid=stNumberInputStepDown]")
    assert sent_at_paint == before + 1, "a setting changed: one message until the new numbers are painted"
    expect(shown(page).locator(".panels")).not_to_have_text(old)
    assert settled(page) == before + 2, "then the entries around, once, when the learner pauses"
    assert step_title(page).startswith("7 / 8")
    expect(shown(page).locator('button.cell[aria-pressed="true"]')).to_have_attribute("data-col", "5")
    assert_no_exception(page)


def test_katex_comes_from_the_app_and_the_matrices_are_tables(element_page: Page):
    page = element_page
    katex = []
    page.on("request", lambda request: "/katex/" in request.url and katex.append(request.url))
    open_element(page)
    # the element's KaTeX (its script, style and fonts) from the app's static folder (the header's st.latex uses
    # Streamlit's own bundle, /static/js/rehype-katex.*.js, also the app's)
    paths = {urllib.parse.urlsplit(url).path for url in katex}
    assert {"/app/static/katex/katex.min.js", "/app/static/katex/katex.min.css"} <= paths, paths
    assert all(path.startswith("/app/static/katex/") for path in paths), paths
    assert_nothing_fails_behind_the_screen(page, page.base_url, "/self-attention")  # nothing leaves the machine
    table = shown(page).locator("table.matrix").first
    expect(table.locator("caption")).to_contain_text("×")
    expect(table.locator('thead th[scope="col"]')).to_have_count(page.evaluate(
        "document.querySelector('.ae-stepper .stage:not([hidden]) table.matrix tbody tr').children.length"))
    expect(table.locator('tbody th[scope="row"]').first).to_have_text("1 I")
    # what a screen reader is given (Chromium's accessibility tree): a table, its caption, headers on both axes, each
    # explained cell a button that names its row, column and number
    tree = table.aria_snapshot()
    (ARTIFACTS / "stepper-scores-table.aria.yaml").write_text(tree)
    assert re.search(r'^- \'?table "Scores Q K', tree, re.M), tree
    assert 'rowheader "1 I"' in tree and 'columnheader "2 Like"' in tree, tree
    assert re.search(r'button "Row 3 Machine, Column 2 Like: [−\d.]+"', tree), tree


@pytest.mark.parametrize(("name", "width", "height", "phone"), [
    ("desktop", 1280, 900, False), ("projector", 1920, 1080, False), ("phone", 390, 844, True)])
def test_the_element_reads_on_a_desktop_a_projector_and_a_phone(browser: Browser, app_url: str, name: str,
                                                                 width: int, height: int, phone: bool):
    """Nothing sticks out of the page sideways (a wide matrix scrolls in its own box), the numbers fit their cells; the screenshot is for a human to look at."""
    with new_page(browser, width, height, phone=phone) as page:
        page.base_url = app_url
        open_element(page, "/self-attention?self_attention.stage=scores")
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"the page scrolls sideways by {overflow} px"
        cut = page.evaluate("""() => [...document.querySelectorAll('.ae-stepper .stage:not([hidden]) td')]
            .filter((td) => td.scrollWidth > td.clientWidth + 1).length""")
        assert cut == 0, f"{cut} numbers are wider than their cells"
        # the explained entry's result is in sight: its last line fits its box (a wide entry is a part a line)
        last = shown(page).locator(".entry-formula .formula-line").last
        expect(last).to_contain_text("=")
        hidden = last.evaluate("(line) => line.scrollWidth - line.clientWidth")
        assert hidden <= 1, f"the entry's last line hides {hidden} px"
        save_screenshot(page, f"stepper-{name}", width=width)
        assert_no_exception(page)


#: The font size (px) of every piece of text in the element's navigation and shown step, formulas aside (KaTeX sets
#: its sub- and superscripts smaller on purpose).
_TEXT_SIZES = """() => {
  const sizes = [];
  const parts = document.querySelectorAll('.ae-stepper .stepper, .ae-stepper .stage:not([hidden])');
  for (const part of parts) {
    const walker = document.createTreeWalker(part, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || el.closest('.katex, details:not([open]) > :not(summary), option')
          || !el.checkVisibility()) continue;  // what is shown (a matrix's "scroll →" only where it scrolls)
      sizes.push([parseFloat(getComputedStyle(el).fontSize), node.textContent.trim().slice(0, 30)]);
    }
  }
  return sizes;
}"""

PROJECTOR_MIN_PX = test_browser.PROJECTOR_MIN_PX


def test_presenter_mode_every_word_is_large_and_next_keeps_the_matrix_on_the_projector(browser: Browser,
                                                                                        app_url: str):
    """At 1920 × 1080 in presenter mode every word and number of the element is at least 22 px (in normal mode its
    numbers stay smaller); after Next the step-through comes to the top and the step's matrix is wholly on screen."""
    with new_page(browser, 1920, 1080) as page:
        page.base_url = app_url
        open_element(page, "/self-attention?presenter=0")
        normal = page.evaluate(_TEXT_SIZES)
    with new_page(browser, 1920, 1080) as page:
        page.base_url = app_url
        open_element(page, "/self-attention?presenter=1")
        expect(page.locator('[data-testid="stSidebar"]')).to_be_hidden()
        presenter = page.evaluate(_TEXT_SIZES)
        page.get_by_role("button", name="Next ▶").click()
        settled(page)
        table = shown(page).locator("table.matrix").first.bounding_box()
        nav = page.locator(".ae-stepper .stepper").bounding_box()
        save_screenshot(page, "stepper-presenter-after-next-1920", width=1920)
        # the softmax: its formula whole beside the matrix (it once stood cut behind "scroll →" in a narrow column
        # beside half a screen of nothing)
        page.get_by_role("button", name="Next ▶").click()
        assert step_title(page).startswith("7 / 8")
        cut = page.evaluate("""() => [...document.querySelectorAll(
          '.ae-stepper .stage:not([hidden]) .formula .formula-line *')].filter(
          (el) => el.scrollWidth > el.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
          .map((el) => el.className)""")
    assert len(presenter) > 49, presenter  # the 7 × 7 numbers and more
    small = sorted({(size, text) for size, text in presenter if size < PROJECTOR_MIN_PX})
    assert not small, f"smaller than {PROJECTOR_MIN_PX} px in presenter mode: {small[:10]}"
    assert min(size for size, _text in normal) < PROJECTOR_MIN_PX  # normal mode keeps its sizes
    assert -2 <= nav["y"] < 120, nav
    assert table["y"] + table["height"] <= 1080, table
    assert not cut, f"a formula line of the step scrolls on the projector: {cut}"


@pytest.mark.parametrize("width", [1280, 1400])
def test_the_matrix_stands_whole_beside_its_formula(browser: Browser, app_url: str, width: int):
    """At 1280-1400 px with the sidebar, the step's 7 × 7 matrix stands right of its formula and shows its last
    column without scrolling (the Vega heatmap there once hid its 7th column and legend)."""
    with new_page(browser, width, 900) as page:
        page.base_url = app_url
        open_element(page)
        box = page.evaluate("""() => {
          const stage = document.querySelector('.ae-stepper .stage:not([hidden])');
          const r = (el) => el.getBoundingClientRect();
          const scroll = stage.querySelector('.matrix-scroll');
          return {formula: r(stage.querySelector('.beside > .formula')).toJSON(),
                  table: r(stage.querySelector('table.matrix')).toJSON(),
                  hidden: scroll.scrollWidth - scroll.clientWidth,
                  viewport: document.documentElement.clientWidth};
        }""")
    assert box["table"]["left"] >= box["formula"]["right"] - 1, f"not beside the formula: {box}"
    assert box["hidden"] <= 1 and box["table"]["right"] <= box["viewport"], box


def test_a_mask_cell_flips_on_the_server_and_the_next_steps_use_it(element_page: Page):
    """The causal page's mask stage: a click on a cell is an edit (the server flips it and sends new numbers), the
    cell is explained, the link holds the edit, the next stage's numbers use it; "Reset the mask" forgets it."""
    page = element_page
    open_element(page, "/causal?causal.stage=mask", "Causal")
    cell = lambda: shown(page).locator('button.cell[data-row="0"][data-col="1"]')  # noqa: E731 (rebuilt on new data)
    tools = shown(page).locator(".mask-tools")
    expect(cell()).to_have_text("−∞")
    expect(tools.get_by_role("button", name="Reset the mask")).to_be_disabled()
    cell().click()
    expect(tools.locator("span")).to_have_text("1 cell(s) flipped by you.", timeout=APP_RUN_MS)
    expect(cell()).to_have_text("0")
    expect(cell()).to_have_attribute("aria-pressed", "true")
    expect(shown(page).locator(".entry-formula")).to_contain_text("you set this cell")
    assert query(page)["edit_mask"] == "0,1,1.0" and query(page)["causal.stage"] == "mask", page.url
    page.get_by_role("button", name="Next ▶").click()  # A' = A + M: the first query now sees key 2
    settled(page)
    expect(shown(page).locator('button.cell[data-row="0"][data-col="1"]')).not_to_have_text("−∞")
    page.get_by_role("button", name="◀ Previous").click()
    tools.get_by_role("button", name="Reset the mask").click()
    expect(tools.locator("span")).to_have_text("Click any cell to flip it between allowed (0) and blocked (−∞).",
                                               timeout=APP_RUN_MS)
    expect(cell()).to_have_text("−∞")
    assert "edit_mask" not in query(page), page.url
    assert_no_exception(page)
    assert not page.js_errors and not page.outside_requests, (page.js_errors, page.outside_requests)


def test_the_heads_stand_side_by_side_and_a_cell_of_head_2_explains_head_2(element_page: Page):
    """The multi-head page: each head's weights a table, side by side at 1280 px; a cell of the second head moves
    the head picker and the entry to that head, with nothing sent; the link holds the head."""
    page = element_page
    open_element(page, "/multi-head?multi_head.stage=weights", "Multi-head")
    tables = shown(page).locator("table.matrix")
    expect(tables).to_have_count(2)
    tops = [box["y"] for box in (tables.nth(0).bounding_box(), tables.nth(1).bounding_box())]
    assert abs(tops[0] - tops[1]) < 2, f"the heads are not side by side: {tops}"
    # the stage's 98 entries come a row at a time (the row shown: the first): a cell of that row in head 2
    before = page.evaluate("window.__sent")
    target = tables.nth(1).locator('button.cell[data-row="0"][data-col="0"]')
    target.click()
    expect(target).to_have_attribute("aria-pressed", "true")
    expect(shown(page).locator('select[data-pick="head"] option:checked')).to_have_text("2")
    expect(shown(page).locator(".entry-formula .katex-mathml")).to_contain_text("(2)")
    assert page.evaluate(AFTER_THE_PAINT) == before, "a cell of a loaded row sent a message"
    link_has(page, head="1", entry_row="0", entry_col="0")
    # a cell of another row: that row's entries are asked for once (one message), then shown
    tables.nth(1).locator('button.cell[data-row="2"][data-col="1"]').click()
    assert settled(page) == before + 1, "a new row's entries: one request"
    expect(shown(page).locator(".entry-formula .katex-mathml")).to_contain_text("3,2")
    save_screenshot(page, "stepper-multi-head-desktop", width=1280)
    assert not page.js_errors and not page.outside_requests, (page.js_errors, page.outside_requests)


def test_the_backward_pages_jacobian_follows_the_row_picked_and_the_cell_clicked(element_page: Page):
    """The backward pass's dS step: the softmax's Jacobian is the explained row's, in the browser: the Row picker and
    a cell of dS move it to their row with nothing sent (it stayed on row 1 once, on the server's renderer)."""
    page = element_page
    open_element(page, "/backward?backward.stage=d_scores&entry_row=0&entry_col=0",
                 "The backward pass: how attention learns")
    jacobian = shown(page).locator("[data-follows] caption")
    expect(jacobian).to_contain_text("The softmax's Jacobian of row 1:")
    before = page.evaluate("window.__sent")
    shown(page).locator('select[data-pick="row"]').select_option(label="2 Like")
    expect(jacobian).to_contain_text("The softmax's Jacobian of row 2:")
    row_2 = shown(page).locator("[data-follows] tbody").inner_text()
    # dS, the explained matrix (the third): a cell of row 3
    shown(page).locator("table.matrix").nth(2).locator('button.cell[data-row="2"][data-col="1"]').click()
    expect(jacobian).to_contain_text("The softmax's Jacobian of row 3:")
    assert page.evaluate(AFTER_THE_PAINT) == before, "the Jacobian followed the entry with a message"
    # its numbers are row 3's (the payload's numbers: tests/app/test_stepper_element.py)
    assert shown(page).locator("[data-follows] tbody").inner_text() != row_2
    assert_no_exception(page)
    assert not page.js_errors and not page.outside_requests, (page.js_errors, page.outside_requests)


def test_ropes_pair_chart_is_drawn_by_the_apps_vega_and_follows_the_cell_clicked(element_page: Page):
    """RoPE's rotation step: under the entry, its pair before and after the rotation, a chart that Vega draws in the
    page from the app's own copy (nothing from elsewhere) with its numbers as a table; a cell of another row moves
    it to that row's pair (its angle φ = m θᵢ grows with the position m)."""
    page = element_page
    open_element(page, "/rope?rope.stage=rotate_query&entry_row=1&entry_col=0", "RoPE")
    chart = shown(page).locator(".entry-chart")
    expect(chart).to_have_attribute("data-drawn", "true", timeout=APP_RUN_MS)
    expect(chart.locator(".chart svg .mark-line path")).to_have_count(2)  # the two arrows
    expect(chart.locator(".chart-title")).to_contain_text("rotated by φ = 1.000 rad")
    expect(chart.locator("table.matrix th[scope=row]")).to_have_text(["q before", "q' after"])
    shown(page).locator("table.matrix").nth(1).locator('button.cell[data-row="3"][data-col="0"]').click()
    settled(page)
    expect(chart.locator(".chart-title")).to_contain_text("rotated by φ = 3.000 rad")
    expect(chart).to_have_attribute("data-drawn", "true", timeout=APP_RUN_MS)
    assert_no_exception(page)
    assert not page.js_errors and not page.outside_requests, (page.js_errors, page.outside_requests)
    save_screenshot(page, "stepper-rope-pair-chart", width=1280)


def test_practice_mode_steps_in_the_browser_and_only_an_answer_goes_to_the_server(element_page: Page):
    """Practice mode in the element: a step with an exercise hides its matrices and asks its entry; Previous and Next
    over stages already sent send nothing (the link follows); Check sends the answer, the named mistake comes back
    with what was typed still in the box; the right answer brings the numbers and the worked entry back."""
    from attention_core.lessons.self_attention.page import self_attention_step_through
    from attention_core.self_attention.walkthrough import build_walkthrough
    from attention_core.settings import Settings

    exercise = self_attention_step_through(build_walkthrough(Settings()), "scaled_scores").stage.exercise(1, 3, 0)
    forgot = next(m for m in exercise.mistakes if m.key == "no_scale")
    page = element_page
    open_element(page, "/self-attention?practice=1&stage=scaled_scores&entry_row=1&entry_col=3")
    expect(shown(page).get_by_text("This step's numbers are hidden until you answer")).to_be_visible()
    expect(shown(page).locator(".panels")).to_be_hidden()
    expect(shown(page).locator(".practice-ask .katex").first).to_be_visible()  # the question, typeset

    page.get_by_role("button", name="◀ Previous").click()
    assert step_title(page).startswith("5 / 8")
    expect(shown(page).get_by_role("textbox", name="Your answer")).to_be_visible()  # scores: asked too
    link_has(page, self_attention__stage="scores")
    before = settled(page)  # the stage before it asked for (after a pause): every stage around is there now
    for button, number in (("Next ▶", 6), ("◀ Previous", 5), ("Next ▶", 6)):
        page.get_by_role("button", name=button).click()
        assert step_title(page).startswith(f"{number} / 8")
    assert page.evaluate(AFTER_THE_PAINT) == before, "Previous / Next in practice mode sent a message"

    box = shown(page).get_by_role("textbox", name="Your answer")
    box.fill(f"{forgot.value:.3f}")
    shown(page).get_by_role("button", name="Check").click()
    expect(shown(page).locator(".hint").filter(has_text="Forgot ÷ √d_k")).to_be_visible(timeout=APP_RUN_MS)
    assert page.evaluate("window.__sent") > before, "the answer went to the server"
    expect(shown(page).get_by_role("textbox", name="Your answer")).to_have_value(f"{forgot.value:.3f}")
    expect(shown(page).locator(".panels")).to_be_hidden()  # a wrong answer reveals nothing
    shown(page).get_by_role("textbox", name="Your answer").fill(f"{exercise.answer:.2f}")
    shown(page).get_by_role("textbox", name="Your answer").press("Enter")
    expect(shown(page).locator(".verdict.right").filter(has_text="Correct: ")).to_be_visible(timeout=APP_RUN_MS)
    expect(shown(page).locator(".panels table.matrix")).to_be_visible()
    expect(shown(page).locator(".entry-formula .katex")).to_be_visible()  # the worked entry
    expect(page.locator(".ae-stepper .score")).to_have_text(
        "Score this session: 1 of 1 entries right, 0 at the first try.")
    save_screenshot(page, "element-practice-correct")
    assert_no_exception(page)
    assert not page.js_errors and not page.outside_requests, (page.js_errors, page.outside_requests)


def test_a_model_page_steps_in_the_browser_and_an_entry_out_of_its_block_brings_that_block(element_page: Page):
    """*Inside a trained model* (all-MiniLM-L6-v2, one head) in the element: its matrices come a block at a time
    (the n × 384 input 12 columns at a time, as the server's renderer showed them); Next and Previous repaint with
    nothing sent; the arrow keys past the block's last column bring the next block in one round trip, the framed
    cell focused in it, the link holding the entry."""
    page = element_page
    open_element(page, "/trained-model", "Inside a trained model")
    assert step_title(page).startswith("9 / 10")  # the softmax: what the head's map above shows
    weights = shown(page).locator("table.matrix")
    expect(weights.locator("tbody tr")).to_have_count(13)  # 13 tokens: every row of the 13 × 13 weights
    expect(shown(page).locator("button.cell[aria-pressed=true]")).to_have_attribute("data-col", "2")

    page.get_by_role("button", name="◀ Previous").click()
    assert step_title(page).startswith("8 / 10")
    settled(page)  # the step before the one opened asks, when the learner pauses, for its neighbour's row
    before = page.evaluate("window.__sent")
    for name, number in (("Next ▶", 9), ("◀ Previous", 8), ("Next ▶", 9)):  # steps whose entries are there
        page.get_by_role("button", name=name).click()
        assert step_title(page).startswith(f"{number} / 10")
    assert page.evaluate(AFTER_THE_PAINT) == before, "Next / Previous on the model page sent a message"

    page.locator('.ae-stepper select[data-pick="stage"]').select_option("inputs")
    settled(page)
    expect(shown(page).locator("caption")).to_contain_text("13 × 384. Showing rows 1–13 and columns 1–12")
    framed = shown(page).locator("button.cell[aria-pressed=true]")
    framed.click()  # row 9, column 3 (d3)
    before = page.evaluate("window.__sent")
    for _ in range(10):  # to d13, past the block's last column (d12)
        page.keyboard.press("ArrowRight")
    expect(shown(page).locator("caption")).to_contain_text("Showing rows 1–13 and columns 13–24", timeout=APP_RUN_MS)
    assert page.evaluate("window.__sent") > before, "the block around d13 was asked for"
    framed = shown(page).locator("button.cell[aria-pressed=true]")
    expect(framed).to_have_attribute("data-col", "12")
    expect(framed).to_be_focused()
    expect(shown(page).locator('select[data-pick="col"] option:checked')).to_have_text("d13")
    expect(shown(page).locator(".entry-formula .katex").filter(has_text=re.compile(r"9,13"))).to_have_count(1)
    link_has(page, trained_model__stage="inputs", trained_model__entry_row="8", trained_model__entry_col="12")
    shown(page).locator("details.code summary").click()  # the functions that computed it (sent once for all steps)
    expect(shown(page).locator("details.code pre")).to_have_count(2)
    expect(shown(page).locator("details.code pre").last).to_contain_text("def head_step(")
    save_screenshot(page, "stepper-trained-model-block")
    assert_no_exception(page)
    assert not page.js_errors and not page.outside_requests, (page.js_errors, page.outside_requests)
