"""Causal attention, step by step: scores -> mask -> −∞ fill -> softmax over the past -> · V (seed 001's CausalAttention)."""

import inspect

import streamlit as st

from attention_core import masks
from attention_core.errors import InputError
from attention_core.formulas_masking import CAUSAL_STAGES, general_latex
from attention_core.settings import MAX_DIM, MAX_TOKENS, MIN_DIM
from attention_core.walkthrough import token_labels
from attention_core.walkthrough_multihead import build_causal_walkthrough, causal_panels, clamp_entry, explain_causal
from ui import masking, state, widgets

EXPLAIN = {
    "scaled_scores": "The scaled scores of self-attention, as before: how well query i matches key j. "
                     "A language model that predicts the next word may not use the words after it, "
                     "so each query must ignore the keys to its right.",
    "mask": "The **causal mask** M: 0 where query i may look at key j (j ≤ i: itself and the past), −∞ where it "
            "may not (the future). Padding tokens are blocked as keys too. **Click any cell to flip it.**",
    "masked_scores": "Add M: blocked scores become −∞ (grey). Nothing else changes.",
    "weights": "Softmax along each row. e^(−∞) = 0, so the blocked keys get weight 0 and each row is "
               "**renormalised over its past**: it still sums to 1.",
    "other_route": "The seed articles' first attempt: softmax over *all* keys, then zero the future and divide "
                   "each row by its new sum. The e^(future) terms cancel, so the weights are the same.",
    "output": "Each context vector is now a weighted sum of the values of the token itself and the tokens before it.",
}

st.title("Causal attention: no peeking at the future")
st.latex(r"\operatorname{CausalAttention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right)V,"
         r"\quad M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}")
st.caption("Vaswani et al. 2017, sec. 3.2.3 (masking in the decoder); seed 001 and seed 004 (after rasbt's ch03).")
widgets.show_messages()

settings = state.settings()
c1, c2, c3, c4, c5 = st.columns(5)
with c1:
    state.bind(st.number_input, "d_k (width of q, k, v)", "d_k", step=1, help=f"{MIN_DIM} to {MAX_DIM}.")
with c2:
    state.bind(st.number_input, "Seed of W", "seed", step=1,
               help="torch.manual_seed before CausalAttention(d_model, d_k, …) draws W_q, W_k, W_v.")
with c3:
    state.bind(st.number_input, "context_length", "context_length", step=1,
               help=f"The size of the module's mask buffer; the sentence may not be longer (1 to {MAX_TOKENS}).")
with c4:
    state.bind(st.number_input, "Padding tokens at the end", "padding", step=1,
               help="How many trailing tokens are padding: no query may attend to them.")
with c5:
    state.bind(st.toggle, "Causal mask on", "causal", help="Off: only padding and your clicked cells mask.")

try:
    walk = build_causal_walkthrough(settings, state.edits())
except InputError as error:
    widgets.show_error(error)
    st.stop()

st.caption(
    f"**Sentence:** {widgets.md_escape(settings.sentence)} — change it on *Tokens & embeddings*. "
    f"W_q, W_k, W_v ({settings.d_model} × {settings.d_k}) are drawn like "
    f"`CausalAttention({settings.d_model}, {settings.d_k}, {settings.context_length}, 0.0)` after "
    f"`torch.manual_seed({settings.seed})` (from a local generator)."
)

widgets.stepper(CAUSAL_STAGES, settings.causal_stage, field="causal_stage")
stage = settings.causal_stage
st.markdown(EXPLAIN[stage])

items = causal_panels(walk, stage)
row, col, _ = clamp_entry(items, settings.entry_row, settings.entry_col, 0)
if (row, col) != (settings.entry_row, settings.entry_col):
    state.update(entry_row=row, entry_col=col)
labels = token_labels(walk.tokens)
target = next(p for p in items if p.explained)

with st.expander("Formula", expanded=True):
    for line in general_latex("causal", stage):
        st.latex(line)
if stage == "mask":
    st.markdown(f"**{items[0].title}**")
    masking.mask_grid(walk.mask, labels, entry=(row, col))
else:
    masking.panels(items, key=f"causal_{stage}", entry=(row, col))
if stage == "other_route":
    st.success(f"Both routes give the same weights: max |difference| = {walk.route_max_abs_diff:.2e}.",
               icon=":material/check_circle:")
masking.notes(walk.warnings, walk.notes)

st.subheader("Explain this entry")
masking.entry_pickers(target, row, col)
st.latex(explain_causal(walk, stage, row, col))

masking.checks(walk.checks)
with st.expander("Show the code"):
    st.code(inspect.getsource(masks.causal_mask), language="python")
    st.code(inspect.getsource(masks.mask_after_softmax), language="python")
