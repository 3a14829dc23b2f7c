"""The *backward pass* page's declaration (its builder, steps and settings, which the multi-head backward page
shares, are below it: ``attention_core.backward.walkthrough``)."""

from __future__ import annotations

from attention_core.backward.gradients import (
    MAX_BACKWARD_LEARNING_RATE,
    MAX_BACKWARD_STEPS,
    MIN_BACKWARD_LEARNING_RATE,
)
from attention_core.backward.recipe import backward_recipe
from attention_core.backward.walkthrough import (
    TARGETS,
    BackwardSettings,
    build_backward_walkthrough,
    opening_entry,
    step_through_for_page,
)
from attention_core.errors import N_
from attention_core.fields import Choice, FloatRange, IntRange, label
from attention_core.inputs.text import MAX_TOKENS
from attention_core.page import Page
from attention_core.shared_settings import MAX_SEED
from attention_core.stepthrough import StepThrough


def backward_step_through(walk, stage: str) -> StepThrough:
    """The backward pass page's ``stage`` in the one step-through protocol: the shared walk-through's stages of this page.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    return step_through_for_page(walk, stage, BACKWARD)


BACKWARD = Page(
    key="backward", title=N_("The backward pass"), icon=":material/undo:", section="learning",
    summary=N_("The backward pass: where the gradients of W_q, W_k and W_v come from"),
    stages={
        "loss": N_("The loss and dO = O − T"),
        "d_value": N_("dV = Pᵀ dO"),
        "d_weights": N_("dP = dO Vᵀ"),
        "d_scores": N_("Through the softmax: dS"),
        "flash": N_("FlashAttention's shortcut: D = rowsum(dO ⊙ O)"),
        "d_query": N_("Through the scaling: dQ = dS K / √d_k"),
        "d_key": N_("dK = dSᵀ Q / √d_k"),
        "d_w_query": N_("dW_q = Xᵀ dQ"),
        "d_w_key": N_("dW_k = Xᵀ dK"),
        "d_w_value": N_("dW_v = Xᵀ dV"),
        "d_x": N_("dX: X feeds all three"),
        "step": N_("One gradient-descent step"),
    },
    build=build_backward_walkthrough, step_through=backward_step_through, recipe=backward_recipe, settings=BackwardSettings, opening_entry=opening_entry,
    fields=(
        Choice("target", tuple(TARGETS), N_("Unknown target “{raw}”; using “{value}”.")),
        IntRange("copy_query", 1, MAX_TOKENS, label(N_("The token that copies (i)"))),
        IntRange("copy_key", 1, MAX_TOKENS, label(N_("The token copied (j)"))),
        IntRange("target_seed", 0, MAX_SEED, label(N_("The target's seed"))),
        IntRange("steps", 1, MAX_BACKWARD_STEPS, label(N_("Steps to take"))),
        FloatRange("learning_rate", MIN_BACKWARD_LEARNING_RATE, float(MAX_BACKWARD_LEARNING_RATE), "eta",
                   malformed=N_("η must be a number; got “{raw}”, using {value:g}."),
                   out_of_range=N_("η must be between {low:g} and {high:g}; got {eta:g}, using {clamped:g}.")),
    ),
)
