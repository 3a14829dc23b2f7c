"""The *causal mask* page's declaration (its builder and step-through, which the dropout page reuses, are below it:
``attention_core.masking.walkthrough``)."""

from __future__ import annotations

from attention_core.errors import N_
from attention_core.masking.recipe import causal_recipe
from attention_core.masking.walkthrough import build_causal_walkthrough, step_through_for_page
from attention_core.page import Page
from attention_core.stepthrough import StepThrough


def causal_step_through(walk, stage: str) -> StepThrough:
    """The causal mask page's ``stage`` in the one step-through protocol: the shared walk-through's stages of this page.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    return step_through_for_page(walk, stage, CAUSAL_PAGE)


CAUSAL_PAGE = Page(
    key="causal", title=N_("Causal attention"), icon=":material/visibility_off:", section="masking",
    summary=N_("Causal attention: the mask, the −∞ fill and the other route"),
    stages={
        "scaled_scores": N_("Scaled scores Q Kᵀ / √d_k"),
        "mask": N_("The mask: who may look at whom"),
        "masked_scores": N_("Masked scores: −∞ where blocked"),
        "weights": N_("Weights: softmax over the allowed keys"),
        "other_route": N_("Other route: softmax, zero, renormalise"),
        "output": N_("Output: weights · V"),
    },
    build=build_causal_walkthrough, step_through=causal_step_through, default_stage="masked_scores",
    default_stage_why=N_("The mask is what this page adds; the scaled scores before it are the self-attention page's."), recipe=causal_recipe,
    legacy={"causal_stage": "stage"},
)
