"""Differential attention (Ye et al. 2025, Differential Transformer): two softmax maps, one subtracted, so that the
noise they share cancels."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.differential_attention.page import DIFFERENTIAL_ATTENTION
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "split": N_("Each head's query and key are twice as wide as usual and split into two halves: Q1, K1 for the first "
                "map, Q2, K2 for the second. The values stay whole, 2d wide. The panels show the chosen head."),
    "maps": N_("Two ordinary causal softmax maps from the two halves. Each spends all of its weight, including on "
               "tokens that do not matter: that weight is the noise the difference removes."),
    "lambda": N_("λ weighs the second map. It is learned through four vectors, λ = exp(λ_q1 · λ_k1) − exp(λ_q2 · "
                 "λ_k2) + λ_init, with λ_init growing with the layer's depth: 0.2 at layer 1, almost 0.8 deep down."),
    "difference": N_("The differential map A1 − λ A2: where both maps agree the difference is small; weight that only "
                     "the first map gives stands out. Entries can be negative (blue), and each row sums to 1 − λ."),
    "values": N_("The values are weighed by the difference, as by weights in ordinary attention: a negative entry "
                 "subtracts that token's value."),
    "norm": N_("Each head's output row is normalised (RMSNorm, no learned weights) and scaled by 1 − λ_init, so that "
               "the heads keep the size ordinary attention would give them."),
    "output": N_("The heads side by side (h · 2d columns), then W_O back to d_model, as in multi-head attention."),
    "cancel": N_("The same random noise N is added to both maps' scores. Each map changes a lot; their difference "
                 "changes much less: what both maps share cancels, as in a differential amplifier."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Differential attention: two maps, one subtracted"))
    st.markdown(_(
        "Softmax spends some weight on tokens that do not matter: attention noise. The **Differential Transformer** "
        "(Ye et al. 2025, ICLR) computes two softmax maps per head and subtracts the second, scaled by a learned "
        "**λ**: (softmax(Q1 K1ᵀ / √d) − λ softmax(Q2 K2ᵀ / √d)) V. What both maps share cancels, like noise in a "
        "differential amplifier, and the weight that only the first map gives stands out."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("num_heads h"), "differential_attention.num_heads", step=1,
                   help=state.range_help("differential_attention.num_heads", N_("{low} to {high}; each head has two "
                                                                                 "maps.")))
        state.bind(st.number_input, _("d_model (embedding width)"), "d_model", step=1,
                   help=state.range_help("d_model", N_("{low} to {high}.")))
    with c2:
        state.bind(st.number_input, _("head_dim d"), "differential_attention.head_dim", step=1,
                   help=state.range_help("differential_attention.head_dim", N_(
                       "{low} to {high}: the width of each half of q and k; the values are 2d wide.")))
        state.bind(st.number_input, _("Layer l"), "differential_attention.layer", step=1,
                   help=state.range_help("differential_attention.layer", N_(
                       "{low} to {high}: λ_init = 0.8 − 0.6 e^(−0.3 (l − 1)) grows with depth.")))
    with c3:
        state.bind(st.number_input, _("Noise in both maps"), "differential_attention.noise", step=0.5, format="%.2f",
                   help=state.range_help("differential_attention.noise", N_(
                       "{low:g} to {high:g}: the size of the noise the last step adds to both maps' scores.")))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)

    walk = widgets.walkthrough_or_stop(DIFFERENTIAL_ATTENTION, state.settings(), state.edits())
    widgets.keep_in_range(**{"differential_attention.head": walk.head})
    t = walk.trace
    names = {r: _("Head {r}", r=r + 1) for r in range(t.num_heads)}  # a dict: the labels are fixed when drawn
    state.bind(st.selectbox, _("Head shown"), "differential_attention.head", options=list(names),
               format_func=names.get)
    st.markdown(_("**Sizes:** d_model = {d}, {h} heads, each with two maps of d = {d_h} and values of 2d = {v}; "
                  "layer {l}: λ_init = {init:.3f}, λ = {lam:.3f}.", d=t.x.shape[-1], h=t.num_heads, d_h=t.head_dim,
                  v=2 * t.head_dim, l=t.layer, init=t.lambda_init, lam=t.lam))

    stepper.live(DIFFERENTIAL_ATTENTION, walk, EXPLAIN)


page_body.run(page, header=header)
