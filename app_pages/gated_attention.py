"""Gated attention (Qiu et al. 2025; Qwen3-Next): a sigmoid gate on each head's output, so that a head can say
nothing."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.gated_attention.page import GATED_ATTENTION
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "projections": N_("Q, K and V as in multi-head attention, and one more projection of the same X: the gate's logits "
                      "G = X W_θ + b, one per head and column (or, head-wise, one per head). The panels show the "
                      "chosen head."),
    "attention": N_("Each head attends as ever: causal softmax of Q Kᵀ / √d_h, then the weighted sum of its values. "
                    "Every row of weights sums to 1."),
    "gate": N_("The sigmoid σ(g) = 1 / (1 + e^(−g)) turns each logit into a number between 0 and 1: near 0 the gate "
               "is shut, near 1 open. It depends on the token (the query's own X), not on the keys."),
    "gated": N_("Each entry of the head's output is multiplied by its gate: Y′ = Y ⊙ σ(G). Where the gate is shut "
                "the head contributes nothing for that token."),
    "output": N_("The gated heads side by side (h · d_h columns), then W_O back to d_model, as in multi-head "
                 "attention. The last panel is the same layer without the gate."),
    "sink": N_("A query that matches nothing (every score 0) still gives 1/i to each of its i keys, so a head without "
               "a gate outputs the mean of the values, never 0; trained models park such weight on the first token "
               "(the attention sinks page). The gate can shut instead: try b = −10."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Gated attention: a head that can say nothing"))
    st.markdown(_(
        "Softmax's weights sum to 1, so every head always outputs a mix of values. **Gated attention** (Qiu et al. "
        "2025, NeurIPS best paper; Qwen3-Next) multiplies each head's output by a **sigmoid gate** computed from the "
        "same token: Y′ = Y ⊙ σ(X W_θ). A gate near 0 silences the head for that token, so the model no longer needs "
        "to park weight on the first token: the attention sink goes away."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("num_heads h"), "gated_attention.num_heads", step=1,
                   help=state.range_help("gated_attention.num_heads", N_("{low} to {high}.")))
        state.bind(st.number_input, _("d_model (embedding width)"), "d_model", step=1,
                   help=state.range_help("d_model", N_("{low} to {high}.")))
    with c2:
        state.bind(st.number_input, _("head_dim d_h"), "gated_attention.head_dim", step=1,
                   help=state.range_help("gated_attention.head_dim", N_("{low} to {high}: the width of a head's "
                                                                         "query, key and value.")))
        state.bind(st.toggle, _("Head-wise gate"), "gated_attention.headwise",
                   help=_("Off: one gate per head, token and column (the paper's best). On: one gate per head and "
                          "token."))
    with c3:
        state.bind(st.number_input, _("Gate shift b"), "gated_attention.gate_shift", step=1.0, format="%.2f",
                   help=state.range_help("gated_attention.gate_shift", N_(
                       "{low:g} to {high:g}, added to every gate logit: −10 shuts the gates, 10 opens them, 0 is the "
                       "model's own.")))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)

    walk = widgets.walkthrough_or_stop(GATED_ATTENTION, state.settings(), state.edits())
    widgets.keep_in_range(**{"gated_attention.head": walk.head})
    t = walk.trace
    names = {r: _("Head {r}", r=r + 1) for r in range(t.num_heads)}  # a dict: the labels are fixed when drawn
    state.bind(st.selectbox, _("Head shown"), "gated_attention.head", options=list(names), format_func=names.get)
    st.markdown(_("**Sizes:** d_model = {d}, {h} heads of d_h = {d_h}; {gates} gate(s) per head and token; b = {b:g}.",
                  d=t.x.shape[-1], h=t.num_heads, d_h=t.head_dim, gates=1 if t.headwise else t.head_dim, b=t.shift))

    stepper.live(GATED_ATTENTION, walk, EXPLAIN)


page_body.run(page, header=header)
