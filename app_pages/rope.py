"""RoPE: rotary position embedding on one head's queries and keys; the scores depend only on the offset m − n."""

import math

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.rope.page import MAX_ROPE_SHIFT, ROPE_PAGE, pair_vectors
from attention_core.shared_settings import MAX_DIM
from ui import page_body, state, stepper, stepper_data, widgets
from ui.i18n import _

EXPLAIN = {
    "projections": N_("One head's queries and keys (no position information yet: the sentence's X has none). RoPE "
                      "rotates pairs of numbers, so this head is head_dim wide (even) and its W are drawn for it, like "
                      "nn.Linear after the seed: not the Self-attention page's d_k-wide W."),
    "sinusoidal": N_("The *Positional encoding* page's sinusoidal encoding uses the very same angles m θᵢ (here "
                     "with the same base): its columns are sin and cos of them. It **adds** them to X; RoPE **rotates** "
                     "q and k by them."),
    "angles": N_("Each pair of dimensions i turns at its own speed θᵢ: the first pair fastest (θ₀ = 1 radian per "
                 "position), the last slowest. The token at position m turns pair i by m · θᵢ."),
    "rotate_query": N_("Every pair (i, i + d/2) of a query is rotated by its angle m θᵢ: lengths stay the same, only "
                       "directions change. The *Positional encoding* page **adds** a position vector to X; RoPE "
                       "**rotates** q and k instead, inside attention."),
    "rotate_key": N_("The keys are rotated by the same angles for their own positions. Values are not rotated."),
    "scores": N_("The scores of the rotated queries and keys. A rotation by m θ on one side and n θ on the other "
                 "leaves only the difference (n − m) θ in the dot product."),
    "relative": N_("Move the whole sentence s positions further (as if it came after s other tokens): every angle "
                   "changes, but every score stays the same. RoPE encodes **relative** position."),
    "base": N_("The base sets how fast the slow pairs turn: a larger base (Llama 3 uses 500000) gives longer "
               "wavelengths λᵢ = 2π/θᵢ, so distant positions stay distinguishable in a long context."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("RoPE: rotary position embedding"))
    st.markdown(_(
        "Most current language models (Llama, Mistral, Qwen, GPT-NeoX) give attention the order of the tokens by "
        "**rotating** each query and key by an angle proportional to its position (Su et al. 2021, RoFormer). "
        "Pairs of dimensions turn like clock hands at different speeds."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("head_dim d"), "rope.head_dim", step=2,
                   help=_("Even, 2 to {high}: RoPE rotates pairs of dimensions.", high=MAX_DIM))
    with c2:
        state.bind(st.number_input, _("base"), "rope.base", step=1000.0, format="%g",
                   help=state.range_help("rope.base", N_("θᵢ = base^(−2i/d); {low:g} to {high:g}. RoFormer and Llama 2: 10000.")))
    with c3:
        state.bind(st.number_input, _("Shift s of every position"), "rope.shift", step=1,
                   help=_("0 to {high}.", high=MAX_ROPE_SHIFT))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)

    with st.spinner(_("Loading the reference implementation (Hugging Face transformers) for the check…")):
        walk = widgets.walkthrough_or_stop(ROPE_PAGE, state.settings(), state.edits())

    def pair_chart(steps, row: int, col: int, head: int):
        """On the rotation stages, the explained entry's pair of dimensions drawn before and after its rotation."""
        if steps.stage.key not in ("rotate_query", "rotate_key"):
            return None
        before, after, angle = pair_vectors(walk, steps.stage.key, row, col)
        name = "q" if steps.stage.key == "rotate_query" else "k"
        labels = (_("{name} before", name=name), _("{name} after", name=name + "'"))
        spec, arrows = widgets.vector_pair_chart(before, after, labels)
        return stepper_data.EntryChart(
            _("The pair of the explained entry, rotated by φ = {angle:.3f} rad ({degrees:.1f}°)", angle=angle,
              degrees=math.degrees(angle)), spec, arrows, labels, ("x", "y"), (before, after))

    stepper.live(ROPE_PAGE, walk, EXPLAIN, entry_chart=pair_chart)


page_body.run(page, header=header)
