r"""One head of SmolLM2-135M-Instruct step by step, in the one step-through protocol, and the page's declaration.

The stages follow transformers' ``LlamaAttention`` for layer ℓ and query head r (see
:mod:`attention_core.smollm2.model`, whose :func:`~attention_core.smollm2.model.head_step` computes
them):

.. math::
    \hat X = \operatorname{RMSNorm}(X),\quad Q = \hat X W_q^{(r)},\ K = \hat X W_k^{(g)},\ V = \hat X W_v^{(g)},
    \quad g = \lfloor r / 3 \rfloor,\quad Q' = \operatorname{RoPE}(Q),\ K' = \operatorname{RoPE}(K),\quad
    Z = \operatorname{softmax}\!\left(\frac{Q' K'^\top}{\sqrt{d}} + M\right) V,\quad O^{(r)} = Z W_O^{(r)}

(RMSNorm: Zhang & Sennrich 2019, eq. 4; GQA: Ainslie et al. 2023; RoPE: Su et al. 2021, eq. 34 with Llama's pairs
(c, c + d/2); attention: Vaswani et al. 2017, eq. 1; M the causal mask.) The general formulas are built with sympy;
an entry's long sums (576 terms for a projection, 64 for a score, T for a weighted sum) are written with their
first three and last two terms and ``⋯``, ending with the model's own number. No user text goes through sympy.

Index legend: i the query token (row), j the key token or column, l and c summed indices, m = i − 1 the position
RoPE rotates by (positions start at 0), D = hidden size (576), d = head_dim (64), T tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import sympy as sp
import torch

from attention_core import practice
from attention_core.entry_formulas import masked_score_entry_latex
from attention_core.errors import N_, Message
from attention_core.fields import IntRange, OneBasedIndex, Switch, Text, label
from attention_core.latex import Translate, aligned, factor, latex_text, number, stacked
from attention_core.modern.rope import frequencies
from attention_core.page import Page
from attention_core.recipe import Recipe
from attention_core.smollm2 import measure
from attention_core.smollm2.measure import LmHeadStep, shown_token_labels
from attention_core.smollm2.model import (
    MODERN_LM_HEADS,
    MODERN_LM_LAYERS,
    MODERN_LM_MAX_CHARS,
    MODERN_LM_MAX_NEW_TOKENS,
    MODERN_LM_MAX_TOKENS,
    MODERN_LM_WIDTH,
    head_step,
)
from attention_core.stepthrough import TRANSFORMERS, Check, Panel, Stage, StepThrough, compare

#: An entry's sum is written out in full up to this many terms, else its first 3, ⋯, its last 2.
MAX_TERMS = 6
#: The tolerance of the check against the model's own attention: float32 through 30 layers of the model's fused
#: matrix products and ours in another order agree to about 1e-6; 1e-4 leaves room, far below a shown digit.
TOLERANCE = 1e-4

_i, _j, _l, _c = sp.symbols("i j l c", integer=True)
_D, _T, _d = sp.Symbol("D"), sp.Symbol("T"), sp.Symbol("d", positive=True)
_eps = sp.Symbol(r"\varepsilon", positive=True)
_X, _Xn, _Q, _K, _V, _Z, _M = (sp.Symbol(n, commutative=False) for n in ("X", r"\hat{X}", "Q", "K", "V", "Z", "M"))
_Qr, _Kr = sp.Symbol("Q'", commutative=False), sp.Symbol("K'", commutative=False)
_TOP = sp.Symbol(r"\top")
_softmax = sp.Function(r"\operatorname{softmax}")
_x, _xn, _g, _h = sp.IndexedBase("x"), sp.IndexedBase(r"\hat{x}"), sp.IndexedBase("g"), sp.IndexedBase(r"h^{(\ell - 1)}")
_q, _k, _v, _qr, _kr = (sp.IndexedBase(n) for n in ("q", "k", "v", "q'", "k'"))
_a, _at, _alpha, _z, _o, _mask = (sp.IndexedBase(n) for n in ("a", r"\tilde{a}", r"\alpha", "z", "o", "M"))
_W = {"query": sp.IndexedBase("W^{q}"), "key": sp.IndexedBase("W^{k}"), "value": sp.IndexedBase("W^{v}")}
_WO = sp.IndexedBase("W^{O}")
_LETTER = {"query": _q, "key": _k, "value": _v}


def _scaled() -> sp.Expr:
    return sp.Mul(_Qr, sp.Pow(_Kr, _TOP, evaluate=False), 1 / sp.sqrt(_d))


@lru_cache(maxsize=None)
def stage_formula(stage: str) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines (matrix form, element form), built with sympy.

    Raises:
        KeyError: a stage not in ``MODERN_LM.stages``.
    """
    rms = sp.sqrt(sp.Sum(_x[_i, _l] ** 2, (_l, 1, _D)) / _D + _eps)
    if stage == "inputs":
        return (sp.latex(sp.Eq(_X, sp.Symbol(r"H^{(\ell - 1)}", commutative=False), evaluate=False)),
                sp.latex(sp.Eq(_x[_i, _j], _h[_i, _j], evaluate=False)))
    if stage == "rmsnorm":
        return (sp.latex(sp.Eq(_Xn, sp.Function(r"\operatorname{RMSNorm}")(_X), evaluate=False)),
                sp.latex(sp.Eq(_xn[_i, _j], sp.Mul(_x[_i, _j] / rms, _g[_j], evaluate=False), evaluate=False)))
    if stage in _W:
        big = sp.Symbol(stage[0].upper(), commutative=False)
        which = "r" if stage == "query" else "g"
        matrix = sp.Eq(big, sp.Mul(_Xn, sp.Symbol(f"W_{stage[0]}^{{({which})}}", commutative=False)), evaluate=False)
        element = sp.Eq(_LETTER[stage][_i, _j], sp.Sum(sp.Mul(_xn[_i, _l], _W[stage][_l, _j], evaluate=False),
                                                       (_l, 1, _D)), evaluate=False)
        return sp.latex(matrix), sp.latex(element)
    if stage in ("rope_query", "rope_key"):
        v, vr = (_q, _qr) if stage == "rope_query" else (_k, _kr)
        m, ci = sp.Symbol("m", integer=True), sp.Symbol("c", integer=True)
        theta = sp.IndexedBase(r"\theta")
        phi = m * theta[ci]
        rot = sp.Matrix([[sp.cos(phi), -sp.sin(phi)], [sp.sin(phi), sp.cos(phi)]])
        return (sp.latex(sp.Eq(sp.Matrix([vr[m, ci], vr[m, ci + _d / 2]]),
                               sp.MatMul(rot, sp.Matrix([v[m, ci], v[m, ci + _d / 2]])), evaluate=False)),
                sp.latex(sp.Eq(theta[ci], sp.Symbol("b") ** (-2 * ci / _d), evaluate=False)) + r",\quad b = 100000,\ m = i - 1")
    if stage == "scaled_scores":
        return (sp.latex(sp.Eq(sp.Symbol("A", commutative=False), _scaled(), evaluate=False)),
                sp.latex(sp.Eq(_a[_i, _j], sp.Sum(_qr[_i, _c] * _kr[_j, _c], (_c, 1, _d)) / sp.sqrt(_d),
                               evaluate=False)))
    if stage == "masked_scores":
        return (sp.latex(sp.Eq(sp.Symbol(r"\tilde{A}", commutative=False), sp.Add(_scaled(), _M, evaluate=False), evaluate=False)),
                sp.latex(sp.Eq(_mask[_i, _j], sp.Piecewise((0, _j <= _i), (-sp.oo, True)), evaluate=False)))
    if stage == "weights":
        return (sp.latex(sp.Eq(sp.Symbol(r"\mathcal{A}", commutative=False),
                               _softmax(sp.Add(_scaled(), _M, evaluate=False)), evaluate=False)),
                sp.latex(sp.Eq(_alpha[_i, _j], sp.exp(_at[_i, _j]) / sp.Sum(sp.exp(_at[_i, _l]), (_l, 1, _i)),
                               evaluate=False)))
    if stage == "output":
        return (sp.latex(sp.Eq(_Z, sp.Mul(sp.Symbol(r"\mathcal{A}", commutative=False), _V), evaluate=False)),
                sp.latex(sp.Eq(_z[_i, _j], sp.Sum(sp.Mul(_alpha[_i, _l], _v[_l, _j], evaluate=False), (_l, 1, _i)),
                               evaluate=False)))
    if stage == "projected":
        return (sp.latex(sp.Eq(sp.Symbol("O^{(r)}", commutative=False),
                               sp.Mul(_Z, sp.Symbol("W_O^{(r)}", commutative=False)), evaluate=False)),
                sp.latex(sp.Eq(_o[_i, _j], sp.Sum(sp.Mul(_z[_i, _c], _WO[_c, _j], evaluate=False), (_c, 1, _d)),
                               evaluate=False)))
    raise KeyError(stage)


