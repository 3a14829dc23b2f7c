r"""The general formulas of the *Differential attention* page, built with sympy (one per stage).

Each is the element form of what :mod:`attention_core.modern.differential` computes, with the matrix form beside it.
Indices 1-based as on the page.

Shape legend: T tokens, D = d_model, h heads, d = head_dim (each half of q and k; values are 2d wide).

Sources: Ye et al. 2025, "Differential Transformer" (ICLR 2025), sec. 2.1 (eq. 1, λ and λ_init), sec. 2.2
(GroupNorm per head, the (1 − λ_init) scale).
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from attention_core.errors import N_
from attention_core.latex import Translate, expr_latex, latex_text, product, translate_cases

_i, _j, _l, _c = sp.symbols("i j l c", integer=True, positive=True)
_d_model, _d, _h = sp.symbols("D d h", integer=True, positive=True)
_lam, _lam_init = sp.Symbol(r"\lambda"), sp.Symbol(r"\lambda_{\mathrm{init}}")


def _sum(term: sp.Expr, index: sp.Symbol, low: sp.Expr, top: sp.Expr) -> sp.Expr:
    return sp.Sum(term, (index, low, top))


@lru_cache(maxsize=None)
def differential_formula(stage: str, tr: Translate) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines (words in ``tr``'s language).

    Raises:
        KeyError: an unknown stage.
    """
    x = sp.IndexedBase("x")
    a1, a2, dd = sp.IndexedBase("A^{1}"), sp.IndexedBase("A^{2}"), sp.IndexedBase("D")
    if stage == "split":
        q1, w_q = sp.IndexedBase("q^{1}"), sp.IndexedBase("W^{q}")
        return (expr_latex(sp.Eq(q1[_i, _c], _sum(product(x[_i, _l], w_q[_l, _c]), _l, 1, _d_model), evaluate=False)),
                r"[Q_1, Q_2] = X W_q^{(r)}, \quad [K_1, K_2] = X W_k^{(r)} \in \mathbb{R}^{T \times 2d}, \quad "
                r"V = X W_v^{(r)} \in \mathbb{R}^{T \times 2d}")
    if stage == "maps":
        s = sp.IndexedBase("s^{1}")
        score = sp.Piecewise((s[_i, _j], _j <= _i), (-sp.oo, True))
        return (translate_cases(expr_latex(sp.Eq(sp.IndexedBase(r"\tilde{s}^{1}")[_i, _j], score, evaluate=False)), tr),
                expr_latex(sp.Eq(a1[_i, _j], sp.exp(s[_i, _j]) / _sum(sp.exp(s[_i, _l]), _l, 1, _i), evaluate=False)),
                r"A_1 = \mathrm{softmax}\!\left(\frac{Q_1 K_1^{\top}}{\sqrt{d}} + M\right), \quad "
                r"A_2 = \mathrm{softmax}\!\left(\frac{Q_2 K_2^{\top}}{\sqrt{d}} + M\right)")
    if stage == "lambda":
        lq1, lk1, lq2, lk2 = (sp.Symbol(rf"\lambda_{{{n}}}") for n in ("q1", "k1", "q2", "k2"))
        lam = sp.Add(sp.exp(product(lq1, lk1)), -sp.exp(product(lq2, lk2)), _lam_init, evaluate=False)
        layer = sp.Symbol("l", integer=True, positive=True)
        init = sp.Add(sp.Rational(4, 5), -product(sp.Rational(3, 5), sp.exp(-product(sp.Rational(3, 10),
                                                                                         layer - 1))), evaluate=False)
        return (expr_latex(sp.Eq(_lam, lam, evaluate=False)), expr_latex(sp.Eq(_lam_init, init, evaluate=False)))
    if stage == "difference":
        return (expr_latex(sp.Eq(dd[_i, _j], sp.Add(a1[_i, _j], -product(_lam, a2[_i, _j]), evaluate=False),
                                 evaluate=False)),
                r"\sum_{j} D_{i,j} = 1 - \lambda \quad " + latex_text(str(tr(N_("(entries may be negative)")))))
    if stage == "values":
        v = sp.IndexedBase("v")
        return (expr_latex(sp.Eq(sp.IndexedBase("m")[_i, _c], _sum(product(dd[_i, _j], v[_j, _c]), _j, 1, _i),
                                 evaluate=False)), r"M = (A_1 - \lambda A_2)\, V \in \mathbb{R}^{T \times 2d}")
    if stage == "norm":
        m, o = sp.IndexedBase("m"), sp.IndexedBase("o")
        eps = sp.Symbol(r"\epsilon")
        rms = sp.sqrt(sp.Add(product(1 / (2 * _d), _sum(m[_i, _l] ** 2, _l, 1, 2 * _d)), eps, evaluate=False))
        return (expr_latex(sp.Eq(o[_i, _c], product(sp.Add(1, -_lam_init, evaluate=False), m[_i, _c] / rms),
                                 evaluate=False)),
                r"\epsilon = 10^{-5}")
    if stage == "output":
        u, cat, w_o = sp.IndexedBase("u"), sp.IndexedBase("o"), sp.IndexedBase("W^{O}")
        return (expr_latex(sp.Eq(u[_i, _j], _sum(product(cat[_i, _l], w_o[_l, _j]), _l, 1, product(_h, 2 * _d)),
                                 evaluate=False)),
                r"u = [o^{(1)}, \dots, o^{(h)}]\, W_O")
    if stage == "cancel":
        n = sp.IndexedBase("n")
        return (r"A'_k = \mathrm{softmax}(S_k + N + M), \quad k = 1, 2",
                expr_latex(sp.Eq(sp.IndexedBase("D'")[_i, _j], sp.Add(sp.IndexedBase("A'^{1}")[_i, _j],
                                                                      -product(_lam, sp.IndexedBase("A'^{2}")[_i, _j]),
                                                                      evaluate=False), evaluate=False)),
                latex_text(str(tr(N_("the same noise N in both maps")))) + r": \ " + expr_latex(n[_i, _j]))
    raise KeyError(stage)
