"""Linear attention and the delta rule: attention without the softmax, a recurrence over a state of fixed size."""

import streamlit as st

from attention_core.errors import N_
from attention_core.inputs.tokens import token_labels
from attention_core.lessons.linear_attention.page import LINEAR_ATTENTION
from ui import page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "features": N_("Softmax's e^(q · k) cannot be split into a part for q and a part for k. A feature map can: "
                   "φ(x) = elu(x) + 1 is x + 1 above 0 and e^x below, always positive, so every weight will be too."),
    "parallel": N_("All tokens at once: weight φ(q_i) · φ(k_j) for every key j up to i (0 for the future), each row "
                   "divided by its sum. A T × T matrix like softmax attention's, but with no exponential of q · k."),
    "recurrent": N_("The sum over the past factors: φ(q_t)ᵀ Σ φ(k_j) v_jᵀ = φ(q_t)ᵀ S_t. So each token adds φ(k_t) v_tᵀ "
                    "to a state S and φ(k_t) to z, and reads its output from them: an RNN. Same numbers as the parallel "
                    "form, but the work per token no longer grows with t."),
    "memory": N_("To produce the next token, softmax attention keeps every key and value so far (the KV cache: it "
                 "grows with t). Linear attention keeps S and z: d_k · d_v + d_k numbers, however long the text."),
    "delta": N_("Linear attention only ever adds to S, so old associations pile up. The delta rule (DeltaNet) first "
                "asks the state what it recalls for the new key, Sᵀ k̂, and writes only the error v − Sᵀ k̂, times β. "
                "The key is normalised to length 1, as DeltaNet and Qwen3-Next do."),
    "gated": N_("The gated delta rule (Gated DeltaNet; Qwen3-Next, Kimi Linear) also forgets: the state is multiplied "
                "by α ≤ 1 at every step before it is asked and written. α = 1 is the delta rule; transformers takes "
                "g = log α."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Linear attention and the delta rule: a state of fixed size"))
    st.markdown(_(
        "Softmax attention compares each new token with every token before it, so its cost per token and its KV cache "
        "grow with the context. **Linear attention** (Katharopoulos et al. 2020, \"Transformers are RNNs\") drops the "
        "softmax: the past folds into one state S of d_k × d_v numbers, updated token by token like an RNN. The **delta "
        "rule** (DeltaNet, Yang et al. 2024) writes into S only what it does not already predict, and its **gated** "
        "form (Gated DeltaNet 2025, used in Qwen3-Next and Kimi Linear) also lets it forget."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("β (share of the error written)"), "linear_attention.beta", step=0.05,
                   format="%.2f", help=state.range_help("linear_attention.beta", N_(
                       "{low} to {high}, the same for every token: 0 writes nothing, 1 replaces what the state "
                       "recalled for the key.")))
    with c2:
        state.bind(st.number_input, _("α (decay per step, gated)"), "linear_attention.alpha", step=0.05,
                   format="%.2f", help=state.range_help("linear_attention.alpha", N_(
                       "{low:g} to {high:g}, the same for every token: 1 keeps the state, 0.5 halves it at every "
                       "step. 0 would erase it.")))
    with c3:
        state.bind(st.number_input, _("d_k (width of q, k, v)"), "d_k", step=1,
                   help=state.range_help("d_k", N_("{low} to {high}.")))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)

    walk = widgets.walkthrough_or_stop(LINEAR_ATTENTION, state.settings(), state.edits())
    widgets.keep_in_range(**{"linear_attention.step": walk.step})
    names = dict(enumerate(token_labels(walk.tokens)))  # "4 Learning": t = 4, 1-based as on the page
    state.bind(st.selectbox, _("Step t (the recurrent form and the delta rules)"), "linear_attention.step",
               options=list(names), format_func=names.get)

    stepper.live(LINEAR_ATTENTION, walk, EXPLAIN)


page_body.run(page, header=header)
