"""Presenter mode: larger type and controls for a projector, the sidebar out of the way."""

from __future__ import annotations

import streamlit as st

from ui import layout, state
from ui.i18n import _

#: How much larger presenter mode draws the charts (cells, numbers, axis labels, legends) than normal mode. Their font
#: sizes are in the Vega-Lite spec, which CSS cannot reach, so each chart is built with this scale. 1.5: the charts of
#: a 1920 px projector in presenter mode are those of a 1280 px screen in normal mode, magnified (the sidebar hidden,
#: the main area holds what normal mode's holds at 1280 px, and more).
SCALE = 1.5
#: The smallest font of a number a class reads on a 1920 × 1080 projector in presenter mode (issue 29).
MIN_FONT_PX = 22


def scale() -> float:
    """The charts' scale of this session: :data:`SCALE` in presenter mode, else 1."""
    return SCALE if state.settings().presenter else 1.0


def font_px(px: float, scale: float) -> float:
    """A chart's font size of ``px`` in normal mode, at ``scale``: unchanged at 1, else scaled and at least
    :data:`MIN_FONT_PX` (a legend's 13 px labels would be 19.5)."""
    return px if scale == 1 else max(round(px * scale, 1), MIN_FONT_PX)


# Streamlit has no per-session font size setting, so presenter mode restyles a few of
# its elements by their test ids (stable across releases, used by Streamlit's own e2e tests).
_PRESENTER_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
[data-testid="stMain"] { font-size: 1.3rem; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding-left: 3rem; padding-right: 3rem; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.35rem; }
[data-testid="stWidgetLabel"] p { font-size: 1.2rem; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { font-size: 1.35rem; }
/* what the class reads in the widgets: the values of number, text and select boxes (a select box's value is its
   input's), the options of an open select box, the slider's value and ends, the buttons' and pills' labels;
   22.4 px, as the heatmaps' numbers */
[data-testid="stMain"] input, [data-testid="stMain"] textarea, [data-testid="stMain"] button p,
[data-testid="stSliderThumbValue"], [data-testid="stSliderThumbValue"] p, [data-testid="stSliderTickBar"] p, [data-testid="stMain"] [data-baseweb="tag"] span,
[role="listbox"] [role="option"] { font-size: 1.4rem; }
[data-testid="stNumberInputContainer"], [data-testid="stTextInputRootElement"] { min-height: 3rem; }
/* the slider's value stands above its thumb (its box 1.6 em up): room for it under the slider's label */
[data-testid="stSlider"] > [role="group"] { padding-top: 0.9rem; padding-bottom: 0.5rem; }
.katex { font-size: 1.5em; }
</style>
"""


def apply() -> None:
    """In presenter mode: restyle the page and offer the way back (the sidebar is hidden)."""
    if not state.settings().presenter:
        return
    layout.style_sheet(_PRESENTER_CSS, "presenter")
    st.button(_("Exit presenter mode"), key="presenter_exit", icon=":material/close_fullscreen:",
              on_click=state.update, kwargs={"presenter": False})

