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

import math
from functools import lru_cache
from typing import Optional, Sequence

import sympy as sp

from attention_core.errors import N_, Message
from attention_core.latex import Translate, aligned, factor, index, latex_text, number, terms_lines, translate_cases
from attention_core.multihead import formulas as formulas_multihead
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
    "decoder_ids": N_("decoder ids"),
    "encoder_ids": N_("encoder ids"),
    "not": N_("not"),
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


def _nc(name: str) -> sp.Symbol:
    return sp.Symbol(name, commutative=False)


def _prod(*factors) -> sp.Expr:
    return sp.Mul(*factors, evaluate=False)


def _per_head(base: str, r=_r) -> sp.IndexedBase:
    return sp.IndexedBase(f"{base}^{{({sp.latex(r)})}}")


def _masked_weight_element(i=_i, j=_j, upper=_T, alpha=_alpha, a=_a_masked) -> sp.Expr:
    # e^{-inf} = 0: blocked keys drop out of the sum
    return sp.Eq(alpha[i, j], sp.exp(a[i, j]) / sp.Sum(sp.exp(a[i, _l]), (_l, 1, upper)))


def _latex(expr: sp.Expr) -> str:
    return sp.latex(expr, order="none")


def masking_formula(page: str, stage: str, tr: Translate = Message) -> tuple[str, ...]:
    """The matrix form and the element form (and sometimes a remark) of a stage, as LaTeX.

    Args:
        page: the page's key: "causal", "dropout", "multi_head" or "cross_attention".
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

    kt = sp.Pow(_nc("K"), _TOP, evaluate=False)
    scaled = sp.Mul(_nc("Q"), kt, 1 / sp.sqrt(_d_k))
    a_prime, weights, tilde = _nc("A'"), _nc(r"\mathcal{A}"), _nc(r"\tilde{\mathcal{A}}")

    if page in ("causal", "dropout"):
        if stage == "scaled_scores":
            return formulas.self_attention_formula("scaled_scores")
        if stage == "mask":
            matrix = sp.Symbol(w("allowed") + " = " + w("causal") + r" \wedge " + w("not_padding") + r",\ "
                               + w("then_clicks"))
            element = sp.Symbol(r"M_{i,j} = \begin{cases} 0 & " + w("if_allowed") + r" \\ -\infty & "
                                + w("if_blocked") + r" \end{cases}")
            causal = sp.Eq(sp.Symbol(w("causal_colon", after=" ") + " M_{i,j}"),
                           sp.Piecewise((0, sp.Le(_j, _i)), (-sp.oo, True)))
            return _latex(matrix), _latex(element), _latex(causal)
        if stage == "masked_scores":
            matrix = sp.Eq(a_prime, sp.Add(scaled, _nc("M"), evaluate=False))
            element = sp.Eq(_a_masked[_i, _j], sp.Piecewise((_a[_i, _j], sp.Eq(_M[_i, _j], 0)), (-sp.oo, True)))
            return _latex(matrix), _latex(element)
        if stage == "weights":
            matrix = sp.Eq(weights, _softmax(sp.Add(scaled, _nc("M"), evaluate=False)))
            return _latex(matrix), _latex(_masked_weight_element()), r"e^{-\infty} = 0:\ " + w("drop_out")
        if stage == "other_route":
            matrix = sp.Eq(_nc(r"\hat{\mathcal{A}}"), _softmax(scaled))
            element = sp.Eq(_alpha[_i, _j], _prod(_alpha_hat[_i, _j], _m[_i, _j])
                            / sp.Sum(_prod(_alpha_hat[_i, _l], _m[_i, _l]), (_l, 1, _T)))
            remark = "m_{i,j} = 1 " + w("if_allowed", " ", ", ") + " 0 " + w("if_blocked", " ")
            return _latex(matrix), _latex(element), remark
        if stage == "dropout_mask":
            matrix = sp.Symbol(r"D_{i,j} \sim \operatorname{Bernoulli}(1 - p)")
            element = sp.Eq(_d[_i, _j], sp.Piecewise((1, sp.Symbol(w("kept", after=" ") + " 1 - p")),
                                                      (0, sp.Symbol(w("dropped", after=" ") + " p"))))
            return _latex(matrix), _latex(element)
        if stage == "dropped_weights":
            matrix = sp.Eq(tilde, sp.Mul(sp.Symbol(r"\mathcal{A} \odot D"), 1 / (1 - _p), evaluate=False))
            element = sp.Eq(_alpha_tilde[_i, _j], _prod(_alpha[_i, _j], _d[_i, _j]) / (1 - _p))
            sums = sp.Eq(sp.Sum(_alpha_tilde[_i, _j], (_j, 1, _T)),
                         _prod(1 / (1 - _p), sp.Sum(_prod(_alpha[_i, _j], _d[_i, _j]), (_j, 1, _T))))
            return _latex(matrix), _latex(element), _latex(sums)
        if stage == "output":
            if page == "dropout":
                return (_latex(sp.Eq(_nc("Z"), sp.Mul(tilde, _nc("V")))),
                        _latex(sp.Eq(_z[_i, _j], sp.Sum(_prod(_alpha_tilde[_i, _l], _v[_l, _j]), (_l, 1, _T)))))
            return (_latex(sp.Eq(_nc("Z"), sp.Mul(weights, _nc("V")))),
                    _latex(sp.Eq(_z[_i, _j], sp.Sum(_prod(_alpha[_i, _l], _v[_l, _j]), (_l, 1, _T)))))

    # the multi-head pages: per head r, scaled by sqrt(d_head)
    q_r, k_r = _nc("Q_{r}"), _nc("K_{r}")
    head_scaled = sp.Mul(q_r, sp.Pow(k_r, _TOP, evaluate=False), 1 / sp.sqrt(_d_head))
    a_r, a_masked_r, alpha_r = _per_head("a"), _per_head("a'"), _per_head(r"\alpha")
    upper = _n if page == "cross_attention" else _T
    if stage == "head" and page == "cross_attention":  # no mask: every query may look at every encoder token
        matrix = sp.Eq(_nc(r"\mathrm{head}_{r}"), sp.Mul(_softmax(head_scaled), _nc("V_{r}")))
        return _latex(matrix), formulas_multihead.multihead_formula(stage)[1]
    if stage in ("head", "concat", "output", "split"):
        return formulas_multihead.multihead_formula(stage)
    if stage == "inputs":
        if page == "multi_head":
            return formulas.self_attention_formula("inputs")
        return (_latex(sp.Eq(_nc(r"X_{dec}"), sp.Symbol(r"\mathrm{Embedding}(" + w("decoder_ids")
                                                         + r") \in \mathbb{R}^{m \times D}"))),
                _latex(sp.Eq(_nc(r"X_{enc}"), sp.Symbol(r"\mathrm{Embedding}(" + w("encoder_ids")
                                                         + r") \in \mathbb{R}^{n \times D}"))))
    if stage in ("projections", "query", "key", "value"):
        rows = {"query": "dec", "key": "enc", "value": "enc"}
        lines = []
        for name in (("query", "key", "value") if stage == "projections" else (stage,)):
            letter = name[0]
            x_name = "X" if page == "multi_head" else f"X_{{{rows[name]}}}"
            lines.append(_latex(sp.Eq(_nc(letter.upper()), sp.Mul(_nc(x_name), _nc(f"W_{letter}")))))
        x_base = _x if page == "multi_head" else sp.IndexedBase(f"x^{{{rows.get(stage, 'dec')}}}")
        letter = "q" if stage == "projections" else stage[0]
        element = sp.Eq(sp.IndexedBase(letter)[_i, _j],
                        sp.Sum(_prod(x_base[_i, _l], sp.IndexedBase(f"W^{{{letter}}}")[_l, _j]), (_l, 1, _D)))
        return (*lines, _latex(element))
    if stage == "scaled_scores":
        matrix = sp.Eq(_nc("A_{r}"), head_scaled)
        element = sp.Eq(a_r[_i, _j], sp.Sum(_prod(_per_head("q")[_i, _c], _per_head("k")[_j, _c]), (_c, 1, _d_head))
                        / sp.sqrt(_d_head))
        note = r"d_{head} = d_{out} / h \quad (" + w("not", after=" ") + r" \sqrt{d_{out}})"
        return _latex(matrix), _latex(element), note
    if stage == "masked_scores":
        matrix = sp.Eq(_nc("A'_{r}"), sp.Add(head_scaled, _nc("M"), evaluate=False))
        element = sp.Eq(a_masked_r[_i, _j], sp.Piecewise((a_r[_i, _j], sp.Eq(_M[_i, _j], 0)), (-sp.oo, True)))
        return _latex(matrix), _latex(element)
    if stage == "weights":
        inner = sp.Add(head_scaled, _nc("M"), evaluate=False) if page == "multi_head" else head_scaled
        matrix = sp.Eq(_nc(r"\mathcal{A}_{r}"), _softmax(inner))
        a = a_masked_r if page == "multi_head" else a_r
        return _latex(matrix), _latex(_masked_weight_element(upper=upper, alpha=alpha_r, a=a))
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, numbers in


def mask_entry_latex(row: int, col: int, allowed: bool, reasons: Sequence[str]) -> str:
    """M_ij = 0 (may attend) or −∞ (blocked), with the reasons (app text, never user text).

    Args:
        row, col: the query i and key j, 0-based.
        allowed: whether query i may attend to key j.
        reasons: short phrases in the interface language, e.g. ("key 4 is in the future",).
    """
    why = r",\ ".join(latex_text(reason) for reason in reasons)
    value = "0" if allowed else r"-\infty"
    return f"{index('M', row, col)} = {value}" + (f"\\qquad ({why})" if why else "")


def masked_score_entry_latex(row: int, col: int, scaled: float, allowed: bool, head: Optional[int] = None) -> str:
    """a'_ij = a_ij (allowed) or −∞ (blocked), with the number."""
    lhs, a = index("a'", row, col, head), index("a", row, col, head)
    if allowed:
        return f"{lhs} = {a} + 0 = {number(scaled)}"
    return f"{lhs} = {a} + (-\\infty) = {number(scaled)} - \\infty = -\\infty"


