"""What the step pages draw around the step-through element (``ui.stepper``, which shows the step-through protocol of
``attention_core.stepthrough`` in the browser): the checks as lines (the model pages show them beside the head's map),
the worksheet and exports under the element, and the blocks a large matrix is shown in (the model pages' heads, their
maps). Nothing here computes attention.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Sequence

import streamlit as st

from attention_core.classroom import checking_script, notebook
from attention_core.page import Page
from attention_core.stepthrough import Check
from ui import i18n, widgets
from ui.classroom import worksheet
from ui.i18n import _, app_text


def _exports(page: Page, walk: Any) -> dict[str, Callable[[], str]]:
    """The page's self-checking script and notebook (in the interface language), each written when its button is
    clicked (neither for a page without a recipe)."""
    if page.recipe is None:
        return {}
    return {"script": functools.partial(checking_script.script_for, page, walk),
            "notebook": functools.partial(notebook.notebook_for, page, walk, i18n.translator())}


# ---------------------------------------------------------------- under a step-through: the downloads


def downloads(page: Page, walk: Any, titles: Mapping[str, str]) -> None:
    """The page's worksheet and exports of every stage (``ui.classroom.worksheet``), under its step-through: ``titles``, its
    stages' titles (English, marked for translation)."""
    worksheet.downloads(page, titles, functools.partial(page.step_through, walk), **_exports(page, walk))


#: A large matrix (the trained model's X is n × 384) is shown in blocks of WINDOW rows and columns; up to
#: WHOLE rows (columns) are shown whole: a block of numbers that stays readable on a projector.
WINDOW, WHOLE = 12, 14


def window(total: int, index: int, size: int = WINDOW) -> tuple[int, int]:
    """The block [start, stop) of rows (or columns) shown around ``index``: all of them up to WHOLE."""
    if total <= WHOLE:
        return 0, total
    start = (min(max(index, 0), total - 1) // size) * size
    return start, min(start + size, total)


def checks(items: Sequence[Check]) -> None:
    """Each comparison with its reference (PyTorch, transformers, a float loop, a second route: the line says which)
    as a success (or error) line, with what was compared."""
    for check in items:
        widgets.check_line(check.max_abs_diff, check.matches, check.reference, check.against)
        if check.note:
            st.caption(_("Compared: {what}.", what=app_text(check.note)))

