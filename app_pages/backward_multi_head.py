"""The backward pass through multi-head attention: back through W_O and the concatenation, then every head alone."""

import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.text import MAX_TOKENS
from attention_core.lessons.backward_multi_head.page import (
    BACKWARD_MULTI_HEAD,
    TARGET_EDITS,
    backward_multi_head_target,
)
from ui import heads, page_body, state, stepper, widgets
from ui.i18n import _
from ui.page_parts import learning

EXPLAIN = {
    "loss": N_("The same loss as on the single-head page, on the multi-head output O = C W_O + b_O (C: the heads' "
               "outputs side by side), summed over its n rows (one per token) and d_o = d_out columns. Its gradient "
               "is O − T."),
    "d_w_out": N_("W_O met C as C W_O, so dW_O = Cᵀ dO: row a of dW_O gathers column a of C (one head's column) "
                  "times dO. b_O was added to every row, so its gradient is the sum of dO's rows."),
    "d_concat": N_("Going back through W_O: dC = dO W_Oᵀ. The concatenation only placed the heads side by side, so "
                   "its backward pass only splits: each head gets back the columns it wrote, its own dO."),
    "d_value": N_("From here each head runs the single-head backward pass alone, on its own P, V and dO: "
                  "dV = Pᵀ dO. Pick a head by clicking its heatmap."),
    "d_weights": N_("dP_ij = dO_i · v_j, per head, with the head's head_dim-wide rows."),
    "d_scores": N_("Through each head's softmax, row by row: dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik). The Jacobian "
                   "drawn is the chosen head's chosen row."),
    "d_query": N_("Each head's scores were divided by √head_dim (not √d_out), so its gradient is too: "
                  "dQ = dS K / √head_dim."),
    "d_key": N_("Key j of a head was scored by every query of that head: dK = dSᵀ Q / √head_dim."),
    "d_w_query": N_("The heads' dQ side by side are dQ (n × d_out), in the columns the split gave them, so "
                    "dW_q = Xᵀ dQ: head r's columns of dW_q come from head r alone. Check an entry: nudge the weight "
                    "by ε and watch the loss move by about ε · dW."),
    "d_w_key": N_("dW_k = Xᵀ dK, head by head in its columns."),
    "d_w_value": N_("dW_v = Xᵀ dV, head by head in its columns."),
    "d_x": N_("X fed all three projections, so its gradient is the sum of the three ways back, every head's "
              "columns included."),
    "step": N_("One gradient-descent step on every matrix the layer learns, W_q, W_k, W_v, W_O and b_O; then the "
               "forward pass again: the loss should drop, and each head's weights move."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("The backward pass, multi-head"))
    st.markdown(_(
        "The multi-head page's numbers go forward to a loss against a target, and the gradient goes **back**: through "
        "W_O, split between the heads by the columns each one wrote, through every head alone (as on *The backward "
        "pass*), and side by side into dW_q, dW_k and dW_v. Every gradient is checked against `torch.autograd`."))


def page() -> None:
    widgets.show_messages()

    learning.target_controls(_("1 to {high}: row i of the target is v_j W_O + b_O, the output if every head looked "
                               "only at token j.", high=MAX_TOKENS))
    c4, c5, c6, c7, c8 = st.columns(5)
    with c4:
        learning.learning_rate()
    heads.shape_inputs(c5, c6, c7)
    with c8:
        state.bind(st.toggle, _("Causal mask"), "causal_mask", help=_("On: blocked scores get no gradient."))
    learning.target_editor("backward_multi_head_show_target", TARGET_EDITS, backward_multi_head_target, "o")

    walk = widgets.walkthrough_or_stop(BACKWARD_MULTI_HEAD, state.settings(), state.edits())
    st.caption(_("d_out = {d_out} = h · head_dim = {h} · {hd}; the mask is the causal switch alone (the Causal page's "
                 "padding and clicked cells are not applied here).", d_out=walk.trace.concat.shape[-1],
                 h=walk.trace.num_heads, hd=walk.trace.head_dim))
    stepper.live(BACKWARD_MULTI_HEAD, walk, EXPLAIN, after_checks=learning.keep_stepping(BACKWARD_MULTI_HEAD, walk))


page_body.run(page, header=header)
