r"""The one place for what every formula shares: numbers, user text, translated words, sympy expressions in LaTeX.

Every formula module writes its numbers with :func:`number` (a LaTeX string) or :func:`number_expr` (a sympy
expression that stays apart from its neighbours in a product), its words with :func:`latex_text`, and takes
a :data:`Translate` callback for the words. Numbers are shown with 4 significant digits; ±∞ (a blocked score)
as ±\infty; an exact 0 as 0. No user text ever goes through sympy: :func:`latex_text` escapes it.
A general formula is built of :func:`matrix_symbol` (a matrix keeps its place in a product) and
:func:`product` (factors as written) and written with :func:`expr_latex` (terms in the order built).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Callable, Optional, Sequence

import sympy as sp

from attention_core.errors import N_

#: How app text gets into a formula: ``tr(template, **params) -> str`` in the interface language. The
#: default, :class:`~attention_core.errors.Message`, keeps the English; the pages pass ``ui.i18n.Translator``
#: (hashable per language, so formulas may be cached on it). Translated words are written with latex_text.
Translate = Callable[..., str]

#: Significant digits of every number in a formula.
DIGITS = 4


def number_expr(value: float) -> sp.Expr:
    """``value`` as a sympy expression with 4 significant digits, kept apart from its neighbours.

    ±inf becomes ±oo (a blocked score), an exact 0 the integer 0.
    """
    if math.isinf(value):
        return sp.oo if value > 0 else -sp.oo
    if value == 0:
        return sp.Integer(0)
    return sp.UnevaluatedExpr(sp.Float(value, DIGITS))


@functools.lru_cache(maxsize=8192)
def number(value: float) -> str:
    r"""``value`` as LaTeX with 4 significant digits; ±inf as ``\infty`` / ``-\infty`` (a blocked score).

    Kept for the last 8,192 values (a pure function of the value; sympy's printer is the slow part of a formula)."""
    if math.isinf(value):
        return r"\infty" if value > 0 else r"-\infty"
    return sp.latex(sp.Float(value, DIGITS))


def factor(value: float) -> str:
    """A number as a factor of a product: negatives in parentheses."""
    text = number(value)
    return f"\\left({text}\\right)" if text.startswith("-") else text


def expr_latex(expr: sp.Expr) -> str:
    """A sympy expression as LaTeX with its terms and factors in the order they were built (``order="none"``).

    Args:
        expr: the expression (an equation, a sum, a product, ...).

    Returns:
        Its LaTeX, the way every formula module writes a general formula (sympy's default would sort the terms).
    """
    return sp.latex(expr, order="none")


def product(*factors: sp.Basic) -> sp.Expr:
    """The product of ``factors`` as written, left to right: not evaluated, so nothing is merged or reordered.

    Args:
        factors: sympy expressions (symbols, indexed entries, numbers from :func:`number_expr`, ...).

    Returns:
        An unevaluated ``sympy.Mul`` of the factors in that order.
    """
    return sp.Mul(*factors, evaluate=False)


def matrix_symbol(name: str) -> sp.Symbol:
    """A matrix's symbol: non-commutative, so ``X W_q`` keeps its order in a product (``Q K^T``, not ``K^T Q``).

    Args:
        name: its LaTeX name ("Q", "W_O", "dV^{(2)}", ...).

    Returns:
        A ``sympy.Symbol`` with ``commutative=False``.
    """
    return sp.Symbol(name, commutative=False)


def terms_lines(terms: Sequence[str], per_line: int = 4) -> str:
    """Terms joined by +, broken after every ``per_line`` terms (aligned), so a line fits a projector."""
    chunks = [" + ".join(terms[k:k + per_line]) for k in range(0, len(terms), per_line)]
    return " \\\\ &\\quad + ".join(chunks)


def aligned(lhs: str, steps: Sequence[str]) -> str:
    """lhs = step1 = step2 = ..., one step per line."""
    return "\\begin{aligned} " + lhs + " &= " + " \\\\ &= ".join(steps) + " \\end{aligned}"


def stacked(*blocks: str, gap: str = "6pt") -> str:
    r"""Blocks of LaTeX one under another in one display formula, ``gap`` apart (each centred): a ``gathered``
    environment. A ``\\`` at the top level of a display formula is no LaTeX: KaTeX breaks the line all the same but
    warns "\\ or \newline does nothing in display mode" in the browser's console. One block is returned as is."""
    if len(blocks) == 1:
        return blocks[0]
    return r"\begin{gathered} " + f" \\\\[{gap}] ".join(blocks) + r" \end{gathered}"


def index(base: str, i: int, j: int, head: Optional[int] = None) -> str:
    """``base_{i+1,j+1}`` (1-based, as in the seed articles), with ``^{(head+1)}`` for a head."""
    sup = f"^{{({head + 1})}}" if head is not None else ""
    return f"{base}{sup}_{{{i + 1},{j + 1}}}"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "^": r"\^{}", "_": r"\_", "%": r"\%", "~": r"\~{}",
}


def latex_text(text: str) -> str:
    r"""User text (a token) or a translated word as a safe LaTeX ``\text{...}``: every special character escaped."""
    return r"\text{" + "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text) + "}"


def words_and_math(text: str, **math: str) -> str:
    r"""Translated words with math among them, as LaTeX: ``text`` (translated, its other parameters filled) holds
    ``{key}`` where each part of ``math`` goes (passed to the translation as ``key="{key}"``); the words go into
    ``\text`` (:func:`latex_text`), the parts stay math. A symbol such as ε or − inside ``\text`` has no font in
    KaTeX's text mode (a console warning, and a fallback font)."""
    pattern = "(" + "|".join(re.escape("{" + key + "}") for key in math) + ")"
    return "".join(math[part[1:-1]] if part[1:-1] in math and part.startswith("{") else latex_text(part)
                   for part in re.split(pattern, text) if part)


def translate_cases(text: str, tr: Translate) -> str:
    r"""sympy's words in a Piecewise (``\text{for}``, ``\text{otherwise}``) in the interface language."""

    return (text.replace(r"\text{for}", latex_text(str(tr(N_("for")))))
            .replace(r"\text{otherwise}", latex_text(str(tr(N_("otherwise"))))))
