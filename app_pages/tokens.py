"""Tokens & embeddings: sentence -> tokens -> ids -> the embedding matrix X (editable)."""

import pandas as pd
import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.presets import PRESETS
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from ui import heatmaps, page_body, state, widgets
from ui.i18n import _


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Tokens & embeddings"))
    st.markdown(_(
        "A sentence is split into **tokens** (here: words, split at spaces), each token is looked up in a "
        "**vocabulary** to get its **id**, and each id picks one row of an **embedding table**. "
        "Stacking those rows gives the matrix **X** that attention works on: one row per token, "
        "d_model columns."
    ))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    preset = PRESETS[settings.preset]

    left, right = st.columns([3, 2])
    with left:
        widgets.sentence_box(help_more=_("Punctuation around words is dropped."))
    with right:
        a, b = st.columns(2)
        with a:
            state.bind(st.number_input, _("d_model (embedding width)"), "d_model",
                       step=1, disabled=preset.fixed_embeddings,
                       help=_("Fixed by this example's hand-made vectors.") if preset.fixed_embeddings else
                       state.range_help("d_model", N_("How many numbers describe each token ({low} to {high}).")))
        with b:
            state.bind(st.number_input, _("Seed"), "seed", step=1,
                       disabled=preset.fixed_embeddings,
                       help=_("torch.manual_seed for the random embedding table."))

    if preset.vocabulary is not None:
        with st.expander(_("Vocabulary: {n} words (the dictionary of the Chinese tutorial this example comes "
                           "from)", n=len(preset.vocabulary.ids))):
            st.write(", ".join(f"{w} → {i}" for w, i in preset.vocabulary.ids.items()))
    elif preset.table is not None:
        st.caption(_("Vocabulary: {words} (this example's fixed vectors).", words=", ".join(preset.table)))
    else:
        st.caption(_("Vocabulary: built from your sentence (each new word gets the next id, from 0)."))

    walk = widgets.walkthrough_or_stop(SELF_ATTENTION_PAGE, state.settings(), state.edits())

    st.subheader(_("Tokens → ids"))
    st.dataframe(
        pd.DataFrame([list(walk.tokens), [str(i) for i in walk.token_ids]], index=[_("token"), _("id")],
                     columns=[str(position) for position, _token in enumerate(walk.tokens, start=1)]),
        width="content",
    )
    if preset.key == "seed000":
        st.caption(_(
            "The Chinese tutorial this example comes from makes its table with nn.Embedding(23, 4) for ids "
            "1..23, so its last word (“Innovation”, id 23) would be out of range. Here the table has one more "
            "row, drawn after the weights, so every dictionary word works and the tutorial's own numbers are "
            "unchanged."
        ))

    st.subheader(_("The embedding matrix X"))
    if preset.fixed_embeddings:
        st.markdown(_("Each row is the tutorial's hand-made {d}-d vector for that word.", d=settings.d_model))
    else:
        st.markdown(_(
            "`torch.manual_seed({seed})`, then a table of random numbers from N(0, 1), "
            "{rows} rows × {cols} columns; X takes the rows of the ids.",
            seed=settings.seed, rows=walk.vocabulary.num_rows, cols=settings.d_model,
        ))
    rows, cols = token_labels(walk.tokens), dim_labels("d", settings.d_model)
    st.markdown(_("**Edit any cell**: the changes flow through every page and are kept when you switch pages."))
    widgets.matrix_editor("x", walk.base["x"], rows, cols)
    heatmaps.heatmap(walk.trace.x, rows, cols, key="tokens_heatmap", row_title=_("token"), col_title=_("dimension"))


page_body.run(page, header=header)
