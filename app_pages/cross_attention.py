"""Cross-attention, step by step: queries from the decoder sentence, keys and values from the encoder sentence."""

import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.text import MAX_SENTENCE_CHARS, MAX_TOKENS
from attention_core.lessons.cross_attention.page import CROSS_ATTENTION
from attention_core.multi_head.formulas import header_latex
from ui import heads, i18n, page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "inputs": N_("Two sentences: the **decoder**'s (m tokens, e.g. the translation written so far) and the "
                 "**encoder**'s (n tokens, e.g. the sentence being translated). Their lengths may differ."),
    "query": N_("The queries come from the decoder: what each decoder token is looking for (m rows)."),
    "key": N_("The keys come from the encoder: how each encoder token presents itself (n rows)."),
    "value": N_("The values come from the encoder too: what each encoder token hands over (n rows)."),
    "scaled_scores": N_("Each decoder token's query against each encoder token's key: an **m × n** grid per head, "
                        "scaled by √head_dim. No causal mask: the whole encoder sentence is already known."),
    "weights": N_("Softmax along each row, over the n encoder tokens: each row sums to 1."),
    "head": N_("Each head's context vectors: m rows, one per decoder token, mixed from the encoder's values."),
    "output": N_("Concatenate the heads and apply W_O, as in multi-head self-attention: m rows of d_out."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Cross-attention: the decoder looks at the encoder"))
    st.latex(header_latex("cross_attention", i18n.translator()))
    st.caption(_("Hung-yi Lee's Transformer lecture (National Taiwan University): the encoder's output gives k and "
                 "v, the decoder's input gives q — hence *cross*. Vaswani et al. 2017, sec. 3.2.3 (encoder-decoder "
                 "attention)."))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    s1, s2 = st.columns(2)
    with s1:
        state.bind(st.text_input, _("Decoder sentence (queries)"), "sentence",
                   help=_("At most {max_tokens} tokens and {max_chars} characters (a longer sentence is cut, with a "
                          "message); the same sentence as on the other pages.", max_tokens=MAX_TOKENS,
                          max_chars=MAX_SENTENCE_CHARS))
    with s2:
        state.bind(st.text_input, _("Encoder sentence (keys and values)"), "encoder_sentence",
                   help=_("At most {max_tokens} tokens and {max_chars} characters (a longer sentence is cut, with a "
                          "message).", max_tokens=MAX_TOKENS, max_chars=MAX_SENTENCE_CHARS))
    c1, c2, c3, c4 = st.columns(4)
    heads.shape_inputs(c1, c2, c3, seed_help=None)
    with c4:
        state.bind(st.number_input, _("context_length"), "context_length", step=1,
                   help=_("Neither sentence may be longer (1 to {max_tokens}).", max_tokens=MAX_TOKENS))

    walk = widgets.walkthrough_or_stop(CROSS_ATTENTION, settings, state.edits())

    trace = walk.trace
    m, n = len(walk.tokens), len(walk.kv_tokens)
    h, hd = trace.num_heads, trace.head_dim
    st.markdown(_(
        "**m = {m} decoder tokens × n = {n} encoder tokens**: each head's weights are {m} × {n}. "
        "d_out = {h} · {hd}; scale 1/√head_dim = 1/√{hd} = {scale}.",
        m=m, n=n, h=h, hd=hd, scale=f"{walk.scale:.4g}",
    ))
    st.caption(_(
        "W drawn like `{module}` after `{seed_call}`; W_k and W_v are applied to the encoder's X. "
        "Your edits of X apply to the decoder sentence.",
        module=f"MultiHeadAttention({settings.d_model}, {settings.d_out}, {settings.context_length}, 0.0, num_heads={h})",
        seed_call=f"torch.manual_seed({settings.seed})",
    ))

    stepper.live(CROSS_ATTENTION, walk, EXPLAIN)


page_body.run(page, header=header)
