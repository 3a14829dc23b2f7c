r"""The general formulas of the *DeepSeek sparse attention* page, built with sympy (one per stage).

Each is the element form of what :mod:`attention_core.modern.sparse` computes, with the matrix form beside it. Indices
1-based as on the page: t a query token, s a key token, j an indexer head, r an MLA head.

Shape legend: T tokens, D = d_model, H_I indexer heads of width d_I, k the keys each query keeps, h MLA heads.

Sources: DeepSeek-AI 2025, "DeepSeek-V3.2-Exp", sec. 2.1, eq. 1 (the lightning indexer; the scales 1/√d_I and 1/√H_I
are its code's) and eq. 2 (attention over the selected entries); DeepSeek-V2 2024, eqs. 9-19 (MLA).
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from attention_core.errors import N_
from attention_core.latex import Translate, expr_latex, latex_text, product, translate_cases, words_and_math

_t, _s, _j, _l, _c = sp.symbols("t s j l c", integer=True, positive=True)
_d_model, _h_i, _d_i, _k, _T = sp.symbols("D H_I d_I k T", integer=True, positive=True)


def _sum(term: sp.Expr, index: sp.Symbol, low: sp.Expr, top: sp.Expr) -> sp.Expr:
    return sp.Sum(term, (index, low, top))


@lru_cache(maxsize=None)
def sparse_formula(stage: str, tr: Translate) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines (words in ``tr``'s language).

    Raises:
        KeyError: an unknown stage.
    """
    x, w_w, w = sp.IndexedBase("x"), sp.IndexedBase("W^{w}"), sp.IndexedBase("w")
    index_score = sp.IndexedBase("I")
    if stage == "indexer":
        weight = product(_sum(product(x[_t, _l], w_w[_l, _j]), _l, 1, _d_model), 1 / sp.sqrt(_h_i))
        return (expr_latex(sp.Eq(w[_t, _j], weight, evaluate=False)),
                r"q^{I}_{t,j} = \mathrm{RoPE}(c_{Q,t}\, W^{I}_{Q,j}), \quad k^{I}_{s} = \mathrm{RoPE}(x_s\, W^{I}_{K}) "
                r"\in \mathbb{R}^{d_I}",
                latex_text(str(tr(N_("one key per token, shared by the indexer's heads; RoPE on the first d_R "
                                     "columns")))))
    if stage == "scores":
        q, k = sp.IndexedBase("q^{I}"), sp.IndexedBase("k^{I}")
        dot = product(_sum(product(q[_t, _j, _c], k[_s, _c]), _c, 1, _d_i), 1 / sp.sqrt(_d_i))
        term = product(w[_t, _j], sp.Max(0, dot, evaluate=False))
        score = sp.Piecewise((_sum(term, _j, 1, _h_i), _s <= _t), (-sp.oo, True))
        return (translate_cases(expr_latex(sp.Eq(index_score[_t, _s], score, evaluate=False)), tr),
                r"\max(0, \cdot) = \mathrm{ReLU}: " + latex_text(str(tr(N_("a head that finds the key unlike its "
                                                                          "query adds nothing, never a negative")))))
    if stage == "topk":
        return (r"S_t = \operatorname{top}\text{-}k_{\,s \le t}\; I_{t,s} \quad (\lvert S_t \rvert = \min(k, t))",
                translate_cases(r"M_{t,s} = \begin{cases} 0 & \text{for}\: s \in S_t \\ -\infty & "
                                r"\text{otherwise} \end{cases}", tr),
                words_and_math(str(tr(N_("{cond}: query t keeps every key it may see"), cond="{cond}")),
                               cond=r"k \ge t"))
    if stage == "weights":
        return (r"\alpha_{t,s} = \frac{e^{a_{t,s}}}{\sum_{l \in S_t} e^{a_{t,l}}} \quad (s \in S_t), \qquad "
                r"\alpha_{t,s} = 0 \quad (s \notin S_t)",
                r"A_r = \mathrm{softmax}\!\left(\frac{q_r k_r^{\top}}{\sqrt{d_h + d_R}} + M_{\mathrm{causal}} + M\right)")
    if stage == "output":
        return (r"o_{t,c} = \sum_{l \in S_t} \alpha_{t,l}\, v_{l,c}",
                r"u = [o_1, \dots, o_h]\, W_O")
    if stage == "lost":
        return (r"m_{t} = \sum_{s \le t,\ s \notin S_t} \alpha^{\mathrm{dense}}_{t,s}",
                r"\max_{t,c} \lvert u_{t,c} - u^{\mathrm{dense}}_{t,c} \rvert")
    if stage == "work":
        pairs_dense = sp.Eq(sp.Symbol(r"N_{\mathrm{dense}}"), _sum(_t, _t, 1, _T), evaluate=False)
        pairs_sparse = sp.Eq(sp.Symbol(r"N_{\mathrm{sparse}}"), _sum(sp.Min(_t, _k), _t, 1, _T), evaluate=False)
        return (expr_latex(pairs_dense) + r" = \frac{T (T + 1)}{2} \approx \frac{T^2}{2}",
                expr_latex(pairs_sparse) + r" = \frac{k (k + 1)}{2} + (T - k)\, k \approx T k")
    raise KeyError(stage)
