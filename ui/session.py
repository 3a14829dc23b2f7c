"""Where the session's settings object is kept (``st.session_state``), and how a script run reads it fast.

The one module below :mod:`ui.state` (which makes and changes the settings) and :mod:`ui.i18n` (which reads the
language, one of the settings, for every text it translates): both import it, neither imports the other's settings
storage. Imports nothing of ui.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

#: The session-state key of the settings (a frozen ``attention_core.settings.Settings``).
KEY = "settings"

#: The settings this thread's script run last read or wrote, with the run's context: a run reads them hundreds of
#: times (every translated text asks for the language), and session state's own lookup (its lock, its widget
#: mapping) costs ~10 µs a read on the thread every student of a class shares. Streamlit runs a session's script (and
#: its widgets' callbacks) in a thread of its own, and only :func:`store` writes the settings, so a run's cache is
#: current; another thread (a run's worker) reads session state.
_RUN = threading.local()


def stored() -> Optional[Any]:
    """The session's settings, or None before anything made them (``ui.state.settings`` makes them)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    cached = getattr(_RUN, "settings", None)
    if cached is not None and ctx is not None and cached[0] is ctx:
        return cached[1]
    current = st.session_state.get(KEY)
    if current is not None:
        _RUN.settings = (ctx, current)
    return current


def store(new: Any) -> None:
    """Make ``new`` the session's settings (the one place they are written)."""
    st.session_state[KEY] = new
    _RUN.settings = (get_script_run_ctx(suppress_warning=True), new)
