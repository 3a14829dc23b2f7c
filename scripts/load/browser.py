"""The ``browser`` scenario: Debian's Chromium (Playwright) clicks Next and a number's + on five pages, each click
timed on the page's own clock until it is repainted."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Optional

from load.client import RUN_TIMEOUT_S
from load.report import fmt_ms
from load.server import APP, FLOOR_APP, Server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# Counts, on the page's clock, each run's end as it reaches the page: installed before the app's own scripts
# (``page.add_init_script``), it listens to every websocket the app opens and notes each ForwardMsg whose
# ``script_finished`` (field 6, a varint: tag 0x30) says the run is over (0: finished, 3: a fragment run
# finished; 2, finished early for a rerun, is not an end). Only the message's top-level fields are read.
_COUNT_RUN_ENDS = """(() => {
  window.__runEnds = [];  // when each run's end reached the page (performance.now())
  window.__runEndWaiters = [];  // called with the time of the next run end
  const status = (bytes) => {
    let i = 0;
    const varint = () => {
      let value = 0, scale = 1;
      for (;;) {
        if (i >= bytes.length) throw new RangeError("truncated");
        const b = bytes[i++]; value += (b & 0x7f) * scale; if (b < 0x80) return value; scale *= 128;
      }
    };
    while (i < bytes.length) {
      const tag = varint(), field = Math.floor(tag / 8), wire = tag & 7;
      if (field === 6 && wire === 0) return varint();
      if (wire === 0) varint(); else if (wire === 2) { const length = varint(); i += length; } else if (wire === 1) i += 8;
      else if (wire === 5) i += 4; else return -1;
    }
    return -1;
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        if (!(event.data instanceof ArrayBuffer)) return;
        let finished = -1;
        try { finished = status(new Uint8Array(event.data)); } catch (error) { return; }  // not a ForwardMsg we read
        if (finished !== 0 && finished !== 3) return;
        const now = performance.now();
        window.__runEnds.push(now);
        for (const resolve of window.__runEndWaiters.splice(0)) resolve(now);
      });
    }
  };
})();"""


# Timed inside the page, on the page's clock: the click; the end of the run it started reaching the page (the
# next run end ``_COUNT_RUN_ENDS`` notes); the watched input showing its new value; then two animation frames (the
# repaint). Timing it from Python through Playwright's websocket events added the relay of every frame of the run
# (browser -> Playwright's driver -> Python), about 150-200 ms per click that no user waits for. The app's
# ``data-test-script-state`` going "running" then "notRunning" is not a sign of every run: when the run's first and
# last messages are applied in one React commit, the attribute never reads "running" (a one-widget app lost 2 to 4
# of 15 clicks that way, each waited for until the timeout).
_CLICK_AND_TIME = """async ([selector, watch, timeoutMs]) => {
  const target = document.querySelector(selector);
  if (target.disabled) return null;  // a disabled button takes no click: no run would come
  const shown = () => document.querySelector(watch)?.value;
  const before = shown();
  const finished = new Promise((resolve) => window.__runEndWaiters.push(resolve));
  const start = performance.now();
  target.click();
  const done = await Promise.race([finished, new Promise((r) => setTimeout(() => r(null), timeoutMs))]);
  if (done === null) return "lost";  // no run came: the click was lost
  // The run is over; wait (frame by frame, bounded) until the page shows its result: the watched input's
  // new value (the step picker, the d_k input).
  while (shown() === before && performance.now() - start < timeoutMs) {
    await new Promise((r) => requestAnimationFrame(r));
  }
  if (shown() === before) return "lost";
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return [performance.now() - start, done - start];
}"""


def _click(page, selector: str, watch: str, lost: list[str]) -> Optional[list[float]]:
    """Click and time it (``_CLICK_AND_TIME``): [total ms, run finished ms], or None when it is disabled.

    A click that no run answers within a third of ``RUN_TIMEOUT_S`` is noted in ``lost`` and made again
    (at most three times), as a student would click again; the time is the answered click's.
    """
    for _attempt in range(3):
        timed = page.evaluate(_CLICK_AND_TIME, [selector, watch, RUN_TIMEOUT_S * 1000 / 3])
        if timed != "lost":
            return timed
        lost.append(selector)
    raise RuntimeError(f"no run answered three clicks on {selector} ({RUN_TIMEOUT_S:.0f} s)")


#: The browser scenario's pages: (URL path, the field of its step picker or None, a number input's field): Next and
#: that number's + are clicked on each (the issue's five: a step page of each kind and the positional encoding).
BROWSER_PAGES = (
    ("self-attention", "self_attention.stage", "d_k"),
    ("causal", "causal.stage", "d_k"),
    ("multi-head", "multi_head.stage", "seed"),
    ("positional-encoding", None, "experiment_seed"),
    ("backward", "backward.stage", "d_k"),
)


def _key_class(field: str) -> str:
    """The CSS class Streamlit gives the element of the widget bound to ``field`` (``st-key-setting_d_k``)."""
    return ".st-key-setting_" + field.replace(".", "-")


def _browser_clicks(page, clicks: int, stage: Optional[str], number: str, results: dict, server_part: dict,
                    lost: dict, label: str, profiled: int = 0, parts: Optional[dict] = None) -> None:
    """Next (a step page) and ``number``'s + (every 4th click its −), ``clicks`` timed each after a warm-up; then,
    with ``profiled``, that many more under Chromium's sampling profiler (Previous and Next, − and + in turn), their
    main thread's time by part into ``parts`` (:func:`_profile_parts`)."""
    from playwright.sync_api import expect

    up = f'{_key_class(number)} [data-testid="stNumberInputStepUp"]'
    down = f'{_key_class(number)} [data-testid="stNumberInputStepDown"]'
    targets = ({f"{label}: Next": (".st-key-step_next button", f"{_key_class(stage)} input")} if stage else {})
    targets[f"{label}: {number} +"] = (up, f"{_key_class(number)} input")
    for name, (selector, watch) in targets.items():
        times, to_finished = [], []
        lost[name] = []
        for i in range(clicks + 1):
            selector_now = down if selector == up and i % 4 == 3 else selector
            total, finished = _click_or_back(page, selector_now, watch, lost[name])
            if i:  # the first click is a warm-up
                times.append(total / 1000)
                to_finished.append(finished / 1000)
        results[name] = times
        server_part[name] = to_finished
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


