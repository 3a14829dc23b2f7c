"""Dropout on the attention weights, step by step: weights -> seeded mask D -> × D / (1 − p) -> · V."""

import inspect

import streamlit as st

from attention_core import functional
from attention_core.errors import InputError
from attention_core.formulas_masking import DROPOUT_STAGES, general_latex
from attention_core.settings import MAX_DROPOUT, MAX_SEED
from attention_core.walkthrough_multihead import build_causal_walkthrough, causal_panels, clamp_entry, explain_causal
from ui import masking, state, widgets

EXPLAIN = {
    "weights": "The causal weights from *Causal attention* (the same mask). Each row sums to 1.",
    "dropout_mask": "In **training**, dropout keeps each weight with probability 1 − p and drops it (sets it "
                    "to 0) otherwise. The mask D comes from a seeded generator, so you see the same one every time. "
                    "In **eval** mode nothing is dropped.",
    "dropped_weights": "The kept weights are multiplied by 1/(1 − p), so that each weight keeps its value *on "
                       "average*. A single row, though, **no longer sums to 1**: its sum is 1/(1 − p) times the "
                       "weights that happened to be kept — above 1 when big weights survive, 0 when all are dropped.",
    "output": "The context vectors use the dropped weights: some value rows are ignored this time, others count "
              "more. Each training step draws a new D; at inference (eval) dropout is off.",
}

st.title("Dropout on the attention weights")
st.latex(r"\tilde{\mathcal{A}} = \frac{\mathcal{A} \odot D}{1 - p},\qquad D_{ij} \sim \operatorname{Bernoulli}(1 - p)"
         r"\ \text{(training)},\qquad \tilde{\mathcal{A}} = \mathcal{A}\ \text{(eval)}")
st.caption("Seed 004 and seed 001 (nn.Dropout on the attention weights, after rasbt's ch03); a usual p is 0.1 to 0.2.")
widgets.show_messages()

settings = state.settings()
c1, c2, c3 = st.columns(3)
with c1:
    state.bind(st.number_input, "Dropout p", "dropout_p", step=0.05, format="%.2f",
               help=f"The probability of dropping each weight: 0 ≤ p < 1 (at most {MAX_DROPOUT}).")
with c2:
    state.bind(st.toggle, "Training mode (dropout on)", "training",
               help="Off = eval mode: nn.Dropout passes the weights through unchanged.")
with c3:
    state.bind(st.number_input, "Dropout seed", "dropout_seed", step=1,
               help=f"Seeds the generator that draws D (0 to {MAX_SEED}).")

try:
    walk = build_causal_walkthrough(settings, state.edits(), dropout=True)
except InputError as error:
    widgets.show_error(error)
    st.stop()

mode = "training" if settings.training else "eval"
m1, m2, m3 = st.columns(3)
m1.metric("p applied", f"{walk.dropout_p:g}", help="0 in eval mode.")
m2.metric("Scale of kept weights 1/(1 − p)", f"{walk.scale:.4g}")
m3.metric("Weights kept", f"{int(walk.keep.sum())} of {walk.keep.numel()}")
st.caption(
    f"Mode: **{mode}**. D is drawn with nn.Dropout's own call, `bernoulli_(1 − p)`, from "
    f"`torch.Generator().manual_seed({settings.dropout_seed})`: the same D that "
    f"`torch.manual_seed({settings.dropout_seed}); nn.Dropout({settings.dropout_p:g})` gives, without touching "
    "PyTorch's global generator. The weights and mask come from *Causal attention*."
)

widgets.stepper(DROPOUT_STAGES, settings.dropout_stage, field="dropout_stage")
stage = settings.dropout_stage
st.markdown(EXPLAIN[stage])

items = causal_panels(walk, stage)
row, col, _ = clamp_entry(items, settings.entry_row, settings.entry_col, 0)
if (row, col) != (settings.entry_row, settings.entry_col):
    state.update(entry_row=row, entry_col=col)
target = next(p for p in items if p.explained)

with st.expander("Formula", expanded=True):
    for line in general_latex("dropout", stage):
        st.latex(line)
masking.panels(items, key=f"dropout_{stage}", entry=(row, col))
if stage in ("dropped_weights", "output"):
    sums = ", ".join(f"{v:.3g}" for v in walk.row_sums.tolist())
    st.markdown(f"**Row sums of the weights used:** {sums}" +
                ("  (eval mode: every row sums to 1)" if walk.dropout_p == 0 else ""))
masking.notes(walk.warnings, walk.notes)

st.subheader("Explain this entry")
masking.entry_pickers(target, row, col)
st.latex(explain_causal(walk, stage, row, col))

masking.checks(walk.checks)
if walk.dropout_p > 0:
    st.caption("In training, torch's own dropout would draw D from its global generator, so the check recomputes "
               "the output from our D; tests/test_functional.py checks that D equals nn.Dropout's after "
               "torch.manual_seed with the same seed.")
with st.expander("Show the code"):
    st.code(inspect.getsource(functional.scaled_dot_product_attention), language="python")
