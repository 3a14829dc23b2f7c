r"""The general formulas of the *Attention sinks* page, built with sympy (one per stage), indices 1-based.

Shape legend: T tokens, d = d_k; s (T, T) the scaled scores q_i · k_j / √d (−∞ above the diagonal), w (T, T) the
weights, v (T, d), o (T, d); b the sink logit (one per head in gpt-oss).

Sources: softmax attention, Vaswani et al. 2017, eq. 1; the attention sink, Xiao et al. 2024 §3.1; the learned sink,
OpenAI's gpt-oss model card (2025) and transformers' ``modeling_gpt_oss.eager_attention_forward``.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from attention_core.errors import N_
from attention_core.latex import Translate, expr_latex, latex_text, product

_i, _j, _l, _c = sp.symbols("i j l c", integer=True, positive=True)
_b = sp.Symbol("b", real=True)


@lru_cache(maxsize=None)
def sinks_formula(stage: str, tr: Translate) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines (words in ``tr``'s language).

    Raises:
        KeyError: an unknown stage.
    """
    s, w, v, o = (sp.IndexedBase(n) for n in ("s", "w", "v", "o"))
    if stage == "weights":
        weight = sp.exp(s[_i, _j]) / sp.Sum(sp.exp(s[_i, _l]), (_l, 1, _i))
        return (expr_latex(sp.Eq(w[_i, _j], weight, evaluate=False)),
                expr_latex(sp.Eq(sp.Sum(w[_i, _j], (_j, 1, _i)), 1, evaluate=False)) + r", \quad w_{ij} > 0")
    if stage == "nothing":
        mean = sp.Sum(v[_j, _c], (_j, 1, _i)) / _i
        return (expr_latex(sp.Eq(s[_i, _j], 0, evaluate=False)) + r" \;\Rightarrow\; " + expr_latex(sp.Eq(w[_i, _j], 1 / _i, evaluate=False)),
                expr_latex(sp.Eq(o[_i, _c], mean, evaluate=False)) + r" \neq 0")
    if stage == "sink_weights":
        denominator = sp.Add(sp.Sum(sp.exp(s[_i, _l]), (_l, 1, _i)), sp.exp(_b), evaluate=False)
        share = sp.Symbol(r"\mathrm{sink}_i")
        return (expr_latex(sp.Eq(w[_i, _j], sp.exp(s[_i, _j]) / denominator, evaluate=False)),
                expr_latex(sp.Eq(share, sp.exp(_b) / denominator, evaluate=False)),
                r"\sum_{j \le i} w_{ij} = 1 - \mathrm{sink}_i < 1")
    if stage == "sink_output":
        return (expr_latex(sp.Eq(o[_i, _c], sp.Sum(product(w[_i, _j], v[_j, _c]), (_j, 1, _i)), evaluate=False)),
                latex_text(str(tr(N_("the sink has no value: its share adds nothing to the output")))))
    raise KeyError(stage)