def _timed_page(browser):
    """A new tab (1280 × 900) whose clicks ``_click`` can time: ``_COUNT_RUN_ENDS`` runs in it before the app."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.add_init_script(_COUNT_RUN_ENDS)
    return page


#: The floor's row: the one-widget app (``scripts/load_floor_app.py``) in the same Chromium, its number's + clicked.
FLOOR = "floor: a one-number_input app, +"


def _floor_clicks(browser, clicks: int, results: dict, server_part: dict, lost: dict) -> None:
    """The framework's floor in this browser, in the same run: the one-widget app's number + clicked ``clicks``
    times after a warm-up, timed as the pages' clicks are. What a page costs beyond it is ours."""
    server = Server(FLOOR_APP)
    page = _timed_page(browser)
    try:
        page.goto(server.url)
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=120_000)
        up = '.st-key-floor_number [data-testid="stNumberInputStepUp"]'
        page.locator(up).wait_for(timeout=60_000)
        lost[FLOOR] = []
        timed = [_click(page, up, ".st-key-floor_number input", lost[FLOOR]) for _ in range(clicks + 1)][1:]
        results[FLOOR] = [total / 1000 for total, _finished in timed]
        server_part[FLOOR] = [finished / 1000 for _total, finished in timed]
    finally:
        page.close()
        server.stop()


def run_browser(args: argparse.Namespace) -> bool:
    from playwright.sync_api import sync_playwright

    pages = [entry for entry in BROWSER_PAGES if entry[0] in (getattr(args, "browser_pages", None) or
                                                             [p for p, _s, _n in BROWSER_PAGES])]
    print(f"== browser: Chromium on {', '.join('/' + p for p, _s, _n in pages)}, {args.clicks} clicks each, "
          "click -> repainted; the floor: the one-widget app in the same browser\n")
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install -y chromium (bash scripts/test.sh does)")
        return False
    server = None if args.url else Server(APP)
    url = args.url or server.url
    results: dict[str, list[float]] = {}
    server_part: dict[str, list[float]] = {}  # click -> the page learnt that the run finished
    lost: dict[str, list[str]] = {}  # clicks no run answered (made again)
    parts: dict[str, dict[str, float]] = {}  # --browser-profile: click -> part -> ms per profiled click

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            _floor_clicks(browser, args.clicks, results, server_part, lost)
            page = _timed_page(browser)
            for path, stage, number in pages:
                page.goto(f"{url}/{path}")
                page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=120_000)
                page.locator(f'{_key_class(number)} [data-testid="stNumberInputStepUp"]').wait_for(timeout=60_000)
                _browser_clicks(page, args.clicks, stage, number, results, server_part, lost, path,
                                profiled=args.browser_profile, parts=parts)
            browser.close()
    finally:
        if server:
            server.stop()
    ok = True
    floor = statistics.median(results[FLOOR])
    print(f"{'click':<40} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'x floor':>7}  verdict   (of which: until "
          "the run's end reached the page, p50 / p95 / max)")
    for name, times in results.items():
        over = name != FLOOR and 1000 * statistics.median(times) >= args.browser_budget_ms
        ok &= not over
        verdict = "(floor)" if name == FLOOR else "OVER BUDGET" if over else "ok"
        # p50: the median the verdict is on (of an even count, the mean of the middle two; fmt_ms gives the lower one)
        shown = f"{1000 * statistics.median(times):>7.0f}" + fmt_ms(times)[7:]
        print(f"{name:<40} {shown} {statistics.median(times) / floor:>7.2f}  {verdict:<10}  "
              f"{fmt_ms(server_part[name])}")
    if parts:
        _print_parts(parts, args.browser_profile)
    for name, clicks in lost.items():
        if clicks:
            print(f"{name}: {len(clicks)} click(s) no run answered, made again: {', '.join(clicks)}")
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
