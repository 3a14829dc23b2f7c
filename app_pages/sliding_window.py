"""Sliding-window attention: each token sees only the last w tokens; the receptive field grows with the layers."""

import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.text import MAX_TOKENS
from attention_core.lessons.sliding_window.page import MAX_SLIDING_LAYERS, SLIDING_WINDOW
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "mask": N_("The window: query i may look at key j only when j is one of the w most recent tokens (itself "
               "included). With the causal switch off, w − 1 tokens on each side."),
    "masked_scores": N_("Scores outside the window become −∞, as with the causal mask: they will get weight 0."),
    "weights": N_("Softmax over the keys inside the window only. Each row has at most w non-zero weights (with the "
                  "causal switch off, at most 2w − 1: w − 1 on each side and the token itself), however long the "
                  "text."),
    "receptive": N_("One layer sees w tokens, but the next layer attends to outputs that already mixed w tokens "
                    "each: the receptive field grows by w − 1 per layer, like stacked convolutions. Hung-yi Lee's "
                    "Transformer lecture, comparing self-attention with CNNs: a CNN's receptive field is fixed by its "
                    "kernel, self-attention's is learned; a window brings the fixed kind back to save work."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Sliding-window attention: a fixed window per token"))
    st.markdown(_(
        "Full attention scores every pair of tokens: T² scores. **Sliding-window** (local) attention (Longformer, "
        "Beltagy et al. 2020; Mistral 7B, Jiang et al. 2023, w = 4096) lets each token look only at the w tokens "
        "before it, so the work grows like T · w, and stacks layers to see further."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("Window w"), "sliding_window.window", step=1,
                   help=_("1 to {high} tokens, the token itself included.", high=MAX_TOKENS))
    with c2:
        state.bind(st.number_input, _("Layers L (receptive field)"), "sliding_window.layers", step=1,
                   help=_("1 to {high}.", high=MAX_SLIDING_LAYERS))
    with c3:
        state.bind(st.number_input, _("d_k (width of q and k)"), "d_k", step=1,
                   help=state.range_help("d_k", N_("{low} to {high}.")))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)
    state.bind(st.toggle, _("Causal mask"), "causal_mask",
               help=_("On: the window looks back only (Mistral). Off: w − 1 tokens on each side (Longformer)."))

    walk = widgets.walkthrough_or_stop(SLIDING_WINDOW, state.settings(), state.edits())
    stepper.live(SLIDING_WINDOW, walk, EXPLAIN)


page_body.run(page, header=header)
