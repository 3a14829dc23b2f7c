"""ALiBi: no position embedding; each head subtracts slope × distance from its scores."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.alibi.page import ALIBI_PAGE
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "slopes": N_("Each head gets its own slope: a geometric sequence from 2^(−8/H) down to 2^(−8). Steep heads look "
                 "only at nearby tokens; gentle heads look far. The slopes are fixed, not learned."),
    "distance": N_("How far key j is from query i. ALiBi uses nothing else about position: no embedding is added "
                   "to X."),
    "bias": N_("Each head's penalty: −slope × distance. Zero on the diagonal, more negative further away."),
    "biased_scores": N_("The usual scores q · k / √d plus the bias. Every head here shares one q and k, so the heads "
                        "differ only by their slope; in a real model each head also has its own q and k."),
    "weights": N_("Softmax over the biased scores: heads with a steep slope concentrate on the nearest tokens. "
                  "Because the penalty only depends on the distance, a model trained on short texts keeps working on "
                  "longer ones (the paper's title: train short, test long)."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("ALiBi: attention with linear biases"))
    st.markdown(_(
        "ALiBi (Press et al. 2022; used by BLOOM and MPT) gives attention a sense of distance without any position "
        "embedding: every score is lowered in proportion to how far the key is from the query, with a different slope "
        "per head."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3 = st.columns(3)
    with c1:
        state.bind(st.number_input, _("num_heads H"), "alibi.num_heads", step=1,
                   help=state.range_help("alibi.num_heads", N_("{low} to {high}, each with its own slope.")))
    with c2:
        state.bind(st.number_input, _("d_k (width of q and k)"), "d_k", step=1,
                   help=state.range_help("d_k", N_("{low} to {high}.")))
    with c3:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)
    state.bind(st.toggle, _("Causal mask"), "causal_mask",
               help=_("On, as in the paper's language models: each token sees itself and earlier tokens."))

    walk = widgets.walkthrough_or_stop(ALIBI_PAGE, state.settings(), state.edits())
    stepper.live(ALIBI_PAGE, walk, EXPLAIN)


page_body.run(page, header=header)
