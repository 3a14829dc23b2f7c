"""Presenter mode: larger type and controls for a projector, the sidebar out of the way."""

from __future__ import annotations

import streamlit as st

from . import state
from .i18n import _

# Streamlit has no per-session font size setting, so presenter mode restyles a few of
# its elements by their test ids (stable across releases, used by Streamlit's own e2e tests).
_PRESENTER_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
[data-testid="stMain"] { font-size: 1.3rem; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding-left: 3rem; padding-right: 3rem; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.35rem; }
[data-testid="stWidgetLabel"] p { font-size: 1.2rem; }
.katex { font-size: 1.5em; }
.st-key-step_prev button, .st-key-step_next button { min-height: 4.5rem; }
.st-key-step_prev button p, .st-key-step_next button p { font-size: 1.8rem; font-weight: 700; }
</style>
"""


def apply() -> None:
    """In presenter mode: restyle the page and offer the way back (the sidebar is hidden)."""
    if not state.settings().presenter:
        return
    st.html(_PRESENTER_CSS)
    st.button(_("Exit presenter mode"), key="presenter_exit", icon=":material/close_fullscreen:",
              on_click=state.update, kwargs={"presenter": False})
