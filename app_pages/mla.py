"""Multi-head latent attention (DeepSeek-V2, V3): keys and values rebuilt from one small latent per token."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.mla.page import MLA_PAGE
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "latents": N_("Each token is compressed into a **latent** c_KV of d_c numbers: the only thing the KV cache keeps "
                  "for the keys' and values' content. The queries get their own latent c_Q (not cached)."),
    "up": N_("Every head rebuilds its content keys K^C and its values V from the same c_KV with its own "
             "up-projections W_UK and W_UV; its content queries Q^C come from c_Q. The panels show the chosen head."),
    "rope": N_("Position enters through a small separate part: each head's q^R comes from c_Q, while one k^R = "
               "RoPE(X W_KR) is shared by every head. RoPE rotates each pair (i, i + d_R/2) by the angle m θ_i of "
               "the token's position m (the RoPE page)."),
    "scores": N_("Each head's query is [q^C; q^R] and its key [k^C; k^R], so a score is the content part plus the "
                 "position part, divided by √(d_h + d_R). DeepSeek's models are decoders: the causal mask blocks later "
                 "tokens."),
    "weights": N_("Softmax along each row, then the weighted sum of the head's values: as in multi-head attention."),
    "output": N_("The h heads' outputs side by side (h · d_h columns), then W_O back to d_model."),
    "cache": N_("Generating text keeps, for every past token, what the next tokens' queries need. MHA keeps every "
                "head's key and value; GQA and MQA share them among heads; MLA keeps only c_KV and k^R."),
    "absorption": N_("Rebuilding K^C for every cached token would undo the saving. But q^C · (c_KV W_UK) = (q^C W_UKᵀ) · "
                     "c_KV: move W_UK to the query side once and score against the cached latents directly. "
                     "(W_UV can likewise be absorbed into W_O.)"),
    "decoupling": N_("Suppose RoPE rotated k^C itself: k^C_j = R_j (c_j W_UK). Then q · k^C_j = qᵀ R_j W_UKᵀ c_j: the "
                     "rotation R_j sits between the query and W_UK and changes with the key's position, so no single "
                     "matrix can be absorbed. The panels compute it: the absorbed product misses R_j."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Multi-head latent attention: a KV cache of latents"))
    st.markdown(_(
        "Multi-head attention caches every head's key and value for every token. **Multi-head latent attention** "
        "(MLA; DeepSeek-V2 2024, DeepSeek-V3) caches one small **latent** vector per token instead and rebuilds each "
        "head's keys and values from it; position (RoPE) travels in a separate small key shared by all heads. The "
        "cache shrinks by an order of magnitude, and **weight absorption** scores the queries against the latents "
        "directly."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("num_heads h"), "mla.num_heads", step=1,
                   help=state.range_help("mla.num_heads", N_("{low} to {high}.")))
        state.bind(st.number_input, _("d_model (embedding width)"), "d_model", step=1,
                   help=state.range_help("d_model", N_("{low} to {high}; the latents must not be wider.")))
    with c2:
        state.bind(st.number_input, _("head_dim d_h"), "mla.head_dim", step=1,
                   help=state.range_help("mla.head_dim", N_("{low} to {high}: the width of a head's content query, "
                                                             "key and value.")))
        state.bind(st.number_input, _("d_R (RoPE part)"), "mla.rope_dim", step=1,
                   help=state.range_help("mla.rope_dim", N_("Even, {low} to {high}: RoPE rotates pairs.")))
    with c3:
        state.bind(st.number_input, _("d_c (key/value latent)"), "mla.kv_latent", step=1,
                   help=state.range_help("mla.kv_latent", N_("{low} to {high}, at most d_model: what the cache keeps "
                                                              "per token.")))
        state.bind(st.number_input, _("d_c' (query latent)"), "mla.q_latent", step=1,
                   help=state.range_help("mla.q_latent", N_("{low} to {high}, at most d_model.")))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)

    walk = widgets.walkthrough_or_stop(MLA_PAGE, state.settings(), state.edits())
    widgets.keep_in_range(**{"mla.head": walk.head})
    t = walk.trace
    names = {r: _("Head {r}", r=r + 1) for r in range(t.num_heads)}  # a dict: the labels are fixed when drawn
    state.bind(st.selectbox, _("Head shown"), "mla.head", options=list(names), format_func=names.get)
    st.markdown(_("**Sizes:** d_model = {d}, {h} heads of d_h = {d_h} (+ d_R = {d_r} for RoPE), latents d_c = {d_c} "
                  "and d_c' = {d_cq}; scale 1/√{width}.", d=t.x.shape[-1], h=t.num_heads, d_h=t.head_dim,
                  d_r=t.rope_dim, d_c=t.latent_kv.shape[-1], d_cq=t.latent_q.shape[-1],
                  width=t.head_dim + t.rope_dim))

    stepper.live(MLA_PAGE, walk, EXPLAIN)
    st.page_link("app_pages/sparse_attention.py", icon=":material/filter_alt:",
                 label=_("DeepSeek-V3.2 runs this MLA over each query's top-k keys only: DeepSeek sparse attention"))


page_body.run(page, header=header)
