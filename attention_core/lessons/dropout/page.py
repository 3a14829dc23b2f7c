"""The *attention dropout* page: its settings, its builder (the causal page's walk-through with dropout_p) and its
declaration."""

from __future__ import annotations

from typing import Optional

from attention_core.errors import N_
from attention_core.fields import FloatRange, IntRange, Switch, label
from attention_core.inputs.edits import Edits
from attention_core.masking.recipe import dropout_recipe
from attention_core.masking.walk import CausalWalkthrough
from attention_core.masking.walkthrough import (
    MAX_DROPOUT,
    DropoutSettings,
    build_causal_walkthrough,
    step_through_for_page,
)
from attention_core.page import Page
from attention_core.shared_settings import MAX_SEED, SharedSettings
from attention_core.stepthrough import StepThrough


def build_dropout_walkthrough(settings: SharedSettings, dropout: DropoutSettings,
                              edits: Optional[Edits] = None) -> CausalWalkthrough:
    """The dropout page's walk-through (its builder in its declaration): :func:`build_causal_walkthrough` with the
    page's own settings.

    Args:
        settings: validated shared settings, as :func:`build_causal_walkthrough` reads them.
        dropout: the page's own settings (``settings.dropout``): dropout_p p, training, seed.
        edits: the user's edits: "x" (cells of X) and :data:`MASK_EDITS` (mask cells).

    Raises:
        InputError: as :func:`build_causal_walkthrough`.
    """
    return build_causal_walkthrough(settings, edits, dropout=dropout)


def dropout_step_through(walk: CausalWalkthrough, stage: str) -> StepThrough:
    """The dropout page's ``stage``: :func:`attention_core.masking.walkthrough.step_through_for_page` of its walk-through (:func:`build_dropout_walkthrough`)."""
    return step_through_for_page(walk, stage, DROPOUT_PAGE)



DROPOUT_PAGE = Page(
    key="dropout", title=N_("Dropout"), icon=":material/grain:", section="masking",
    summary=N_("Dropout on the attention weights: the seeded mask and 1/(1 − p)"),
    stages={
        "weights": N_("Causal weights (each row sums to 1)"),
        "dropout_mask": N_("The dropout mask (seeded)"),
        "dropped_weights": N_("Dropped and rescaled by 1 / (1 − p)"),
        "output": N_("Output: dropped weights · V"),
    },
    build=build_dropout_walkthrough, step_through=dropout_step_through, default_stage="dropout_mask",
    default_stage_why=N_("The dropout mask is what this page adds to the causal weights before it."), recipe=dropout_recipe,
    settings=DropoutSettings,
    fields=(
        FloatRange("dropout_p", 0.0, MAX_DROPOUT, "p",
                   malformed=N_("dropout_p must be a number in [0, 1); got “{raw}”, using {value}."),
                   out_of_range=N_("dropout_p must be in [0, 1); got {p:g}, using {clamped:g}."),
                   beyond=(1.0, N_("dropout_p must be in [0, 1) (p = 1 would drop every weight); got {p:g}, "
                                   "using {clamped:g}.")),
                   clamp_infinite=True),
        Switch("training", label(N_("The training switch"))),
        IntRange("seed", 0, MAX_SEED, label(N_("The dropout seed"))),
    ),
    legacy={"dropout_stage": "stage", "dropout_p": "dropout_p", "training": "training", "dropout_seed": "seed"},
)
