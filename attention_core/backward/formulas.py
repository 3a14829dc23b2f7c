r"""The formulas of *The backward pass* page: each stage's general formula (sympy), one entry with its numbers in,
and the entry as a practice exercise with the mistakes learners make named.

Index legend: i, l query rows (tokens), j, k key rows, c a column of q, k, v (or of dW), d a column of X (an input
dimension). Numbers are written with 4 significant digits (``attention_core.latex.number``); no user text enters.
Sources: the chain rule through Vaswani et al. 2017, eq. 1; the softmax's Jacobian diag(p) − p pᵀ; Dao et al. 2022
(FlashAttention), appendix B.2, for D_i = Σ_j P_ij dP_ij = dO_i · o_i.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Optional

import sympy as sp

from attention_core import practice
from attention_core.errors import N_, Message
from attention_core.latex import Translate, aligned, factor, latex_text, number, terms_lines
from attention_core.practice import Exercise, Mistake

if TYPE_CHECKING:
    from attention_core.backward.backward_walkthrough import BackwardWalkthrough

#: Each gradient's symbol, as the page and the checks write it.
SYMBOLS = {"d_output": "dO", "d_value": "dV", "d_weights": "dP", "d_scores": "dS", "d_query": "dQ", "d_key": "dK",
           "d_w_query": "dW_q", "d_w_key": "dW_k", "d_w_value": "dW_v", "d_x": "dX"}

_i, _j, _k, _l, _c, _d = sp.symbols("i j k l c d", integer=True, positive=True)
_T = sp.Symbol("T")
_dk = sp.Symbol("d_k", positive=True)
_eta = sp.Symbol(r"\eta", positive=True)


def _nc(name: str) -> sp.Symbol:
    return sp.Symbol(name, commutative=False)


def _ix(name: str) -> sp.IndexedBase:
    return sp.IndexedBase(name)


def _latex(expr) -> str:
    return sp.latex(expr, order="none")


def _prod(*factors) -> sp.Expr:
    return sp.Mul(*factors, evaluate=False)


@lru_cache(maxsize=None)
def _formula(stage: str) -> tuple[str, ...]:
    o, t, do, p, v, dv, dp, ds = (_ix(n) for n in ("O", "T", "dO", "P", "V", "dV", "dP", "dS"))
    q, kk, dq, dkey, x = (_ix(n) for n in ("Q", "K", "dQ", "dK", "X"))
    top = sp.Symbol(r"\top")

    def tr_(name: str) -> sp.Expr:  # Aᵀ
        return sp.Pow(_nc(name), top, evaluate=False)

    def mat(lhs: str, *factors) -> str:
        return _latex(sp.Eq(_nc(lhs), sp.Mul(*factors)))
    if stage == "loss":
        diff = sp.Add(o[_i, _j], -t[_i, _j], evaluate=False)
        loss = sp.Eq(sp.Symbol("L"), sp.Mul(sp.Rational(1, 2), sp.Sum(diff ** 2, (_i, 1, _T), (_j, 1, sp.Symbol("d_v"))),
                                            evaluate=False))
        return _latex(loss), _latex(sp.Eq(do[_i, _j], diff))
    if stage == "d_value":
        return (mat("dV", tr_("P"), _nc("dO")), _latex(sp.Eq(dv[_j, _c], sp.Sum(_prod(p[_l, _j], do[_l, _c]), (_l, 1, _T)))))
    if stage == "d_weights":
        return (mat("dP", _nc("dO"), tr_("V")), _latex(sp.Eq(dp[_i, _j], sp.Sum(_prod(do[_i, _c], v[_j, _c]), (_c, 1, sp.Symbol("d_v"))))))
    if stage == "d_scores":
        inner = sp.Sum(_prod(p[_i, _k], dp[_i, _k]), (_k, 1, _T))
        element = sp.Eq(ds[_i, _j], _prod(p[_i, _j], sp.Add(dp[_i, _j], -inner, evaluate=False)))
        return (r"dS_{i\cdot} = J_i\, dP_{i\cdot},\qquad J_i = \operatorname{diag}(p_i) - p_i\, p_i^{\top}",
                _latex(element))
    if stage == "flash":
        d_i = sp.Eq(_ix("D")[_i], sp.Sum(_prod(do[_i, _c], o[_i, _c]), (_c, 1, sp.Symbol("d_v"))))
        return (r"D = \operatorname{rowsum}(dO \odot O)", _latex(d_i),
                _latex(sp.Eq(ds[_i, _j], _prod(p[_i, _j], sp.Add(dp[_i, _j], -_ix("D")[_i], evaluate=False)))))
    if stage == "d_query":
        return (mat("dQ", _nc("dS"), _nc("K"), 1 / sp.sqrt(_dk)),
                _latex(sp.Eq(dq[_i, _c], sp.Sum(_prod(ds[_i, _j], kk[_j, _c]), (_j, 1, _T)) / sp.sqrt(_dk))))
    if stage == "d_key":
        return (mat("dK", tr_("dS"), _nc("Q"), 1 / sp.sqrt(_dk)),
                _latex(sp.Eq(dkey[_j, _c], sp.Sum(_prod(ds[_i, _j], q[_i, _c]), (_i, 1, _T)) / sp.sqrt(_dk))))
    if stage in ("d_w_query", "d_w_key", "d_w_value"):
        letter = {"d_w_query": "q", "d_w_key": "k", "d_w_value": "v"}[stage]
        upstream = _ix(f"d{letter.upper()}")
        return (mat(f"dW_{letter}", tr_("X"), _nc(f"d{letter.upper()}")),
                _latex(sp.Eq(_ix(f"dW^{{{letter}}}")[_d, _c], sp.Sum(_prod(x[_i, _d], upstream[_i, _c]), (_i, 1, _T)))))
    if stage == "d_x":
        return (_latex(sp.Eq(_nc("dX"), sp.Add(*(sp.Mul(_nc(g), tr_(w)) for g, w in (("dQ", "W_q"), ("dK", "W_k"), ("dV", "W_v"))), evaluate=False))),)
    if stage == "step":
        w, dw = _ix("W"), _ix("dW")
        return (r"W \leftarrow W - \eta\, dW", _latex(sp.Eq(_ix("W'")[_d, _c], sp.Add(w[_d, _c], -_prod(_eta, dw[_d, _c]), evaluate=False))))
    raise KeyError(stage)


def backward_formula(stage: str, tr: Translate = Message) -> tuple[str, ...]:
    """The matrix form and the element form of ``stage``, as LaTeX lines (sympy). Raises KeyError."""
    del tr  # no words inside these formulas
    return _formula(stage)


# ---------------------------------------------------------------- one entry, numbers in

def _sum_of(lhs: str, general: str, pairs, value: float, scale: Optional[float] = None) -> str:
    terms = [f"{factor(a)} \\cdot {factor(b)}" for a, b in pairs]
    steps = [general, terms_lines(terms)]
    if scale is not None:
        total = math.fsum(a * b for a, b in pairs)
        steps.append(f"\\frac{{{number(total)}}}{{{number(1 / scale)}}}")
    return aligned(lhs, steps + [number(value)])


def explain_backward(walk: BackwardWalkthrough, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """Entry (row, col) of ``stage``'s explained panel with its numbers in, as LaTeX.

    Raises:
        KeyError: an unknown stage. IndexError: (row, col) outside the explained panel.
    """
    from attention_core.backward.backward_walkthrough import W_STAGES, explained

    value = explained(walk, stage, row, col)
    t = walk.trace
    i, j = row + 1, col + 1
    if stage == "loss":
        return (f"dO_{{{i},{j}}} = O_{{{i},{j}}} - T_{{{i},{j}}} = {number(float(t.output[row, col]))} - "
                f"{factor(float(t.target[row, col]))} = {number(value)}")
    if stage == "d_value":
        pairs = list(zip(t.weights[:, row].tolist(), t.d_output[:, col].tolist()))
        return _sum_of(f"dV_{{{i},{j}}}", f"\\sum_l P_{{l,{i}}}\\, dO_{{l,{j}}}", pairs, value)
    if stage == "d_weights":
        pairs = list(zip(t.d_output[row].tolist(), t.value[col].tolist()))
        return _sum_of(f"dP_{{{i},{j}}}", f"\\sum_c dO_{{{i},c}}\\, V_{{{j},c}}", pairs, value)
    if stage in ("d_scores", "flash"):
        p_ij = float(t.weights[row, col])
        if p_ij == 0.0 and t.mask is not None and not bool(t.mask[row, col]):
            why = latex_text(tr(N_("blocked by the mask: no gradient")))
            return f"dS_{{{i},{j}}} = P_{{{i},{j}}} (\\dots) = 0 \\cdot (\\dots) = 0 \\quad {why}"
        d_i = float(t.row_dot[row])
        if stage == "d_scores":
            pairs = list(zip(t.weights[row].tolist(), t.d_weights[row].tolist()))
            head = _sum_of(f"D_{{{i}}}", f"\\sum_k P_{{{i},k}}\\, dP_{{{i},k}}", pairs, d_i)
        else:
            pairs = list(zip(t.d_output[row].tolist(), t.output[row].tolist()))
            head = _sum_of(f"D_{{{i}}}", f"\\sum_c dO_{{{i},c}}\\, O_{{{i},c}}", pairs, d_i)
        dp = float(t.d_weights[row, col])
        return (head + r" \\[6pt] " + aligned(f"dS_{{{i},{j}}}", [
            f"P_{{{i},{j}}} (dP_{{{i},{j}}} - D_{{{i}}})", f"{number(p_ij)} \\cdot ({number(dp)} - {factor(d_i)})",
            number(value)]))
    if stage == "d_query":
        pairs = list(zip(t.d_scores[row].tolist(), t.key[:, col].tolist()))
        return _sum_of(f"dQ_{{{i},{j}}}", f"\\frac{{\\sum_k dS_{{{i},k}}\\, K_{{k,{j}}}}}{{\\sqrt{{d_k}}}}", pairs,
                       value, t.scale)
    if stage == "d_key":
        pairs = list(zip(t.d_scores[:, row].tolist(), t.query[:, col].tolist()))
        return _sum_of(f"dK_{{{i},{j}}}", f"\\frac{{\\sum_l dS_{{l,{i}}}\\, Q_{{l,{j}}}}}{{\\sqrt{{d_k}}}}", pairs,
                       value, t.scale)
    if stage in W_STAGES:
        name, grad = W_STAGES[stage]
        letter = name[2]
        upstream = {"q": t.d_query, "k": t.d_key, "v": t.d_value}[letter]
        pairs = list(zip(t.x[:, row].tolist(), upstream[:, col].tolist()))
        entry = _sum_of(f"dW^{{{letter}}}_{{{i},{j}}}", f"\\sum_l X_{{l,{i}}}\\, d{letter.upper()}_{{l,{j}}}",
                        pairs, value)
        fd = walk.finite_difference(name, row, col)
        check = latex_text(tr(N_("nudge W_{letter}[{i}, {j}] by ε = 0.000001: the loss moves by"), letter=letter, i=i, j=j))
        return (entry + r" \\[6pt] " + check + f"\\ {number(fd.actual_change)} \\approx \\varepsilon \\cdot "
                f"dW^{{{letter}}}_{{{i},{j}}} = {number(fd.predicted_change)}")
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


# ---------------------------------------------------------------- practice

def _mistake(key: str, value: float, hint: str, **params) -> Mistake:
    return Mistake(key, value, Message(hint, value=f"{value:.4g}", **params))


def backward_exercise(walk: BackwardWalkthrough, stage: str, row: int, col: int) -> Optional[Exercise]:
    """Entry (row, col) of ``stage`` as an exercise, with the known mistakes of the backward pass named: the
    softmax's off-diagonal terms forgotten, the ÷ √d_k forgotten, P dO instead of Pᵀ dO, dS instead of dSᵀ for dK,
    the sign of the update. None where there is nothing to compute (the FlashAttention comparison, dX).

    Raises:
        KeyError: an unknown stage. IndexError: (row, col) outside the explained panel.
    """
    from attention_core.backward.backward_walkthrough import W_STAGES, explained

    value = explained(walk, stage, row, col)
    t = walk.trace
    i, j = row + 1, col + 1
    vec = practice.vector
    if stage == "loss":
        return practice.value_exercise(f"dO_{{{i},{j}}}", f"O_{{{i},{j}}} - T_{{{i},{j}}}",
                                       (f"O_{{{i},{j}}} = {number(float(t.output[row, col]))}",
                                        f"T_{{{i},{j}}} = {number(float(t.target[row, col]))}"), value)
    if stage == "d_value":
        wrong = math.fsum(a * b for a, b in zip(t.weights[row].tolist(), t.d_output[:, col].tolist()))
        return Exercise(f"dV_{{{i},{j}}}", f"\\sum_l P_{{l,{i}}}\\, dO_{{l,{j}}}",
                        (vec(f"P_{{:,{i}}}", t.weights[:, row].tolist()), vec(f"dO_{{:,{j}}}", t.d_output[:, col].tolist()),
                         vec(f"P_{{{i},:}}", t.weights[row].tolist())), value,
                        practice._kept(value, [_mistake("p_not_transposed", wrong, N_(
                            "That is {value}, (P dO): row i of P. dV = Pᵀ dO takes column i of P: the weights every "
                            "query put on key i."))]))
    if stage == "d_weights":
        return practice.dot_exercise(f"dP_{{{i},{j}}}", f"\\sum_c dO_{{{i},c}}\\, V_{{{j},c}}",
                                     (f"dO_{{{i}}}", t.d_output[row].tolist()), (f"v_{{{j}}}", t.value[col].tolist()),
                                     value)
    if stage == "d_scores":
        p_row, dp_row = t.weights[row].tolist(), t.d_weights[row].tolist()
        p, dp = p_row[col], dp_row[col]
        return Exercise(f"dS_{{{i},{j}}}", f"P_{{{i},{j}}} \\left(dP_{{{i},{j}}} - \\sum_k P_{{{i},k}}\\, dP_{{{i},k}}\\right)",
                        (vec(f"P_{{{i}}}", p_row), vec(f"dP_{{{i}}}", dp_row)), value,
                        practice._kept(value, [_mistake("softmax_diagonal_only", p * (1 - p) * dp, N_(
                            "That is {value}, P(1 − P) dP: only the diagonal of the softmax's Jacobian. Every weight "
                            "of the row shares one sum, so dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik)."))]))
    if stage == "d_query":
        dot = math.fsum(a * b for a, b in zip(t.d_scores[row].tolist(), t.key[:, col].tolist()))
        return Exercise(f"dQ_{{{i},{j}}}", f"\\frac{{\\sum_k dS_{{{i},k}}\\, K_{{k,{j}}}}}{{\\sqrt{{d_k}}}}",
                        (vec(f"dS_{{{i}}}", t.d_scores[row].tolist()), vec(f"K_{{:,{j}}}", t.key[:, col].tolist()),
                         f"d_k = {t.query.shape[-1]}"), value,
                        practice._kept(value, [_mistake("gradient_no_scale", dot, N_(
                            "That is {value}: the sum without ÷ √d_k. The scores were divided by √d_k on the way "
                            "forward, so their gradient is too on the way back."))]))
    if stage == "d_key":
        dot = math.fsum(a * b for a, b in zip(t.d_scores[:, row].tolist(), t.query[:, col].tolist()))
        wrong = math.fsum(a * b for a, b in zip(t.d_scores[row].tolist(), t.query[:, col].tolist())) * t.scale
        return Exercise(f"dK_{{{i},{j}}}", f"\\frac{{\\sum_l dS_{{l,{i}}}\\, Q_{{l,{j}}}}}{{\\sqrt{{d_k}}}}",
                        (vec(f"dS_{{:,{i}}}", t.d_scores[:, row].tolist()), vec(f"dS_{{{i},:}}", t.d_scores[row].tolist()),
                         vec(f"Q_{{:,{j}}}", t.query[:, col].tolist()), f"d_k = {t.query.shape[-1]}"), value,
                        practice._kept(value, [
                            _mistake("ds_not_transposed", wrong, N_(
                                "That is {value}, (dS Q): row i of dS. Key i was scored by every query, so dK takes "
                                "column i of dS: dK = dSᵀ Q / √d_k.")),
                            _mistake("gradient_no_scale", dot, N_(
                                "That is {value}: the sum without ÷ √d_k. The scores were divided by √d_k on the way "
                                "forward, so their gradient is too on the way back."))]))
    if stage in W_STAGES:
        name, _grad = W_STAGES[stage]
        letter = name[2]
        upstream = {"q": t.d_query, "k": t.d_key, "v": t.d_value}[letter]
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
                        practice._kept(value, [_mistake("update_sign", w + s.learning_rate * dw, N_(
                            "That is {value}, W + η dW: a step up the loss. Gradient descent steps against the "
                            "gradient: W − η dW."))]))
    return None
