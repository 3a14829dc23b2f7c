"""Dropout on the attention weights, step by step: weights -> seeded mask D -> × D / (1 − p) -> · V."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.dropout.page import DROPOUT_PAGE
from attention_core.masking.formulas import header_latex
from attention_core.masking.walkthrough import MAX_DROPOUT
from attention_core.shared_settings import MAX_SEED
from ui import i18n, page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "weights": N_("The causal weights from *Causal attention* (the same mask). Each row sums to 1."),
    "dropout_mask": N_("In **training**, dropout keeps each weight with probability 1 − p and drops it (sets it "
                       "to 0) otherwise. The mask D comes from a seeded generator, so you see the same one every "
                       "time. In **eval** mode nothing is dropped."),
    "dropped_weights": N_("The kept weights are multiplied by 1/(1 − p), so that each weight keeps its value *on "
                          "average*. A single row, though, **no longer sums to 1**: its sum is 1/(1 − p) times the "
                          "weights that happened to be kept — above 1 when big weights survive, 0 when all are "
                          "dropped."),
    "output": N_("The context vectors use the dropped weights: some value rows are ignored this time, others count "
                 "more. Each training step draws a new D; at inference (eval) dropout is off."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Dropout on the attention weights"))
    st.latex(header_latex("dropout", i18n.translator()))
    st.caption(_("Raschka, *Build a Large Language Model (From Scratch)*, 2024, ch. 3, as an Afrikaans and a Chinese "
                 "tutorial retell it: nn.Dropout on the attention weights; a usual p is 0.1 to 0.2."))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    c1, c2, c3 = st.columns(3)
    with c1:
        state.bind(st.number_input, _("Dropout p"), "dropout.dropout_p", step=0.05, format="%.2f",
                   help=_("The probability of dropping each weight: 0 ≤ p < 1 (at most {max_p}).", max_p=MAX_DROPOUT))
    with c2:
        state.bind(st.toggle, _("Training mode (dropout on)"), "dropout.training",
                   help=_("Off = eval mode: nn.Dropout passes the weights through unchanged."))
    with c3:
        state.bind(st.number_input, _("Dropout seed"), "dropout.seed", step=1,
                   help=_("Seeds the generator that draws D (0 to {max_seed}).", max_seed=MAX_SEED))

    walk = widgets.walkthrough_or_stop(DROPOUT_PAGE, settings, state.edits())

    mode = _("training") if settings.dropout.training else _("eval")
    m1, m2, m3 = st.columns(3)
    m1.metric(_("p applied"), f"{walk.dropout_p:g}", help=_("0 in eval mode."))
    m2.metric(_("Scale of kept weights 1/(1 − p)"), f"{walk.scale:.4g}")
    m3.metric(_("Weights kept"), _("{kept} of {total}", kept=int(walk.keep.sum()), total=walk.keep.numel()))
    st.caption(_(
        "Mode: **{mode}**. D is drawn with nn.Dropout's own call, `bernoulli_(1 − p)`, from `{generator}`: the same D "
        "that `{global_call}` gives, without touching PyTorch's global generator. The weights and mask come from "
        "*Causal attention*.",
        mode=mode, generator=f"torch.Generator().manual_seed({settings.dropout.seed})",
        global_call=f"torch.manual_seed({settings.dropout.seed}); nn.Dropout({settings.dropout.dropout_p:g})",
    ))

    stepper.live(DROPOUT_PAGE, walk, EXPLAIN)


page_body.run(page, header=header)
