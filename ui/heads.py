"""The multi-head pages' shape inputs: d_out, num_heads and the seed of W, the same widgets on every page that
draws seed 001's MultiHeadAttention (multi-head attention, cross-attention, the multi-head backward pass)."""

from __future__ import annotations

from typing import Optional

import streamlit as st

from attention_core.errors import N_
from ui import state
from ui.i18n import _

#: The seed's help where W_q, W_k, W_v, W_O and b_O are drawn as MultiHeadAttention draws them.
SEED_HELP = N_("torch.manual_seed before MultiHeadAttention(d_model, d_out, …) draws W_q, W_k, W_v, W_O, b_O.")


def shape_inputs(d_out_column, heads_column, seed_column, seed_help: Optional[str] = SEED_HELP) -> None:
    """d_out, num_heads and the seed of W, each in its column (``st.columns`` cells); ``seed_help`` (English, marked
    for translation where it is declared) or None."""
    with d_out_column:
        state.bind(st.number_input, _("d_out (width of Q, K, V)"), "d_out", step=1,
                   help=state.range_help("d_out", N_("{low} to {high}.")))
    with heads_column:
        state.bind(st.number_input, _("num_heads h"), "num_heads", step=1, help=_("Must divide d_out."))
    with seed_column:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1, help=_(seed_help) if seed_help else None)
