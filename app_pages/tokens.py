"""Tokens & embeddings: sentence -> tokens -> ids -> the embedding matrix X (editable)."""

import pandas as pd
import streamlit as st

from attention_core.errors import InputError
from attention_core.presets import PRESETS
from attention_core.settings import MAX_DIM, MAX_TOKENS, MIN_DIM
from attention_core.walkthrough import build_walkthrough, dim_labels, token_labels
from ui import state, widgets

st.title("Tokens & embeddings")
st.markdown(
    "A sentence is split into **tokens** (here: words, split at spaces), each token is looked up in a "
    "**vocabulary** to get its **id**, and each id picks one row of an **embedding table**. "
    "Stacking those rows gives the matrix **X** that attention works on: one row per token, "
    "d_model columns."
)
widgets.show_messages()

settings = state.settings()
preset = PRESETS[settings.preset]

left, right = st.columns([3, 2])
with left:
    state.bind(st.text_input, "Sentence", "sentence", max_chars=400,
               help=f"Words separated by spaces; at most {MAX_TOKENS} tokens. Punctuation around words is dropped.")
with right:
    a, b = st.columns(2)
    with a:
        state.bind(st.number_input, "d_model (embedding width)", "d_model",
                   step=1, disabled=preset.fixed_embeddings,
                   help="Fixed by this example's hand-made vectors." if preset.fixed_embeddings else
                   f"How many numbers describe each token ({MIN_DIM} to {MAX_DIM}).")
    with b:
        state.bind(st.number_input, "Seed", "seed", step=1,
                   disabled=preset.fixed_embeddings,
                   help="torch.manual_seed for the random embedding table.")

if preset.vocabulary is not None:
    with st.expander(f"Vocabulary: {len(preset.vocabulary.ids)} words (seed 000's dictionary)"):
        st.write(", ".join(f"{w} → {i}" for w, i in preset.vocabulary.ids.items()))
elif preset.table is not None:
    st.caption("Vocabulary: " + ", ".join(preset.table) + " (this example's fixed vectors).")
else:
    st.caption("Vocabulary: built from your sentence (each new word gets the next id, from 0).")

try:
    walk = build_walkthrough(settings, state.edits())
except InputError as error:
    widgets.show_error(error)
    st.stop()

st.subheader("Tokens → ids")
st.dataframe(
    pd.DataFrame([list(walk.tokens), [str(i) for i in walk.token_ids]], index=["token", "id"],
                 columns=[str(i) for i in range(1, len(walk.tokens) + 1)]),
    width="content",
)
if preset.key == "seed000":
    st.caption(
        "Seed 000 makes its table with nn.Embedding(23, 4) for ids 1..23, so its last word "
        "(“Innovation”, id 23) would be out of range. Here the table has one more row, drawn after "
        "the weights, so every dictionary word works and the seed's own numbers are unchanged."
    )

st.subheader("The embedding matrix X")
if preset.fixed_embeddings:
    st.markdown(f"Each row is the article's hand-made {settings.d_model}-d vector for that word.")
else:
    st.markdown(
        f"`torch.manual_seed({settings.seed})`, then a table of random numbers from N(0, 1), "
        f"{walk.vocabulary.num_rows} rows × {settings.d_model} columns; X takes the rows of the ids."
    )
rows, cols = token_labels(walk.tokens), dim_labels("d", settings.d_model)
st.markdown("**Edit any cell**: the changes flow through every page and are kept when you switch pages.")
widgets.matrix_editor("x", walk.base["x"], rows, cols)
widgets.heatmap(walk.trace.x, rows, cols, key="tokens_heatmap", row_title="token", col_title="dimension")
