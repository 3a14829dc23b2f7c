"""The widgets the backward-pass pages share: the target T of the loss (which one, its token pair or seed, the
learning rate η) and its cell-by-cell editor.

The target itself comes from ``attention_core.backward``; nothing here computes a gradient.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

from attention_core.backward.backward_walkthrough import TARGETS
from attention_core.backward.gradients import MAX_LEARNING_RATE
from attention_core.limits import MAX_TOKENS
from attention_core.self_attention.walkthrough import dim_labels, token_labels

from . import state, widgets
from .i18n import _


def target_controls(copy_help: str) -> None:
    """The target's widgets on one row: which target, then token i and j (copy) or the seed (random).
    ``copy_help``: what row i of the target becomes on this page (translated)."""
    target = state.settings().backward.target
    c1, c2, c3 = st.columns(3)
    with c1:
        state.bind(st.selectbox, _("Target T for the output"), "backward.target", options=list(TARGETS),
                   format_func={key: _(title) for key, title in TARGETS.items()}.get)
    with c2:
        if target == "copy":
            state.bind(st.number_input, _("Token i (copies)"), "backward.copy_query", step=1, help=copy_help)
        else:
            state.bind(st.number_input, _("Seed of the target"), "backward.target_seed", step=1)
    with c3:
        if target == "copy":
            state.bind(st.number_input, _("Token j (copied)"), "backward.copy_key", step=1,
                       help=_("1 to {high}.", high=MAX_TOKENS))


def learning_rate() -> None:
    """η of the gradient-descent step."""
    state.bind(st.number_input, _("Learning rate η"), "backward.learning_rate", step=0.1, format="%.3f",
               help=_("Above 0, at most {high}.", high=MAX_LEARNING_RATE))


def target_editor(toggle_key: str, edits_name: str, build_target: Callable, column_prefix: str) -> None:
    """Behind a toggle, the target T cell by cell (edits kept under ``edits_name``); ``build_target(settings,
    edits)`` -> (tokens, the target before the edits). A bad sentence or cell stops here with its message."""
    if st.toggle(_("Show and edit the target T"), key=toggle_key,
                 help=_("Any cell: the loss pulls the output toward it. Your cells stay when the sentence changes.")):
        tokens, base = widgets.build_or_stop(build_target, state.settings(), state.edits())
        widgets.matrix_editor(edits_name, base, token_labels(tokens), dim_labels(column_prefix, base.shape[1]))
