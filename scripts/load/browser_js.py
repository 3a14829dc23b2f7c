"""The JavaScript the browser benchmark evaluates in the page (``scripts/load/browser.py``): counting the script runs
that end, clicking and timing until the page has repainted."""

from __future__ import annotations

# Counts, on the page's clock, each run's end as it reaches the page: installed before the app's own scripts
# (``page.add_init_script``), it listens to every websocket the app opens and notes each ForwardMsg whose
# ``script_finished`` (field 6, a varint: tag 0x30) says the run is over (0: finished, 3: a fragment run
# finished; 2, finished early for a rerun, is not an end). Only the message's top-level fields are read.
COUNT_RUN_ENDS = """(() => {
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
  window.__sent = 0;  // messages the page sent the server (a rerun request is one)
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      const send = this.send;
      this.send = (...message) => { window.__sent += 1; return send.apply(this, message); };
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
# next run end ``COUNT_RUN_ENDS`` notes); the watched input showing its new value; then two animation frames (the
# repaint). Timing it from Python through Playwright's websocket events added the relay of every frame of the run
# (browser -> Playwright's driver -> Python), about 150-200 ms per click that no user waits for. The app's
# ``data-test-script-state`` going "running" then "notRunning" is not a sign of every run: when the run's first and
# last messages are applied in one React commit, the attribute never reads "running" (a one-widget app lost 2 to 4
# of 15 clicks that way, each waited for until the timeout).
CLICK_AND_TIME = """async ([selector, watch, timeoutMs]) => {
  // a widget can be away for a frame while React draws a run (the element's own run after a setting): wait for it
  const waitFrom = performance.now();
  while (!document.querySelector(selector) && performance.now() - waitFrom < timeoutMs) {
    await new Promise((r) => requestAnimationFrame(r));
  }
  const target = document.querySelector(selector);
  if (!target) return "lost";
  if (target.disabled) return null;  // a disabled button takes no click: no run would come
  const shown = () => document.querySelector(watch)?.value;
  const before = shown();
  const finished = new Promise((resolve) => window.__runEndWaiters.push(resolve));
  const sent = window.__sent;
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
  return [performance.now() - start, done - start, window.__sent - sent];
}"""


# A click the page answers itself (the step-through element): timed from the click until the watched picker shows its
# new value and two animation frames have passed (the repaint); with the messages the page sent meanwhile.
CLICK_IN_PAGE = """async ([selector, watch, timeoutMs]) => {
  const target = document.querySelector(selector);
  if (!target || target.disabled) return null;
  const shown = () => document.querySelector(watch)?.value;
  const before = shown(), sent = window.__sent;
  const start = performance.now();
  target.click();
  while (shown() === before && performance.now() - start < timeoutMs) {
    await new Promise((r) => requestAnimationFrame(r));
  }
  if (shown() === before) return "lost";
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return [performance.now() - start, window.__sent - sent];
}"""


# A real mouse click on a heatmap's cell (Vega takes no synthetic event): the click's time is taken on the page's
# clock by a listener that runs first; then, as CLICK_AND_TIME, the run's end and the picker's new value.
NOTE_CLICK = """() => { window.__clickAt = null; document.addEventListener("pointerdown",
  () => { window.__clickAt = performance.now(); }, { capture: true, once: true });
  window.__finished = new Promise((resolve) => window.__runEndWaiters.push(resolve)); window.__sentAt = window.__sent;
  window.__before = document.querySelector(".st-key-setting_entry_row input")?.value; }"""


AFTER_CLICK = """async (timeoutMs) => {
  const done = await Promise.race([window.__finished, new Promise((r) => setTimeout(() => r(null), timeoutMs))]);
  if (done === null || window.__clickAt === null) return "lost";
  const shown = () => document.querySelector(".st-key-setting_entry_row input")?.value;
  while (shown() === window.__before && performance.now() - window.__clickAt < timeoutMs) {
    await new Promise((r) => requestAnimationFrame(r));
  }
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return [performance.now() - window.__clickAt, window.__sent - window.__sentAt];
}"""