@lru_cache(maxsize=None)
def header_latex() -> str:
    """The page's header: the head's whole computation in one line (matrix forms of the stages)."""
    return r",\quad ".join(stage_formula(s)[0] for s in ("rmsnorm", "query", "key", "weights", "output"))


def stage_matrix(step: LmHeadStep, stage: str) -> torch.Tensor:
    """The matrix a stage shows: X, X̂ (T, D); Q, K, V, Q', K' (T, d); the scores and weights (T, T); Z (T, d);
    O^{(r)} (T, D).

    Raises:
        KeyError: an unknown stage.
    """
    return {"inputs": step.x, "rmsnorm": step.x_norm, "query": step.query, "key": step.key, "value": step.value,
            "rope_query": step.query_rotated, "rope_key": step.key_rotated, "scaled_scores": step.scaled_scores,
            "masked_scores": step.masked_scores, "weights": step.weights, "output": step.output,
            "projected": step.projected}[stage]


def _elided(terms: Sequence[str], tr: Translate) -> str:
    """Every term joined with +, or its first 3, ⋯ and last 2 with the count, when there are more than MAX_TERMS."""
    if len(terms) <= MAX_TERMS:
        return " + ".join(terms)
    return (" + ".join(terms[:3]) + r" + \cdots + " + " + ".join(terms[-2:])
            + r"\quad" + latex_text(str(tr(N_("({n} terms)"), n=len(terms)))))


