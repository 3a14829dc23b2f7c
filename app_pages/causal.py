"""Causal attention, step by step: scores -> mask -> −∞ fill -> softmax over the past -> · V (seed 001's CausalAttention)."""

import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.text import MAX_TOKENS
from attention_core.lessons.causal.page import CAUSAL_PAGE
from attention_core.masking.formulas import header_latex
from ui import i18n, page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "scaled_scores": N_("The scaled scores of self-attention, as before: how well query i matches key j. "
                        "A language model that predicts the next word may not use the words after it, "
                        "so each query must ignore the keys to its right."),
    "mask": N_("The **causal mask** M: 0 where query i may look at key j (j ≤ i: itself and the past), −∞ where it "
               "may not (the future). Padding tokens are blocked as keys too. **Click any cell to flip it.**"),
    "masked_scores": N_("Add M: blocked scores become −∞ (grey). Nothing else changes."),
    "weights": N_("Softmax along each row. e^(−∞) = 0, so the blocked keys get weight 0 and each row is "
                  "**renormalised over its past**: it still sums to 1."),
    "other_route": N_("Raschka's first attempt (*Build a Large Language Model (From Scratch)*, ch. 3): softmax over "
                      "*all* keys, then zero the future and divide each row by its new sum. The e^(future) terms "
                      "cancel, so the weights are the same."),
    "output": N_("Each context vector is now a weighted sum of the values of the token itself and the tokens "
                 "before it."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Causal attention: no peeking at the future"))
    st.latex(header_latex("causal", i18n.translator()))
    st.caption(_("Vaswani et al. 2017, sec. 3.2.3 (masking in the decoder); Raschka, *Build a Large Language Model "
                 "(From Scratch)*, 2024, ch. 3 (CausalAttention), as a Chinese lesson on coding attention and an "
                 "Afrikaans tutorial on attention retell it."))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    c1, c2, c3, c4, c5 = st.columns([4, 4, 4, 4, 5])  # the toggle with its label and help needs the most
    with c1:
        state.bind(st.number_input, _("d_k (width of q, k, v)"), "d_k", step=1,
                   help=state.range_help("d_k", N_("{low} to {high}.")))
    with c2:
        state.bind(st.number_input, _("Seed"), "seed", step=1,
                   help=_("Seeds W_q, W_k, W_v (and the embeddings), as on the Self-attention page."))
    with c3:
        state.bind(st.number_input, _("context_length"), "context_length", step=1,
                   help=_("The size of the module's mask buffer; the sentence may not be longer (1 to {max_tokens}).",
                          max_tokens=MAX_TOKENS))
    with c4:
        state.bind(st.number_input, _("Padding tokens at the end"), "padding", step=1,
                   help=_("How many trailing tokens are padding: no query may attend to them."))
    with c5:
        state.bind(st.toggle, _("Causal mask on"), "causal_mask", help=_("Off: only padding and your clicked cells mask."))

    walk = widgets.walkthrough_or_stop(CAUSAL_PAGE, settings, state.edits())

    st.caption(_("**Sentence:** {sentence} — change it on *Tokens & embeddings*.",
                 sentence=widgets.md_escape(settings.sentence)) + " " + widgets.message_markdown(walk.weights_note))

    stepper.live(CAUSAL_PAGE, walk, EXPLAIN)


page_body.run(page, header=header)
