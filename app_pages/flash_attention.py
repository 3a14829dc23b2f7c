"""FlashAttention's online softmax: attention tile by tile, a running max and sum, never the T × T matrix."""

import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.text import MAX_TOKENS
from attention_core.lessons.flash_attention.page import FLASH_ATTENTION, tile_names
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "tiles": N_("The T × T scores are cut into tiles: B_q query rows by B_k keys. A GPU loads one tile into its "
                "fast on-chip memory at a time; the full matrix is never written out."),
    "tile_scores": N_("Only this tile's scores exist right now: its queries against its keys, scaled by 1/√d "
                      "(−∞ where the causal mask blocks)."),
    "running_max": N_("Softmax needs each row's maximum for safe exponents, but the row is only seen tile by tile. "
                      "So each row keeps a running maximum m and updates it with every tile."),
    "running_sum": N_("P = exp(S − m') for this tile. The sum l collected so far used the old maximum, so it is "
                      "rescaled by e^(m − m') (≤ 1) before this tile's sum is added. This is the online softmax."),
    "partial_output": N_("The output so far, O, is rescaled the same way, then this tile adds P V_j. O is not yet "
                         "divided by anything: the division comes once, at the end."),
    "final": N_("After the last key block each row divides by its l: the result is exactly softmax(Q Kᵀ / √d) V, "
                "up to float32 rounding, with much less memory."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("FlashAttention: the online softmax, tile by tile"))
    st.markdown(_(
        "Standard attention writes the whole T × T matrix of scores, then of weights, to memory. FlashAttention (Dao "
        "et al. 2022) never does: it streams blocks of keys and values past each block of queries and keeps, per row, "
        "a running maximum m, a running sum l and a running output O (the online softmax of Milakov & Gimelshein "
        "2018). Step through the tiles and watch m, l and O change."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("Query block B_q"), "flash_attention.block_q", step=1,
                   help=_("Rows of Q per block: 1 to the number of tokens (at most {high}).", high=MAX_TOKENS))
    with c2:
        state.bind(st.number_input, _("Key block B_k"), "flash_attention.block_k", step=1,
                   help=_("Rows of K and V per block: 1 to the number of tokens (at most {high}).", high=MAX_TOKENS))
    with c3:
        state.bind(st.number_input, _("d_k (width of q and k)"), "d_k", step=1,
                   help=state.range_help("d_k", N_("{low} to {high}.")))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)
    state.bind(st.toggle, _("Causal mask"), "causal_mask", help=_("On: tiles above the diagonal are fully masked."))

    walk = widgets.walkthrough_or_stop(FLASH_ATTENTION, state.settings(), state.edits())
    widgets.keep_in_range(**{"flash_attention.tile": walk.tile})
    names = {k: _("Tile {k}: query block {qb} (rows {r0}–{r1}) × key block {kb} (keys {c0}–{c1})", k=k + 1, qb=qb, kb=kb,
                  r0=rows.start + 1, r1=rows.stop, c0=cols.start + 1, c1=cols.stop)
             for k, (qb, kb, rows, cols) in enumerate(tile_names(walk))}  # a plain lookup
    state.bind(st.selectbox, _("Tile"), "flash_attention.tile", options=list(names), format_func=names.get)

    stepper.live(FLASH_ATTENTION, walk, EXPLAIN)


page_body.run(page, header=header)
