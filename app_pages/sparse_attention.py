"""DeepSeek sparse attention (DeepSeek-V3.2): a small lightning indexer picks, for each query, the k keys MLA attends to."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.sparse_attention.page import SPARSE_ATTENTION
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "indexer": N_("The **lightning indexer** has its own few, narrow heads. Its queries come from MLA's query latent "
                  "c_Q, its one key per token from the token itself (shared by its heads), and each of its heads gets "
                  "a weight w per token. The last panel is the explained one."),
    "scores": N_("For each query t and earlier key s the indexer adds up its heads: each head's dot product q · k, "
                 "cut at 0 by ReLU, times the head's weight. A large I_{t,s} says: key s matters to query t. The first two "
                 "heads' ReLU maps are drawn."),
    "topk": N_("Each query keeps the k keys with the largest index scores and drops the rest: a mask of 0 (kept) and "
               "−∞ (dropped). A query with at most k keys to see keeps them all."),
    "weights": N_("MLA attends as on its page, but the softmax runs over the kept keys only: the dropped keys get "
                  "weight 0 and the kept ones share all of it. The last panel is dense attention, for comparison."),
    "output": N_("Each head's output is the weighted sum of the kept keys' values; the heads side by side, then W_O, "
                 "as in MLA. Dense attention's u is beside it."),
    "lost": N_("What the indexer's choice cost here: the weight dense attention gave to the dropped keys (per head and "
               "query) and how far the output moved. DeepSeek trains the indexer to match the main attention, so "
               "that little is lost."),
    "work": N_("Why it pays: the main attention scores T · k pairs instead of about T²/2. On a short sentence that is "
               "little; at 128K tokens with k = 2048 it is ~32 × less."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("DeepSeek sparse attention: each query picks its keys"))
    st.markdown(_(
        "Attention scores every earlier token for every query: T²/2 pairs, too many at 128K tokens. **DeepSeek "
        "Sparse Attention** (DeepSeek-V3.2, 2025) first runs a small **lightning indexer** that scores every earlier "
        "token cheaply, keeps each query's **top k**, and lets MLA attend to those alone: T · k pairs. The main "
        "attention here is the MLA page's: with its sizes and seed, its numbers."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("k (keys each query keeps)"), "sparse_attention.top_k", step=1,
                   help=state.range_help("sparse_attention.top_k", N_("{low} to {high}; k ≥ the sentence's length "
                                                                       "keeps every key: dense attention.")))
    with c2:
        state.bind(st.number_input, _("H_I (indexer heads)"), "sparse_attention.index_heads", step=1,
                   help=state.range_help("sparse_attention.index_heads", N_("{low} to {high}.")))
    with c3:
        state.bind(st.number_input, _("d_I (indexer width)"), "sparse_attention.index_dim", step=1,
                   help=state.range_help("sparse_attention.index_dim", N_("{low} to {high}, at least MLA's d_R.")))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)
    with st.expander(_("MLA, the main attention: its sizes (the MLA page's defaults)")):
        m1, m2, m3 = st.columns(3)
        with m1:
            state.bind(st.number_input, _("num_heads h"), "sparse_attention.num_heads", step=1,
                       help=state.range_help("sparse_attention.num_heads", N_("{low} to {high}.")))
            state.bind(st.number_input, _("d_model (embedding width)"), "d_model", step=1,
                       help=state.range_help("d_model", N_("{low} to {high}; the latents must not be wider.")))
        with m2:
            state.bind(st.number_input, _("head_dim d_h"), "sparse_attention.head_dim", step=1,
                       help=state.range_help("sparse_attention.head_dim", N_("{low} to {high}: the width of a head's "
                                                                              "content query, key and value.")))
            state.bind(st.number_input, _("d_R (RoPE part)"), "sparse_attention.rope_dim", step=1,
                       help=state.range_help("sparse_attention.rope_dim", N_("Even, {low} to {high}: RoPE rotates "
                                                                              "pairs.")))
        with m3:
            state.bind(st.number_input, _("d_c (key/value latent)"), "sparse_attention.kv_latent", step=1,
                       help=state.range_help("sparse_attention.kv_latent", N_("{low} to {high}, at most d_model: what "
                                                                               "the cache keeps per token.")))
            state.bind(st.number_input, _("d_c' (query latent)"), "sparse_attention.q_latent", step=1,
                       help=state.range_help("sparse_attention.q_latent", N_("{low} to {high}, at most d_model.")))

    walk = widgets.walkthrough_or_stop(SPARSE_ATTENTION, state.settings(), state.edits())
    widgets.keep_in_range(**{"sparse_attention.head": walk.head})
    t = walk.trace
    names = {r: _("Head {r}", r=r + 1) for r in range(t.dense.num_heads)}  # a dict: the labels are fixed when drawn
    state.bind(st.selectbox, _("MLA head shown"), "sparse_attention.head", options=list(names), format_func=names.get)
    st.markdown(_("**Sizes:** the indexer: {h_i} heads of d_I = {d_i}; each query keeps k = {k} keys. MLA: {h} heads "
                  "of d_h = {d_h} (+ d_R = {d_r}), latents d_c = {d_c} and d_c' = {d_cq}.",
                  h_i=t.indexer.index_heads, d_i=t.indexer.index_dim, k=t.indexer.top_k, h=t.dense.num_heads,
                  d_h=t.dense.head_dim, d_r=t.dense.rope_dim, d_c=t.dense.latent_kv.shape[-1],
                  d_cq=t.dense.latent_q.shape[-1]))
    st.page_link("app_pages/mla.py", label=_("MLA itself, step by step: its page"), icon=":material/compress:")

    stepper.live(SPARSE_ATTENTION, walk, EXPLAIN)


page_body.run(page, header=header)
