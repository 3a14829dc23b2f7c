"""The ``browser`` scenario: Debian's Chromium (Playwright) clicks Next, an entry and a number's + on five pages, each
click timed on the page's own clock until it is repainted, with what the page sent the server for it.

A page whose step-through is the browser element (``ui/stepper.py``) answers Next, Previous and an entry without a
script run: those clicks are timed until the element shows the new step or entry (its step or row picker's value)
and two animation frames, and their messages sent are counted (0: no rerun asked). Before they are timed, every stage
is shown once (the element asks for a stage's entries on its first visit: one round trip, timed apart as "first
visit"). A page on the server's step-through (``ui/stepthrough.py``) answers with a run: timed until its end reaches
the page and the picker shows the new value. ``--throttle N`` runs Chromium's main thread N times slower (CDP's CPU
throttling: how a low-end laptop or Chromebook is usually stood in for)."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Optional

from load.client import RUN_TIMEOUT_S
from load.report import fmt_ms
from load.server import APP, FLOOR_APP, Server
from scripts.load.browser_js import (
    AFTER_CLICK,
    CLICK_AND_TIME,
    CLICK_IN_PAGE,
    COUNT_RUN_ENDS,
    NOTE_CLICK,
)

CHROMIUM = "/usr/bin/chromium"


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _click(page, selector: str, watch: str, lost: list[str]) -> Optional[list[float]]:
    """Click and time it (``CLICK_AND_TIME``): [total ms, run finished ms], or None when it is disabled.

    A click that no run answers within a third of ``RUN_TIMEOUT_S`` is noted in ``lost`` and made again
    (at most three times), as a student would click again; the time is the answered click's.
    """
    for _attempt in range(3):
        timed = page.evaluate(CLICK_AND_TIME, [selector, watch, RUN_TIMEOUT_S * 1000 / 3])
        if timed != "lost":
            return timed
        lost.append(selector)
    raise RuntimeError(f"no run answered three clicks on {selector} ({RUN_TIMEOUT_S:.0f} s)")


#: The browser scenario's pages: (URL path, the field of its step picker or None, a number input's field): Next and
#: that number's + are clicked on each (the issue's five: a step page of each kind and the positional encoding; and a
#: model page, its head's matrices sent a block at a time, its + appending a [PAD] token: a run of the model).
BROWSER_PAGES = (
    ("self-attention", "self_attention.stage", "d_k"),
    ("causal", "causal.stage", "d_k"),
    ("multi-head", "multi_head.stage", "seed"),
    ("positional-encoding", None, "experiment_seed"),
    ("backward", "backward.stage", "d_k"),
    ("trained-model", "trained_model.stage", "trained_model.padding"),
)


def _key_class(field: str) -> str:
    """The CSS class Streamlit gives the element of the widget bound to ``field`` (``st-key-setting_d_k``)."""
    return ".st-key-setting_" + field.replace(".", "-")


def _browser_clicks(page, clicks: int, stage: Optional[str], number: str, results: dict, server_part: dict,
                    lost: dict, label: str, profiled: int = 0, parts: Optional[dict] = None,
                    sent: Optional[dict] = None) -> None:
    """Next and an entry (a step page) and ``number``'s + (every 4th click its −), ``clicks`` timed each after a
    warm-up; then, with ``profiled``, that many more under Chromium's sampling profiler (Previous and Next, − and +
    in turn), their main thread's time by part into ``parts`` (:func:`_profile_parts`). ``sent``: the messages the
    page sent per click, by click."""
    from playwright.sync_api import expect

    sent = {} if sent is None else sent
    element = stage is not None and page.locator(f"{ELEMENT}[data-ready=true]").count() > 0
    if element:
        _element_clicks(page, clicks, label, results, sent, lost)
    elif stage:
        _heatmap_entry_clicks(page, clicks, label, results, sent, lost)
    up = f'{_key_class(number)} [data-testid="stNumberInputStepUp"]'
    down = f'{_key_class(number)} [data-testid="stNumberInputStepDown"]'
    targets = ({f"{label}: Next": (".st-key-step_next button", f"{_key_class(stage)} input")}
               if stage and not element else {})
    targets[f"{label}: {number} +"] = (up, f"{_key_class(number)} input")
    for name, (selector, watch) in targets.items():
        times, to_finished, counts = [], [], []
        lost[name] = []
        for i in range(clicks + 1):
            selector_now = down if selector == up and i % 4 == 3 else selector
            total, finished, messages = _click_or_back(page, selector_now, watch, lost[name])
            if i:  # the first click is a warm-up
                times.append(total / 1000)
                to_finished.append(finished / 1000)
                counts.append(messages)
        results[name] = times
        server_part[name] = to_finished
        sent[name] = counts
        if profiled and parts is not None:
            cdp = page.context.new_cdp_session(page)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": PROFILE_INTERVAL_US})
            cdp.send("Profiler.start")
            # single steps both ways, so that no profiled click is two runs (at the last step, Next steps back first)
            both = (down, up) if selector == up else (".st-key-step_prev button", selector)
            for i in range(profiled):
                expect(page.locator(both[i % 2])).to_be_enabled(timeout=RUN_TIMEOUT_S * 1000)
                if _click(page, both[i % 2], watch, lost[name]) is None:
                    raise RuntimeError(f"{both[i % 2]} is disabled")
            parts[name] = _profile_parts(cdp.send("Profiler.stop")["profile"], profiled)
            cdp.detach()


def _click_or_back(page, selector: str, watch: str, lost: list[str]) -> list[float]:
    """:func:`_click` on ``selector``; on a disabled Next (the last step), one step back first (untimed)."""
    from playwright.sync_api import expect

    timed = _click(page, selector, watch, lost)
    if timed is None and selector.startswith(".st-key-step_next"):  # the last step: back one (untimed)
        # Previous can itself be disabled for a frame while a repaint is under way (its click is then
        # not made, and Next would stay disabled at the last step), and the step picker can show the
        # new step a frame before Next is enabled again: so each attempt waits until Previous is
        # enabled, clicks it until a run answers it, then waits for Next (up to 3 attempts).
        prev = ".st-key-step_prev button"
        for _attempt in range(3):
            expect(page.locator(prev)).to_be_enabled(timeout=RUN_TIMEOUT_S * 1000)
            if _click(page, prev, watch, lost) is None:
                continue  # disabled again at the click: not made, try again
            try:
                expect(page.locator(selector)).to_be_enabled(timeout=RUN_TIMEOUT_S * 1000 / 3)
            except AssertionError:
                continue  # still at the last step: go back again
            timed = _click(page, selector, watch, lost)
            if timed is not None:
                break
    if timed is None:
        raise RuntimeError(f"{selector} is disabled")
    return timed


#: ``--browser-profile``: the sampling profiler's interval (µs). Sampling slows the page down, so the profiled clicks
#: are not the timed ones, and their split, not their sum, is what is read.
PROFILE_INTERVAL_US = 250


#: The parts of the page's main thread a profiled click's samples are counted in, in the table's order: (part, its
#: column's title, marks). A JavaScript sample goes by the file (Streamlit's frontend bundles, named by their modules)
#: of its innermost frame, to the first part with a mark in that name, else to :data:`OTHER_JS` (no marks of its own);
#: Chromium's own names for the rest. "(program)" is the browser's native work outside JavaScript: style, layout,
#: paint, parsing.
OTHER_JS = "other JavaScript"


PROFILE_PARTS = (
    ("Vega (charts)", "Vega", ("embed.", "vega", "ArrowVegaLiteChart")),
    ("React", "React", ("react-dom", "react.", "scheduler")),
    ("styles (emotion)", "styles", ("emotion", "styled-components")),
    ("Markdown, KaTeX", "Markdown", ("StreamlitMarkdown", "katex", "markdown", "remark", "rehype", "micromark")),
    (OTHER_JS, "other JS", ()),
    ("browser (style, layout, paint)", "browser", ("(program)",)),
    ("garbage collection", "GC", ("(garbage collector)",)),
)


def _profile_parts(profile: dict, clicks: int) -> dict[str, float]:
    """A Chromium CPU profile (``Profiler.stop``) of ``clicks`` clicks: ms per click by part (:data:`PROFILE_PARTS`,
    :data:`OTHER_JS` for the rest of the app's and Streamlit's scripts); "(idle)" samples are not counted."""
    nodes = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    parts: dict[str, float] = {}
    for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
        frame = nodes[sample]
        if frame["functionName"] == "(idle)" or frame["functionName"] == "(root)":
            continue
        where = frame["url"].rsplit("/", 1)[-1] or frame["functionName"]
        part = next((name for name, _title, marks in PROFILE_PARTS if any(mark in where for mark in marks)), OTHER_JS)
        parts[part] = parts.get(part, 0.0) + delta / 1000 / clicks
    return parts


def _timed_page(browser, throttle: float = 1.0):
    """A new tab (1280 × 900) whose clicks ``_click`` can time: ``COUNT_RUN_ENDS`` runs in it before the app; its
    main thread ``throttle`` times slower (CDP's CPU throttling) when above 1."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.add_init_script(COUNT_RUN_ENDS)
    if throttle > 1:
        cdp = page.context.new_cdp_session(page)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
    return page


#: The step-through element's Next, Previous, step picker and entry pickers (ui/stepper.py, frontend/stepper/).
ELEMENT = ".ae-stepper"


_SHOWN_STAGE = f"{ELEMENT} .stage:not([hidden])"


def _element_clicks(page, clicks: int, label: str, results: dict, sent: dict, lost: dict) -> None:
    """On a page whose step-through is the element: every stage shown once (its entries asked for on the first
    visit: "first visit", timed until the entry is typeset), then ``clicks`` steps (Next, and Previous back from the
    last step) and ``clicks`` entries (a cell of the row shown, then a cell of another row each time), each timed in the
    page."""
    stage = f"{ELEMENT} select[data-pick=stage]"
    first, first_sent = [], []
    # from the first step (a page may open further on: the model pages at the softmax), so that every step is shown
    # once before the steps are timed
    first_key = page.locator(f"{stage} option").first.get_attribute("value")
    if page.locator(stage).input_value() != first_key:
        page.locator(stage).select_option(first_key)
        page.locator(f"{_SHOWN_STAGE} .entry-formula .katex, {_SHOWN_STAGE}:not(:has(.entry))").first.wait_for(
            timeout=RUN_TIMEOUT_S * 1000)
    while True:
        timed = page.evaluate(CLICK_IN_PAGE, [f"{ELEMENT} [data-move='1']", stage, RUN_TIMEOUT_S * 1000])
        if timed is None:
            break
        if timed == "lost":
            raise RuntimeError(f"{label}: Next showed no new step")
        start = page.evaluate("performance.now()")
        page.locator(f"{_SHOWN_STAGE} .entry-formula .katex, {_SHOWN_STAGE}:not(:has(.entry))").first.wait_for(
            timeout=RUN_TIMEOUT_S * 1000)
        first.append((timed[0] + page.evaluate("performance.now()") - start) / 1000)
        first_sent.append(timed[1])
    results[f"{label}: first visit of a step"], sent[f"{label}: first visit of a step"] = first, first_sent
    steps, step_sent, direction = [], [], -1
    lost[f"{label}: Next / Previous"] = []
    while len(steps) < clicks + 1:
        timed = page.evaluate(CLICK_IN_PAGE, [f"{ELEMENT} [data-move='{direction}']", stage, RUN_TIMEOUT_S * 1000])
        if timed is None:  # the first or last step: turn round
            direction = -direction
            continue
        if timed == "lost":
            lost[f"{label}: Next / Previous"].append("step")
            continue
        steps.append(timed[0] / 1000)
        step_sent.append(timed[1])
    results[f"{label}: Next / Previous"], sent[f"{label}: Next / Previous"] = steps[1:], step_sent[1:]
    # an entry: cells of the row shown (its entries are there on every page), then cells of other rows (a model page
    # is sent a row of its block at a time: one round trip for a row's first cell; the others are sent whole)
    framed = page.locator(f"{_SHOWN_STAGE} button.cell[aria-pressed=true]")
    row = framed.get_attribute("data-row")
    cols = [c for c in page.locator(f"{_SHOWN_STAGE} button.cell[data-row='{row}']").evaluate_all(
        "cs => cs.map(c => c.dataset.col)") if c != framed.get_attribute("data-col")]
    rows = [r for r in page.locator(f"{_SHOWN_STAGE} button.cell").evaluate_all(
        "cs => [...new Set(cs.map(c => c.dataset.row))]") if r != row]
    for name, cells, watch in (
            (f"{label}: an entry (a cell)", [f"[data-row='{row}'][data-col='{cols[i % len(cols)]}']"
                                             for i in range(clicks + 1)], "col"),
            (f"{label}: an entry in another row", [f"[data-row='{rows[i % len(rows)]}'][data-col='{cols[i % 2]}']"
                                                   for i in range(clicks + 1)], "row")):
        entries, entry_sent = [], []
        lost[name] = []
        for cell in cells:
            timed = page.evaluate(CLICK_IN_PAGE, [f"{_SHOWN_STAGE} button.cell{cell}",
                                                   f"{_SHOWN_STAGE} select[data-pick={watch}]", RUN_TIMEOUT_S * 1000])
            if timed in (None, "lost"):
                lost[name].append(cell)
                continue
            entries.append(timed[0] / 1000)
            entry_sent.append(timed[1])
        results[name], sent[name] = entries[1:], entry_sent[1:]


def _heatmap_entry_clicks(page, clicks: int, label: str, results: dict, sent: dict, lost: dict) -> None:
    """On a page on the server's step-through: ``clicks`` cells of its explained heatmap clicked (a new row each
    time), each timed from the pointer going down until the run's end and the row picker's new value, repainted."""
    name = f"{label}: an entry (a cell)"
    times, counts, lost[name] = [], [], []
    cells = ".vega-embed svg g.mark-rect path"
    for _step in range(8):  # a stage without a heatmap (the causal page's clickable mask): the next one, untimed
        if page.locator(cells).count():
            break
        _click_or_back(page, ".st-key-step_next button", f"{_key_class(label.replace('-', '_') + '.stage')} input",
                       lost.setdefault(f"{label}: Next", []))
    for i in range(clicks + 1):
        paths = page.locator(".vega-embed svg g.mark-rect").first.locator("path")
        count = paths.count()
        columns = round(count ** 0.5) or 1  # a guess for a matrix that is not square (dO: n × d_v): kept inside it
        box = paths.nth((((i + 1) % columns) * columns + i % 2) % max(count, 1)).bounding_box()
        page.evaluate(NOTE_CLICK)
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        timed = page.evaluate(AFTER_CLICK, RUN_TIMEOUT_S * 1000)
        if timed == "lost":
            lost[name].append(f"cell {i}")
            if not times:  # no click answered yet (each waited RUN_TIMEOUT_S): the cells take no click here
                break
            continue
        times.append(timed[0] / 1000)
        counts.append(timed[1])
    results[name], sent[name] = times[1:], counts[1:]


#: The floor's row: the one-widget app (``scripts/load_floor_app.py``) in the same Chromium, its number's + clicked.
FLOOR = "floor: a one-number_input app, +"


def _floor_clicks(browser, clicks: int, results: dict, server_part: dict, lost: dict, throttle: float = 1.0) -> None:
    """The framework's floor in this browser, in the same run: the one-widget app's number + clicked ``clicks``
    times after a warm-up, timed as the pages' clicks are. What a page costs beyond it is ours."""
    server = Server(FLOOR_APP)
    page = _timed_page(browser, throttle)
    try:
        page.goto(server.url)
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=120_000)
        up = '.st-key-floor_number [data-testid="stNumberInputStepUp"]'
        page.locator(up).wait_for(timeout=60_000)
        lost[FLOOR] = []
        timed = [_click(page, up, ".st-key-floor_number input", lost[FLOOR]) for _ in range(clicks + 1)][1:]
        results[FLOOR] = [total / 1000 for total, _finished, _sent in timed]
        server_part[FLOOR] = [finished / 1000 for _total, finished, _sent in timed]
    finally:
        page.close()
        server.stop()


