"""Every step page as a self-checking PyTorch script (torch only): :func:`script_for`.

Each step page declares its recipe beside its walk-through (``Page.recipe``, an
:class:`attention_core.recipe.Recipe`); :func:`attention_core.recipe.write` turns it and the page's panels, every
stage in the walk-through's order, into the script. One script writer for every page.
"""

from __future__ import annotations

from typing import Any

from attention_core.page import Page
from attention_core.recipe import TOLERANCE, Recipe, write
from attention_core.stepthrough import StepThrough

__all__ = ["TOLERANCE", "Recipe", "recipe_and_steps", "script_for"]


def script_for(page: Page, walk: Any) -> str:
    """A self-contained, self-checking Python script (torch only) of every number a step page shows.

    Args:
        page: the step page's declaration (:class:`attention_core.page.Page`): its stages, ``steps`` and ``recipe``.
        walk: what the page builds and hands its ``steps`` and ``recipe`` (its walk-through).

    Returns:
        The script's text. Running it prints one line per matrix (``"<stage> <k>/<n> ... matches the app"``,
        every panel of every stage of the page, in this walk-through's order) and per check against a reference; any
        number that differs by more than rtol = atol = 1e-5 (the page's tolerance where it states another) raises
        ``AssertionError``.

    Raises:
        ValueError: ``page`` is not a step page or declares no recipe.
    """
    return write(*recipe_and_steps(page, walk))


def recipe_and_steps(page: Page, walk: Any) -> tuple[Recipe, list[StepThrough]]:
    """The page's recipe for ``walk`` and every stage of its walk-through, in the walk-through's order (what the
    script and the notebook are written from).

    Raises:
        ValueError: ``page`` is not a step page or declares no recipe.
    """
    if page.step_through is None or page.recipe is None:
        raise ValueError(f"{page.key} is not a step page with a recipe")
    recipe = page.recipe(walk)
    order = page.step_through(walk, next(iter(page.stages))).titles  # the walk-through's variant decides the order
    return recipe, [page.step_through(walk, stage) for stage in order]
