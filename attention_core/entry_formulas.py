r"""One entry of a matrix written with its numbers in, as LaTeX: the formulas every step page shares.

A projection q_ij = Σ_l x_il W_lj, a scaled score a_ij = Σ_c q_ic k_jc / √d_k, a mask entry M_ij, a masked score,
a weight α_ij = e^{a'_ij} / Σ_l e^{a'_il} (e^{−∞} written as 0), a context vector's entry z_ij = Σ_l α_il v_lj and
an output entry o_ij = Σ_l c_il W^O_lj + b^O_j. Numbers come in as plain floats and are written with
:func:`attention_core.latex.number` (4 significant digits, ±∞); words are app text (no user text).

A floor module (imports only ``errors`` and ``latex``): the causal, dropout, multi-head, GQA, RoPE, ALiBi,
sliding-window and FlashAttention pages all write their entries with it.

Index legend: i (row) the query, j (col) the key or the output column, l the summed index, c a column of q and k,
head r (0-based in the arguments, shown 1-based as a superscript). Sources: Vaswani et al. 2017, eq. 1 and
sec. 3.2.2-3.2.3; seed 001 (001_9275b51964da46b3.txt) for softmax(Q Kᵀ / √d_k + M) V.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from attention_core.errors import N_, Message
from attention_core.latex import Translate, aligned, factor, index, latex_text, number, terms_lines


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


def blocked_row(lhs: str, general: str, row: int, tr: Translate) -> str:
    """An entry of a row whose every key is blocked: 0 / 0, stated as 0 (what we and PyTorch return)."""
    why = latex_text(tr(N_("(every key of row {row} is blocked)"), row=row + 1))
    return aligned(lhs, [general, r"\frac{0}{0} \;\to\; 0 \quad " + why])


def two_steps(sum_lhs: str, terms: Sequence[str], total: float,
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
        return blocked_row(lhs, f"\\frac{{e^{{{a_ij}}}}}{{\\sum_l e^{{{a_il}}}}}", row, tr)
    top = max(finite)
    shift = top if top > 80 else 0.0
    minus = f" - {number(shift)}" if shift else ""
    terms = ["0" if math.isinf(s) else f"e^{{{number(s - shift)}}}" for s in masked_row]
    exps = [0.0 if math.isinf(s) else math.exp(s - shift) for s in masked_row]
    return two_steps(f"\\textstyle\\sum_l e^{{{a_il}{minus}}}", terms, sum(exps), lhs,
                      f"\\frac{{e^{{{a_ij}{minus}}}}}{{\\sum_l e^{{{a_il}{minus}}}}}", terms[col], exps[col], value)


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