def _blocked_row(lhs: str, general: str, row: int, tr: Translate) -> str:
    why = latex_text(tr(N_("(every key of row {row} is blocked)"), row=row + 1))
    return aligned(lhs, [general, r"\frac{0}{0} \;\to\; 0 \quad " + why])


def _two_steps(sum_lhs: str, terms: Sequence[str], total: float,
               lhs: str, general: str, numerator: str, numerator_value: float, value: float) -> str:
    """The row's sum on its own lines (long rows break after 4 terms), then the entry divided by it."""
    return (
        "\\begin{aligned} " + sum_lhs + " &= " + terms_lines(terms)
        + " \\\\ &= " + number(total) + " \\\\[6pt] "
        + lhs + " &= " + general + " = \\frac{" + numerator + "}{" + number(total) + "} = \\frac{"
        + number(numerator_value) + "}{" + number(total) + "} = " + number(value) + " \\end{aligned}"
    )


def masked_weight_entry_latex(row: int, col: int, masked_row: Sequence[float], value: float,
                              head: Optional[int] = None, tr: Translate = Message) -> str:
    """α_ij = e^{a'_ij} / Σ_l e^{a'_il} with the row's numbers in; e^{−∞} terms written as 0.

    First the row's sum Σ_l e^{a'_il} (on lines of 4 terms), then the entry.
    A row whose every key is blocked has no allowed key to normalise over:
    the result is stated as 0 by convention (what we and PyTorch return).
    Scores above 80 would overflow e^x, so the row maximum m is subtracted
    first (the softmax is unchanged by it) and the formula says so.
    """
    lhs = index(r"\alpha", row, col, head)
    sup = f"^{{({head + 1})}}" if head is not None else ""
    a_ij, a_il = index("a'", row, col, head), f"a'{sup}_{{{row + 1},l}}"
    finite = [s for s in masked_row if not math.isinf(s)]
    if not finite:
        return _blocked_row(lhs, f"\\frac{{e^{{{a_ij}}}}}{{\\sum_l e^{{{a_il}}}}}", row, tr)
    top = max(finite)
    shift = top if top > 80 else 0.0
    minus = f" - {number(shift)}" if shift else ""
    terms = ["0" if math.isinf(s) else f"e^{{{number(s - shift)}}}" for s in masked_row]
    exps = [0.0 if math.isinf(s) else math.exp(s - shift) for s in masked_row]
    return _two_steps(f"\\textstyle\\sum_l e^{{{a_il}{minus}}}", terms, sum(exps), lhs,
                      f"\\frac{{e^{{{a_ij}{minus}}}}}{{\\sum_l e^{{{a_il}{minus}}}}}", terms[col], exps[col], value)


