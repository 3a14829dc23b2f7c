"""Additive vs dot-product scoring: a(q, k) = w_vᵀ tanh(W_q q + W_k k) step by step, beside q · k / √d_k."""

import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.lessons.additive import page as additive
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.self_attention.formulas import entry_of
from ui import experiments, heatmaps, page_body, state, widgets
from ui.i18n import _


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Additive vs dot-product scoring"))
    st.markdown(_(
        "Attention needs a score a(q, k) for every query–key pair. There are two classic choices (both in Hung-yi "
        "Lee's Transformer lecture): "
        "the **dot product** (scaled by √d_k, as in the Transformer) and **additive** attention (Bahdanau et al. "
        "2015), a tiny one-hidden-layer network with its own weights. Both run here on the same queries and keys: "
        "Q and K of the self-attention page."
    ))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    walk = widgets.walkthrough_or_stop(SELF_ATTENTION_PAGE, settings, state.edits())
    att = walk.trace.attention
    rows = token_labels(walk.tokens)
    view = widgets.build_or_stop(additive.compare_scorers, att.query, att.key, att.value, att.weights,
                                 settings.additive.hidden, settings.experiment_seed, settings.additive.row,
                                 settings.additive.col)
    widgets.keep_in_range(**{"additive.row": view.row, "additive.col": view.col})  # a sentence that got shorter
    trace, params = view.additive, view.additive.weights_in
    n_tokens, d_k, h = view.tokens, view.d_k, view.hidden_size
    i, j = view.row, view.col

    c1, c2, c3 = st.columns([1, 1, 2])
    with c1:
        state.bind(st.number_input, _("Hidden size h"), "additive.hidden", step=1,
                   help=state.range_help("additive.hidden", N_("{low} to {high}: the width of the additive scorer's hidden layer.")))
    with c2:
        state.bind(st.number_input, _("Seed of W_q, W_k, w_v"), "experiment_seed", step=1,
                   help=_("The additive scorer's own weights, drawn like nn.Linear's (uniform ± 1/√fan_in)."))
    with c3:
        st.markdown(_("**Sentence:** {sentence}  \nQ and K: {n} × {d_k} (change them on the self-attention page).",
                      sentence=widgets.md_escape(settings.sentence), n=n_tokens, d_k=d_k))

    dot_col, add_col = st.columns(2)
    with dot_col:
        st.subheader(_("Scaled dot product"))
        for line in additive.dot_product_latex():
            st.latex(line)
        st.markdown(_("No weights of its own. The scores grow with d_k, hence the ÷ √d_k."))
    with add_col:
        st.subheader(_("Additive"))
        for line in additive.additive_latex():
            st.latex(line)
        st.markdown(_("Own weights: W_q, W_k (h × d_k = {h} × {d_k}) and w_v (h = {h}). tanh keeps each hidden unit "
                      "in (−1, 1), so |a| ≤ Σ|w_v,l| and no scaling is needed; q and k may even have different widths.",
                      h=h, d_k=d_k))

    st.header(_("The two weight matrices, side by side"))
    st.caption(_("Both on one colour scale. Click a cell of either to explain that query–key pair below."))
    (left, right), stacked = experiments.side_by_side([experiments.heatmap_width(n_tokens),
                                                       experiments.heatmap_width(n_tokens, row_labels=False)])
    with left:
        st.markdown(_("**softmax(Q Kᵀ / √d_k)**, dot product"))
        heatmaps.heatmap(att.weights, rows, rows, key="add_dot_weights", clickable=True, selected=(i, j),
                        row_title=_("query token"), col_title=_("key token"), legend=False, scale_max=view.shared_scale,
                        on_cell=lambda r, c: state.update(**{"additive.row": r, "additive.col": c}))
    with right:
        st.markdown(_("**softmax(a(Q, K))**, additive"))
        heatmaps.heatmap(trace.weights, rows, rows, key="add_add_weights", clickable=True, selected=(i, j),
                        row_title=_("query token"), col_title=_("key token"), legend=False, row_axis=stacked,
                        scale_max=view.shared_scale,
                        on_cell=lambda r, c: state.update(**{"additive.row": r, "additive.col": c}))
    st.markdown(_("The two scorers pick the same favourite key for {agree} of {n} queries. They are different "
                  "functions: neither is “right” — training would shape W_q, W_k, w_v (and the projections) to "
                  "make the additive scores useful.", agree=view.agreeing_queries, n=n_tokens))

    st.header(_("Additive scoring, step by step"))
    hidden_labels = dim_labels("u", h)
    (s1, s2, s3), _stacked = experiments.side_by_side([experiments.heatmap_width(d_k), experiments.heatmap_width(d_k),
                                                experiments.heatmap_width(1)])
    with s1:
        st.markdown(_("**1. W_q** (h × d_k)"))
        heatmaps.heatmap(params.w_query, hidden_labels, dim_labels("c", d_k), key="add_wq", row_title=_("hidden unit"),
                        col_title=_("column of q"), legend=False)
    with s2:
        st.markdown("**W_k** (h × d_k)")
        heatmaps.heatmap(params.w_key, hidden_labels, dim_labels("c", d_k), key="add_wk", row_title=_("hidden unit"),
                        col_title=_("column of k"), legend=False)
    with s3:
        st.markdown("**w_v** (h)")
        heatmaps.heatmap(view.w_v_column, hidden_labels, ["w_v"], key="add_wv", row_title=_("hidden unit"),
                        legend=False)
    (s1, s2), _stacked = experiments.side_by_side([experiments.heatmap_width(h)] * 2)
    with s1:
        st.markdown(_("**2. Each query mapped: Q W_qᵀ** (row i is W_q q_i)"))
        heatmaps.heatmap(trace.query_features, rows, hidden_labels, key="add_qf", row_title=_("query token"),
                        col_title=_("hidden unit"), legend=False)
    with s2:
        st.markdown(_("**Each key mapped: K W_kᵀ** (row j is W_k k_j)"))
        heatmaps.heatmap(trace.key_features, rows, hidden_labels, key="add_kf", row_title=_("key token"),
                        col_title=_("hidden unit"), legend=False)
    (s1, s2), _stacked = experiments.side_by_side([experiments.heatmap_width(h), experiments.heatmap_width(n_tokens)])
    with s1:
        st.markdown(_("**3. tanh(W_q q_{i} + W_k k_j)** for query {query} and every key j", i=view.query_number,
                      query=widgets.md_escape(rows[i])))
        heatmaps.heatmap(trace.hidden[i], rows, hidden_labels, key="add_hidden", row_title=_("key token"),
                        col_title=_("hidden unit"), legend=False)
    with s2:
        st.markdown(_("**4. Scores a(q_i, k_j) = tanh(…) · w_v**"))
        heatmaps.heatmap(trace.scores, rows, rows, key="add_scores", clickable=True, selected=(i, j),
                        row_title=_("query token"), col_title=_("key token"), legend=False,
                        on_cell=lambda r, c: state.update(**{"additive.row": r, "additive.col": c}))

    st.header(_("One pair explained with its numbers"))
    r1, r2 = st.columns(2)
    with r1:
        state.bind(st.selectbox, _("Query"), "additive.row", options=list(range(n_tokens)), format_func=lambda k: rows[k])
    with r2:
        state.bind(st.selectbox, _("Key"), "additive.col", options=list(range(n_tokens)), format_func=lambda k: rows[k])
    u_text, c_text, a_text = additive.additive_entry_latex(trace, i, j)
    st.markdown(_("**Additive**, query {query} and key {key}: map both into the hidden space, add, squash with tanh, "
                  "weigh with w_v", query=widgets.md_escape(rows[i]), key=widgets.md_escape(rows[j])))
    u_col, c_col = st.columns(2)
    u_col.latex(u_text)
    c_col.latex(c_text)
    st.latex(a_text)
    st.markdown(_("**Scaled dot product**, the same pair"))
    widgets.entry_formula(entry_of(walk.trace, "scores", i, j))
    widgets.entry_formula(entry_of(walk.trace, "scaled_scores", i, j))

    experiments.check_line(_("Additive scores against a plain Python loop over i, j and the hidden units: "
                             "max |difference| = {diff}", diff=f"{view.loop_max_abs_diff:.1e}"), view.loop_matches)
    widgets.check_line(walk.torch_max_abs_diff, walk.torch_matches,
                        "torch.nn.functional.scaled_dot_product_attention(Q, K, V)")


def footer() -> None:
    """The code behind the page, the same on every click (``page_body.run``)."""
    widgets.show_code((additive.additive_attention,), key="page_code")


page_body.run(page, header=header, footer=footer)
