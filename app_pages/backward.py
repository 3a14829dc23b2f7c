"""The backward pass: where the gradients of W_q, W_k and W_v come from, one stage at a time."""

import streamlit as st

from attention_core.backward.walkthrough import backward_target
from attention_core.errors import N_
from attention_core.inputs.text import MAX_TOKENS
from attention_core.lessons.backward.page import BACKWARD
from ui import page_body, state, stepper, widgets
from ui.i18n import _
from ui.page_parts import learning

EXPLAIN = {
    "loss": N_("How far the output is from the target T: L = ½ ‖O − T‖², summed over the n rows (one per token) "
               "and the d_v columns. Its gradient with respect to O is just the difference O − T: where the output is "
               "too high, dO is positive."),
    "d_value": N_("V entered as O = P V, so each value row v_j gets the output gradients of every query, weighed by "
                  "how much that query attended to j: dV = Pᵀ dO (column j of P, not row j)."),
    "d_weights": N_("Each weight P_ij multiplied v_j into o_i, so its gradient is how much v_j points along dO_i: "
                    "dP_ij = dO_i · v_j."),
    "d_scores": N_("Through the softmax, row by row: raising one score raises its weight and lowers every other "
                   "weight of the row, so every dP of the row matters. The Jacobian of the row, diag(p) − p pᵀ, "
                   "couples them: dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik)."),
    "flash": N_("FlashAttention never stores P, but it keeps O. The row sum Σ_k P_ik dP_ik equals dO_i · o_i, so "
                "D = rowsum(dO ⊙ O) gives the same dS without the n × n matrices."),
    "d_query": N_("The scores were q_i · k_j / √d_k, so a score's gradient flows to the query through every key it "
                  "was compared with, divided by √d_k again: dQ = dS K / √d_k."),
    "d_key": N_("Key j was scored by every query: dK = dSᵀ Q / √d_k takes column j of dS."),
    "d_w_query": N_("Q = X W_q: each entry of W_q met every token's x, so dW_q = Xᵀ dQ. Check it: nudge the weight "
                    "by ε and watch the loss move by about ε · dW."),
    "d_w_key": N_("K = X W_k, so dW_k = Xᵀ dK."),
    "d_w_value": N_("V = X W_v, so dW_v = Xᵀ dV."),
    "d_x": N_("X fed all three projections, so its gradient is the sum of the three ways back (what a layer below "
              "would receive)."),
    "step": N_("One gradient-descent step moves every weight against its gradient, W ← W − η dW, and runs the "
               "forward pass again: the loss should drop and attention move toward the target."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("The backward pass: how attention learns"))
    st.markdown(_(
        "Self-attention learns only its three matrices W_q, W_k, W_v (Hung-yi Lee's Transformer lecture). Here the "
        "self-attention page's "
        "numbers go forward to a loss against a target you choose, and the gradient of that loss goes **back**, one "
        "product at a time, to dW_q, dW_k and dW_v. Every gradient is checked against `torch.autograd`."))


def page() -> None:
    widgets.show_messages()

    learning.target_controls(_("1 to {high}: row i of the target is token j's value v_j.", high=MAX_TOKENS))
    c4, c5, c6 = st.columns(3)
    with c4:
        learning.learning_rate()
    with c5:
        state.bind(st.number_input, _("d_k (width of q, k, v)"), "d_k", step=1,
                   help=state.range_help("d_k", N_("{low} to {high}.")))
    with c6:
        state.bind(st.toggle, _("Causal mask"), "causal_mask",
                   help=_("On: blocked scores get no gradient."))
    learning.target_editor("backward_show_target", "target", backward_target, "c")

    walk = widgets.walkthrough_or_stop(BACKWARD, state.settings(), state.edits())
    stepper.live(BACKWARD, walk, EXPLAIN, after_checks=learning.keep_stepping(BACKWARD, walk))


page_body.run(page, header=header)
