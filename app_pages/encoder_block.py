"""The Transformer encoder block, step by step: attention, residual, LayerNorm, feed-forward; post-LN or pre-LN; N blocks."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.encoder_block.page import ENCODER_BLOCK
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "inputs": N_("The block's input: one row per token, d_model wide (the sentence's embeddings X for block 1, "
                 "the previous block's output after that)."),
    "norm_1": N_("**LayerNorm** works on each row (token) alone: subtract the row's mean μ, divide by its standard "
                 "deviation √(σ² + ε), then scale each column by γ and shift it by β (both learned). Before γ and β, "
                 "every row has mean 0 and variance 1, whatever came in."),
    "attention": N_("The multi-head self-attention of the *Multi-head attention* page (with biases, no mask): "
                    "every token gathers information from every other. Open that page to see inside it."),
    "residual_1": N_("The **residual connection**: the sublayer's input is added back to its output. The block only "
                     "has to learn a *change* to each row, and gradients reach early layers through the sum."),
    "ffn_hidden": N_("The **feed-forward layer** works on each token alone (the same weights for every row): first a "
                     "wider layer, F = dim_feedforward columns (the paper uses F = 4 · d_model), then ReLU sets "
                     "negatives to 0."),
    "ffn_output": N_("The feed-forward layer's second linear map brings each row back to d_model columns."),
    "residual_2": N_("The second residual connection: the feed-forward sublayer's input is added back."),
    "norm_2": N_("The second LayerNorm: the same per-row recipe, with its own γ and β."),
    "stack": N_("An encoder stacks N such blocks, each with its own weights: each block's output is the next one's "
                "input. Watch the rows change from block to block."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("The encoder block: attention inside a Transformer"))
    st.markdown(_(
        "Attention is one part of a **Transformer block**. Around it: a **residual connection** (add the input back), "
        "**layer normalisation**, and a per-token **feed-forward** layer, then residual and normalisation again. "
        "An encoder stacks N blocks. *(Vaswani et al. 2017, sec. 3.1 and 3.3; Hung-yi Lee's Transformer lecture, on "
        "the encoder.)*"
    ))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    own = settings.encoder_block  # the page's own settings
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("num_heads h"), "encoder_block.num_heads", step=1,
                   help=_("Must divide d_model ({d_model} here).", d_model=settings.d_model))
    with c2:
        state.bind(st.number_input, _("dim_feedforward F"), "encoder_block.dim_feedforward", step=1,
                   help=state.range_help("encoder_block.dim_feedforward",
                                         N_("{low} to {high}: the feed-forward layer's hidden width (the paper: 4 · d_model).")))
    with c3:
        state.bind(st.number_input, _("num_layers N"), "encoder_block.num_layers", step=1,
                   help=state.range_help("encoder_block.num_layers", N_("{low} to {high} blocks, each with its own weights.")))
    with c4:
        state.bind(st.number_input, _("Seed of the weights"), "seed", step=1,
                   help=_("Block ℓ draws its weights from seed + ℓ − 1 (a local generator)."))
    c5, c6 = st.columns([2, 2])
    with c5:
        state.bind(st.toggle, _("Pre-LN (LayerNorm before each sublayer)"), "encoder_block.norm_first",
                   help=_("Off: post-LN, as in the 2017 paper and Hung-yi Lee's lecture. On: pre-LN, as in GPT-2 "
                          "and most current models (torch: norm_first=True)."))
    with c6:
        widgets.keep_in_range(**{"encoder_block.block": min(own.block, own.num_layers - 1)})
        blocks = {b: _("Block {number}", number=b + 1) for b in range(own.num_layers)}  # a plain lookup
        state.bind(st.selectbox, _("Block to step through"), "encoder_block.block", options=list(blocks),
                   format_func=blocks.get)

    settings = state.settings()
    walk = widgets.walkthrough_or_stop(ENCODER_BLOCK, settings, state.edits())

    if own.norm_first:
        st.markdown(_("**Pre-LN:** H = X + MultiHead(LayerNorm₁(X)), then Y = H + FFN(LayerNorm₂(H)). The residual "
                      "path from input to output never passes through a LayerNorm, which keeps deep stacks easy to "
                      "train without a warm-up of the learning rate (Xiong et al. 2020); the output is not normalised, "
                      "so models like GPT-2 add one last LayerNorm after the stack."))
    else:
        st.markdown(_("**Post-LN (the 2017 paper):** H = LayerNorm₁(X + MultiHead(X)), then "
                      "Y = LayerNorm₂(H + FFN(H)). Every block's output is normalised; the residual path passes "
                      "through each LayerNorm."))
    st.caption(_(
        "**Sentence:** {sentence}. d_model = {d_model}, h = {h} (head_dim = {head_dim}), F = {f}, N = {n}. "
        "No dropout (eval mode). Our numbers are checked against torch.nn.TransformerEncoderLayer with the same weights.",
        sentence=widgets.md_escape(settings.sentence), d_model=settings.d_model, h=own.num_heads,
        head_dim=walk.trace.attention.head_dim, f=own.dim_feedforward, n=own.num_layers,
    ))

    stepper.live(ENCODER_BLOCK, walk, EXPLAIN)


page_body.run(page, header=header)
