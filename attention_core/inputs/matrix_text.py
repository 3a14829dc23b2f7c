"""Reading a matrix that the user typed or pasted as text.

Numbers are read like in every number box of the app (``inputs.numbers``:
``float()`` only, never ``eval``, ``sympify`` or ``parse_expr``; "−", full-width
digits and decimal commas are read too). Rows are lines; numbers in a row are
separated by spaces, commas, semicolons or tabs (with decimal commas: by spaces,
tabs or semicolons); brackets are ignored, so a printed torch tensor can be
pasted as is.
"""

from __future__ import annotations

import math
import re

from attention_core.errors import N_, InputError
from attention_core.inputs.numbers import normalize, read_number, split_row

_BRACKETS = re.compile(r"tensor\(|[\[\]()]")


def parse_matrix(text: str, rows: int, cols: int, *, label: str, max_abs: float) -> list[list[float]]:
    """Parse ``rows`` lines of ``cols`` numbers each.

    Args:
        text: the user's text.
        rows, cols: the shape the matrix must have.
        label: the matrix's name for messages ("X", "W_q", ...).
        max_abs: the largest |value| accepted.

    Returns:
        The matrix as a list of rows of floats.

    Raises:
        InputError: empty text, a wrong number of rows or columns, a word that
            is not a number, or a value that is not finite or too large; the
            message names the row and column (1-based).
    """
    lines = [_BRACKETS.sub(" ", line).strip(" ,") for line in normalize(text).strip().splitlines()]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise InputError(N_("The text for {label} is empty: type {rows} rows of {cols} numbers."), field=label,
                         label=label, rows=rows, cols=cols)
    if len(lines) != rows:
        raise InputError(N_("{label} needs {rows} rows (one per line); the text has {n}."), field=label,
                         label=label, rows=rows, n=len(lines))
    matrix = []
    for i, line in enumerate(lines):
        words = split_row(line, cols)
        if len(words) != cols:
            raise InputError(N_("{label} row {row} needs {cols} numbers; it has {n}."), field=label,
                             label=label, row=i + 1, cols=cols, n=len(words))
        row = []
        for j, word in enumerate(words):
            try:
                value = read_number(word)
            except ValueError:
                raise InputError(
                    N_("{label} row {row}, column {col}: “{word}” is not a number."), field=label,
                    label=label, row=i + 1, col=j + 1, word=word[:20],
                ) from None
            if not math.isfinite(value) or abs(value) > max_abs:
                raise InputError(
                    N_("{label} row {row}, column {col} is {word}; values must lie between −{limit:g} and {limit:g}."),
                    field=label, label=label, row=i + 1, col=j + 1, word=word[:20], limit=max_abs,
                )
            row.append(value)
        matrix.append(row)
    return matrix
