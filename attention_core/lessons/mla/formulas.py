r"""The general formulas of the *Multi-head latent attention* page, built with sympy (one per stage).

Each is the element form of what :mod:`attention_core.modern.mla` computes, with the matrix form beside it.
Indices 1-based as on the page; head r's columns of W_UK, W_UV, W_UQ are r d_h + 1 … (r + 1) d_h (written
W_{UK}^{(r)}), of W_QR r d_R + 1 … (r + 1) d_R.

Shape legend: T tokens, D = d_model, h heads, d_h = head_dim, d_R the RoPE part, d_c, d_c' the latents.

Sources: DeepSeek-V2 (DeepSeek-AI 2024), sec. 2.1.2 (eqs. 9-13) and 2.1.3 (eqs. 14-19); Su et al. 2021 (RoPE).
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from attention_core.errors import N_
from attention_core.latex import Translate, expr_latex, latex_text, product, translate_cases, words_and_math

_i, _j, _l, _a, _b, _c = sp.symbols("i j l a b c", integer=True, positive=True)
_d_model, _d_c, _d_cq, _d_h, _d_r, _h = sp.symbols("D d_c d_c' d_h d_R h", integer=True, positive=True)


def _sum(term: sp.Expr, index: sp.Symbol, top: sp.Expr) -> sp.Expr:
    return sp.Sum(term, (index, 1, top))


@lru_cache(maxsize=None)
def mla_formula(stage: str, tr: Translate) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines (words in ``tr``'s language).

    Raises:
        KeyError: an unknown stage.
    """
    x, c, cq = sp.IndexedBase("x"), sp.IndexedBase("c^{KV}"), sp.IndexedBase("c^{Q}")
    if stage == "latents":
        w_dkv, w_dq = sp.IndexedBase("W^{DKV}"), sp.IndexedBase("W^{DQ}")
        return (expr_latex(sp.Eq(c[_i, _j], _sum(product(x[_i, _l], w_dkv[_l, _j]), _l, _d_model), evaluate=False)),
                expr_latex(sp.Eq(cq[_i, _j], _sum(product(x[_i, _l], w_dq[_l, _j]), _l, _d_model), evaluate=False)),
                r"c^{KV} = X W_{DKV} \in \mathbb{R}^{T \times d_c} \quad \text{(eq. 9)}",
                r"c^{Q} = X W_{DQ} \in \mathbb{R}^{T \times d_c'} \quad \text{(eq. 12)}")
    if stage == "up":
        k, w_uk = sp.IndexedBase("k^{C,(r)}"), sp.IndexedBase("W^{UK,(r)}")
        return (expr_latex(sp.Eq(k[_i, _j], _sum(product(c[_i, _a], w_uk[_a, _j]), _a, _d_c), evaluate=False)),
                r"K^{C}_r = c^{KV} W_{UK}^{(r)}, \quad V_r = c^{KV} W_{UV}^{(r)} \quad \text{(eqs. 10, 11)}",
                r"Q^{C}_r = c^{Q} W_{UQ}^{(r)} \in \mathbb{R}^{T \times d_h} \quad \text{(eq. 13)}")
    if stage == "rope":
        k, kr = sp.IndexedBase("k^{R}"), sp.IndexedBase(r"\tilde{k}^{R}")
        m, theta = sp.Symbol("m_i"), sp.Symbol(r"\theta_l")
        half = sp.Symbol("l'")
        first = sp.Eq(k[_i, _l], sp.Add(product(kr[_i, _l], sp.cos(m * theta)),
                                         -product(kr[_i, half], sp.sin(m * theta)), evaluate=False), evaluate=False)
        second = sp.Eq(k[_i, half], sp.Add(product(kr[_i, half], sp.cos(m * theta)),
                                           product(kr[_i, _l], sp.sin(m * theta)), evaluate=False), evaluate=False)
        return (expr_latex(first) + r", \quad " + expr_latex(second),
                r"l = 1 \dots d_R/2, \quad l' = l + d_R/2, \quad \theta_l = 10000^{-2(l-1)/d_R}, \quad m_i = i - 1",
                r"\tilde{k}^{R} = X W_{KR}, \quad k^{R} = \mathrm{RoPE}(\tilde{k}^{R}) \in \mathbb{R}^{T \times d_R}"
                r"\quad \text{(eq. 15)}",
                r"q^{R}_r = \mathrm{RoPE}(c^{Q} W_{QR}^{(r)}) \quad \text{(eq. 14)}")
    if stage == "scores":
        q, k, qr, kr = (sp.IndexedBase(n) for n in ("q^{C}", "k^{C}", "q^{R}", "k^{R}"))
        content = _sum(product(q[_i, _c], k[_j, _c]), _c, _d_h)
        rope = _sum(product(qr[_i, _c], kr[_j, _c]), _c, _d_r)
        score = sp.Piecewise((sp.Add(content, rope, evaluate=False) / sp.sqrt(sp.Add(_d_h, _d_r, evaluate=False)), _j <= _i),
                             (-sp.oo, True))
        return (translate_cases(expr_latex(sp.Eq(sp.IndexedBase("a^{(r)}")[_i, _j], score, evaluate=False)), tr),
                r"q_{r,i} = [q^{C}_{r,i};\ q^{R}_{r,i}], \quad k_{r,j} = [k^{C}_{r,j};\ k^{R}_{j}] \quad "
                r"\text{(eqs. 16, 17)}")
    if stage == "weights":
        a, alpha, v = sp.IndexedBase("a^{(r)}"), sp.IndexedBase(r"\alpha^{(r)}"), sp.IndexedBase("v^{(r)}")
        return (expr_latex(sp.Eq(alpha[_i, _j], sp.exp(a[_i, _j]) / _sum(sp.exp(a[_i, _l]), _l, _i), evaluate=False)),
                expr_latex(sp.Eq(sp.IndexedBase("o^{(r)}")[_i, _c], _sum(product(alpha[_i, _j], v[_j, _c]), _j, _i), evaluate=False))
                + r" \quad \text{(eq. 18)}")
    if stage == "output":
        u, cat, w_o = sp.IndexedBase("u"), sp.IndexedBase("o"), sp.IndexedBase("W^{O}")
        return (expr_latex(sp.Eq(u[_i, _j], _sum(product(cat[_i, _l], w_o[_l, _j]), _l, product(_h, _d_h)), evaluate=False)),
                r"u = [o^{(1)}, \dots, o^{(h)}]\, W_O \quad \text{(eq. 19)}")
    if stage == "cache":
        mha, gqa, mqa, mla = (sp.Symbol(rf"N_{{\mathrm{{{n}}}}}") for n in ("MHA", "GQA", "MQA", "MLA"))
        g = sp.Symbol("g")
        return (expr_latex(sp.Eq(mha, product(2, _h, _d_h), evaluate=False)) + r", \quad " + expr_latex(sp.Eq(gqa, product(2, g, _d_h), evaluate=False))
                + r", \quad " + expr_latex(sp.Eq(mqa, product(2, _d_h), evaluate=False)),
                expr_latex(sp.Eq(mla, sp.Add(_d_c, _d_r, evaluate=False), evaluate=False)) + r" \quad " + latex_text(str(tr(N_("numbers per token and layer")))))
    if stage == "absorption":
        qt, q, w_uk = sp.IndexedBase(r"\tilde{q}^{(r)}"), sp.IndexedBase("q^{C}"), sp.IndexedBase("W^{UK,(r)}")
        return (expr_latex(sp.Eq(qt[_i, _a], _sum(product(w_uk[_a, _b], q[_i, _b]), _b, _d_h), evaluate=False)),
                r"q^{C}_i \cdot k^{C}_j = q^{C}_i \cdot (W_{UK}^{\top} c^{KV}_j) = (W_{UK}\, q^{C}_i) \cdot c^{KV}_j"
                r" = \tilde{q}_i \cdot c^{KV}_j")
    if stage == "decoupling":
        return (r"(R_i\, q^{C}_i) \cdot (R_j\, W_{UK}^{\top} c^{KV}_j) = q^{C\top}_i\, R_{j-i}\, W_{UK}^{\top}"
                r" c^{KV}_j \ne (W_{UK} R_i\, q^{C}_i) \cdot c^{KV}_j",
                words_and_math(str(tr(N_("The matrix between q and c depends on {gap}: there is no fixed matrix to "
                                         "absorb."), gap="{gap}")), gap=r"\ j - i"))
    raise KeyError(stage)
