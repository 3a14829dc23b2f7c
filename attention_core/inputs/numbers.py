"""Reading a number the user typed: one way for every box that takes numbers as text.

The practice answer box and the matrix paste box read numbers with these rules (never ``eval``,
``sympify`` or ``parse_expr``: user text must not run as code):

- full-width digits and signs are read as ASCII ones (Unicode NFKC: "０.５" is 0.5);
- the minus sign "−" (U+2212) is read as "-";
- one decimal comma is read as a decimal point when there is no point: "0,25" is 0.25;
- then Python's ``float()`` reads it ("1e-3", "-0.5", "+2").

In a matrix, commas also separate numbers ("1, 2, 3"): :func:`split_row` reads a row with commas as
separators first and, only when that does not give the row's length and the text has no decimal point,
with commas between digits as decimal commas ("0,25 0,5" is two numbers).
"""

from __future__ import annotations

import re
import unicodedata

#: What separates numbers in a row of a pasted matrix (besides commas, see :func:`split_row`).
_SPACES = re.compile(r"[\s;]+")
_SPACES_OR_COMMAS = re.compile(r"[\s,;]+")
#: A comma between two digits: a decimal comma when commas do not separate the numbers.
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")


def normalize(text: str) -> str:
    """``text`` with full-width characters folded (NFKC) and "−" (U+2212) as "-"."""
    return unicodedata.normalize("NFKC", text).replace("\u2212", "-")


def read_number(text: str) -> float:
    """One number as typed, by the rules of the module docstring.

    Args:
        text: what was typed, e.g. "0.73", "0,73", "−0.5", "１.２５", "1e-3"; spaces around it are ignored.

    Returns:
        The float (possibly ±inf or NaN, as ``float()`` reads "inf" and "nan": callers check the range).

    Raises:
        ValueError: not a number.
    """
    cleaned = normalize(text).strip()
    if cleaned.count(",") == 1 and "." not in cleaned:
        cleaned = cleaned.replace(",", ".")
    return float(cleaned)


def split_row(line: str, cols: int) -> list[str]:
    """The words of one row of a pasted matrix (``line`` already :func:`normalize` d).

    Commas separate numbers ("1, 2, 3" or "1,2,3"); if that does not give ``cols`` words and the line has no
    decimal point, a comma between two digits is a decimal comma instead ("0,25 0,5" -> ["0.25", "0.5"]).
    When neither reading gives ``cols`` words, the one the line looks written in is returned (for the message
    that counts them): decimal commas if it has a comma between digits and spaces or semicolons between words.
    """
    words = [w for w in _SPACES_OR_COMMAS.split(line) if w]
    if len(words) == cols or "." in line or not _DECIMAL_COMMA.search(line):
        return words
    decimal = [w.strip(",") for w in _SPACES.split(_DECIMAL_COMMA.sub(".", line)) if w.strip(",")]
    return decimal if len(decimal) == cols or _SPACES.search(line.strip()) else words
