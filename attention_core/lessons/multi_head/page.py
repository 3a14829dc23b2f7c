"""The *multi-head attention* page's declaration (its builder and step-through, which the cross-attention page reuses,
are below it: ``attention_core.multi_head.walkthrough``)."""

from __future__ import annotations

from attention_core.errors import N_
from attention_core.multi_head.recipe import multi_head_recipe
from attention_core.multi_head.walkthrough import build_multi_head_walkthrough, step_through_for_page
from attention_core.page import Page
from attention_core.stepthrough import StepThrough


def multi_head_step_through(walk, stage: str) -> StepThrough:
    """The multi-head attention page's ``stage`` in the one step-through protocol: the shared walk-through's stages of this page.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    return step_through_for_page(walk, stage, MULTI_HEAD)


MULTI_HEAD = Page(
    key="multi_head", title=N_("Multi-head attention"), icon=":material/view_column:", section="masking",
    summary=N_("Multi-head attention: split, heads side by side, concat, W_O"),
    stages={
        "inputs": N_("Inputs X"),
        "projections": N_("Q = X W_q, K = X W_k, V = X W_v (d_out wide)"),
        "split": N_("Split into heads: view, then transpose"),
        "scaled_scores": N_("Each head's scores Q_r K_rᵀ / √head_dim"),
        "masked_scores": N_("Each head's masked scores (−∞ where blocked)"),
        "weights": N_("Each head's weights: softmax"),
        "head": N_("Each head's context vectors"),
        "concat": N_("Concat(head_1, …, head_h)"),
        "output": N_("Output: Concat · W_O + b_O"),
    },
    build=build_multi_head_walkthrough, step_through=multi_head_step_through, default_stage="split",
    default_stage_why=N_("The split into heads is what this page adds; X and the projections before it are as on the self-attention page."), recipe=multi_head_recipe,
    legacy={"mha_stage": "stage"},
)
