r"""The formulas of *The backward pass* page: each stage's general formula (sympy), one entry with its numbers in,
and the entry as a practice exercise with the mistakes learners make named.

Index legend: i, l query rows (tokens), j, k key rows, c a column of q, k, v (or of dW), d a column of X (an input
dimension). Numbers are written with 4 significant digits (``attention_core.latex.number``); no user text enters.
Sources: the chain rule through Vaswani et al. 2017, eq. 1; the softmax's Jacobian diag(p) − p pᵀ; Dao et al. 2022
(FlashAttention), appendix B.2, for D_i = Σ_j P_ij dP_ij = dO_i · o_i.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

import sympy as sp
import torch

from attention_core import practice
from attention_core.errors import N_, Message
from attention_core.latex import (
    Translate,
    aligned,
    expr_latex,
    factor,
    latex_text,
    matrix_symbol,
    number,
    product,
    stacked,
    terms_lines,
    words_and_math,
)
from attention_core.practice import Exercise, Mistake

#: Each gradient's symbol, as the page and the checks write it.
SYMBOLS = {"d_output": "dO", "d_value": "dV", "d_weights": "dP", "d_scores": "dS", "d_query": "dQ", "d_key": "dK",
           "d_w_query": "dW_q", "d_w_key": "dW_k", "d_w_value": "dW_v", "d_x": "dX"}
#: The stages of one head's backward pass (through P, the softmax and the scaling): per head on the multi-head page.
HEAD_STAGES = ("d_value", "d_weights", "d_scores", "flash", "d_query", "d_key")
#: The matrix each W stage explains, and its gradient's name in the trace.
W_STAGES = {"d_w_query": ("w_query", "d_w_query"), "d_w_key": ("w_key", "d_w_key"), "d_w_value": ("w_value", "d_w_value")}


@dataclass(frozen=True)
class HeadView:
    """One head's forward and backward tensors, as the per-head formulas read them: the whole trace of the
    single-head page, or head r's slice of the multi-head page's.

    Shapes: n tokens (T is the target), d_k the head's query/key width (head_dim on the multi-head page), d_v its
    value width.

    Attributes:
        query, key: Q, K (n, d_k). value: V (n, d_v). weights: P (n, n). output: O = P V (n, d_v).
        d_output: dO (n, d_v) (the head's columns of dConcat on the multi-head page). d_value: dV (n, d_v).
        d_weights: dP (n, n). row_dot: D (n,). d_scores: dS (n, n). d_query, d_key: dQ, dK (n, d_k).
        scale: 1 / sqrt(d_k). mask: bool (n, n), True = may attend, or None.
        sup: the LaTeX superscript naming the head ("" on the single-head page, "^{(2)}" for head 2).
        width: the LaTeX name of d_k ("d_k", or "d_{head}" per head).
    """

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor
    d_output: torch.Tensor
    d_value: torch.Tensor
    d_weights: torch.Tensor
    row_dot: torch.Tensor
    d_scores: torch.Tensor
    d_query: torch.Tensor
    d_key: torch.Tensor
    scale: float
    mask: Optional[torch.Tensor]
    sup: str = ""
    width: str = "d_k"

    @classmethod
    def of(cls, trace: Any, head: Optional[int] = None) -> HeadView:
        """The view of a single-head ``BackwardTrace`` (head None) or of head ``head`` of a
        ``MultiHeadBackwardTrace``."""
        if head is None:
            return cls(*(getattr(trace, n) for n in ("query", "key", "value", "weights", "output", "d_output",
                                                     "d_value", "d_weights", "row_dot", "d_scores", "d_query",
                                                     "d_key")), scale=trace.scale, mask=trace.mask)
        names = ("query_heads", "key_heads", "value_heads", "weights", "head_outputs", "d_head_outputs",
                 "d_value_heads", "d_weights", "row_dot", "d_scores", "d_query_heads", "d_key_heads")
        return cls(*(getattr(trace, n)[head] for n in names), scale=trace.scale, mask=trace.mask,
                   sup=f"^{{({head + 1})}}", width="d_{head}")

_i, _j, _k, _l, _c, _d = sp.symbols("i j k l c d", integer=True, positive=True)
#: The number of tokens, n: T is the target (L = ½ ‖O − T‖², T_{i,j}), one letter for one thing on the page.
TOKENS = sp.Symbol("n", integer=True, positive=True)
_n = TOKENS
_eta = sp.Symbol(r"\eta", positive=True)


@lru_cache(maxsize=None)
def _formula(stage: str, per_head: bool = False, out_width: str = "d_v") -> tuple[str, ...]:
    """``per_head``: head r's names (dV^{(r)}, ...) and √d_head, for the multi-head page's per-head stages;
    ``out_width``: the width of O in the loss (the multi-head page's O = C W_O + b_O is d_o wide)."""
    sup = "^{(r)}" if per_head else ""
    _dk = sp.Symbol("d_{head}" if per_head else "d_k", positive=True)
    head_names = {"O", "dO", "P", "V", "dV", "dP", "dS", "Q", "K", "dQ", "dK", "D"}

    def _matrix(name: str) -> sp.Symbol:  # a matrix, with the head's superscript
        return matrix_symbol(name + (sup if name in head_names else ""))

    def _ix(name: str) -> sp.IndexedBase:  # a matrix's entries
        return sp.IndexedBase(name + (sup if name in head_names else ""))
    o, t, do, p, v, dv, dp, ds = (_ix(n) for n in ("O", "T", "dO", "P", "V", "dV", "dP", "dS"))
    q, kk, dq, dkey, x = (_ix(n) for n in ("Q", "K", "dQ", "dK", "X"))
    top = sp.Symbol(r"\top")

    def tr_(name: str) -> sp.Expr:  # Aᵀ
        return sp.Pow(_matrix(name), top, evaluate=False)

    def mat(lhs: str, *factors) -> str:
        return expr_latex(sp.Eq(_matrix(lhs), sp.Mul(*factors), evaluate=False))
    if stage == "loss":
        diff = sp.Add(o[_i, _j], -t[_i, _j], evaluate=False)
        loss = sp.Eq(sp.Symbol("L"), sp.Mul(sp.Rational(1, 2), sp.Sum(diff ** 2, (_i, 1, _n), (_j, 1, sp.Symbol(out_width))),
                                            evaluate=False), evaluate=False)
        return expr_latex(loss), expr_latex(sp.Eq(do[_i, _j], diff, evaluate=False))
    if stage == "d_value":
        return (mat("dV", tr_("P"), _matrix("dO")), expr_latex(sp.Eq(dv[_j, _c], sp.Sum(product(p[_l, _j], do[_l, _c]), (_l, 1, _n)), evaluate=False)))
    if stage == "d_weights":
        return (mat("dP", _matrix("dO"), tr_("V")), expr_latex(sp.Eq(dp[_i, _j], sp.Sum(product(do[_i, _c], v[_j, _c]), (_c, 1, sp.Symbol("d_v"))), evaluate=False)))
    if stage == "d_scores":
        inner = sp.Sum(product(p[_i, _k], dp[_i, _k]), (_k, 1, _n))
        element = sp.Eq(ds[_i, _j], product(p[_i, _j], sp.Add(dp[_i, _j], -inner, evaluate=False)), evaluate=False)
        return (rf"dS{sup}_{{i\cdot}} = J_i\, dP{sup}_{{i\cdot}},\qquad J_i = \operatorname{{diag}}(p_i) - p_i\, p_i^{{\top}}",
                expr_latex(element))
    if stage == "flash":
        d_i = sp.Eq(_ix("D")[_i], sp.Sum(product(do[_i, _c], o[_i, _c]), (_c, 1, sp.Symbol("d_v"))), evaluate=False)
        return (rf"D{sup} = \operatorname{{rowsum}}(dO{sup} \odot O{sup})", expr_latex(d_i),
                expr_latex(sp.Eq(ds[_i, _j], product(p[_i, _j], sp.Add(dp[_i, _j], -_ix("D")[_i], evaluate=False)), evaluate=False)))
    if stage == "d_query":
        return (mat("dQ", _matrix("dS"), _matrix("K"), 1 / sp.sqrt(_dk)),
                expr_latex(sp.Eq(dq[_i, _c], sp.Sum(product(ds[_i, _j], kk[_j, _c]), (_j, 1, _n)) / sp.sqrt(_dk), evaluate=False)))
    if stage == "d_key":
        return (mat("dK", tr_("dS"), _matrix("Q"), 1 / sp.sqrt(_dk)),
                expr_latex(sp.Eq(dkey[_j, _c], sp.Sum(product(ds[_i, _j], q[_i, _c]), (_i, 1, _n)) / sp.sqrt(_dk), evaluate=False)))
    if stage in ("d_w_query", "d_w_key", "d_w_value"):
        letter = {"d_w_query": "q", "d_w_key": "k", "d_w_value": "v"}[stage]
        upstream = _ix(f"d{letter.upper()}")
        return (mat(f"dW_{letter}", tr_("X"), _matrix(f"d{letter.upper()}")),
                expr_latex(sp.Eq(_ix(f"dW^{{{letter}}}")[_d, _c], sp.Sum(product(x[_i, _d], upstream[_i, _c]), (_i, 1, _n)), evaluate=False)))
    if stage == "d_x":
        return (expr_latex(sp.Eq(_matrix("dX"), sp.Add(*(sp.Mul(_matrix(g), tr_(w)) for g, w in (("dQ", "W_q"), ("dK", "W_k"), ("dV", "W_v"))), evaluate=False), evaluate=False)),)
    if stage == "step":
        w, dw = _ix("W"), _ix("dW")
        return (r"W \leftarrow W - \eta\, dW", expr_latex(sp.Eq(_ix("W'")[_d, _c], sp.Add(w[_d, _c], -product(_eta, dw[_d, _c]), evaluate=False), evaluate=False)))
    raise KeyError(stage)


@lru_cache(maxsize=None)
def backward_formula(stage: str, tr: Translate = Message, per_head: bool = False,
                     out_width: str = "d_v") -> tuple[str, ...]:
    """The matrix form and the element form of ``stage``, as LaTeX lines (sympy); ``per_head``: head r's
    (dV^{(r)} = P^{(r)ᵀ} dO^{(r)}, ÷ √d_head), for the multi-head page; ``out_width``: O's width in the loss (the
    multi-head page's: d_o). The sums run over the n tokens (T is the target). Raises KeyError."""
    del tr  # no words inside these formulas
    return _formula(stage, per_head, out_width)


# ---------------------------------------------------------------- one entry, numbers in

def sum_of(lhs: str, general: str, pairs, value: float, scale: Optional[float] = None) -> str:
    """``lhs = general = a·b + ... (÷ 1/scale) = value`` as aligned LaTeX lines; ``pairs`` the (a, b) of the sum."""
    terms = [f"{factor(a)} \\cdot {factor(b)}" for a, b in pairs]
    steps = [general, terms_lines(terms)]
    if scale is not None:
        total = math.fsum(a * b for a, b in pairs)
        steps.append(f"\\frac{{{number(total)}}}{{{number(1 / scale)}}}")
    return aligned(lhs, steps + [number(value)])


def explain_head(view: HeadView, stage: str, row: int, col: int, value: float, tr: Translate = Message) -> str:
    """Entry (row, col) of one head's stage (:data:`HEAD_STAGES`) with its numbers in, as LaTeX; ``value`` is the
    entry as the page shows it. Raises KeyError for another stage."""
    t, h, w = view, view.sup, view.width
    i, j = row + 1, col + 1
    if stage == "d_value":
        pairs = list(zip(t.weights[:, row].tolist(), t.d_output[:, col].tolist()))
        return sum_of(f"dV{h}_{{{i},{j}}}", f"\\sum_l P{h}_{{l,{i}}}\\, dO{h}_{{l,{j}}}", pairs, value)
    if stage == "d_weights":
        pairs = list(zip(t.d_output[row].tolist(), t.value[col].tolist()))
        return sum_of(f"dP{h}_{{{i},{j}}}", f"\\sum_c dO{h}_{{{i},c}}\\, V{h}_{{{j},c}}", pairs, value)
    if stage in ("d_scores", "flash"):
        p_ij = float(t.weights[row, col])
        if p_ij == 0.0 and t.mask is not None and not bool(t.mask[row, col]):
            why = latex_text(tr(N_("blocked by the mask: no gradient")))
            return f"dS{h}_{{{i},{j}}} = P{h}_{{{i},{j}}} (\\dots) = 0 \\cdot (\\dots) = 0 \\quad {why}"
        d_i = float(t.row_dot[row])
        if stage == "d_scores":
            pairs = list(zip(t.weights[row].tolist(), t.d_weights[row].tolist()))
            head = sum_of(f"D{h}_{{{i}}}", f"\\sum_k P{h}_{{{i},k}}\\, dP{h}_{{{i},k}}", pairs, d_i)
        else:
            pairs = list(zip(t.d_output[row].tolist(), t.output[row].tolist()))
            head = sum_of(f"D{h}_{{{i}}}", f"\\sum_c dO{h}_{{{i},c}}\\, O{h}_{{{i},c}}", pairs, d_i)
        dp = float(t.d_weights[row, col])
        return stacked(head, aligned(f"dS{h}_{{{i},{j}}}", [
            f"P{h}_{{{i},{j}}} (dP{h}_{{{i},{j}}} - D{h}_{{{i}}})",
            f"{number(p_ij)} \\cdot ({number(dp)} - {factor(d_i)})", number(value)]))
    if stage == "d_query":
        pairs = list(zip(t.d_scores[row].tolist(), t.key[:, col].tolist()))
        return sum_of(f"dQ{h}_{{{i},{j}}}", f"\\frac{{\\sum_k dS{h}_{{{i},k}}\\, K{h}_{{k,{j}}}}}{{\\sqrt{{{w}}}}}",
                       pairs, value, t.scale)
    if stage == "d_key":
        pairs = list(zip(t.d_scores[:, row].tolist(), t.query[:, col].tolist()))
        return sum_of(f"dK{h}_{{{i},{j}}}", f"\\frac{{\\sum_l dS{h}_{{l,{i}}}\\, Q{h}_{{l,{j}}}}}{{\\sqrt{{{w}}}}}",
                       pairs, value, t.scale)
    raise KeyError(stage)


def _w_stage(trace: Any, stage: str) -> tuple[str, str, Any]:
    """A W stage's matrix ("w_query"), its letter ("q") and the gradient it is made of (dQ, (n, width))."""
    name = W_STAGES[stage][0]
    letter = name[2]
    return name, letter, {"q": trace.d_query, "k": trace.d_key, "v": trace.d_value}[letter]


def explain_backward(walk: Any, stage: str, row: int, col: int, tr: Translate = Message, head: int = 0) -> str:
    """Entry (row, col) of ``stage``'s explained panel (head ``head``'s on the multi-head page) with its numbers
    in, as LaTeX.

    ``walk``: a backward walk-through (single- or multi-head): its ``trace`` (X, W, their gradients, O, T, dO),
    ``step``, ``finite_difference(which, row, col)``, ``explained(stage, row, col, head)`` and ``head_view(head)``.

    Raises:
        KeyError: an unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = walk.explained(stage, row, col, head)
    if stage in HEAD_STAGES:
        return explain_head(walk.head_view(head), stage, row, col, value, tr)
    t = walk.trace
    i, j = row + 1, col + 1
    if stage == "loss":
        return (f"dO_{{{i},{j}}} = O_{{{i},{j}}} - T_{{{i},{j}}} = {number(float(t.output[row, col]))} - "
                f"{factor(float(t.target[row, col]))} = {number(value)}")
    if stage in W_STAGES:
        name, letter, upstream = _w_stage(t, stage)
        pairs = list(zip(t.x[:, row].tolist(), upstream[:, col].tolist()))
        entry = sum_of(f"dW^{{{letter}}}_{{{i},{j}}}", f"\\sum_l X_{{l,{i}}}\\, d{letter.upper()}_{{l,{j}}}",
                        pairs, value)
        return stacked(entry, nudged_line(walk, name, f"W_{letter}", f"dW^{{{letter}}}", row, col, tr))
    if stage == "d_x":
        parts = []
        for grad, w in ((t.d_query, t.w_query), (t.d_key, t.w_key), (t.d_value, t.w_value)):
            parts.append(math.fsum(a * b for a, b in zip(grad[row].tolist(), w[col].tolist())))
        return aligned(f"dX_{{{i},{j}}}", [
            f"dQ_{{{i}}} \\cdot W^{{q}}_{{{j},:}} + dK_{{{i}}} \\cdot W^{{k}}_{{{j},:}} + dV_{{{i}}} \\cdot W^{{v}}_{{{j},:}}",
            " + ".join(factor(v) for v in parts), number(value)])
    if stage == "step":
        s = walk.step
        w, dw = float(s.before.w_query[row, col]), float(s.before.d_w_query[row, col])
        return aligned(f"W'^{{q}}_{{{i},{j}}}", [f"W^{{q}}_{{{i},{j}}} - \\eta\\, dW^{{q}}_{{{i},{j}}}",
                                                f"{number(w)} - {number(s.learning_rate)} \\cdot {factor(dw)}",
                                                number(value)])
    raise KeyError(stage)


def nudged_line(walk: Any, which: str, name: str, symbol: str, row: int, col: int, tr: Translate) -> str:
    """The finite-difference line of an explained dW entry: the loss's change when W[row, col] moves by ε, and
    ε times the gradient."""
    fd = walk.finite_difference(which, row, col)
    check = words_and_math(str(tr(N_("nudge {name}[{i}, {j}] by {eps}: the loss moves by"), name=name, i=row + 1,
                                  j=col + 1, eps="{eps}")), eps=r"\ \varepsilon = 0.000001")
    return (check + f"\\ {number(fd.actual_change)} \\approx \\varepsilon \\cdot {symbol}_{{{row + 1},{col + 1}}} = "
            f"{number(fd.predicted_change)}")


# ---------------------------------------------------------------- practice

def mistake(key: str, value: float, hint: str, **params) -> Mistake:
    """A :class:`Mistake` whose hint names its value (4 significant digits) and ``params``."""
    return Mistake(key, value, Message(hint, value=f"{value:.4g}", **params))


_NO_SCALE = N_("That is {value}: the sum without ÷ √{width}. The scores were divided by √{width} on the way forward, "
               "so their gradient is too on the way back.")


def head_exercise(view: HeadView, stage: str, row: int, col: int, value: float,
                  wrong_width: Optional[int] = None) -> Optional[Exercise]:
    """Entry (row, col) of one head's stage (:data:`HEAD_STAGES`) as an exercise; ``value`` the entry as shown.

    ``wrong_width``: on the multi-head page, d_out, so that dividing by √d_out instead of √head_dim is named.
    None for the FlashAttention comparison. Raises KeyError for another stage.
    """
    t, h = view, view.sup
    i, j = row + 1, col + 1
    vec = practice.vector
    width = "d_k" if not h else "head_dim"
    if stage == "d_value":
        wrong = math.fsum(a * b for a, b in zip(t.weights[row].tolist(), t.d_output[:, col].tolist()))
        return Exercise(f"dV{h}_{{{i},{j}}}", f"\\sum_l P{h}_{{l,{i}}}\\, dO{h}_{{l,{j}}}",
                        (vec(f"P{h}_{{:,{i}}}", t.weights[:, row].tolist()),
                         vec(f"dO{h}_{{:,{j}}}", t.d_output[:, col].tolist()),
                         vec(f"P{h}_{{{i},:}}", t.weights[row].tolist())), value,
                        practice._kept(value, [mistake("p_not_transposed", wrong, N_(
                            "That is {value}, (P dO): row i of P. dV = Pᵀ dO takes column i of P: the weights every "
                            "query put on key i."))]))
    if stage == "d_weights":
        return practice.dot_exercise(f"dP{h}_{{{i},{j}}}", f"\\sum_c dO{h}_{{{i},c}}\\, V{h}_{{{j},c}}",
                                     (f"dO{h}_{{{i}}}", t.d_output[row].tolist()),
                                     (f"v{h}_{{{j}}}", t.value[col].tolist()), value)
    if stage == "d_scores":
        p_row, dp_row = t.weights[row].tolist(), t.d_weights[row].tolist()
        p, dp = p_row[col], dp_row[col]
        return Exercise(f"dS{h}_{{{i},{j}}}",
                        f"P{h}_{{{i},{j}}} \\left(dP{h}_{{{i},{j}}} - \\sum_k P{h}_{{{i},k}}\\, dP{h}_{{{i},k}}\\right)",
                        (vec(f"P{h}_{{{i}}}", p_row), vec(f"dP{h}_{{{i}}}", dp_row)), value,
                        practice._kept(value, [mistake("softmax_diagonal_only", p * (1 - p) * dp, N_(
                            "That is {value}, P(1 − P) dP: only the diagonal of the softmax's Jacobian. Every weight "
                            "of the row shares one sum, so dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik)."))]))
    if stage in ("d_query", "d_key"):
        d_k = t.query.shape[-1]
        if stage == "d_query":
            lhs, general = f"dQ{h}_{{{i},{j}}}", f"\\sum_k dS{h}_{{{i},k}}\\, K{h}_{{k,{j}}}"
            ds, other = t.d_scores[row].tolist(), t.key[:, col].tolist()
            inputs = (vec(f"dS{h}_{{{i}}}", ds), vec(f"K{h}_{{:,{j}}}", other))
        else:
            lhs, general = f"dK{h}_{{{i},{j}}}", f"\\sum_l dS{h}_{{l,{i}}}\\, Q{h}_{{l,{j}}}"
            ds, other = t.d_scores[:, row].tolist(), t.query[:, col].tolist()
            inputs = (vec(f"dS{h}_{{:,{i}}}", ds), vec(f"dS{h}_{{{i},:}}", t.d_scores[row].tolist()),
                      vec(f"Q{h}_{{:,{j}}}", other))
        dot = math.fsum(a * b for a, b in zip(ds, other))
        mistakes = []
        if stage == "d_key":
            wrong = math.fsum(a * b for a, b in zip(t.d_scores[row].tolist(), other)) * t.scale
            mistakes.append(mistake("ds_not_transposed", wrong, N_(
                "That is {value}, (dS Q): row i of dS. Key i was scored by every query, so dK takes column i of dS: "
                "dK = dSᵀ Q / √d_k.")))
        mistakes.append(mistake("gradient_no_scale", dot, _NO_SCALE, width=width))
        if wrong_width is not None:
            mistakes.append(mistake("scale_d_model", dot / math.sqrt(wrong_width), N_(
                "That is {value}: divided by √d_out = √{d_out}. Each head's scores were divided by √head_dim = "
                "√{head_dim}, the width of its own queries and keys, so its gradient is too."),
                d_out=wrong_width, head_dim=d_k))
        return Exercise(lhs, f"\\frac{{{general}}}{{\\sqrt{{{t.width}}}}}", inputs + (f"{t.width} = {d_k}",), value,
                        practice._kept(value, mistakes))
    if stage == "flash":
        return None
    raise KeyError(stage)


def backward_exercise(walk: Any, stage: str, row: int, col: int, head: int = 0,
                      wrong_width: Optional[int] = None) -> Optional[Exercise]:
    """Entry (row, col) of ``stage`` (head ``head``'s on the multi-head page) as an exercise, with the known
    mistakes of the backward pass named: the softmax's off-diagonal terms forgotten, the ÷ √d_k forgotten, P dO
    instead of Pᵀ dO, dS instead of dSᵀ for dK, the sign of the update (and, per head, √d_out for √head_dim).
    None where there is nothing to compute (the FlashAttention comparison, dX). ``walk`` as
    :func:`explain_backward`.

    Raises:
        KeyError: an unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = walk.explained(stage, row, col, head)
    if stage in HEAD_STAGES:
        return head_exercise(walk.head_view(head), stage, row, col, value, wrong_width)
    t = walk.trace
    i, j = row + 1, col + 1
    if stage == "loss":
        return practice.value_exercise(f"dO_{{{i},{j}}}", f"O_{{{i},{j}}} - T_{{{i},{j}}}",
                                       (f"O_{{{i},{j}}} = {number(float(t.output[row, col]))}",
                                        f"T_{{{i},{j}}} = {number(float(t.target[row, col]))}"), value)
    if stage in W_STAGES:
        _name, letter, upstream = _w_stage(t, stage)
        return practice.dot_exercise(f"dW^{{{letter}}}_{{{i},{j}}}",
                                     f"\\sum_l X_{{l,{i}}}\\, d{letter.upper()}_{{l,{j}}}",
                                     (f"X_{{:,{i}}}", t.x[:, row].tolist()),
                                     (f"d{letter.upper()}_{{:,{j}}}", upstream[:, col].tolist()), value)
    if stage == "step":
        s = walk.step
        w, dw = float(s.before.w_query[row, col]), float(s.before.d_w_query[row, col])
        return Exercise(f"W'^{{q}}_{{{i},{j}}}", f"W^{{q}}_{{{i},{j}}} - \\eta\\, dW^{{q}}_{{{i},{j}}}",
                        (f"W^{{q}}_{{{i},{j}}} = {number(w)}", f"dW^{{q}}_{{{i},{j}}} = {number(dw)}",
                         f"\\eta = {number(s.learning_rate)}"), value,
                        practice._kept(value, [mistake("update_sign", w + s.learning_rate * dw, N_(
                            "That is {value}, W + η dW: a step up the loss. Gradient descent steps against the "
                            "gradient: W − η dW."))]))
    return None
