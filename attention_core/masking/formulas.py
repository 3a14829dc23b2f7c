r"""The formulas of the masking & heads pages, built with sympy, general and with numbers in.

Four pages step through the math of seed 001's ``CausalAttention`` and
``MultiHeadAttention`` and seed 003's cross-attention; each has its own stage
dict here (key -> title), a matrix and an element formula per stage
(:func:`masking_formula`), and builders that write one entry with its real numbers
substituted (``*_entry_latex``). Numbers come in as plain floats; no user text
ever goes through sympy or into these strings.

Sources: Vaswani et al. 2017, "Attention Is All You Need", eq. 1, sec. 3.2.2
(multi-head) and 3.2.3 (masking to -inf); seed 001 (001_9275b51964da46b3.txt)
for softmax(Q Kᵀ / √d_k + Mask) V and the multi-head formulas; seed 004
(004_56c592a3d25bc184.txt, after rasbt/LLMs-from-scratch ch03) for the causal
mask, the "softmax, zero, renormalise" route and dropout with 1 / (1 - p);
seed 003 (003_734755b2d0b981d3.txt) for cross-attention (queries from the
decoder, keys and values from the encoder).

Index legend: i query row, j key row or column, l the summed index, r the head,
c a column inside a head, m decoder tokens, n encoder tokens, T tokens,
D = d_model, p = dropout_p.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import sympy as sp

from attention_core import entry_formulas as entries
from attention_core.errors import N_, Message
from attention_core.latex import (
    Translate,
    aligned,
    expr_latex,
    factor,
    index,
    latex_text,
    matrix_symbol,
    number,
    product,
    translate_cases,
)
from attention_core.self_attention import formulas

#: The words inside the general formulas (``\text{...}``), translated by :func:`masking_formula`'s ``tr``.
_WORDS: dict[str, str] = {
    "allowed": N_("allowed"),
    "causal": N_("causal"),
    "not_padding": N_("not padding"),
    "then_clicks": N_("then your clicks"),
    "if_allowed": N_("if allowed"),
    "if_blocked": N_("if blocked"),
    "causal_colon": N_("causal:"),
    "drop_out": N_("blocked keys drop out of the sum"),
    "kept": N_("kept, with probability"),
    "dropped": N_("dropped, with probability"),
}

_i, _j, _l, _c, _r = sp.symbols("i j l c r", integer=True, positive=True)
_p = sp.Symbol("p", positive=True)
_n, _T, _D = sp.Symbol("n"), sp.Symbol("T"), sp.Symbol("D")
_d_k = sp.Symbol("d_k", positive=True)
_d_head = sp.Symbol(r"d_{head}", positive=True)
_TOP = sp.Symbol(r"\top")
_softmax = sp.Function(r"\operatorname{softmax}")
_a, _a_masked, _alpha, _alpha_hat = (sp.IndexedBase(s) for s in ("a", "a'", r"\alpha", r"\hat{\alpha}"))
_alpha_tilde, _z, _v, _M, _m = (sp.IndexedBase(s) for s in (r"\tilde{\alpha}", "z", "v", "M", "m"))
_d, _q, _k, _x = (sp.IndexedBase(s) for s in ("d", "q", "k", "x"))


def _per_head(base: str, r=_r) -> sp.IndexedBase:
    return sp.IndexedBase(f"{base}^{{({sp.latex(r)})}}")


def masked_weight_element(i=_i, j=_j, upper=_T, alpha=_alpha, a=_a_masked) -> sp.Expr:
    """alpha_ij = e^{a_ij} / sum_l e^{a_il}: blocked keys (a = -inf) drop out of the sum (e^{-inf} = 0)."""
    return sp.Eq(alpha[i, j], sp.exp(a[i, j]) / sp.Sum(sp.exp(a[i, _l]), (_l, 1, upper)), evaluate=False)


@lru_cache(maxsize=None)
def masking_formula(page: str, stage: str, tr: Translate = Message) -> tuple[str, ...]:
    """The matrix form and the element form (and sometimes a remark) of a stage, as LaTeX.

    Args:
        page: the page's key: "causal" or "dropout" (the multi-head pages: :func:`attention_core.multi_head.formulas.page_formula`).
        stage: a key of that page's stage dict.
        tr: puts the words of the formulas in the interface language (default: English).

    Raises:
        KeyError: for an unknown page or stage.
    """
    words = tuple((key, str(tr(text))) for key, text in _WORDS.items())
    return tuple(translate_cases(line, tr) for line in _masking_formula(page, stage, words))


@lru_cache(maxsize=None)
def _masking_formula(page: str, stage: str, words: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """:func:`masking_formula` with its words already translated (cached per page, stage and language)."""
    translated = dict(words)

    def w(key: str, before: str = "", after: str = "") -> str:
        # a word as LaTeX \text{...}, with spaces inside it
        return latex_text(before + translated[key] + after)

    kt = sp.Pow(matrix_symbol("K"), _TOP, evaluate=False)
    scaled = sp.Mul(matrix_symbol("Q"), kt, 1 / sp.sqrt(_d_k))
    a_prime, weights, tilde = matrix_symbol("A'"), matrix_symbol(r"\mathcal{A}"), matrix_symbol(r"\tilde{\mathcal{A}}")

    if page in ("causal", "dropout"):
        if stage == "scaled_scores":
            return formulas.self_attention_formula("scaled_scores")
        if stage == "mask":
            matrix = sp.Symbol(w("allowed") + " = " + w("causal") + r" \wedge " + w("not_padding") + r",\ "
                               + w("then_clicks"))
            element = sp.Symbol(r"M_{i,j} = \begin{cases} 0 & " + w("if_allowed") + r" \\ -\infty & "
                                + w("if_blocked") + r" \end{cases}")
            causal = sp.Eq(sp.Symbol(w("causal_colon", after=" ") + " M_{i,j}"),
                           sp.Piecewise((0, sp.Le(_j, _i)), (-sp.oo, True)), evaluate=False)
            return expr_latex(matrix), expr_latex(element), expr_latex(causal)
        if stage == "masked_scores":
            matrix = sp.Eq(a_prime, sp.Add(scaled, matrix_symbol("M"), evaluate=False), evaluate=False)
            element = sp.Eq(_a_masked[_i, _j], sp.Piecewise((_a[_i, _j], sp.Eq(_M[_i, _j], 0)), (-sp.oo, True)), evaluate=False)
            return expr_latex(matrix), expr_latex(element)
        if stage == "weights":
            matrix = sp.Eq(weights, _softmax(sp.Add(scaled, matrix_symbol("M"), evaluate=False)), evaluate=False)
            return expr_latex(matrix), expr_latex(masked_weight_element()), r"e^{-\infty} = 0:\ " + w("drop_out")
        if stage == "other_route":
            matrix = sp.Eq(matrix_symbol(r"\hat{\mathcal{A}}"), _softmax(scaled), evaluate=False)
            element = sp.Eq(_alpha[_i, _j], product(_alpha_hat[_i, _j], _m[_i, _j])
                            / sp.Sum(product(_alpha_hat[_i, _l], _m[_i, _l]), (_l, 1, _T)), evaluate=False)
            remark = "m_{i,j} = 1 " + w("if_allowed", " ", ", ") + " 0 " + w("if_blocked", " ")
            return expr_latex(matrix), expr_latex(element), remark
        if stage == "dropout_mask":
            matrix = sp.Symbol(r"D_{i,j} \sim \operatorname{Bernoulli}(1 - p)")
            element = sp.Eq(_d[_i, _j], sp.Piecewise((1, sp.Symbol(w("kept", after=" ") + " 1 - p")),
                                                      (0, sp.Symbol(w("dropped", after=" ") + " p"))), evaluate=False)
            return expr_latex(matrix), expr_latex(element)
        if stage == "dropped_weights":
            matrix = sp.Eq(tilde, sp.Mul(sp.Symbol(r"\mathcal{A} \odot D"), 1 / (1 - _p), evaluate=False), evaluate=False)
            element = sp.Eq(_alpha_tilde[_i, _j], product(_alpha[_i, _j], _d[_i, _j]) / (1 - _p), evaluate=False)
            sums = sp.Eq(sp.Sum(_alpha_tilde[_i, _j], (_j, 1, _T)),
                         product(1 / (1 - _p), sp.Sum(product(_alpha[_i, _j], _d[_i, _j]), (_j, 1, _T))), evaluate=False)
            return expr_latex(matrix), expr_latex(element), expr_latex(sums)
        if stage == "output":
            if page == "dropout":
                return (expr_latex(sp.Eq(matrix_symbol("Z"), sp.Mul(tilde, matrix_symbol("V")), evaluate=False)),
                        expr_latex(sp.Eq(_z[_i, _j], sp.Sum(product(_alpha_tilde[_i, _l], _v[_l, _j]), (_l, 1, _T)), evaluate=False)))
            return (expr_latex(sp.Eq(matrix_symbol("Z"), sp.Mul(weights, matrix_symbol("V")), evaluate=False)),
                    expr_latex(sp.Eq(_z[_i, _j], sp.Sum(product(_alpha[_i, _l], _v[_l, _j]), (_l, 1, _T)), evaluate=False)))

    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, numbers in (the masking pages' own;
# the shared ones are in attention_core/entry_formulas.py)


def renormalised_entry_latex(row: int, col: int, unmasked_row: Sequence[float], allowed_row: Sequence[bool],
                             value: float, tr: Translate = Message) -> str:
    """The other route for one weight: α_ij = α̂_ij m_ij / Σ_l α̂_il m_il, numbers in (the sum first)."""
    lhs = index(r"\alpha", row, col)
    hat, m = index(r"\hat{\alpha}", row, col), index("m", row, col)
    sum_il = f"\\sum_l \\hat{{\\alpha}}_{{{row + 1},l}}\\, m_{{{row + 1},l}}"
    general = f"\\frac{{{hat}\\, {m}}}{{{sum_il}}}"
    if not any(allowed_row):
        return entries.blocked_row(lhs, general, row, tr)
    terms = [f"{number(w)} \\cdot {int(a)}" for w, a in zip(unmasked_row, allowed_row)]
    total = sum(w for w, a in zip(unmasked_row, allowed_row) if a)
    numerator = f"{number(unmasked_row[col])} \\cdot {int(allowed_row[col])}"
    return entries.two_steps(f"\\textstyle {sum_il}", terms, total, lhs, general, numerator,
                      unmasked_row[col] * allowed_row[col], value)


def dropout_mask_entry_latex(row: int, col: int, kept: bool, p: float, training: bool,
                             tr: Translate = Message) -> str:
    """d_ij = 1 (kept) or 0 (dropped); in eval mode every d_ij = 1."""
    lhs = index("d", row, col)
    if not training:
        return f"{lhs} = 1 \\qquad (" + latex_text(tr(N_("eval mode: dropout keeps every weight"))) + ")"
    if p == 0:
        return f"{lhs} = 1 \\qquad (p = 0)"
    if kept:
        verdict = latex_text(tr(N_("kept; this happens with probability")) + " ") + " 1 - p = " + number(1 - p)
    else:
        verdict = latex_text(tr(N_("dropped; this happens with probability")) + " ") + " p = " + number(p)
    return f"{lhs} = {int(kept)} \\qquad ({verdict})"


def dropped_weight_entry_latex(row: int, col: int, weight: float, kept: bool, p: float, value: float) -> str:
    """α̃_ij = α_ij d_ij / (1 − p), numbers in."""
    lhs = index(r"\tilde{\alpha}", row, col)
    alpha, d = index(r"\alpha", row, col), index("d", row, col)
    general = f"\\frac{{{alpha}\\, {d}}}{{1 - p}}"
    numbers = f"\\frac{{{factor(weight)} \\cdot {int(kept)}}}{{1 - {number(p)}}}"
    return aligned(lhs, [general, numbers, number(value)])


# ---------------------------------------------------------------- the pages' header formulas


def header_latex(page: str, tr: Translate = Message) -> str:
    """The formula at the top of the causal or dropout page, as LaTeX.

    Built with sympy from the same symbols as the pages' stages (Vaswani et al. 2017, eq. 1, sec. 3.2.2-3.2.3;
    seed 001 for the causal mask and multi-head; seed 004 for dropout; seed 003 for cross-attention).
    ``tr`` puts the formula's words in the interface language (default: English).

    Raises:
        KeyError: for an unknown page.
    """
    words = tuple((key, str(tr(text))) for key, text in _HEADER_WORDS.items())
    if page == "dropout":
        translated = dict(words)
        dropped = masking_formula("dropout", "dropped_weights", tr)[0]
        drawn = masking_formula("dropout", "dropout_mask", tr)[0]
        evaluated = expr_latex(sp.Eq(matrix_symbol(r"\tilde{\mathcal{A}}"), matrix_symbol(r"\mathcal{A}"), evaluate=False))
        return (dropped + r",\qquad " + drawn + r"\ " + latex_text(translated["training"]) + r",\qquad "
                + evaluated + r"\ " + latex_text(translated["eval"]))
    return translate_cases(_header_latex(page, words), tr)


_HEADER_WORDS: dict[str, str] = {
    "training": N_("(training)"),
    "eval": N_("(eval)"),
}


@lru_cache(maxsize=None)
def _header_latex(page: str, words: tuple[tuple[str, str], ...]) -> str:
    kt = sp.Pow(matrix_symbol("K"), _TOP, evaluate=False)
    scaled = sp.Mul(matrix_symbol("Q"), kt, 1 / sp.sqrt(_d_k))
    if page == "causal":
        attention = sp.Eq(sp.Function(r"\operatorname{CausalAttention}")(matrix_symbol("Q"), matrix_symbol("K"), matrix_symbol("V")),
                          sp.Mul(_softmax(sp.Add(scaled, matrix_symbol("M"), evaluate=False)), matrix_symbol("V")), evaluate=False)
        mask = sp.Eq(_M[_i, _j], sp.Piecewise((0, sp.Le(_j, _i)), (-sp.oo, True)), evaluate=False)
        return expr_latex(attention) + r",\quad " + expr_latex(mask)  # the cases' words: translate_cases
    raise KeyError(page)
