"""The *causal mask* page's export recipe."""

from __future__ import annotations

from attention_core.masking.recipe import _masked_recipe
from attention_core.masking.walk import CausalWalkthrough
from attention_core.recipe import Recipe


def causal_recipe(walk: CausalWalkthrough) -> Recipe:
    """The causal page's recipe: the mask, the masked scores, the weights both ways, the output."""
    return _masked_recipe(walk, dropout=False)
