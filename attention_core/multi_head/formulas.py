r"""The formulas of the masking and multi-head steps, built with sympy.

Like :mod:`formulas`: each stage has a matrix formula and an element formula
(:func:`multi_head_formula`), and :func:`multi_head_entry_latex` writes one entry (row, col)
of a :class:`multi_head.MultiHeadTrace` with its numbers substituted.
No user text goes through sympy.

Sources: Vaswani et al. 2017, "Attention Is All You Need", eq. 1 and
sec. 3.2.2 (MultiHead = Concat(head_1, ..., head_h) W^O); sec. 3.2.3 (masking
to -inf); seed 001 (001_9275b51964da46b3.txt) for
softmax(Q Kᵀ / √d_k + Mask) V with Mask_ij = 0 if j <= i, -inf otherwise, and
the multi-head formulas with d_h = d_model / h.

Index legend: i query row, j key row or output column, l the summed index,
r the head (1..h), c a column inside a head (1..d_head), h = num_heads.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp
import torch

from attention_core.errors import N_, Message
from attention_core.latex import Translate, expr_latex, latex_text, matrix_symbol, number_expr, product, translate_cases
from attention_core.masking import formulas as masking_formulas
from attention_core.multi_head.heads import MultiHeadTrace, head_columns
from attention_core.self_attention import formulas as self_attention_formulas

#: The stages :func:`multi_head_formula` and :func:`multi_head_entry_latex` write (the masking & heads pages
#: use them for their multi-head stages; the pages' stages are declared with the pages).
FORMULA_STAGES = ("masked_scores", "split", "head", "concat", "output")

_i, _j, _l, _r, _c = sp.symbols("i j l r c", integer=True, positive=True)
_h = sp.Symbol("h", integer=True, positive=True)
_d_head = sp.Symbol(r"d_{head}", integer=True, positive=True)
_d_out = sp.Symbol(r"d_{out}", integer=True, positive=True)
_n = sp.Symbol("n", integer=True, positive=True)
_T, _D = sp.Symbol("T"), sp.Symbol("D")
_M, _x = sp.IndexedBase("M"), sp.IndexedBase("x")
_TOP = sp.Symbol(r"\top")
_softmax = sp.Function(r"\operatorname{softmax}")
_concat = sp.Function(r"\operatorname{Concat}")


def _head(name: str, r=_r) -> sp.Symbol:
    return matrix_symbol(f"{name}_{{{sp.latex(r)}}}")


_a, _a_masked, _q, _k, _v = (sp.IndexedBase(n) for n in ("a", r"a'", "q", "k", "v"))
_c_base, _o, _w_o, _b_o = (sp.IndexedBase(n) for n in ("c", "o", "W^{O}", "b^{O}"))


def _column(r=_r, c=_c) -> sp.Expr:
    """The column (r - 1) d_head + c of Q that is column c of head r, kept in that order."""
    return sp.Add(sp.Mul(sp.Add(r, -1, evaluate=False), _d_head, evaluate=False), c, evaluate=False)


def _per_head(base: str, r=_r) -> sp.IndexedBase:
    return sp.IndexedBase(f"{base}^{{({sp.latex(r)})}}")


def _matrix_formula(stage: str) -> sp.Expr:
    scaled = sp.Mul(matrix_symbol("Q"), sp.Pow(matrix_symbol("K"), _TOP, evaluate=False), 1 / sp.sqrt(sp.Symbol("d_k")))
    if stage == "masked_scores":
        return sp.Eq(matrix_symbol("A'"), sp.Add(scaled, matrix_symbol("M"), evaluate=False), evaluate=False)
    if stage == "split":
        return sp.Eq(_head("Q"), sp.Symbol(r"Q_{:,\ (r-1)\,d_{head}+1\,:\,r\,d_{head}}"), evaluate=False)
    if stage == "head":
        inner = sp.Add(
            sp.Mul(_head("Q"), sp.Pow(_head("K"), _TOP, evaluate=False), 1 / sp.sqrt(_d_head)),
            matrix_symbol("M"), evaluate=False,
        )
        return sp.Eq(_head(r"\mathrm{head}"), sp.Mul(_softmax(inner), _head("V")), evaluate=False)
    if stage == "concat":
        heads = (_head(r"\mathrm{head}", 1), sp.Symbol(r"\dots"), _head(r"\mathrm{head}", _h))
        return sp.Eq(matrix_symbol("C"), _concat(*heads), evaluate=False)
    if stage == "output":
        return sp.Eq(matrix_symbol("O"), sp.Add(sp.Mul(matrix_symbol("C"), matrix_symbol("W_O")), matrix_symbol("b_O"), evaluate=False), evaluate=False)
    raise KeyError(stage)


def _element_formula(stage: str, i=_i, j=_j, r=_r) -> sp.Expr:
    """The element form of a stage, for symbolic or given 1-based (i, j) and head r."""

    def prod(a, b):
        return sp.Mul(a, b, evaluate=False)

    if stage == "masked_scores":
        # Seed 001's causal mask: M_ij = 0 for j <= i, -inf for j > i.
        return sp.Eq(_a_masked[i, j], sp.Piecewise((_a[i, j], sp.Le(_j, _i)), (-sp.oo, True)), evaluate=False)
    if stage == "split":
        return sp.Eq(_per_head("q", r)[i, _c], _q[i, _column(r)], evaluate=False)
    if stage == "head":
        alpha, v, z = _per_head(r"\alpha", r), _per_head("v", r), _per_head("z", r)
        return sp.Eq(z[i, _c], sp.Sum(prod(alpha[i, _l], v[_l, _c]), (_l, 1, _n)), evaluate=False)
    if stage == "concat":
        return sp.Eq(_c_base[i, _column(r)], _per_head("z", r)[i, _c], evaluate=False)
    if stage == "output":
        return sp.Eq(_o[i, j], sp.Add(sp.Sum(prod(_c_base[i, _l], _w_o[_l, j]), (_l, 1, _d_out)),
                                      _b_o[j], evaluate=False), evaluate=False)
    raise KeyError(stage)


@lru_cache(maxsize=None)
def multi_head_formula(stage: str) -> tuple[str, str]:
    """The (matrix form, element form) of a stage, as LaTeX.

    Raises:
        KeyError: for a stage not in :data:`FORMULA_STAGES`.
    """
    return expr_latex(_matrix_formula(stage)), expr_latex(_element_formula(stage))


def mask_latex(mask: torch.Tensor) -> str:
    r"""The additive mask M of a 2-d bool mask (True = may attend) as a LaTeX matrix of 0 and −∞."""
    if mask.dim() != 2:
        raise ValueError(f"mask_latex needs a 2-d mask, got shape {tuple(mask.shape)}")
    rows = [[sp.Integer(0) if allowed else -sp.oo for allowed in row] for row in mask.tolist()]
    return "M = " + sp.latex(sp.Matrix(rows))


def multi_head_entry_latex(trace: MultiHeadTrace, stage: str, row: int, col: int, head: int = 0) -> str:
    """The element formula of one entry with its numbers substituted, and the result.

    Indices are shown 1-based, as in the seed articles.

    Args:
        trace: an unbatched trace (inputs (T, d)); for a batch, pass one example's inputs.
        stage: a key of :data:`FORMULA_STAGES`.
        row: the query row i (0-based).
        col: for ``masked_scores`` the key j; for ``split``, ``head`` the column
            c inside the head; for ``concat`` and ``output`` the column j.
        head: the head r (0-based) for ``masked_scores``, ``split`` and ``head``.

    Raises:
        ValueError: for a batched trace. KeyError: unknown stage.
        IndexError: row, col or head out of range.
    """
    if trace.x_query.dim() != 2:
        raise ValueError("multi_head_entry_latex needs an unbatched trace (inputs of shape (T, d))")
    if not 0 <= head < trace.num_heads:
        raise IndexError(f"head {head} outside 0..{trace.num_heads - 1}")
    att = trace.heads[head]
    matrix = {
        "masked_scores": att.masked_scores, "split": trace.query_heads[head],
        "head": att.output, "concat": trace.concat, "output": trace.output,
    }[stage]
    if not (0 <= row < matrix.shape[0] and 0 <= col < matrix.shape[1]):
        raise IndexError(f"entry ({row}, {col}) is outside {tuple(matrix.shape)}")
    value = float(matrix[row, col])
    i, j, r = row + 1, col + 1, head + 1

    if stage == "masked_scores":
        allowed = att.attn_mask is None or bool(att.attn_mask[row, col])
        general = sp.Eq(_a_masked[i, j], _a[i, j], evaluate=False) if allowed else _a_masked[i, j]
        numbers = None
    elif stage == "split":
        general = sp.Eq(_per_head("q", r)[i, j], _q[i, head * trace.head_dim + j], evaluate=False)
        numbers = None
    elif stage == "head":
        general = _element_formula(stage, i, r=r).subs(_c, j)
        terms = [sp.Mul(number_expr(a), number_expr(b), evaluate=False)
                 for a, b in zip(att.dropped_weights[row].tolist(), att.value[:, col].tolist())]
        numbers = sp.latex(sp.Add(*terms, evaluate=False), order="none", mul_symbol="dot")
    elif stage == "concat":
        r_of = next(k for k, cols in enumerate(head_columns(trace.concat.shape[-1], trace.num_heads)) if col in cols)
        c = col - r_of * trace.head_dim + 1
        general = sp.Eq(_c_base[i, j], _per_head("z", r_of + 1)[i, c], evaluate=False)
        numbers = None
    elif stage == "output":
        general = _element_formula(stage, i, j)
        if trace.w_out is None:
            general, numbers = sp.Eq(_o[i, j], _c_base[i, j], evaluate=False), None
        else:
            terms = [sp.Mul(number_expr(a), number_expr(b), evaluate=False)
                     for a, b in zip(trace.concat[row].tolist(), trace.w_out[:, col].tolist())]
            if trace.b_out is not None:
                terms.append(number_expr(float(trace.b_out[col])))
            numbers = sp.latex(sp.Add(*terms, evaluate=False), order="none", mul_symbol="dot")
    else:
        raise KeyError(stage)
    parts = [expr_latex(general)]
    if numbers is not None:
        parts.append(numbers)
    parts.append(sp.latex(number_expr(value)) if value in (float("inf"), float("-inf")) else sp.latex(sp.Float(value, 4)))
    return " = ".join(parts)


# ---------------------------------------------------------------- the multi-head and cross-attention pages

#: The words inside the pages' general formulas (``\\text{...}``), translated by :func:`page_formula`'s ``tr``.
_WORDS: dict[str, str] = {
    "decoder_ids": N_("decoder ids"),
    "encoder_ids": N_("encoder ids"),
    "not": N_("not"),
    "per_head": N_("per head, then"),
}


@lru_cache(maxsize=None)
def page_formula(page: str, stage: str, tr: Translate = Message) -> tuple[str, ...]:
    """The matrix form and the element form (and sometimes a remark) of a stage of a multi-head page, as LaTeX.

    Args:
        page: "multi_head" or "cross_attention".
        stage: a key of that page's stage dict.
        tr: puts the words of the formulas in the interface language (default: English).

    Raises:
        KeyError: for an unknown stage.
    """
    words = tuple((key, str(tr(text))) for key, text in _WORDS.items())
    return tuple(translate_cases(line, tr) for line in _page_formula(page, stage, words))


@lru_cache(maxsize=None)
def _page_formula(page: str, stage: str, words: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """:func:`page_formula` with its words already translated (cached per page, stage and language)."""
    translated = dict(words)

    def w(key: str, before: str = "", after: str = "") -> str:
        return latex_text(before + translated[key] + after)

    # per head r, scaled by sqrt(d_head)
    q_r, k_r = matrix_symbol("Q_{r}"), matrix_symbol("K_{r}")
    head_scaled = sp.Mul(q_r, sp.Pow(k_r, _TOP, evaluate=False), 1 / sp.sqrt(_d_head))
    a_r, a_masked_r, alpha_r = _per_head("a"), _per_head("a'"), _per_head(r"\alpha")
    upper = _n if page == "cross_attention" else _T
    if stage == "head" and page == "cross_attention":  # no mask: every query may look at every encoder token
        matrix = sp.Eq(matrix_symbol(r"\mathrm{head}_{r}"), sp.Mul(_softmax(head_scaled), matrix_symbol("V_{r}")), evaluate=False)
        return expr_latex(matrix), multi_head_formula(stage)[1]
    if stage in ("head", "concat", "output", "split"):
        return multi_head_formula(stage)
    if stage == "inputs":
        if page == "multi_head":
            return self_attention_formulas.self_attention_formula("inputs")
        return (expr_latex(sp.Eq(matrix_symbol(r"X_{dec}"), sp.Symbol(r"\mathrm{Embedding}(" + w("decoder_ids")
                                                         + r") \in \mathbb{R}^{m \times D}"), evaluate=False)),
                expr_latex(sp.Eq(matrix_symbol(r"X_{enc}"), sp.Symbol(r"\mathrm{Embedding}(" + w("encoder_ids")
                                                         + r") \in \mathbb{R}^{n \times D}"), evaluate=False)))
    if stage in ("projections", "query", "key", "value"):
        rows = {"query": "dec", "key": "enc", "value": "enc"}
        lines = []
        for name in (("query", "key", "value") if stage == "projections" else (stage,)):
            letter = name[0]
            x_name = "X" if page == "multi_head" else f"X_{{{rows[name]}}}"
            lines.append(expr_latex(sp.Eq(matrix_symbol(letter.upper()), sp.Mul(matrix_symbol(x_name), matrix_symbol(f"W_{letter}")), evaluate=False)))
        x_base = _x if page == "multi_head" else sp.IndexedBase(f"x^{{{rows.get(stage, 'dec')}}}")
        letter = "q" if stage == "projections" else stage[0]
        element = sp.Eq(sp.IndexedBase(letter)[_i, _j],
                        sp.Sum(product(x_base[_i, _l], sp.IndexedBase(f"W^{{{letter}}}")[_l, _j]), (_l, 1, _D)), evaluate=False)
        return (*lines, expr_latex(element))
    if stage == "scaled_scores":
        matrix = sp.Eq(matrix_symbol("A_{r}"), head_scaled, evaluate=False)
        element = sp.Eq(a_r[_i, _j], sp.Sum(product(_per_head("q")[_i, _c], _per_head("k")[_j, _c]), (_c, 1, _d_head))
                        / sp.sqrt(_d_head), evaluate=False)
        note = r"d_{head} = d_{out} / h \quad (" + w("not", after=" ") + r" \sqrt{d_{out}})"
        return expr_latex(matrix), expr_latex(element), note
    if stage == "masked_scores":
        matrix = sp.Eq(matrix_symbol("A'_{r}"), sp.Add(head_scaled, matrix_symbol("M"), evaluate=False), evaluate=False)
        element = sp.Eq(a_masked_r[_i, _j], sp.Piecewise((a_r[_i, _j], sp.Eq(_M[_i, _j], 0)), (-sp.oo, True)), evaluate=False)
        return expr_latex(matrix), expr_latex(element)
    if stage == "weights":
        inner = sp.Add(head_scaled, matrix_symbol("M"), evaluate=False) if page == "multi_head" else head_scaled
        matrix = sp.Eq(matrix_symbol(r"\mathcal{A}_{r}"), _softmax(inner), evaluate=False)
        a = a_masked_r if page == "multi_head" else a_r
        return expr_latex(matrix), expr_latex(masking_formulas.masked_weight_element(upper=upper, alpha=alpha_r, a=a))
    raise KeyError(stage)


def header_latex(page: str, tr: Translate = Message) -> str:
    """The formula at the top of the multi-head or cross-attention page, as LaTeX.

    Built with sympy from the same symbols as the pages' stages (Vaswani et al. 2017, sec. 3.2.2; seed 001 for
    multi-head; seed 003 for cross-attention). ``tr`` puts the formula's words in the interface language.

    Raises:
        KeyError: for another page.
    """
    return translate_cases(_header_latex(page, tuple((key, str(tr(text))) for key, text in _WORDS.items())), tr)


@lru_cache(maxsize=None)
def _header_latex(page: str, words: tuple[tuple[str, str], ...]) -> str:
    translated = dict(words)
    if page == "multi_head":
        head = multi_head_formula("head")[0]
        heads = (sp.Symbol(r"\mathrm{head}_{1}"), sp.Symbol(r"\dots"), sp.Symbol(r"\mathrm{head}_{h}"))
        multi_head = sp.Eq(sp.Symbol(r"\operatorname{MultiHead}"),
                          sp.Add(sp.Mul(sp.Function(r"\operatorname{Concat}")(*heads), matrix_symbol("W_O")), matrix_symbol("b_O"),
                                 evaluate=False), evaluate=False)
        return head + r",\qquad " + expr_latex(multi_head)
    if page == "cross_attention":
        x_dec, x_enc = matrix_symbol("X_{dec}"), matrix_symbol("X_{enc}")
        q, k = sp.Mul(x_dec, matrix_symbol("W_q")), sp.Mul(x_enc, matrix_symbol("W_k"))
        scores = sp.Mul(q, sp.Pow(k, _TOP, evaluate=False), 1 / sp.sqrt(_d_head), evaluate=False)
        cross = sp.Eq(sp.Function(r"\operatorname{CrossAttention}")(x_dec, x_enc),
                      sp.Mul(_softmax(scores), x_enc, matrix_symbol("W_v")), evaluate=False)
        concat = sp.Add(sp.Mul(sp.Symbol(r"\operatorname{Concat}"), matrix_symbol("W_O"), evaluate=False), matrix_symbol("b_O"),
                        evaluate=False)
        return expr_latex(cross) + r"\quad" + latex_text(translated["per_head"] + " ") + " " + expr_latex(concat)
    raise KeyError(page)
