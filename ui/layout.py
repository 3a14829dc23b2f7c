"""Styles every page gets: wide content scrolls sideways instead of being cut off (a 390 px phone); on a desktop
screen a chart slightly wider than its column is drawn to fit it.

Streamlit draws a heatmap at its own width (16 columns are about 700 px) inside a container that clips what
does not fit; on a phone the right-hand columns were unreachable. Each chart's frame scrolls horizontally
instead, as KaTeX's displayed formulas already do. Selected by Streamlit's test ids (stable across releases,
used by its own e2e tests).

A formula wider than its box shows that it scrolls: "scroll →" stands under it (on a phone the scroll bar is hidden
until one scrolls, and a formula cut at "=" looked finished). Pure CSS, by layout alone: the cue is a line under the
formula whose width is 0 unless the formula's line is wider than the box (sticky, so it stays in view while the formula
scrolls). Where the browser has scroll-driven animations (``animation-timeline`` on the box's own horizontal scroll),
the cut edges fade out too (at the start only the right one, in between both, at the end only the left one) and the
cue goes at the end; a box with nothing to scroll has an inactive timeline, so nothing fades there. The cue does not
depend on the timeline: Chromium left a box's timeline inactive at times although the box scrolled (twice in about
twenty runs of the suite), and the formula then had no cue.

On a touch screen Streamlit keeps a table's toolbar (search, download, full screen) always shown, 44 px above the
table's top edge, over the last lines of what stands above it (a caption, a label): such tables get that room above.
"""

from __future__ import annotations

import streamlit as st

from ui.i18n import _

#: How much of a cut formula's edge fades out.
FADE = "2rem"

_CSS = """
<style>
/* the containers of the app's style sheets (style_sheet below): their styles apply, they take no room */
[class*="st-key-style_sheet_"] { display: none; }
[data-testid="stFullScreenFrame"]:has([data-testid="stVegaLiteChart"]) { overflow-x: auto; overflow-y: hidden; }
/* On a desktop screen a chart a little wider than its column (side by side at 1200 px: by up to a quarter) is drawn
   smaller to fit it instead, its numbers and legend whole; its SVG keeps its proportions (Vega writes a viewBox) and
   clicks still pick the mark under the pointer (the SVG renderer finds it from the event's target). */
@media (min-width: 1200px) {
  [data-testid="stVegaLiteChart"] > svg.marks { max-width: 100%; height: auto; }
}
/* 2 px of end padding: KaTeX's subscripts end in a 2 px spacer that a negative margin leaves out of the formula's
   width, so a formula in a box of its own width (st.latex beside a chart) scrolled by those 2 px of nothing */
.katex-display { overflow-x: auto; overflow-y: hidden; padding-right: 2px; }
/* The room a formula's box may take, as 100cqw for the cue below: Streamlit draws a formula's box as wide as the
   formula, up to this element's width (not the box itself: its width comes from its content) */
[data-testid="stMarkdown"]:has(.katex-display) { container-type: inline-size; }
/* the formula's line as wide as the formula (at least its box): 100% in the cue */
.katex-display > .katex > .katex-html { width: max-content; min-width: 100%; }
/* The cue, by layout alone: a line under the formula, as wide as the room, when the formula is wider than its box by
   more than half a pixel (its line is wider than the room less the box's 2 px of padding); else 0 px wide and so
   (aspect-ratio 1, at most 1.5rem) 0 px high. It stays in view while the formula scrolls (sticky). In Streamlit's
   body font: inside the formula the font is KaTeX's. */
.katex-display > .katex > .katex-html::after {
  content: "CUE"; content: "CUE" / "";
  display: block; position: sticky; left: 0; overflow: hidden;
  width: clamp(0px, (100% - 100cqw + 1.5px) * 1000, 100cqw); aspect-ratio: 1; max-height: 1.5rem;
  font: 0.8rem/1.5rem "Source Sans", sans-serif; text-align: right; opacity: 0.65;
}
/* '\\3c length>': the type length, its bracket escaped (Streamlit's HTML sanitizer drops a style holding one) */
@property --cut-left { syntax: '\\3c length>'; inherits: false; initial-value: 0px; }
@property --cut-right { syntax: '\\3c length>'; inherits: false; initial-value: 0px; }
/* Where scroll-driven animations run: the cut edges fade out and the cue goes once the formula is scrolled to its end.
   Only ever less: a timeline that stays inactive (Chromium's did at times, on a box that scrolls) leaves the formula
   unfaded and the cue shown. */
@supports (animation-timeline: --formula-scroll) {
  .katex-display {
    scroll-timeline: --formula-scroll x;
    animation: formula-cut linear both; animation-timeline: --formula-scroll;
    /* the formula fades at a cut edge; the bottom line (the cue) is never faded */
    -webkit-mask-image: linear-gradient(to right, transparent, #000 var(--cut-left), #000 calc(100% - var(--cut-right)),
                                        transparent), linear-gradient(#000, #000);
    mask-image: linear-gradient(to right, transparent, #000 var(--cut-left), #000 calc(100% - var(--cut-right)),
                                transparent), linear-gradient(#000, #000);
    -webkit-mask-size: 100% 100%, 100% 1.5rem; mask-size: 100% 100%, 100% 1.5rem;
    -webkit-mask-position: 0 0, 0 100%; mask-position: 0 0, 0 100%;
    -webkit-mask-repeat: no-repeat; mask-repeat: no-repeat;
    -webkit-mask-composite: source-over; mask-composite: add;
  }
  @keyframes formula-cut {
    0% { --cut-left: 0px; --cut-right: FADE; }
    8% { --cut-left: FADE; }
    92% { --cut-right: FADE; }
    100% { --cut-left: FADE; --cut-right: 0px; }
  }
  .katex-display > .katex > .katex-html::after {
    animation: formula-cue linear both; animation-timeline: --formula-scroll;
  }
  @keyframes formula-cue {
    0%, 92% { opacity: 0.65; }
    100% { opacity: 0; }
  }
}
@media (hover: none) {
  [data-testid="stElementContainer"]:has([data-testid="stDataFrame"]) { margin-top: 2.75rem; }
}
/* A card of a row that wraps (the overview's examples, key "card_..."): its first element, the text, takes the row but
   starts from 16rem, so on a phone what follows it (a button) goes under it instead of squeezing it into a narrow
   column, and on a wider screen stays beside it */
[class*="st-key-card_"] > [data-testid="stElementContainer"]:first-child { flex: 1 1 16rem; min-width: 0; }
</style>
"""


def _css_string(text: str) -> str:
    """``text`` as the inside of a CSS double-quoted string; "<" escaped too (Streamlit's HTML sanitizer drops a
    style that holds one)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ").replace("<", "\\3c ")


def style_sheet(css: str, name: str) -> None:
    """Add the style element ``css`` (``<style>...</style>``) to this run, in the main area's flow, in a container
    keyed ``style_sheet_<name>`` that :data:`_CSS` hides (no gap in the page).

    In the flow, not with ``st.html``: Streamlit sends a style-only ``st.html`` to its event container, which the
    browser drew up to 0.6 s after the formulas and charts it styles on this machine (longer under load: a formula
    without its scroll cue, a chart wider than its column until then); a Markdown element is drawn in the same commit as
    the elements after it."""
    with st.container(key=f"style_sheet_{name}"):
        st.markdown(css, unsafe_allow_html=True)


def apply() -> None:
    """Add the styles to this run (one element, hidden)."""
    style_sheet(_CSS.replace("FADE", FADE).replace("CUE", _css_string(_("scroll →"))), "layout")
