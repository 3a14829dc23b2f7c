r"""The general formulas of the *Gated attention* page, built with sympy (one per stage).

Each is the element form of what :mod:`attention_core.modern.gated` computes, with the matrix form beside it. Indices
1-based as on the page; head r's columns of W_q, W_k, W_v, W_θ are r d_h + 1 … (r + 1) d_h (written W^{(r)}); head-wise,
W_θ has one column per head.

Shape legend: T tokens, D = d_model, h heads, d_h = head_dim.

Sources: Qiu et al. 2025, "Gated Attention for Large Language Models" (NeurIPS 2025): Y′ = Y ⊙ σ(X W_θ) after SDPA;
Vaswani et al. 2017, eq. 1 (SDPA).
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from attention_core.errors import N_
from attention_core.latex import Translate, expr_latex, latex_text, product, translate_cases

_i, _j, _l, _c = sp.symbols("i j l c", integer=True, positive=True)
_d_model, _d_h, _h = sp.symbols("D d_h h", integer=True, positive=True)
_b = sp.Symbol("b")


def _sum(term: sp.Expr, index: sp.Symbol, low: sp.Expr, top: sp.Expr) -> sp.Expr:
    return sp.Sum(term, (index, low, top))


@lru_cache(maxsize=None)
def gated_formula(stage: str, headwise: bool, tr: Translate) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines (words in ``tr``'s language); ``headwise``: one gate per head
    and token (the gate's index c drops).

    Raises:
        KeyError: an unknown stage.
    """
    x, g, y = sp.IndexedBase("x"), sp.IndexedBase("g^{(r)}"), sp.IndexedBase("y^{(r)}")
    gate_at = (lambda base, i: base[i]) if headwise else (lambda base, i: base[i, _c])
    sigma = sp.Function(r"\sigma")
    if stage == "projections":
        w_theta = sp.IndexedBase(r"W^{\theta,(r)}")
        logit = sp.Add(_sum(product(x[_i, _l], w_theta[_l] if headwise else w_theta[_l, _c]), _l, 1, _d_model), _b,
                       evaluate=False)
        return (expr_latex(sp.Eq(gate_at(g, _i), logit, evaluate=False)),
                r"Q_r = X W_q^{(r)}, \quad K_r = X W_k^{(r)}, \quad V_r = X W_v^{(r)} \in \mathbb{R}^{T \times d_h}",
                r"G_r = X W_\theta^{(r)} + b \in \mathbb{R}^{T \times " + ("1" if headwise else "d_h") + "}")
    if stage == "attention":
        a, alpha, v = sp.IndexedBase("a^{(r)}"), sp.IndexedBase(r"\alpha^{(r)}"), sp.IndexedBase("v^{(r)}")
        score = sp.Piecewise((a[_i, _j], _j <= _i), (-sp.oo, True))
        return (translate_cases(expr_latex(sp.Eq(sp.IndexedBase(r"\tilde{a}^{(r)}")[_i, _j], score, evaluate=False)),
                                tr),
                expr_latex(sp.Eq(y[_i, _c], _sum(product(alpha[_i, _j], v[_j, _c]), _j, 1, _i), evaluate=False)),
                r"Y_r = \mathrm{softmax}\!\left(\frac{Q_r K_r^{\top}}{\sqrt{d_h}} + M\right) V_r")
    if stage == "gate":
        return (expr_latex(sp.Eq(sigma(gate_at(g, _i)), 1 / (1 + sp.exp(-gate_at(g, _i))), evaluate=False)),
                r"0 < \sigma(g) < 1: \quad \sigma(0) = \tfrac{1}{2}, \quad \sigma(g) \to 0 \ (g \to -\infty), \quad "
                r"\sigma(g) \to 1 \ (g \to \infty)")
    if stage == "gated":
        gated = sp.IndexedBase(r"y'^{(r)}")
        return (expr_latex(sp.Eq(gated[_i, _c], product(y[_i, _c], sigma(gate_at(g, _i))), evaluate=False)),
                r"Y'_r = Y_r \odot \sigma(G_r)" + (r" \quad " + latex_text(str(tr(N_("(one gate for the head's whole "
                                                                                   "row)")))) if headwise else ""))
    if stage == "output":
        o, cat, w_o = sp.IndexedBase("o"), sp.IndexedBase("y'"), sp.IndexedBase("W^{O}")
        return (expr_latex(sp.Eq(o[_i, _j], _sum(product(cat[_i, _l], w_o[_l, _j]), _l, 1, product(_h, _d_h)),
                                 evaluate=False)),
                r"O = [Y'_1, \dots, Y'_h]\, W_O")
    if stage == "sink":
        v, null = sp.IndexedBase("v^{(r)}"), sp.IndexedBase(r"\bar{y}'^{(r)}")
        mean = product(1 / _i, _sum(v[_j, _c], _j, 1, _i))
        return (r"s_{i,j} = 0 \ (j \le i) \;\Rightarrow\; \alpha_{i,j} = \tfrac{1}{i}",
                expr_latex(sp.Eq(null[_i, _c], product(sigma(gate_at(g, _i)), mean), evaluate=False)),
                latex_text(str(tr(N_("softmax: every row sums to 1; the gate: between 0 and 1")))))
    raise KeyError(stage)
