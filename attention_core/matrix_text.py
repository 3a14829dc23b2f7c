"""Reading a matrix that the user typed or pasted as text.

Numbers are read with ``float()`` only (never ``eval``, ``sympify`` or
``parse_expr``: user text must not run as code). Rows are lines; numbers in a
row are separated by spaces, commas, semicolons or tabs; brackets are ignored,
so a printed torch tensor can be pasted as is.
"""

from __future__ import annotations

import math
import re

from .errors import InputError

_SEPARATORS = re.compile(r"[\s,;]+")
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
    lines = [_BRACKETS.sub(" ", line).strip(" ,") for line in text.strip().splitlines()]
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise InputError(f"The text for {label} is empty: type {rows} rows of {cols} numbers.", field=label)
    if len(lines) != rows:
        raise InputError(f"{label} needs {rows} rows (one per line); the text has {len(lines)}.", field=label)
    matrix = []
    for i, line in enumerate(lines):
        words = [w for w in _SEPARATORS.split(line) if w]
        if len(words) != cols:
            raise InputError(f"{label} row {i + 1} needs {cols} numbers; it has {len(words)}.", field=label)
        row = []
        for j, word in enumerate(words):
            try:
                value = float(word)
            except ValueError:
                raise InputError(
                    f"{label} row {i + 1}, column {j + 1}: “{word[:20]}” is not a number.", field=label
                ) from None
            if not math.isfinite(value) or abs(value) > max_abs:
                raise InputError(
                    f"{label} row {i + 1}, column {j + 1} is {word[:20]}; values must lie between "
                    f"−{max_abs:g} and {max_abs:g}.",
                    field=label,
                )
            row.append(value)
        matrix.append(row)
    return matrix