def measure_browser(args: argparse.Namespace, url: Optional[str] = None) -> Optional[dict]:
    """The floor and the pages' clicks in one Chromium (a server of this checkout started here, unless ``url`` or
    ``--url``): {"results", "server_part", "sent", "lost", "parts"}, each by click; None without Chromium."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install -y chromium (bash scripts/test.sh does)")
        return None
    pages = [entry for entry in BROWSER_PAGES if entry[0] in (getattr(args, "browser_pages", None) or
                                                             [p for p, _s, _n in BROWSER_PAGES])]
    throttle = getattr(args, "throttle", 1.0)
    url = url or args.url
    server = None if url else Server(APP)
    url = url or server.url
    out = {"results": {}, "server_part": {}, "sent": {}, "lost": {}, "parts": {}}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            _floor_clicks(browser, args.clicks, out["results"], out["server_part"], out["lost"], throttle)
            page = _timed_page(browser, throttle)
            for path, stage, number in pages:
                page.goto(f"{url}/{path}")
                page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=120_000)
                page.locator(f'{_key_class(number)} [data-testid="stNumberInputStepUp"]').wait_for(timeout=60_000)
                if stage:  # a step page: its step-through drawn, the element's (once ready) or the server's
                    page.locator(f"{ELEMENT}[data-ready=true], .st-key-step_next").first.wait_for(timeout=60_000)
                _browser_clicks(page, args.clicks, stage, number, out["results"], out["server_part"], out["lost"],
                                path, profiled=args.browser_profile, parts=out["parts"], sent=out["sent"])
            browser.close()
    finally:
        if server:
            server.stop()
    return out


def run_browser(args: argparse.Namespace) -> bool:
    pages = [entry for entry in BROWSER_PAGES if entry[0] in (getattr(args, "browser_pages", None) or
                                                             [p for p, _s, _n in BROWSER_PAGES])]
    throttle = getattr(args, "throttle", 1.0)
    print(f"== browser: Chromium on {', '.join('/' + p for p, _s, _n in pages)}, {args.clicks} clicks each, "
          f"click -> repainted{f', CPU throttled {throttle:g}x' if throttle > 1 else ''}; the floor: the "
          "one-widget app in the same browser\n")
    out = measure_browser(args)
    if out is None:
        return False
    return print_browser(out, args)


def budget_ms(name: str, server_part: dict, args: argparse.Namespace) -> Optional[float]:
    """The budget of the clicks ``name``: a click the page answers itself, ``--step-budget-ms`` times the throttle;
    a click with a run, ``--browser-budget-ms`` (with ``--against``: None here, judged against the reference's
    median in the table of both: no slower); None for the floor and a first visit (one round trip per stage)."""
    if name == FLOOR or name.endswith(("first visit of a step", "an entry in another row")):
        return None  # one round trip per stage (on a model page per row): not a step's budget
    if not server_part.get(name):
        return args.step_budget_ms * getattr(args, "throttle", 1.0)
    return None if getattr(args, "against", None) else args.browser_budget_ms


def print_browser(out: dict, args: argparse.Namespace) -> bool:
    """The browser scenario's table (and its profile); whether every click's median is within its budget
    (:func:`budget_ms`)."""
    results, server_part, sent, lost, parts = (out[k] for k in ("results", "server_part", "sent", "lost", "parts"))
    ok = True
    floor = statistics.median(results[FLOOR])
    print(f"{'click':<46} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'x floor':>7} {'sent':>5}  verdict   (of "
          "which: until the run's end reached the page, p50 / p95 / max)")
    for name, times in results.items():
        if not times:
            continue
        # one round trip per stage (a model page's row) and session: not the budget
        first_visit = name.endswith(("first visit of a step", "an entry in another row"))
        budget = budget_ms(name, server_part, args)
        over = budget is not None and 1000 * statistics.median(times) > budget
        ok &= not over
        verdict = ("(floor)" if name == FLOOR else "(once)" if first_visit else "(vs ref)" if budget is None
                   else "OVER BUDGET" if over else "ok")
        # p50: the median the verdict is on (of an even count, the mean of the middle two; fmt_ms gives the lower one)
        shown = f"{1000 * statistics.median(times):>7.0f}" + fmt_ms(times)[7:]
        messages = f"{statistics.median(sent[name]):>5.0f}" if sent.get(name) else f"{'':>5}"
        until_run = fmt_ms(server_part[name]) if server_part.get(name) else "(no run)"
        print(f"{name:<46} {shown} {statistics.median(times) / floor:>7.2f} {messages}  {verdict:<10}  {until_run}")
    if parts:
        _print_parts(parts, args.browser_profile)
    for name, clicks in lost.items():
        if clicks:
            print(f"{name}: {len(clicks)} click(s) not answered, made again: {', '.join(clicks)}")
    return ok


def _print_parts(parts: dict[str, dict[str, float]], clicks: int) -> None:
    """The ``--browser-profile`` table: per click, the main thread's busy ms and each part's (:data:`PROFILE_PARTS`)."""
    print(f"\nwhere the page's main thread spends a click, in Chromium's sampling profiler ({clicks} more clicks each, "
          "not the timed ones: profiled clicks are slower, read the split), ms per click (share of the busy time):")
    print(f"{'click':<40} {'busy':>6} " + " ".join(f"{title:>12}" for _name, title, _marks in PROFILE_PARTS))
    for click, split in parts.items():
        busy = sum(split.values())
        print(f"{click:<40} {busy:>6.0f} " + " ".join(
            f"{split.get(name, 0.0):>5.0f} ({100 * split.get(name, 0.0) / busy:>3.0f} %)"
            for name, _title, _marks in PROFILE_PARTS))