def renormalised_entry_latex(row: int, col: int, unmasked_row: Sequence[float], allowed_row: Sequence[bool],
                             value: float, tr: Translate = Message) -> str:
    """The other route for one weight: α_ij = α̂_ij m_ij / Σ_l α̂_il m_il, numbers in (the sum first)."""
    lhs = index(r"\alpha", row, col)
    hat, m = index(r"\hat{\alpha}", row, col), index("m", row, col)
    sum_il = f"\\sum_l \\hat{{\\alpha}}_{{{row + 1},l}}\\, m_{{{row + 1},l}}"
    general = f"\\frac{{{hat}\\, {m}}}{{{sum_il}}}"
    if not any(allowed_row):
        return _blocked_row(lhs, general, row, tr)
    terms = [f"{number(w)} \\cdot {int(a)}" for w, a in zip(unmasked_row, allowed_row)]
    total = sum(w for w, a in zip(unmasked_row, allowed_row) if a)
    numerator = f"{number(unmasked_row[col])} \\cdot {int(allowed_row[col])}"
    return _two_steps(f"\\textstyle {sum_il}", terms, total, lhs, general, numerator,
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


def weighted_sum_entry_latex(row: int, col: int, weights_row: Sequence[float], value_col: Sequence[float],
                             value: float, *, weight_symbol: str = r"\alpha", head: Optional[int] = None) -> str:
    """z_ij = Σ_l w_il v_lj (a context vector's entry), numbers in, long sums broken into lines."""
    lhs = index("z", row, col, head)
    sup = f"^{{({head + 1})}}" if head is not None else ""
    general = f"\\sum_l {weight_symbol}{sup}_{{{row + 1},l}}\\, v{sup}_{{l,{col + 1}}}"
    terms = [f"{factor(w)} \\cdot {factor(v)}" for w, v in zip(weights_row, value_col)]
    return aligned(lhs, [general, terms_lines(terms), number(value)])


def projection_entry_latex(letter: str, row: int, col: int, x_row: Sequence[float], w_col: Sequence[float],
                           value: float, x_name: str = "x") -> str:
    """q_ij = Σ_l x_il W_lj (or k, v), numbers in.

    Args:
        letter: "q", "k" or "v".
        x_name: the inputs' symbol, e.g. "x" or "x^{enc}".
    """
    lhs = f"{letter}_{{{row + 1},{col + 1}}}"
    general = f"\\sum_l {x_name}_{{{row + 1},l}}\\, W^{{{letter}}}_{{l,{col + 1}}}"
    terms = [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(x_row, w_col)]
    return aligned(lhs, [general, terms_lines(terms), number(value)])


def scaled_score_entry_latex(row: int, col: int, q_row: Sequence[float], k_row: Sequence[float], width: int,
                             value: float, *, head: Optional[int] = None, width_symbol: str = "d_k") -> str:
    """a_ij = (Σ_c q_ic k_jc) / √width, numbers in.

    On the multi-head pages ``head`` is set and ``width_symbol`` is d_head: the
    scale is √head_dim, the width of one head's queries and keys, not √d_out.
    """
    lhs = index("a", row, col, head)
    sup = f"^{{({head + 1})}}" if head is not None else ""
    general = (f"\\frac{{\\sum_c q{sup}_{{{row + 1},c}}\\, k{sup}_{{{col + 1},c}}}}"
               f"{{\\sqrt{{{width_symbol}}}}}")
    terms = [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(q_row, k_row)]
    dot = sum(a * b for a, b in zip(q_row, k_row))
    steps = [general]
    if len(terms) <= 4:
        steps.append(f"\\frac{{{' + '.join(terms)}}}{{\\sqrt{{{width}}}}}")
    else:
        steps.append(f"\\frac{{1}}{{\\sqrt{{{width}}}}} \\cdot \\big( {terms_lines(terms)} \\big)")
    steps.append(f"\\frac{{{number(dot)}}}{{{number(math.sqrt(width))}}}")
    steps.append(number(value))
    return aligned(lhs, steps)


def output_entry_latex(row: int, col: int, concat_row: Sequence[float], w_col: Sequence[float], bias: float,
                       value: float) -> str:
    """o_ij = Σ_l c_il W^O_lj + b^O_j, numbers in, long sums broken into lines."""
    lhs = f"o_{{{row + 1},{col + 1}}}"
    general = f"\\sum_l c_{{{row + 1},l}}\\, W^{{O}}_{{l,{col + 1}}} + b^{{O}}_{{{col + 1}}}"
    terms = [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(concat_row, w_col)] + [factor(bias)]
    return aligned(lhs, [general, terms_lines(terms), number(value)])


# ---------------------------------------------------------------- the pages' header formulas


def header_latex(page: str, tr: Translate = Message) -> str:
    """The formula at the top of a masking & heads page ("causal", "dropout", "multi_head" or "cross_attention"), as LaTeX.

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
        evaluated = _latex(sp.Eq(_nc(r"\tilde{\mathcal{A}}"), _nc(r"\mathcal{A}")))
        return (dropped + r",\qquad " + drawn + r"\ " + latex_text(translated["training"]) + r",\qquad "
                + evaluated + r"\ " + latex_text(translated["eval"]))
    return translate_cases(_header_latex(page, words), tr)


_HEADER_WORDS: dict[str, str] = {
    "training": N_("(training)"),
    "eval": N_("(eval)"),
    "per_head": N_("per head, then"),
}


@lru_cache(maxsize=None)
def _header_latex(page: str, words: tuple[tuple[str, str], ...]) -> str:
    translated = dict(words)
    kt = sp.Pow(_nc("K"), _TOP, evaluate=False)
    scaled = sp.Mul(_nc("Q"), kt, 1 / sp.sqrt(_d_k))
    if page == "causal":
        attention = sp.Eq(sp.Function(r"\operatorname{CausalAttention}")(_nc("Q"), _nc("K"), _nc("V")),
                          sp.Mul(_softmax(sp.Add(scaled, _nc("M"), evaluate=False)), _nc("V")))
        mask = sp.Eq(_M[_i, _j], sp.Piecewise((0, sp.Le(_j, _i)), (-sp.oo, True)))
        return _latex(attention) + r",\quad " + _latex(mask)  # the cases' words: translate_cases
    if page == "multi_head":
        head = formulas_multihead.multihead_formula("head")[0]
        heads = (sp.Symbol(r"\mathrm{head}_{1}"), sp.Symbol(r"\dots"), sp.Symbol(r"\mathrm{head}_{h}"))
        multihead = sp.Eq(sp.Symbol(r"\operatorname{MultiHead}"),
                          sp.Add(sp.Mul(sp.Function(r"\operatorname{Concat}")(*heads), _nc("W_O")), _nc("b_O"),
                                 evaluate=False))
        return head + r",\qquad " + _latex(multihead)
    if page == "cross_attention":
        x_dec, x_enc = _nc("X_{dec}"), _nc("X_{enc}")
        q, k = sp.Mul(x_dec, _nc("W_q")), sp.Mul(x_enc, _nc("W_k"))
        scores = sp.Mul(q, sp.Pow(k, _TOP, evaluate=False), 1 / sp.sqrt(_d_head), evaluate=False)
        cross = sp.Eq(sp.Function(r"\operatorname{CrossAttention}")(x_dec, x_enc),
                      sp.Mul(_softmax(scores), x_enc, _nc("W_v")))
        concat = sp.Add(sp.Mul(sp.Symbol(r"\operatorname{Concat}"), _nc("W_O"), evaluate=False), _nc("b_O"),
                        evaluate=False)
        return _latex(cross) + r"\quad" + latex_text(translated["per_head"] + " ") + " " + _latex(concat)
    raise KeyError(page)
