"""The *attention without weights* page: its settings and its declaration (the walk-through is below it:
``attention_core.self_attention.walkthrough``)."""

from __future__ import annotations

from dataclasses import dataclass

from attention_core.errors import N_
from attention_core.fields import IntRange, label
from attention_core.inputs.text import MAX_TOKENS
from attention_core.page import Page


@dataclass(frozen=True)
class NoWeightsSettings:
    """The page of attention without trainable weights: its own settings (``settings.no_weights``).

    Attributes:
        query_index: the token whose context vector the page explains (0-based, < MAX_TOKENS).
    """

    query_index: int = 1


NO_WEIGHTS = Page(
    key="no_weights", title=N_("Attention without trainable weights"), icon=":material/front_hand:",
    section="self_attention", summary=N_("Attention without trainable weights: one context vector by hand"),
    settings=NoWeightsSettings,
    fields=(
        IntRange("query_index", 0, MAX_TOKENS - 1, label(N_("The query token")), one_based=True),
    ),
    legacy={"query_index": "query_index"},
)
