"""Attention without trainable weights (seed 004): one context vector worked out by hand."""

import streamlit as st

from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.self_attention import formulas
from ui import heatmaps, page_body, state, widgets
from ui.i18n import _


@st.cache_data(show_spinner=False, max_entries=64)
def _steps(x: tuple, tokens: tuple, query_index: int):
    return formulas.weightless_steps(x, tokens, query_index)


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Attention without trainable weights"))
    st.markdown(_(
        "Before any learned weights: take the embeddings themselves as queries, keys and values "
        "(Q = K = V = X). The **score** of token j for the query token is the dot product of their "
        "embeddings, the **weights** are the softmax of the scores, and the **context vector** is the "
        "weighted sum of the embeddings. (From an Afrikaans tutorial on attention, after Raschka, *Build a Large "
        "Language Model (From Scratch)*, 2024, ch. 3; no ÷ √d_k yet.)"
    ))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    walk = widgets.walkthrough_or_stop(SELF_ATTENTION_PAGE, settings, state.edits())

    labels = token_labels(walk.tokens)
    query_index = widgets.build_or_stop(formulas.weightless_query, settings.no_weights.query_index, len(walk.tokens))
    widgets.keep_in_range(**{"no_weights.query_index": query_index})  # the sentence got shorter: keep the choice in range
    state.bind(st.selectbox, _("Query token (whose context vector we compute)"), "no_weights.query_index",
               options=list(range(len(walk.tokens))), format_func=lambda i: labels[i])

    x = tuple(tuple(row) for row in walk.trace.x.tolist())
    steps = _steps(x, walk.tokens, query_index)
    query = widgets.md_escape(walk.tokens[query_index])

    st.subheader(_("1. Scores: the dot product of “{token}” with every token", token=query))
    for line in steps.dots:
        st.latex(line)
    st.subheader(_("2. Softmax: exponentials, their sum, the weights"))
    st.latex(formulas.weightless_softmax_latex())
    exp_column, weight_column = st.columns(2)
    with exp_column:
        for line in steps.exps:
            st.latex(line)
        st.latex(steps.total)
    with weight_column:
        for line in steps.weights:
            st.latex(line)
    st.subheader(_("3. The context vector of “{token}”: the weighted sum of the embeddings", token=query))
    st.latex(steps.context)

    if formulas.seed004_rounding_applies(walk.preset.key, query_index, bool(state.edits())):
        st.caption(
            _("The Afrikaans tutorial prints [0.3992, 0.3858, 0.8610] for “shiny”: it rounds the weights before "
              "the sum, so its numbers differ from the exact ones in the fourth decimal.")
        )

    st.subheader(_("All tokens at once"))
    st.markdown(_("Each row holds one query token's weights (each row sums to 1)."))
    heatmaps.heatmap(walk.weightless.weights, labels, labels, key="no_weights_heatmap",
                    row_title=_("query"), col_title=_("key"))
    heatmaps.heatmap(walk.weightless.output, labels, dim_labels("d", walk.trace.x.shape[1]),
                    key="no_weights_context", row_title=_("token"), col_title=_("context vector"))
    widgets.check_line(
        walk.weightless_torch_diff, walk.weightless_torch_matches,
        "torch.nn.functional.scaled_dot_product_attention(X, X, X, scale=1.0)",
    )


page_body.run(page, header=header)
