"""Scaled dot-product self-attention, step by step: X -> Q, K, V -> Q Kᵀ -> ÷ √d_k -> softmax -> · V."""

import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.tokens import dim_labels
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.self_attention.formulas import header_latex
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "inputs": N_("Each row is one token's embedding (from *Tokens & embeddings*)."),
    "query": N_("Each token's **query**: what it is looking for. Row i of Q is x_i times W_q."),
    "key": N_("Each token's **key**: how it presents itself to queries. Row j of K is x_j times W_k."),
    "value": N_("Each token's **value**: what it hands over when attended to. Row j of V is x_j times W_v."),
    "scores": N_("Entry (i, j) is the dot product of query i with key j: how well token j matches what token i "
              "looks for."),
    "scaled_scores": N_("Divide by √d_k. The dot product of two d_k-long vectors grows with d_k; without this "
                     "the softmax would put nearly all weight on one key."),
    "weights": N_("Softmax along each row: exponentiate, divide by the row's sum. Each row now sums to 1."),
    "output": N_("Row i is token i's **context vector**: the weighted sum of all value rows, with row i of the "
              "weights."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Scaled dot-product self-attention, step by step"))
    st.latex(header_latex())


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    c1, c2, c3 = st.columns([1, 1, 3])
    with c1:
        state.bind(st.number_input, _("d_k (width of q, k, v)"), "d_k", step=1,
                   help=state.range_help("d_k", N_("{low} to {high}. d_v = d_k here.")))
    with c2:
        state.bind(st.number_input, _("Seed"), "seed", step=1,
                   disabled=settings.preset == "hello", help=_("Seeds the random W_q, W_k, W_v (and embeddings)."))
    with c3:
        widgets.sentence_box(help_more=_("d_model = {d}; X and d_model are on *Tokens & embeddings*.",
                                         d=settings.d_model))

    walk = widgets.walkthrough_or_stop(SELF_ATTENTION_PAGE, state.settings(), state.edits())

    # A toggle, not an expander: a collapsed expander still sends its three editors on every rerun.
    if st.toggle(_("Show and edit the weights W_q, W_k, W_v"), key="sa_show_weights",
                 help=_("Seeded from the example; your edits are kept when you hide them or switch pages.")):
        st.caption(_("Each is d_model × d_k = {d} × {d_k}: Q = X W_q, K = X W_k, V = X W_v.",
                     d=settings.d_model, d_k=settings.d_k))
        tabs = st.tabs(["W_q", "W_k", "W_v"])
        for tab, name in zip(tabs, ("w_query", "w_key", "w_value")):
            with tab:
                widgets.matrix_editor(name, walk.base[name], dim_labels("d", settings.d_model),
                                      dim_labels("c", settings.d_k))

    stepper.live(SELF_ATTENTION_PAGE, walk, EXPLAIN, layout="beside")


page_body.run(page, header=header)