def _products(left: Sequence[float], right: Sequence[float]) -> list[str]:
    return [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(left, right)]


def shift_reason(top: float, i: int, tr: Translate = Message) -> list[str]:
    """Why a weight's entry subtracts its row's largest score (``top``) before e^x, as LaTeX lines (none when the
    largest score is 0: nothing is subtracted). Subtracting it makes every exponent at most 0, so no e^x overflows,
    and the same factor e^(−top) divides the numerator and every term of the sum: it cancels."""
    if not top:
        return []
    return [f"{number(top)} = \\max_{{l \\le {i}}} \\tilde{{a}}_{{{i},l}}\\quad"
            + latex_text(str(tr(N_("(row {i}'s largest score)"), i=i))),
            latex_text(str(tr(N_("Subtracting it keeps every exponent at most 0: no overflow.")))),
            latex_text(str(tr(N_("Numerator and sum scale by the same factor: the ratio is unchanged."))))]


def entry_latex(step: LmHeadStep, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """Entry (row, col) of ``stage`` with its numbers in, as LaTeX (1-based indices shown; m = row is RoPE's position).

    Raises:
        KeyError: an unknown stage. IndexError: (row, col) outside the stage's matrix.
    """
    matrix = stage_matrix(step, stage)
    if not (0 <= row < matrix.shape[0] and 0 <= col < matrix.shape[1]):
        raise IndexError(f"entry ({row}, {col}) is outside {tuple(matrix.shape)}")
    value = float(matrix[row, col])
    i, j = row + 1, col + 1
    if stage == "inputs":
        return f"x_{{{i},{j}}} = h^{{(\\ell - 1)}}_{{{i},{j}}} = {number(value)}"
    if stage == "rmsnorm":
        x = step.x[row].tolist()
        mean_square = sum(a * a for a in x) / len(x)
        squares = [f"{factor(a)}^2" for a in x]
        return aligned(f"\\hat{{x}}_{{{i},{j}}}", [
            f"\\frac{{x_{{{i},{j}}}}}{{\\sqrt{{\\frac{{1}}{{D}}\\sum_l x_{{{i},l}}^2 + \\varepsilon}}}}\\, g_{{{j}}}",
            f"\\frac{{1}}{{{len(x)}}}\\left({_elided(squares, tr)}\\right) = {number(mean_square)}",
            f"\\frac{{{number(x[col])}}}{{\\sqrt{{{number(mean_square)} + {number(step.rms_eps)}}}}} \\cdot "
            f"{factor(float(step.norm_weight[col]))} = \\frac{{{number(x[col])}}}{{{number(float(step.rms[row, 0]))}}}"
            f" \\cdot {factor(float(step.norm_weight[col]))}",
            number(value)])
    if stage in ("query", "key", "value"):
        letter = stage[0]
        w = {"query": step.w_query, "key": step.w_key, "value": step.w_value}[stage]
        return aligned(f"{letter}_{{{i},{j}}}", [f"\\sum_l \\hat{{x}}_{{{i},l}}\\, W^{{{letter}}}_{{l,{j}}}",
                                                _elided(_products(step.x_norm[row].tolist(), w[:, col].tolist()), tr),
                                                number(value)])
    if stage in ("rope_query", "rope_key"):
        name = stage[-5]  # "q" or "k"
        v = step.query if stage == "rope_query" else step.key
        d = v.shape[1]
        half, pair = d // 2, col % (d // 2)
        phi = float(step.angles[row, pair])
        own, other = float(v[row, col]), float(v[row, (col + half) % d])
        sign, partner = ("-", col + 1 + half) if col < half else ("+", col + 1 - half)
        c, s = math.cos(phi), math.sin(phi)
        theta = float(frequencies(d, step.rope_theta)[pair])
        return (aligned(f"{name}'_{{{i},{j}}}", [
            f"{name}_{{{i},{j}}} \\cos\\varphi {sign} {name}_{{{i},{partner}}} \\sin\\varphi",
            f"{number(own)} \\cdot {factor(c)} {sign} {factor(other)} \\cdot {factor(s)}", number(value)])
            + f"\\qquad \\varphi = m\\,\\theta_{{{pair}}} = {row} \\cdot {number(theta)} = {number(phi)}")
    if stage == "scaled_scores":
        q, k = step.query_rotated[row].tolist(), step.key_rotated[col].tolist()
        d = len(q)
        dot = sum(a * b for a, b in zip(q, k))
        return aligned(f"a_{{{i},{j}}}", [f"\\frac{{\\sum_c q'_{{{i},c}}\\, k'_{{{j},c}}}}{{\\sqrt{{{d}}}}}",
                                          f"\\frac{{1}}{{\\sqrt{{{d}}}}}\\left({_elided(_products(q, k), tr)}\\right)",
                                          f"\\frac{{{number(dot)}}}{{{number(math.sqrt(d))}}}", number(value)])
    if stage == "masked_scores":
        return masked_score_entry_latex(row, col, float(step.scaled_scores[row, col]), col <= row)
    if stage == "weights":
        masked = step.masked_scores[row].tolist()[:row + 1]  # the keys it may see: 1 … i
        top = max(masked)
        exps = [math.exp(a - top) for a in masked]
        if col > row:
            return aligned(f"\\alpha_{{{i},{j}}}", [f"\\frac{{e^{{-\\infty}}}}{{\\sum_l e^{{\\tilde{{a}}_{{{i},l}}}}}}",
                                                   "0"])
        minus = "" if not top else f" - {number(top)}" if top > 0 else f" + {number(-top)}"
        terms = [f"e^{{{number(a - top)}}}" for a in masked]
        reason = shift_reason(top, i, tr)
        return stacked(*([stacked(*reason, gap="2pt")] if reason else []), aligned(f"\\alpha_{{{i},{j}}}", [
            f"\\frac{{e^{{\\tilde{{a}}_{{{i},{j}}}{minus}}}}}{{\\sum_{{l=1}}^{{{i}}} e^{{\\tilde{{a}}_{{{i},l}}{minus}}}}}",
            f"\\frac{{{terms[col]}}}{{{_elided(terms, tr)}}}",
            f"\\frac{{{number(exps[col])}}}{{{number(sum(exps))}}}", number(value)]))
    if stage == "output":
        weights, values = step.weights[row].tolist()[:row + 1], step.value[:row + 1, col].tolist()
        return aligned(f"z_{{{i},{j}}}", [f"\\sum_{{l=1}}^{{{i}}} \\alpha_{{{i},l}}\\, v_{{l,{j}}}",
                                          _elided(_products(weights, values), tr), number(value)])
    if stage == "projected":
        return aligned(f"o_{{{i},{j}}}", [f"\\sum_c z_{{{i},c}}\\, W^{{O}}_{{c,{j}}}",
                                          _elided(_products(step.output[row].tolist(), step.w_out[:, col].tolist()),
                                                  tr), number(value)])
    raise KeyError(stage)


def exercise(step: LmHeadStep, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) as an exercise in practice mode: a scaled score (from q'·k'), a weight, a context vector's
    entry; None elsewhere (read off, or sums of 576 terms). Raises IndexError outside the matrix."""
    value = float(stage_matrix(step, stage)[row, col])
    i, j = row + 1, col + 1
    if stage == "scaled_scores":
        q, k = step.query_rotated[row].tolist(), step.key_rotated[col].tolist()
        formula = stage_formula(stage)[1].split(" = ", 1)[1]
        return practice.scale_exercise(f"a_{{{i},{j}}}", formula, f"s_{{{i},{j}}}", sum(a * b for a, b in zip(q, k)),
                                       len(q), value, d_name="head_dim", d_latex="d", d_model=MODERN_LM_WIDTH)
    if stage == "weights":
        if col > row:
            return None  # a blocked key: 0 by the mask, nothing to compute
        formula = stage_formula(stage)[1].split(" = ", 1)[1]
        blocked = torch.isinf(step.masked_scores)
        return practice.softmax_exercise(f"\\alpha_{{{i},{j}}}", formula, f"\\tilde{{a}}_{{{i}}}",
                                         step.masked_scores.tolist(), row, col, value,
                                         unmasked=step.scaled_scores.tolist(),
                                         unscaled=(step.scaled_scores * math.sqrt(step.query.shape[1])).masked_fill(
                                             blocked, float("-inf")).tolist(), d=step.query.shape[1])
    if stage == "output":
        formula = stage_formula(stage)[1].split(" = ", 1)[1]
        return practice.weighted_sum_exercise(f"z_{{{i},{j}}}", formula, (f"\\alpha_{{{i}}}", step.weights[row].tolist()),
                                              (f"v_{{:,{j}}}", step.value[:, col].tolist()), value)
    return None


def model_checks(step: LmHeadStep) -> tuple[Check, ...]:
    """Our weights against the model's own eager attention on the same layer input, and the 9 heads' shares O^{(r)}
    summed against the layer's attention output (both from ``measure.layer_reference``)."""
    return (compare(step.weights, step.model_weights,
                    f"model.model.layers[{step.layer}].self_attn(...)[1][0, {step.head}]",
                    note=Message(N_("the head's weights; tolerance {tol:g}"), tol=TOLERANCE), tolerance=TOLERANCE,
                    against=TRANSFORMERS),
            compare(step.heads_sum, step.model_output,
                    f"model.model.layers[{step.layer}].self_attn(...)[0]",
                    note=Message(N_("the {h} heads' shares O^(r) summed; tolerance {tol:g}"), h=MODERN_LM_HEADS,
                                 tol=TOLERANCE), tolerance=TOLERANCE, against=TRANSFORMERS))


def modern_lm_step_through(step: LmHeadStep, stage: str) -> StepThrough:
    """The modern language model page's ``stage`` of one head, its rows labelled "1 The", "2 ␣capital", ...

    Raises:
        KeyError: an unknown stage.
    """
    if stage not in MODERN_LM.stages:
        raise KeyError(stage)
    labels = shown_token_labels(step.tokens)
    matrix = stage_matrix(step, stage)
    square = stage in ("scaled_scores", "masked_scores", "weights")
    cols = labels if square else tuple(f"{'d' if matrix.shape[1] == MODERN_LM_WIDTH else 'c'}{n + 1}"
                                       for n in range(matrix.shape[1]))
    panel = Panel("", matrix, labels, cols, row_title=Message(N_("query token")),
                  col_title=Message(N_("key token")) if square else Message(N_("column")))
    return StepThrough(
        page=MODERN_LM,
        stage=Stage(key=stage, panels=(panel,), formula=lambda tr: stage_formula(stage),
                    entry=lambda row, col, head, tr: entry_latex(step, stage, row, col, tr),
                    exercise=lambda row, col, head: exercise(step, stage, row, col),
                    code=(head_step, measure.layer_reference)),
        checks=model_checks(step), row_field="modern_lm.entry_row", col_field="modern_lm.entry_col",
    )


def modern_lm_recipe(step: LmHeadStep) -> Recipe:
    """The page's export recipe: the head recomputed from its layer's input and its slices of the weights, checked
    against the model's own attention probabilities and (summed over the heads) the layer's attention output."""
    from attention_core.modern.rope import rotate  # noqa: PLC0415
    from attention_core.recipe import ATTEND, source  # noqa: PLC0415 - a floor module, imported where used

    t = len(step.tokens)
    return Recipe(
        title=f"one head of SmolLM2-135M-Instruct (layer {step.layer + 1}, query head {step.head + 1}, "
              f"key/value head {step.kv_head + 1})",
        sources=("X_hat = X / sqrt(mean(X^2) + eps) * g (RMSNorm, Zhang & Sennrich 2019)",
                 "Q = X_hat W_q, K = X_hat W_k, V = X_hat W_v (grouped-query attention: Ainslie et al. 2023)",
                 "Q', K' = RoPE(Q), RoPE(K) (Su et al. 2021; Llama's pairs (c, c + d/2))",
                 "Z = softmax(Q' K'^T / sqrt(d) + M) V, O = Z W_O (Vaswani et al. 2017, eq. 1; M the causal mask)"),
        inputs=(("tokens", step.tokens, "the T byte-level BPE tokens, the rows"),
                ("X", step.x, "(T, D): the layer's input hidden states"),
                ("g", step.norm_weight, "(D,): RMSNorm's weight"), ("eps", step.rms_eps, "RMSNorm's epsilon"),
                ("W_q", step.w_query, "(D, d): the query head's rows of q_proj.weight, transposed"),
                ("W_k", step.w_key, "(D, d): its key/value head's rows of k_proj.weight, transposed"),
                ("W_v", step.w_value, "(D, d)"), ("W_o", step.w_out, "(d, D): its columns of o_proj.weight, transposed"),
                ("angles", step.angles, "(T, d/2): m * theta_c, theta_c = 100000^(-2c/d)"),
                ("model_weights", step.model_weights, "(T, T): the model's own attention probabilities"),
                ("layer_output", step.model_output, "(T, D): the model's attention output of the layer"),
                ("other_heads", step.heads_sum - step.projected, "(T, D): the other 8 heads' shares, summed")),
        code=(*ATTEND, *source(rotate), "",
              "X_hat = X / torch.sqrt(X.pow(2).mean(-1, keepdim=True) + eps) * g  # (T, D)",
              "Q, K, V = X_hat @ W_q, X_hat @ W_k, X_hat @ W_v  # (T, d) each",
              "Q_rot, K_rot = rotate(Q, angles), rotate(K, angles)",
              f"mask = torch.ones({t}, {t}, dtype=torch.bool).tril()  # the causal mask: key j <= query i",
              "scaled_scores, masked_scores, weights, output = attend(Q_rot, K_rot, V, mask)",
              "projected = output @ W_o  # (T, D): this head's share of the layer's attention output"),
        panels={"inputs": ("X",), "rmsnorm": ("X_hat",), "query": ("Q",), "key": ("K",), "value": ("V",),
                "rope_query": ("Q_rot",), "rope_key": ("K_rot",), "scaled_scores": ("scaled_scores",),
                "masked_scores": ("masked_scores",), "weights": ("weights",), "output": ("output",),
                "projected": ("projected",)},
        references=(f"same_as('the model\\'s own weights, layers[{step.layer}].self_attn', weights, model_weights, "
                    f"{TOLERANCE})",
                    f"same_as('the layer\\'s attention output (the 9 heads summed)', projected + other_heads, "
                    f"layer_output, {TOLERANCE})"),
    )


# ---------------------------------------------------------------- the page

#: The page's default prompt.
MODERN_LM_PROMPT = "The capital of France is"


@dataclass(frozen=True)
class ModernLMSettings:
    """The modern language model page's own settings (``settings.modern_lm``), indices 0-based.

    Attributes:
        prompt: the text the model continues (any Unicode, never altered here; cut by ``measure.encode_prompt``).
        chat_template: whether the model's chat template wraps the prompt (system, user, assistant turns).
        generated: how many tokens are generated after the prompt (0 … MODERN_LM_MAX_NEW_TOKENS).
        layer, head: the open query head (< 30, < 9).
        entry_row, entry_col: the explained entry (the page clamps them to the stage's matrix).
    """

    prompt: str = MODERN_LM_PROMPT
    chat_template: bool = False
    generated: int = 0
    layer: int = 0
    head: int = 0
    entry_row: int = 4
    entry_col: int = 0


MODERN_LM = Page(
    key="modern_lm", title=N_("Inside a modern language model"), icon=":material/neurology:", section="trained",
    summary=N_("Inside a modern language model: grouped-query heads and rotary positions in SmolLM2"),
    stages={
        "inputs": N_("Layer input X (hidden states)"),
        "rmsnorm": N_("RMSNorm X̂"),
        "query": N_("Queries Q = X̂ W_q"),
        "key": N_("Keys K = X̂ W_k (shared)"),
        "value": N_("Values V = X̂ W_v (shared)"),
        "rope_query": N_("RoPE: rotated queries Q′"),
        "rope_key": N_("RoPE: rotated keys K′"),
        "scaled_scores": N_("Scaled scores Q′ K′ᵀ ÷ √64"),
        "masked_scores": N_("Causal mask"),
        "weights": N_("Weights: softmax"),
        "output": N_("Output: weights · V"),
        "projected": N_("This head's share: Z W_O"),
    },
    step_through=modern_lm_step_through, default_stage="weights",
    default_stage_why=N_("The weights are what the head's picture above shows; RMSNorm, the projections, RoPE and the scores that make them come before."), recipe=modern_lm_recipe, settings=ModernLMSettings,
    fields=(
        Text("prompt", N_("The model's prompt must be text; restored the example prompt."),
             max_chars=MODERN_LM_MAX_CHARS, what=label(N_("Your prompt"))),
        Switch("chat_template", label(N_("The chat template switch"))),
        IntRange("generated", 0, MODERN_LM_MAX_NEW_TOKENS, label(N_("The number of generated tokens"))),
        OneBasedIndex("layer", MODERN_LM_LAYERS,
                      N_("The model has layers 1 to {count}; got layer {shown}, using layer 1.")),
        OneBasedIndex("head", MODERN_LM_HEADS, N_("The model has heads 1 to {count}; got head {shown}, using head 1.")),
        IntRange("entry_row", 0, MODERN_LM_MAX_TOKENS - 1, label(N_("The entry's row")), one_based=True),
        IntRange("entry_col", 0, max(MODERN_LM_MAX_TOKENS, MODERN_LM_WIDTH) - 1, label(N_("The entry's column")), one_based=True),
    ),
)
