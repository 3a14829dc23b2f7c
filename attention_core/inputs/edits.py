"""The matrices a user can edit cell by cell, how their edits are kept, and the one check of a cell's edit.

The edits are overrides on the seeded matrices: matrix name -> {(row, col): value}. They live beside the settings
(kept per preset by ``ui.state``, so switching presets loses nothing) and go into a shared link
(``classroom.share``). A cell's edit is checked where it comes in (:func:`read_cell`): typed into an editor, pasted,
or read from a link; a bad one is refused there with a message (:func:`refused_cell`) and never replaces the last
good value, so no page is ever left unable to build from the edits. A floor module (imports ``errors``
and ``inputs.numbers``, all leaves).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Mapping, Optional

from attention_core.errors import N_, Message, quote
from attention_core.inputs.numbers import read_number

#: Largest |value| accepted in an edited matrix. At 1e6 the scores reach ~1e12
#: and the softmax is one-hot, but every number stays finite in float32.
MAX_ABS_VALUE = 1e6

#: The matrices a user can edit, by name -> label.
EDITABLE = {"x": "X", "w_query": "W_q", "w_key": "W_k", "w_value": "W_v", "target": "T", "multi_head_target": "T"}

#: User edits: matrix name -> {(row, col): value}; None or NaN = an emptied cell (0-based row and column).
Edits = Mapping[str, Mapping[tuple[int, int], Optional[float]]]

#: What is wrong with a cell's edit (:func:`read_cell`): nothing typed, not a number (NaN included), or beyond
#: ±MAX_ABS_VALUE (±inf included).
EMPTY, NOT_A_NUMBER, OUT_OF_RANGE = "empty", "not_a_number", "out_of_range"


def read_cell(typed: Any) -> tuple[Optional[float], str]:
    """The number a cell's edit holds, read the way every box that takes numbers reads them
    (:func:`attention_core.inputs.numbers.read_number`: "0,25", "−0.5" and full-width digits too).

    Args:
        typed: what came in for the cell: a number, the text typed into it, or None (emptied).

    Returns:
        (the value as a float, "") for a good edit; (None, the problem: :data:`EMPTY`, :data:`NOT_A_NUMBER` or
        :data:`OUT_OF_RANGE`) for a bad one.
    """
    if typed is None or (isinstance(typed, str) and not typed.strip()):
        return None, EMPTY
    if isinstance(typed, bool):
        return None, NOT_A_NUMBER
    if isinstance(typed, str):
        try:
            value = read_number(typed)
        except ValueError:
            return None, NOT_A_NUMBER
    elif isinstance(typed, numbers.Real):
        value = float(typed)
    else:
        return None, NOT_A_NUMBER
    if math.isnan(value):
        return None, NOT_A_NUMBER
    if not abs(value) <= MAX_ABS_VALUE:
        return None, OUT_OF_RANGE
    return value, ""


def refused_cell(problem: str, matrix: str, row: int, col: int, typed: Any, kept: Optional[float] = None) -> Message:
    """The message of a refused cell edit: the cell (1-based), what was typed, that the last good value stays, and
    what is allowed.

    Args:
        problem: from :func:`read_cell`.
        matrix: the matrix's label ("X", "W_q").
        row, col: the cell, 0-based.
        typed: what came in (quoted, at most ``errors.QUOTE_CHARS`` characters).
        kept: the value the cell keeps, or None when it keeps the example's own (a link's edit dropped).
    """
    kept_text = f"{kept:.4g}".replace("-", "−") if kept is not None else Message(N_("its value from the example"))
    if isinstance(typed, numbers.Real) and not isinstance(typed, bool):
        typed = f"{typed:g}"
    place = dict(matrix=matrix, row=row + 1, col=col + 1, kept=kept_text, limit=f"{MAX_ABS_VALUE:,.0f}")
    if problem == EMPTY:
        return Message(N_("{matrix} row {row}, column {col} was left empty, so it keeps {kept}. Type a number "
                          "between −{limit} and {limit}."), **place)
    if problem == NOT_A_NUMBER:
        return Message(N_("{matrix} row {row}, column {col}: “{typed}” is not a number, so the cell keeps {kept}. "
                          "Type a number between −{limit} and {limit}."), typed=quote(typed), **place)
    return Message(N_("{matrix} row {row}, column {col}: {typed} is outside −{limit} … {limit}, so the cell keeps "
                      "{kept}. Type a number between −{limit} and {limit}."), typed=quote(typed), **place)
