"""The *self-attention* page's declaration (its walk-through, which the tokens and no-weights pages share, is below
it: ``attention_core.self_attention.walkthrough``)."""

from __future__ import annotations

from attention_core.errors import N_
from attention_core.page import Page
from attention_core.self_attention.recipe import self_attention_recipe
from attention_core.self_attention.walkthrough import build_walkthrough, step_through_for_page
from attention_core.stepthrough import StepThrough


def self_attention_step_through(walk, stage: str) -> StepThrough:
    """The self-attention page's ``stage`` in the one step-through protocol: the shared walk-through's stages of this page.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    return step_through_for_page(walk, stage, SELF_ATTENTION_PAGE)


SELF_ATTENTION_PAGE = Page(
    key="self_attention", title=N_("Scaled dot-product self-attention"), icon=":material/calculate:",
    section="self_attention", summary=N_("Scaled dot-product self-attention, step by step"),
    stages={
        "inputs": N_("Inputs X"),
        "query": N_("Queries Q = X W_q"),
        "key": N_("Keys K = X W_k"),
        "value": N_("Values V = X W_v"),
        "scores": N_("Scores Q Kᵀ"),
        "scaled_scores": N_("Scaled scores ÷ √d_k"),
        "weights": N_("Weights: softmax"),
        "output": N_("Output: weights · V"),
    },
    build=build_walkthrough, step_through=self_attention_step_through, default_stage="scores",
    default_stage_why=N_("The scores Q Kᵀ are where attention begins; X, Q, K and V before them are plain matrix products."), recipe=self_attention_recipe,
    legacy={"stage": "stage"},
)
