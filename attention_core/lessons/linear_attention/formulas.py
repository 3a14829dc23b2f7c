r"""The general formulas of the *Linear attention and the delta rule* page, built with sympy (one per stage).

Each is the element form of what :mod:`attention_core.modern.linear_attention` computes, with the matrix form beside
it where it is shorter. Conventions as there: the state S is (d_k × d_v), o_t = S_tᵀ q_t (transformers' Qwen3-Next),
indices 1-based as on the page (a row of S is a component of the key, a column one of the value).

Shape legend: T tokens, d_k (q and k), d_v (v); S^{(t)} (d_k, d_v), z^{(t)} (d_k,).

Sources: Katharopoulos et al. 2020, sec. 3.2 (eq. 7) and 3.3; Yang et al. 2024 (DeltaNet); Yang, Kautz &
Hatamizadeh 2025 (Gated DeltaNet).
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from attention_core.latex import Translate, translate_cases

_i, _j, _l, _a, _b, _c, _t = sp.symbols("i j l a b c t", integer=True, positive=True)
_d_k, _d_v = sp.symbols("d_k d_v", integer=True, positive=True)
_phi = sp.Function(r"\phi")
_beta, _alpha = sp.symbols(r"\beta_t \alpha_t", positive=True)


def _state(name: str) -> sp.IndexedBase:
    return sp.IndexedBase(name)


def _ordered(expr: sp.Basic) -> str:
    """LaTeX with the terms in the order written (the update after the old state), not sympy's."""
    return sp.latex(expr, order="none")


@lru_cache(maxsize=None)
def linear_formula(stage: str, tr: Translate) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines (words in ``tr``'s language).

    Raises:
        KeyError: an unknown stage.
    """
    q, k, v, o, big_a = (sp.IndexedBase(n) for n in ("q", "k", "v", "o", "A"))
    now, before = _state("S^{(t)}"), _state("S^{(t-1)}")
    if stage == "features":
        x = sp.Symbol("x", real=True)
        return (translate_cases(sp.latex(sp.Eq(_phi(x), sp.Piecewise((x + 1, x > 0), (sp.exp(x), True)), evaluate=False)), tr),
                r"\phi(x) = \operatorname{elu}(x) + 1 > 0, \quad \phi(Q),\ \phi(K) \in \mathbb{R}^{T \times d_k}")
    if stage == "parallel":
        pair = sp.Symbol(r"\phi(q_i)^{\top} \phi(k_j)")
        pair_l = sp.Symbol(r"\phi(q_i)^{\top} \phi(k_l)")
        weight = sp.Piecewise((pair / sp.Sum(pair_l, (_l, 1, _i)), _j <= _i), (0, True))
        return (translate_cases(sp.latex(sp.Eq(big_a[_i, _j], weight, evaluate=False)), tr),
                sp.latex(sp.Eq(o[_i, _c], sp.Sum(big_a[_i, _j] * v[_j, _c], (_j, 1, _i)), evaluate=False)))
    if stage == "recurrent":
        z_now, z_before = _state("z^{(t)}"), _state("z^{(t-1)}")
        return (_ordered(sp.Eq(now[_a, _b], sp.Add(before[_a, _b], _phi(k[_t, _a]) * v[_t, _b], evaluate=False), evaluate=False))
                + r", \quad " + _ordered(sp.Eq(z_now[_a], sp.Add(z_before[_a], _phi(k[_t, _a]), evaluate=False), evaluate=False)),
                r"S^{(t)} = S^{(t-1)} + \phi(k_t)\, v_t^{\top}, \quad z^{(t)} = z^{(t-1)} + \phi(k_t), \quad "
                r"o_t = \frac{S^{(t)\top} \phi(q_t)}{z^{(t)\top} \phi(q_t)}")
    if stage == "memory":
        kv, lin, delta = sp.Symbol(r"N_{\mathrm{KV}}(t)"), sp.Symbol(r"N_{S,z}"), sp.Symbol(r"N_{S}")
        return (sp.latex(sp.Eq(kv, _t * (_d_k + _d_v), evaluate=False)),
                sp.latex(sp.Eq(lin, _d_k * _d_v + _d_k, evaluate=False)) + r", \quad " + sp.latex(sp.Eq(delta, _d_k * _d_v, evaluate=False)))
    if stage in ("delta", "gated"):
        decay = _alpha if stage == "gated" else sp.Integer(1)
        prediction = decay * sp.Sum(before[_c, _b] * k[_t, _c], (_c, 1, _d_k))
        error = sp.Add(v[_t, _b], -prediction, evaluate=False)
        element = sp.Eq(now[_a, _b], sp.Add(decay * before[_a, _b], _beta * k[_t, _a] * error, evaluate=False), evaluate=False)
        lines = [_ordered(element),
                 r"k_t \leftarrow \frac{k_t}{\sqrt{\lVert k_t \rVert^2 + \epsilon}}, \quad "
                 r"q_t \leftarrow \frac{q_t}{\sqrt{d_k}\, \sqrt{\lVert q_t \rVert^2 + \epsilon}}, \quad "
                 r"o_t = S^{(t)\top} q_t"]
        if stage == "gated":
            lines.append(r"S^{(t)} = \alpha_t S^{(t-1)} + \beta_t\, k_t \left(v_t - \alpha_t S^{(t-1)\top} k_t"
                         r"\right)^{\top}, \quad g_t = \log \alpha_t \le 0")
        else:
            lines.append(r"S^{(t)} = S^{(t-1)} + \beta_t\, k_t \left(v_t - S^{(t-1)\top} k_t\right)^{\top}")
        return tuple(lines)
    raise KeyError(stage)
