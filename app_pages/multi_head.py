"""Multi-head attention, step by step: project -> split (view, transpose) -> attend per head -> concat -> W_O."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.multi_head.page import MULTI_HEAD
from attention_core.multi_head.formulas import header_latex
from ui import heads, i18n, page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "inputs": N_("The same tokens and embeddings X as on the other pages."),
    "projections": N_("One big projection each for Q, K and V, d_out columns wide. The column labels say which "
                      "head each column will go to: **h1·c2** = head 1, its column 2."),
    "split": N_("`view` cuts the last dimension d_out into h pieces of head_dim columns (consecutive columns go to "
                "the same head); `transpose(1, 2)` moves the head dimension forward so each head is its own "
                "(T × head_dim) matrix. K and V are split the same way."),
    "scaled_scores": N_("Every head computes its own scores Q_r K_rᵀ, from its own head_dim columns only, and "
                        "divides by **√head_dim** — the width of *its* queries and keys, not √d_out."),
    "masked_scores": N_("The same mask for every head (the one of *Causal attention*): blocked scores become −∞."),
    "weights": N_("Softmax along each row, per head. The heads look at the tokens in different ways."),
    "head": N_("Each head's context vectors: its weights times its own value columns V_r (T × head_dim)."),
    "concat": N_("`transpose(1, 2)` back and `view(b, T, d_out)`: the heads' outputs side by side, head 1's "
                 "columns first."),
    "output": N_("The output projection W_O (out_proj, with bias b_O) mixes the heads' columns."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Multi-head attention: several heads side by side"))
    st.latex(header_latex("multi_head", i18n.translator()))
    st.caption(_("Vaswani et al. 2017, sec. 3.2.2; the MultiHeadAttention class of Raschka, *Build a Large Language "
                 "Model (From Scratch)*, 2024, ch. 3, as a Chinese lesson on coding attention writes it. "
                 "d_head = head_dim = d_out / h."))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    c1, c2, c3, c4 = st.columns(4)
    heads.shape_inputs(c1, c2, c3)
    with c4:
        state.bind(st.toggle, _("Causal mask on"), "causal_mask",
                   help=_("The mask of the Causal attention page (with its padding and clicked cells)."))

    walk = widgets.walkthrough_or_stop(MULTI_HEAD, settings, state.edits())

    (b, t, d_out), (_b, _t, h, hd), after = walk.shapes
    st.markdown(_(
        "**d_out = {d_out} = h · head_dim = {h} · {hd}.** Each head's scores are multiplied by "
        "1/√head_dim = 1/√{hd} = **{scale}**, not by 1/√d_out = 1/√{d_out} = {wrong_scale} "
        "(a bug of some published code: it makes every head's softmax too flat).",
        d_out=d_out, h=h, hd=hd, scale=f"{walk.scale:.4g}", wrong_scale=f"{walk.wrong_scale:.4g}",
    ))
    st.markdown(_(
        "**The reshape:** Q is (b, T, d_out) = {before} → `.view(b, T, h, head_dim)` → {split} → "
        "`.transpose(1, 2)` → (b, h, T, head_dim) = {after}.",
        before=(b, t, d_out), split=(b, t, h, hd), after=after,
    ))
    st.caption(_(
        "**Sentence:** {sentence}. W are drawn like `{module}` after `{seed_call}` (from a local generator); "
        "no dropout (eval mode).",
        sentence=widgets.md_escape(settings.sentence),
        module=f"MultiHeadAttention({settings.d_model}, {d_out}, {settings.context_length}, 0.0, num_heads={h})",
        seed_call=f"torch.manual_seed({settings.seed})",
    ))

    stepper.live(MULTI_HEAD, walk, EXPLAIN)


page_body.run(page, header=header)
