"""Styles every page gets: wide content scrolls sideways instead of being cut off (a 390 px phone).

Streamlit draws a heatmap at its own width (16 columns are about 700 px) inside a container that clips what
does not fit; on a phone the right-hand columns were unreachable. Each chart's frame scrolls horizontally
instead, as KaTeX's displayed formulas already do. Selected by Streamlit's test ids (stable across releases,
used by its own e2e tests).
"""

from __future__ import annotations

import streamlit as st

_CSS = """
<style>
[data-testid="stFullScreenFrame"]:has([data-testid="stVegaLiteChart"]) { overflow-x: auto; overflow-y: hidden; }
.katex-display { overflow-x: auto; overflow-y: hidden; }
</style>
"""


def apply() -> None:
    """Add the styles to this run (one element, invisible)."""
    st.html(_CSS)
