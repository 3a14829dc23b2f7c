"""The *attention dropout* page's export recipe."""

from __future__ import annotations

from attention_core.masking.recipe import _masked_recipe
from attention_core.masking.walk import CausalWalkthrough
from attention_core.recipe import Recipe


def dropout_recipe(walk: CausalWalkthrough) -> Recipe:
    """The dropout page's recipe: the causal page's, then the dropout mask D and the weights · D / (1 − p)."""
    return _masked_recipe(walk, dropout=True)
