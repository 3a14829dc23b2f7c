"""Overview: what attention does, the pipeline, a preset picker, where to go next."""

from pathlib import Path

import streamlit as st

from attention_core.inputs.presets import PRESETS
from ui import state
from ui.i18n import _

HERE = Path(__file__).resolve().parent  # the other pages, wherever the entry point is

st.title(_("Attention Explorer"))
st.markdown(_(
    "Attention lets every token of a sentence **look at the other tokens and take what it needs from them**. "
    "Change the inputs on any page and watch every number of the math being made, with its formula beside it."
))

left, right = st.columns(2)
with left:
    st.subheader(_("Query, key, value"))
    st.markdown(_(
        "- A **query** is what a token is looking for.\n"
        "- A **key** is how a token describes itself to the others.\n"
        "- A **value** is what a token hands over when it is picked.\n\n"
        "Each token compares its query with every key (a dot product), turns those scores into "
        "**weights** that sum to 1 (softmax), and takes the weighted sum of the values: its "
        "**context vector**. Like asking a librarian: your question is matched against each book's "
        "description, and you get a blend of the best-matching books' contents."
    ))
with right:
    st.subheader(_("The pipeline"))
    labels = {
        "tokens": _("tokens"),
        "X": _("embeddings X"),
        "S": _("scores Q Kᵀ"),
        "A": _("scaled ÷ √d_k"),
        "W": _("weights = softmax"),
        "Z": _("context vectors = weights · V"),
    }
    st.graphviz_chart(
        'digraph { rankdir=TB; node [shape=box, style="rounded,filled", fillcolor="#eef3ff", fontsize=22, '
        'margin="0.3,0.15"]; '
        + " ".join(f'{node} [label="{text}"];' for node, text in labels.items())
        + ' QKV [label="Q = X W_q,  K = X W_k,  V = X W_v"]; tokens -> X -> QKV -> S -> A -> W -> Z; }'
    )

st.subheader(_("Pick a worked example"))
st.caption(_("Every example comes from one of the tutorials this app teaches from; you can change all of it later."))
current = state.settings().preset
for key, preset in PRESETS.items():
    with st.container(border=True):
        text, button = st.columns([5, 1], vertical_alignment="center")
        text.markdown(f"**{_(preset.title)}**  \n{_(preset.note)}  \n*{_('Source: {source}', source=_(preset.source))}*")
        button.button(
            _("In use") if key == current else _("Use this example"),
            key=f"overview_use_{key}",
            disabled=key == current,
            on_click=state.choose_preset,
            args=(key,),
            width="stretch",
        )

st.subheader(_("Where to go next"))
NEXT = [
    ("tokens.py", _("Tokens & embeddings: from a sentence to the matrix X"), ":material/abc:"),
    ("no_weights.py", _("Attention without trainable weights: one context vector by hand"), ":material/front_hand:"),
    ("self_attention.py", _("Scaled dot-product self-attention, step by step"), ":material/calculate:"),
    ("causal.py", _("Causal attention: the mask, the −∞ fill and the other route"), ":material/visibility_off:"),
    ("dropout.py", _("Dropout on the attention weights: the seeded mask and 1/(1 − p)"), ":material/grain:"),
    ("multi_head.py", _("Multi-head attention: split, heads side by side, concat, W_O"), ":material/view_column:"),
    ("cross_attention.py", _("Cross-attention: a decoder sentence attends to an encoder sentence"),
     ":material/compare_arrows:"),
    ("why_sqrt_dk.py", _("Why divide by √d_k? The variance of a dot product, measured"), ":material/functions:"),
    ("temperature.py", _("Temperature: from argmax to uniform"), ":material/device_thermostat:"),
    ("positional_encoding.py", _("Positional encoding: why attention needs to know the order"),
     ":material/format_list_numbered:"),
    ("additive.py", _("Additive vs dot-product scoring"), ":material/add_circle:"),
    ("image_attention.py", _("Self-attention over an image: every pixel a token"), ":material/image:"),
    ("encoder_block.py", _("The encoder block: residuals, LayerNorm and the feed-forward layer around attention"),
     ":material/stacks:"),
    ("generation.py", _("Generating token by token: a trained decoder, its cross-attention and its KV cache"),
     ":material/keyboard_double_arrow_right:"),
    ("gqa.py", _("Grouped-query attention: query heads sharing key/value heads, a smaller KV cache"),
     ":material/group_work:"),
    ("rope.py", _("RoPE: rotating queries and keys by their position; only the offset counts"),
     ":material/rotate_right:"),
    ("alibi.py", _("ALiBi: a distance penalty per head instead of a position embedding"),
     ":material/trending_down:"),
    ("sliding_window.py", _("Sliding-window attention: the last w tokens only, a receptive field that grows"),
     ":material/view_week:"),
    ("flash_attention.py", _("FlashAttention: the online softmax, tile by tile, without the T × T matrix"),
     ":material/bolt:"),
    ("trained_model.py", _("Inside a trained model: the real heads of a pretrained Transformer"),
     ":material/model_training:"),
]
for filename, label, icon in NEXT:
    st.page_link(HERE / filename, label=label, icon=icon)
