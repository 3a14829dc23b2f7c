"""A teacher's link that fixes some settings: the panel that chooses them, and the note students see.

The fixed settings travel in the link (``Settings.locked``, e.g. ``locked=d_k,seed``); whoever opens it gets
those widgets disabled (``state.bind``) and changes to them dropped (``state.update``); the rest stays free.
This is a classroom convenience, not access control: anyone can free them again in the same panel.
"""

from __future__ import annotations

import zlib

import streamlit as st

from attention_core.settings import UNLOCKABLE
from ui import state
from ui.i18n import _


def note(placeholder) -> None:
    """Above the page: which settings the link fixed (``placeholder``: an ``st.empty()`` made before the page)."""
    fixed = state.locked()
    if not fixed:
        return
    labels = state.bound_fields()
    shown = [labels[f] for f in labels if f in fixed]
    if not shown:
        return
    placeholder.info(_("Your teacher's link fixes these settings on this page: {names}. Their boxes are greyed "
                       "out; everything else is yours to change.", names=", ".join(shown)), icon=":material/lock:")


def _commit(key: str, page_fields: tuple[str, ...]) -> None:
    chosen = set(st.session_state.get(key) or ())
    elsewhere = state.locked() - set(page_fields)
    state.update(locked=",".join(sorted(chosen | elsewhere)))


def panel() -> None:
    """In the sidebar: choose which of this page's settings the link fixes."""
    labels = {f: label for f, label in state.bound_fields().items() if f not in UNLOCKABLE}
    if not labels:
        return
    fields = tuple(labels)
    with st.sidebar.expander(_("Teacher: fix settings in the link"), icon=":material/lock:"):
        key = f"teacher_lock_{zlib.crc32(','.join(fields).encode()):08x}"
        st.session_state[key] = [f for f in fields if f in state.locked()]
        st.multiselect(_("Fixed for whoever opens the link"), options=list(fields), format_func=labels.get,
                       key=key, on_change=_commit, args=(key, fields), placeholder=_("Choose settings"))
        st.caption(_("Then share the address from the address bar. Students see these settings greyed out. This is a "
                     "classroom convenience, not access control: anyone can free them here again."))
