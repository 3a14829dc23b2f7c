r"""The formulas of *The backward pass, multi-head*: each stage's general formula (sympy), one entry with its numbers
in, and the entry as a practice exercise; the stages one head runs alone are the single-head page's
(:mod:`attention_core.backward.formulas`) with head r's names (dV^{(r)}, ..., ÷ √d_head).

Index legend: i query rows (the n tokens; T is the target), a a column of the concatenation C (d_out wide: head r
owns columns (r − 1) · head_dim + 1 ... r · head_dim), c a column of the output O (d_o wide), d a column of X.
Numbers with 4 significant digits (``attention_core.latex.number``); no user text enters.
Sources: Vaswani et al. 2017, sec. 3.2.2 (O = Concat(head_1, ..., head_h) W_O) and eq. 1; the chain rule.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Optional

import sympy as sp

from attention_core import practice
from attention_core.backward import formulas
from attention_core.errors import N_, Message
from attention_core.latex import Translate, expr_latex, matrix_symbol, product, stacked
from attention_core.lessons.backward_multi_head.walk import BackwardMultiHeadWalk
from attention_core.practice import Exercise

#: Each gradient's symbol on the multi-head page, as its checks write it (per-head ones for every head at once).
SYMBOLS = {"d_output": "dO", "d_w_out": "dW_O", "d_b_out": "db_O", "d_concat": "dC",
           "d_value_heads": "dV_r (every head)", "d_weights": "dP_r (every head)", "d_scores": "dS_r (every head)",
           "d_query_heads": "dQ_r (every head)", "d_key_heads": "dK_r (every head)", "d_w_query": "dW_q",
           "d_w_key": "dW_k", "d_w_value": "dW_v", "d_x": "dX"}

_i, _a, _c = sp.symbols("i a c", integer=True, positive=True)
_n = formulas.TOKENS  # the number of tokens (T is the target)


def _t(name: str) -> sp.Expr:  # Aᵀ
    return sp.Pow(matrix_symbol(name), sp.Symbol(r"\top"), evaluate=False)


@lru_cache(maxsize=None)
def _own(stage: str) -> tuple[str, ...]:
    """The formulas of the stages the single-head page does not have, or adds a line to."""
    c, do, w_o, dc = sp.IndexedBase("C"), sp.IndexedBase("dO"), sp.IndexedBase("W^O"), sp.IndexedBase("dC")
    d_o = sp.Symbol("d_o")
    if stage == "loss":
        return (expr_latex(sp.Eq(matrix_symbol("O"), sp.Add(sp.Mul(matrix_symbol("C"), matrix_symbol("W_O")), matrix_symbol("b_O"), evaluate=False), evaluate=False)),
                *formulas.backward_formula("loss", out_width="d_o"))
    if stage == "d_w_out":
        return (expr_latex(sp.Eq(matrix_symbol("dW_O"), sp.Mul(_t("C"), matrix_symbol("dO")), evaluate=False)),
                expr_latex(sp.Eq(sp.IndexedBase("dW^O")[_a, _c], sp.Sum(product(c[_i, _a], do[_i, _c]), (_i, 1, _n)), evaluate=False)),
                expr_latex(sp.Eq(sp.IndexedBase("db^O")[_c], sp.Sum(do[_i, _c], (_i, 1, _n)), evaluate=False)))
    if stage == "d_concat":
        return (expr_latex(sp.Eq(matrix_symbol("dC"), sp.Mul(matrix_symbol("dO"), _t("W_O")), evaluate=False)),
                expr_latex(sp.Eq(dc[_i, _a], sp.Sum(product(do[_i, _c], w_o[_a, _c]), (_c, 1, d_o)), evaluate=False)),
                r"dO^{(r)} = dC_{:,\,(r-1)\,d_{head}+1 \,\dots\, r\,d_{head}}")
    if stage in formulas.W_STAGES:
        letter = {"d_w_query": "q", "d_w_key": "k", "d_w_value": "v"}[stage]
        big = letter.upper()
        return (*formulas.backward_formula(stage),
                rf"dW_{letter} = \left[\, X^{{\top}} d{big}^{{(1)}} \,\middle|\, \cdots \,\middle|\, "
                rf"X^{{\top}} d{big}^{{(h)}} \,\right]")
    if stage == "step":
        return (*formulas.backward_formula("step"), r"b_O \leftarrow b_O - \eta\, db_O")
    raise KeyError(stage)


@lru_cache(maxsize=None)
def multi_head_formula(stage: str, tr: Translate = Message) -> tuple[str, ...]:
    """The matrix and element forms of ``stage`` on the multi-head page, as LaTeX lines (sympy). Raises KeyError."""
    if stage in formulas.HEAD_STAGES:
        return formulas.backward_formula(stage, tr, per_head=True)
    if stage == "d_x":
        return formulas.backward_formula(stage, tr)
    return _own(stage)


def explain_multi_head(walk: BackwardMultiHeadWalk, stage: str, row: int, col: int, head: int,
                       tr: Translate = Message) -> str:
    """Entry (row, col) of ``stage``'s explained panel (head ``head``'s for a per-head stage) with its numbers in.

    Raises:
        KeyError: an unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = walk.explained(stage, row, col, head)
    t = walk.trace
    i, j = row + 1, col + 1
    if stage == "d_w_out":
        pairs = list(zip(t.concat[:, row].tolist(), t.d_output[:, col].tolist()))
        entry = formulas.sum_of(f"dW^O_{{{i},{j}}}", f"\\sum_l C_{{l,{i}}}\\, dO_{{l,{j}}}", pairs, value)
        return stacked(entry, formulas.nudged_line(walk, "w_out", "W_O", "dW^O", row, col, tr))
    if stage == "d_concat":
        pairs = list(zip(t.d_output[row].tolist(), t.w_out[col].tolist()))
        r, c = divmod(col, t.head_dim)
        return (formulas.sum_of(f"dC_{{{i},{j}}}", f"\\sum_c dO_{{{i},c}}\\, W^O_{{{j},c}}", pairs, value)
                + f" = dO^{{({r + 1})}}_{{{i},{c + 1}}}")
    return formulas.explain_backward(walk, stage, row, col, tr, head)


