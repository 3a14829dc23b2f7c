r"""Every step page as a Jupyter notebook that re-checks every number: :func:`notebook_for`.

The notebook is the page's self-checking script (:mod:`attention_core.classroom.checking_script`: the same recipe, the same
lines, from :func:`attention_core.recipe.header`, :func:`~attention_core.recipe.input_lines` and
:func:`~attention_core.recipe.stage_checks`) cut into cells, with each stage's formula above its checks:

1. Markdown: the page's title, where its formulas come from, how to run it;
2. code: the imports and the two assertions, ``check`` (a matrix the app showed) and ``same_as`` (a reference:
   PyTorch, transformers, a loop);
3. code: the page's inputs as literals (the app's float32 numbers);
4. code: every step recomputed with torch;
5. per stage, in the walk-through's order: Markdown ``## Step n: <title>`` with the stage's formulas in ``$$ ... $$``
   (the page's LaTeX, from sympy; Jupyter renders it with MathJax), then code: one ``check(...)`` per heatmap of the
   stage against the app's numbers (rtol = atol = 1e-5, ±∞ cells compared as such);
6. Markdown and code: the page's checks (under what its checks compare with: PyTorch, transformers, a loop in
   Python floats, a second route), and "Every number matches.".

Run top to bottom in a fresh kernel (it needs only torch), any number that differs stops it with ``AssertionError``
at the stage that differs. Written with nbformat (v4, validated); the cell ids are fixed, so the same settings give
the same file. Tokens (user text) enter only the code cells, inside ``repr`` string literals; the Markdown cells hold
the app's own words, escaped (:func:`attention_core.classroom.export.markdown_text`), and its formulas, in which
the app writes no token.
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbformat import v4

from attention_core.classroom.checking_script import recipe_and_steps
from attention_core.classroom.export import markdown_text
from attention_core.errors import N_, Message
from attention_core.latex import Translate
from attention_core.page import Page
from attention_core.recipe import DONE, header, input_lines, stage_checks
from attention_core.stepthrough import AGAINST, AGAINST_LABEL

#: The notebook's kernel: the Python 3 kernel every Jupyter installs (ipykernel's).
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def notebook_for(page: Page, walk: Any, tr: Translate = Message) -> str:
    """A Jupyter notebook (nbformat 4, as JSON text) that recomputes every number a step page shows and checks it.

    Args:
        page: the step page's declaration (:class:`attention_core.page.Page`): its stages, ``steps`` and ``recipe``.
        walk: what the page builds and hands its ``steps`` and ``recipe`` (its walk-through).
        tr: translates the Markdown's words (the title, the stage titles, the formulas' words); English by default.

    Returns:
        The ``.ipynb`` file's text. Run top to bottom, its cells print what the script prints (one line per matrix
        and per check against a reference); any number that differs raises ``AssertionError`` in the cell of its
        stage.

    Raises:
        ValueError: ``page`` is not a step page or declares no recipe (or the recipe is stale).
    """
    recipe, steps = recipe_and_steps(page, walk)

    def words(text: str, **params: Any) -> str:
        return markdown_text(str(tr(text, **params)))

    cells = [
        v4.new_markdown_cell("\n".join([
            "# " + words(N_("Attention Explorer: {title}"), title=str(tr(page.title))),
            "",
            *("- " + markdown_text(line) for line in recipe.sources),
            "",
            words(N_("Every matrix the page shows, on every step, is recomputed below from the page's inputs and "
                     "compared with the numbers the app showed; then with the references the page checks against. "
                     "Run every cell in order (it needs only torch): any number that differs raises "
                     "AssertionError.")),
        ]), id="title"),
        v4.new_code_cell(header().strip("\n"), id="setup"),
        v4.new_code_cell("\n".join(["# the inputs: the app's float32 numbers", *input_lines(recipe)]), id="inputs"),
        v4.new_code_cell("\n".join(["# every step, recomputed", *recipe.code]).rstrip("\n"), id="recompute"),
    ]
    for number, (step, checks) in enumerate(stage_checks(recipe, steps), start=1):
        key = step.stage.key
        title = words(N_("Step {number}: {title}"), number=number, title=str(tr(step.titles[key])))
        formulas = [f"$${line}$$" for line in step.stage.formula(tr)]
        cells.append(v4.new_markdown_cell("\n\n".join([f"## {title}", *formulas]), id=f"step-{number}"))
        if checks:
            cells.append(v4.new_code_cell("\n".join(checks), id=f"step-{number}-check"))
    kinds = [kind for kind in AGAINST if any(check.against == kind for step in steps for check in step.checks)]
    cells.append(v4.new_markdown_cell("\n\n".join([
        "## " + words(N_("The page's checks")),
        words(N_("The comparisons the page makes; each prints the reference it compares with:")),
        "\n".join("- " + words(AGAINST_LABEL[kind]) for kind in kinds),
    ]), id="pytorch"))
    cells.append(v4.new_code_cell("\n".join([*recipe.references, DONE]), id="pytorch-check"))
    notebook = v4.new_notebook(cells=cells, metadata={"kernelspec": KERNEL, "language_info": {"name": "python"}})
    nbformat.validate(notebook)
    return nbformat.writes(notebook)
