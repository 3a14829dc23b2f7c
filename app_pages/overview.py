"""Overview: what attention does, the pipeline, a preset picker, where to go next."""

from pathlib import Path

import streamlit as st

from attention_core.presets import PRESETS
from ui import state

HERE = Path(__file__).resolve().parent  # the other pages, wherever the entry point is

st.title("Attention Explorer")
st.markdown(
    "Attention lets every token of a sentence **look at the other tokens and take what it needs from them**. "
    "Change the inputs on any page and watch every number of the math being made, with its formula beside it."
)

left, right = st.columns(2)
with left:
    st.subheader("Query, key, value")
    st.markdown(
        "- A **query** is what a token is looking for.\n"
        "- A **key** is how a token describes itself to the others.\n"
        "- A **value** is what a token hands over when it is picked.\n\n"
        "Each token compares its query with every key (a dot product), turns those scores into "
        "**weights** that sum to 1 (softmax), and takes the weighted sum of the values: its "
        "**context vector**. Like asking a librarian: your question is matched against each book's "
        "description, and you get a blend of the best-matching books' contents."
    )
with right:
    st.subheader("The pipeline")
    st.graphviz_chart(
        """digraph {
            rankdir=TB; node [shape=box, style="rounded,filled", fillcolor="#eef3ff", fontsize=22, margin="0.3,0.15"];
            tokens [label="tokens"]; X [label="embeddings X"];
            QKV [label="Q = X W_q,  K = X W_k,  V = X W_v"];
            S [label="scores Q Kᵀ"]; A [label="scaled ÷ √d_k"]; W [label="weights = softmax"];
            Z [label="context vectors = weights · V"];
            tokens -> X -> QKV -> S -> A -> W -> Z;
        }""",
    )

st.subheader("Pick a worked example")
st.caption("Every example comes from one of the tutorials this app teaches from; you can change all of it later.")
current = state.settings().preset
for key, preset in PRESETS.items():
    with st.container(border=True):
        text, button = st.columns([5, 1], vertical_alignment="center")
        text.markdown(f"**{preset.title}**  \n{preset.note}  \n*Source: {preset.source}*")
        button.button(
            "In use" if key == current else "Use this example",
            key=f"overview_use_{key}",
            disabled=key == current,
            on_click=state.choose_preset,
            args=(key,),
            width="stretch",
        )

st.subheader("Where to go next")
st.page_link(HERE / "tokens.py", label="Tokens & embeddings: from a sentence to the matrix X", icon=":material/abc:")
st.page_link(HERE / "no_weights.py", label="Attention without trainable weights: one context vector by hand", icon=":material/front_hand:")
st.page_link(HERE / "self_attention.py", label="Scaled dot-product self-attention, step by step", icon=":material/calculate:")
st.page_link(HERE / "causal.py", label="Causal attention: the mask, the −∞ fill and the other route", icon=":material/visibility_off:")
st.page_link(HERE / "dropout.py", label="Dropout on the attention weights: the seeded mask and 1/(1 − p)", icon=":material/grain:")
st.page_link(HERE / "multi_head.py", label="Multi-head attention: split, heads side by side, concat, W_O", icon=":material/view_column:")
st.page_link(HERE / "cross_attention.py", label="Cross-attention: a decoder sentence attends to an encoder sentence", icon=":material/compare_arrows:")