def multi_head_exercise(walk: BackwardMultiHeadWalk, stage: str, row: int, col: int,
                        head: int) -> Optional[Exercise]:
    """Entry (row, col) of ``stage`` (head ``head``'s per head) as an exercise, with its mistakes named: those of
    the single-head page, dO W_O for dO W_Oᵀ, and ÷ √d_out for ÷ √head_dim. None where nothing is computed.

    Raises:
        KeyError: an unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = walk.explained(stage, row, col, head)
    t = walk.trace
    i, j = row + 1, col + 1
    if stage == "d_w_out":
        return practice.dot_exercise(f"dW^O_{{{i},{j}}}", f"\\sum_l C_{{l,{i}}}\\, dO_{{l,{j}}}",
                                     (f"C_{{:,{i}}}", t.concat[:, row].tolist()),
                                     (f"dO_{{:,{j}}}", t.d_output[:, col].tolist()), value)
    if stage == "d_concat":
        mistakes = []
        if t.w_out.shape[0] == t.w_out.shape[1]:  # dO W_O exists only for a square W_O
            wrong = math.fsum(a * b for a, b in zip(t.d_output[row].tolist(), t.w_out[:, col].tolist()))
            mistakes.append(formulas.mistake("w_out_not_transposed", wrong, N_(
                "That is {value}, (dO W_O): column j of W_O. C met W_O as C W_O, so row j of W_O (what column j of "
                "C fed) carries the gradient back: dC = dO W_Oᵀ.")))
        return Exercise(f"dC_{{{i},{j}}}", f"\\sum_c dO_{{{i},c}}\\, W^O_{{{j},c}}",
                        (practice.vector(f"dO_{{{i}}}", t.d_output[row].tolist()),
                         practice.vector(f"W^O_{{{j},:}}", t.w_out[col].tolist()),
                         practice.vector(f"W^O_{{:,{j}}}", t.w_out[:, col].tolist())), value,
                        practice._kept(value, mistakes))
    return formulas.backward_exercise(walk, stage, row, col, head, wrong_width=t.concat.shape[-1])
