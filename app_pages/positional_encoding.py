"""Positional encoding: self-attention alone ignores word order (shuffle in, shuffle out); adding PE fixes that."""

import pandas as pd
import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.lessons.positional_encoding import page as positional
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.positions import sinusoidal_encoding
from ui import charts, experiments, heatmaps, page_body, state, widgets
from ui.i18n import _


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Positional encoding: giving attention a sense of order"))
    st.markdown(_(
        "Self-attention compares every token with every other token, but nothing in it says **where** a token "
        "stands. Shuffle the words and each word's output stays exactly the same — only the rows move. "
        "Adding a position vector to each embedding fixes that. *(Hung-yi Lee's Transformer lecture, on positional "
        "encoding; Vaswani et al. 2017 §3.5.)*"
    ))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    walk = widgets.walkthrough_or_stop(SELF_ATTENTION_PAGE, settings, state.edits())
    t = walk.trace
    n_tokens, d_model = t.x.shape
    rows = token_labels(walk.tokens)
    cols = dim_labels("d", d_model)
    out_cols = dim_labels("c", t.attention.output.shape[1])

    c1, c2, c3 = st.columns([2, 2, 1])
    with c1:
        state.bind(st.selectbox, _("Shuffle the tokens"), "positional_encoding.shuffle", options=list(positional.SHUFFLES),
                   format_func={k: _(label) for k, label in positional.SHUFFLES.items()}.get)
    with c2:
        state.bind(st.selectbox, _("Positional encoding added in part 3"), "positional_encoding.kind", options=list(positional.ENCODINGS),
                   format_func={k: _(label) for k, label in positional.ENCODINGS.items()}.get)
    with c3:
        state.bind(st.number_input, _("Seed"), "experiment_seed", step=1,
                   help=_("Seeds the random shuffle and the learned encoding."))

    result = widgets.build_or_stop(positional.order_experiment, t.x, t.w_query, t.w_key, t.w_value, settings.positional_encoding.kind,
                                   settings.positional_encoding.shuffle, settings.experiment_seed)
    shuffled_rows = token_labels(result.shuffle(walk.tokens))

    st.header(_("1. Without positions: shuffle in, shuffle out"))
    st.markdown(_("**Original:** {original}  \n**Shuffled:** {shuffled}",
                  original=widgets.md_escape(" ".join(walk.tokens)),
                  shuffled=widgets.md_escape(" ".join(result.shuffle(walk.tokens)))))
    position_title = _("position in the shuffled sentence")
    st.dataframe(pd.DataFrame({position_title: list(result.shuffled_positions),
                               _("holds token"): list(result.shuffle(rows))}).set_index(position_title).T)
    out_width = experiments.heatmap_width(len(out_cols), legend=True)
    (left, right), _stacked = experiments.side_by_side([out_width, out_width])
    with left:
        st.markdown(_("**SA(X)**: outputs of the original sentence"))
        heatmaps.heatmap(t.attention.output, rows, out_cols, key="pe_plain", row_title=_("token"),
                        col_title=_("output column"))
    with right:
        st.markdown(_("**SA(P X)**: outputs of the shuffled sentence"))
        heatmaps.heatmap(result.plain_shuffled.output, shuffled_rows, out_cols, key="pe_plain_shuffled",
                        row_title=_("token"), col_title=_("output column"))
    st.markdown(_("Find a word in both: its row of numbers is the same. Put the shuffled outputs back in the original "
                  "order and compare:"))
    experiments.check_line(_("max |SA(P X) − P SA(X)| = {diff}: identical up to float rounding",
                             diff=f"{result.plain_diff:.2e}"), result.plain_matches)

    with st.expander(_("Why it must be so, step by step (sympy)")):
        st.markdown(_("P is the permutation matrix of the shuffle (Pᵀ P = I). Every stage carries P through:"))
        for line in positional.equivariance_steps()[:5]:
            st.latex(line)
        st.markdown(_("The row softmax does not care in which order the rows or the columns come, so it commutes "
                      "with P on both sides. Nothing in SA(X) depends on the order of the tokens."))

    st.header(_("2. The sinusoidal encoding"))
    even, odd = positional.sinusoidal_latex()
    f1, f2 = st.columns(2)
    f1.latex(even)
    f2.latex(odd)
    st.markdown(_("Each pair of columns (2i, 2i + 1) is a sine and a cosine turning at its own speed: fast for the first "
                  "columns, slower and slower for later ones (wavelengths from 2π to 10000 · 2π). Every position gets "
                  "a different pattern, and a shift by k positions is the same rotation wherever it happens."))
    p1, p2 = st.columns(2)
    with p1:
        state.bind(st.number_input, _("Positions shown"), "positional_encoding.positions", step=8,
                   help=state.range_help("positional_encoding.positions", N_("{low} to {high}.")))
    with p2:
        state.bind(st.number_input, _("d_model of this picture"), "positional_encoding.width", step=8,
                   help=state.range_help("positional_encoding.width", N_("{low} to {high}. Only for this picture; the sentence "
                                                                       "below uses its own d_model = {d_model}."),
                                         d_model=d_model))
    pattern = widgets.build_or_stop(experiments.sinusoidal_pattern, settings.positional_encoding.positions, settings.positional_encoding.width)
    charts.pattern(pattern.table, key="pe_pattern", row_title=_("position pos"), col_title=_("dimension (column) j"))
    experiments.check_line(_("The table against the formula computed entry by entry with math.sin / math.cos: "
                             "max |difference| = {diff}", diff=f"{pattern.loop_max_abs_diff:.1e}"), pattern.loop_matches)
    pos, col = pattern.example_position, pattern.example_column
    entry_text, _entry_value = positional.sinusoidal_entry_latex(pos, col, settings.positional_encoding.width)
    st.markdown(_("One entry with its numbers (row {row}, column {col}; positions and columns count from 0):",
                  row=pos, col=col))
    st.latex(entry_text)

    st.header(_("3. Add it: X + PE ({encoding})", encoding=_(positional.ENCODINGS[settings.positional_encoding.kind])))
    if settings.positional_encoding.kind == "learned":
        st.markdown(_("A **learned** encoding is simply a second embedding table, one row per position, trained with "
                    "the model. Here it is as it starts: `nn.Embedding`'s N(0, 1) random numbers (seeded). It breaks "
                    "the symmetry just as well; training would make it useful. Vaswani et al. found both work "
                    "about equally; the sinusoid also works for positions longer than any seen in training."))
    places, stacked = experiments.side_by_side([experiments.heatmap_width(d_model, extra=20),
                                                experiments.heatmap_width(d_model, extra=-40),
                                                experiments.heatmap_width(d_model, row_labels=False)])
    with places[0]:
        st.markdown("**X**")
        heatmaps.heatmap(t.x, rows, cols, key="pe_x", row_title=_("token"), col_title=_("dimension"), legend=False)
    with places[1]:
        st.markdown(_("**+ PE** (row p: position p)"))
        heatmaps.heatmap(result.pe, [_("pos {p}", p=p) for p in range(n_tokens)], cols, key="pe_table",
                        row_title=_("position"), col_title=_("dimension"), legend=False)
    with places[2]:
        st.markdown("**= X + PE**")
        heatmaps.heatmap(result.encoded_x, rows, cols, key="pe_x_plus", col_title=_("dimension"), legend=False,
                        row_axis=stacked)

    st.markdown(_("Now shuffle again. Each word lands at a new position and gets that position's vector, so its "
                  "output changes:"))
    (left, right), _stacked = experiments.side_by_side([out_width, out_width])
    with left:
        st.markdown(_("**SA(X + PE)**: original order"))
        heatmaps.heatmap(result.encoded.output, rows, out_cols, key="pe_encoded", row_title=_("token"),
                        col_title=_("output column"))
    with right:
        st.markdown(_("**SA(P X + PE)**, rows put back in the original order"))
        heatmaps.heatmap(result.encoded_unshuffled, rows, out_cols, key="pe_encoded_shuffled", row_title=_("token"),
                        col_title=_("output column"))
    diff_text = f"{result.encoded_diff:.3g}"
    if result.order_matters:
        st.success(_("max |SA(P X + PE) − P SA(X + PE)| = {diff}: the outputs now depend on the order of the words.",
                     diff=diff_text), icon=":material/swap_vert:")
    else:
        st.warning(_("max |SA(P X + PE) − P SA(X + PE)| = {diff}: almost no change here — try another shuffle or "
                     "encoding.", diff=diff_text), icon=":material/swap_vert:")
    st.latex(positional.equivariance_steps()[5])



def footer() -> None:
    """The code behind the page, the same on every click (``page_body.run``)."""
    widgets.show_code((sinusoidal_encoding, positional.equivariance), key="page_code")


page_body.run(page, header=header, footer=footer)
