r"""The formulas of one trained head's step-through, built with sympy, general and with numbers in.

The stages follow BERT's self-attention (Devlin et al. 2019; transformers'
``eager_attention_forward``) for layer ℓ, head r of all-MiniLM-L6-v2:

.. math::
    Q = X W_q + b_q,\quad K = X W_k + b_k,\quad V = X W_v + b_v,\qquad
    Z = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V

(Vaswani et al. 2017, eq. 1, with BERT's biases and additive padding mask M.)
Where a stage is the same as on the self-attention page (scores, scaling, output),
its formula comes from :mod:`attention_core.self_attention.formulas`. The model's sums are long
(D = 384 terms for a projection, n for a weighted sum), so an entry's numbers are
written with the first and last terms and ``⋯`` between; the result is the model's
own number, and :meth:`HeadEntry.recompute` redoes the whole sum in a plain loop
(the tests' naive reference). No user text goes through sympy.

Index legend: i query token, j key token or column, l the summed index,
n tokens, D = hidden size (384), d_k = head_dim (32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional, Sequence

import sympy as sp
import torch

from attention_core import practice
from attention_core.errors import N_, Message
from attention_core.fields import IntRange, OneBasedIndex, Text, label
from attention_core.inputs.tokens import token_labels
from attention_core.latex import Translate, latex_text, number_expr, translate_cases
from attention_core.lessons.trained_model.recipe import trained_model_recipe
from attention_core.minilm.model import (
    TRAINED_MODEL_HEADS,
    TRAINED_MODEL_LAYERS,
    TRAINED_MODEL_MAX_CHARS,
    TRAINED_MODEL_MAX_PADDING,
    TRAINED_MODEL_MAX_TOKENS,
    TRAINED_MODEL_WIDTH,
    HeadStep,
    head_step,
    head_weights,
)
from attention_core.page import Page
from attention_core.self_attention import formulas
from attention_core.stepthrough import TRANSFORMERS, Check, Panel, Stage, StepThrough

#: An entry's sum is written out in full up to this many terms, else first 3 ⋯ last 2.
MAX_TERMS = 6

_i, _j, _l = sp.symbols("i j l", integer=True)
_D, _n = sp.Symbol("D"), sp.Symbol("n")
_d_k = sp.Symbol("d_k", positive=True)
_X, _Q, _K, _V = (sp.Symbol(n, commutative=False) for n in "XQKV")
_H = sp.Symbol(r"H^{(\ell)}", commutative=False)
_M = sp.Symbol("M", commutative=False)
_TOP = sp.Symbol(r"\top")
_softmax = sp.Function(r"\operatorname{softmax}")
_x, _h, _a, _at, _alpha, _mask, _m = (
    sp.IndexedBase(n) for n in ("x", r"h^{(\ell)}", "a", r"\tilde{a}", r"\alpha", "M", "m")
)
_z, _v = sp.IndexedBase("z"), sp.IndexedBase("v")
_elem = {"query": sp.IndexedBase("q"), "key": sp.IndexedBase("k"), "value": sp.IndexedBase("v")}
_W = {name: sp.Symbol(f"W_{name[0]}", commutative=False) for name in _elem}
_B = {name: sp.Symbol(f"b_{name[0]}", commutative=False) for name in _elem}
_w = {name: sp.IndexedBase(f"W^{{{name[0]}}}") for name in _elem}
_b = {name: sp.IndexedBase(f"b^{{{name[0]}}}") for name in _elem}


def _scaled(kt) -> sp.Expr:
    return sp.Mul(_Q, kt, 1 / sp.sqrt(_d_k))


def _matrix_formula(stage: str) -> sp.Expr:
    kt = sp.Pow(_K, _TOP, evaluate=False)
    if stage == "inputs":
        return sp.Eq(_X, _H, evaluate=False)
    if stage in _W:
        return sp.Eq(sp.Symbol(stage[0].upper(), commutative=False), sp.Add(sp.Mul(_X, _W[stage]), _B[stage], evaluate=False), evaluate=False)
    if stage == "mask":
        return sp.Eq(_M, sp.Symbol(r"\mathrm{mask}(\text{[PAD]})", commutative=False), evaluate=False)
    if stage == "masked_scores":
        return sp.Eq(sp.Symbol(r"\tilde{A}", commutative=False), sp.Add(_scaled(kt), _M, evaluate=False), evaluate=False)
    if stage == "weights":
        return sp.Eq(sp.Symbol(r"\mathcal{A}", commutative=False), _softmax(sp.Add(_scaled(kt), _M, evaluate=False)), evaluate=False)
    if stage == "output":
        return sp.Eq(sp.Symbol("Z", commutative=False),
                     sp.Mul(_softmax(sp.Add(_scaled(kt), _M, evaluate=False)), _V), evaluate=False)
    raise KeyError(stage)


def _element_formula(stage: str, i=_i, j=_j) -> sp.Expr:
    """The element form of a stage, for symbolic (i, j) or for given 1-based indices."""
    if stage == "inputs":
        return sp.Eq(_x[i, j], _h[i, j], evaluate=False)
    if stage in _W:
        total = sp.Sum(sp.Mul(_x[i, _l], _w[stage][_l, j], evaluate=False), (_l, 1, _D))
        return sp.Eq(_elem[stage][i, j], sp.Add(total, _b[stage][j], evaluate=False), evaluate=False)
    if stage == "mask":
        return sp.Eq(_mask[i, j], sp.Piecewise((0, sp.Eq(_m[j], 1)), (-sp.oo, True)), evaluate=False)
    if stage == "masked_scores":
        return sp.Eq(_at[i, j], sp.Add(_a[i, j], _mask[i, j], evaluate=False), evaluate=False)
    if stage == "weights":
        return sp.Eq(_alpha[i, j], sp.exp(_at[i, j]) / sp.Sum(sp.exp(_at[i, _l]), (_l, 1, _n)), evaluate=False)
    if stage == "output":  # as on the self-attention page, summed over the n tokens
        return sp.Eq(_z[i, j], sp.Sum(sp.Mul(_alpha[i, _l], _v[_l, j], evaluate=False), (_l, 1, _n)), evaluate=False)
    raise KeyError(stage)


@lru_cache(maxsize=None)
def head_formula(stage: str, tr: Translate = Message) -> tuple[str, str]:
    """The (matrix form, element form) of a stage, as LaTeX.

    Args:
        stage: a key of ``TRAINED_MODEL.stages``.
        tr: puts the words of the formula in the interface language (default: English).

    Raises:
        KeyError: for a stage not in ``TRAINED_MODEL.stages``.
    """
    matrix, element = _head_formula(stage)
    return matrix, translate_cases(element, tr)


@lru_cache(maxsize=None)
def _head_formula(stage: str) -> tuple[str, str]:
    """:func:`head_formula` in English (constant per stage, so cached)."""
    if stage not in TRAINED_MODEL.stages:
        raise KeyError(stage)
    if stage in ("scores", "scaled_scores"):
        return formulas.self_attention_formula(stage)
    return sp.latex(_matrix_formula(stage), order="none"), sp.latex(_element_formula(stage), order="none")


@dataclass(frozen=True)
class HeadEntry:
    """The numbers behind entry (row, col) of one stage of one trained head.

    Attributes:
        stage: a key of ``TRAINED_MODEL.stages``.
        row, col: 0-based indices into that stage's matrix.
        left, right: the vectors multiplied term by term (x_i and the column of W for a
            projection, q_i and k_j for a score, the weight row and V's column for the
            output); for ``scaled_scores`` (s_ij,); for ``masked_scores`` (a_ij, M_ij); for
            ``weights`` the row of masked scores; for ``inputs`` and ``mask`` (value,).
        bias: b_j for a projection, else 0.
        value: the stage's own number at (row, col), from the trace.
        d_k: the head's width.
        key_is_real: for ``mask``, whether key token ``col`` is a real token (not [PAD]).
    """

    stage: str
    row: int
    col: int
    left: tuple[float, ...]
    right: tuple[float, ...]
    bias: float
    value: float
    d_k: int
    key_is_real: bool = True

    def recompute(self) -> float:
        """The entry recomputed from its numbers with a plain Python loop (float64)."""
        if self.stage in ("inputs", "mask"):
            return self.left[0]
        if self.stage == "scaled_scores":
            return self.left[0] / math.sqrt(self.d_k)
        if self.stage == "masked_scores":
            return self.left[0] + self.left[1]
        if self.stage == "weights":
            finite = [a for a in self.left if a != -math.inf]
            top = max(finite)
            exps = [math.exp(a - top) if a != -math.inf else 0.0 for a in self.left]
            return exps[self.col] / sum(exps)
        total = 0.0
        for a, b in zip(self.left, self.right):
            total += a * b
        return total + self.bias


def head_stage_matrix(step: HeadStep, stage: str):
    """The matrix a stage produces: X (n, D), Q/K/V (n, d_k), scores..weights (n, n), output (n, d_k)."""
    att = step.trace.attention
    return {
        "inputs": step.trace.x,
        "query": att.query,
        "key": att.key,
        "value": att.value,
        "scores": att.scores,
        "scaled_scores": att.scaled_scores,
        "mask": step.additive_mask,
        "masked_scores": att.masked_scores,
        "weights": att.weights,
        "output": att.output,
    }[stage]


def head_entry_of(step: HeadStep, stage: str, row: int, col: int) -> HeadEntry:
    """Collect the numbers that make entry (row, col) of ``stage``.

    Raises:
        KeyError: unknown stage. IndexError: row or col out of range.
    """
    trace, att = step.trace, step.trace.attention
    matrix = head_stage_matrix(step, stage)
    if not (0 <= row < matrix.shape[0] and 0 <= col < matrix.shape[1]):
        raise IndexError(f"entry ({row}, {col}) is outside {tuple(matrix.shape)}")
    value = float(matrix[row, col])

    def vec(t) -> tuple[float, ...]:
        return tuple(float(v) for v in t)

    bias, key_is_real = 0.0, True
    if stage in ("inputs", "mask"):
        left, right = (value,), ()
        key_is_real = stage != "mask" or value == 0.0
    elif stage in _W:
        w = {"query": trace.w_query, "key": trace.w_key, "value": trace.w_value}[stage]
        b = {"query": trace.b_query, "key": trace.b_key, "value": trace.b_value}[stage]
        left, right, bias = vec(trace.x[row]), vec(w[:, col]), float(b[col])
    elif stage == "scores":
        left, right = vec(att.query[row]), vec(att.key[col])
    elif stage == "scaled_scores":
        left, right = (float(att.scores[row, col]),), ()
    elif stage == "masked_scores":
        left, right = (float(att.scaled_scores[row, col]), float(step.additive_mask[row, col])), ()
    elif stage == "weights":
        left, right = vec(att.masked_scores[row]), ()
    elif stage == "output":
        left, right = vec(att.weights[row]), vec(att.value[:, col])
    else:
        raise KeyError(stage)
    return HeadEntry(stage, row, col, left, right, bias, value, step.d_k, key_is_real)


def _elided(term: Callable[[int], str], count: int, tr: Translate) -> tuple[str, str]:
    """(``t1 + t2 + t3 + ⋯ + t_{k-1} + t_k``, a note with the count) or (every term, "") when few. ``term(k)`` writes
    the k-th term (0-based): only the terms shown are written (a 512-token sum writes 5, not 512)."""
    if count <= MAX_TERMS:
        return " + ".join(term(k) for k in range(count)), ""
    return (" + ".join(term(k) for k in range(3)) + r" + \cdots + " + " + ".join(term(k) for k in (count - 2, count - 1)),
            r"\qquad" + latex_text(str(tr(N_("({n} terms)"), n=count))))


def _product(a: float, b: float) -> str:
    return sp.latex(sp.Mul(number_expr(a), number_expr(b), evaluate=False), mul_symbol="dot")


def head_entry_latex(entry: HeadEntry, tr: Translate = Message) -> str:
    """The element formula of ``entry`` with its numbers substituted, and the result.

    Long sums show their first three and last two terms; indices are 1-based.

    Args:
        entry: from :func:`head_entry_of`.
        tr: puts the words of the formula (the count of an elided sum, the mask's note) in the
            interface language (default: English); the page passes ``ui.i18n._``.
    """
    i, j = entry.row + 1, entry.col + 1
    result = sp.latex(number_expr(entry.value)) if math.isinf(entry.value) or entry.value == 0 else sp.latex(
        sp.Float(entry.value, 4))
    note = ""
    if entry.stage in ("scores", "scaled_scores"):
        # the self-attention page's element forms (s_ij = Σ q k, a_ij = s_ij / √d_k) at (i, j)
        general_tex = sp.latex(formulas._element_formula(entry.stage, i, j), order="none")
    else:
        general_tex = sp.latex(_element_formula(entry.stage, i, j), order="none")

    if entry.stage == "inputs":
        numbers = None
    elif entry.stage == "mask":
        note_text = (tr(N_("(token {j} is a real token)"), j=j) if entry.key_is_real
                     else tr(N_("(token {j} is [PAD])"), j=j))
        numbers = r"%s\quad%s" % ("0" if entry.key_is_real else r"-\infty", latex_text(str(note_text)))
        lhs, general_rhs = general_tex.split(" = ", 1)
        return r"\begin{aligned} %s &= %s \\ &= %s \end{aligned}" % (lhs, translate_cases(general_rhs, tr), numbers)
    elif entry.stage == "scaled_scores":
        numbers = r"\frac{%s}{\sqrt{%d}}" % (sp.latex(number_expr(entry.left[0])), entry.d_k)
    elif entry.stage == "masked_scores":
        numbers = "%s + (%s)" % (sp.latex(number_expr(entry.left[0])), sp.latex(number_expr(entry.left[1])))
    elif entry.stage == "weights":
        def exp(k: int) -> str:
            return sp.latex(sp.exp(number_expr(entry.left[k]), evaluate=False))

        denominator, note = _elided(exp, len(entry.left), tr)
        numbers = r"\frac{%s}{%s}" % (exp(entry.col), denominator)
    else:
        numbers, note = _elided(lambda k: _product(entry.left[k], entry.right[k]), len(entry.left), tr)
        if entry.stage in _W:
            numbers += " + (%s)" % sp.latex(number_expr(entry.bias))
    lhs, general_rhs = general_tex.split(" = ", 1)
    lines = [general_rhs] + ([numbers] if numbers is not None else []) + [result + note]
    # one step per line: the sums are long, and a projector is not wide
    return r"\begin{aligned} %s &= %s \end{aligned}" % (lhs, r" \\ &= ".join(lines))


@lru_cache(maxsize=256)
def cached_head_entry_latex(entry: HeadEntry, tr: Translate = Message) -> str:
    """:func:`head_entry_latex`, cached on the entry's numbers and the translator.

    ``tr`` must compare equal exactly when it translates alike (the renderer passes ``ui.i18n.Translator``,
    a frozen dataclass of the language); a 384-term sum takes tens of milliseconds to write.
    """
    return head_entry_latex(entry, tr)


def trained_head_exercise(step: HeadStep, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of a trained head's stage as an exercise (practice mode): the scaled scores, the weights
    and the output; None elsewhere (read off, or sums of 32 to 384 terms, too long to add up by hand).

    Raises:
        KeyError: unknown stage. IndexError: row or col out of range.
    """
    entry = head_entry_of(step, stage, row, col)
    if stage not in ("scaled_scores", "weights", "output"):
        return None
    att = step.trace.attention
    i, j = row + 1, col + 1
    lhs, formula = (formulas._element_sides(stage, i, j) if stage == "scaled_scores"
                    else tuple(sp.latex(side, order="none") for side in _element_formula(stage, i, j).args))
    if stage == "scaled_scores":
        return practice.scale_exercise(lhs, formula, f"s_{{{i},{j}}}", entry.left[0], entry.d_k, entry.value,
                                       d_model=step.trace.x.shape[-1])
    if stage == "weights":
        blocked = torch.isinf(att.masked_scores)
        return practice.softmax_exercise(lhs, formula, f"a'_{{{i}}}", att.masked_scores.tolist(), row, col,
                                         entry.value, unmasked=att.scaled_scores.tolist() if bool(blocked.any()) else None,
                                         unscaled=att.scores.masked_fill(blocked, float("-inf")).tolist(), d=entry.d_k)
    if stage == "output":
        return practice.weighted_sum_exercise(lhs, formula, (f"\\alpha_{{{i}}}", entry.left),
                                              (f"v_{{:,{j}}}", entry.right), entry.value)
    return None


def trained_head_step_through(step: HeadStep, stage: str, labels: Sequence[str]) -> StepThrough:
    """One trained head's ``stage`` in the one step-through protocol (:mod:`attention_core.stepthrough`).

    Args:
        step: the head recomputed by ``head_step``.
        stage: a key of ``TRAINED_MODEL.stages``.
        labels: the n token labels (rows; and columns of the n × n stages).

    Raises:
        KeyError: an unknown stage.
    """
    if stage not in TRAINED_MODEL.stages:
        raise KeyError(stage)
    matrix = head_stage_matrix(step, stage)
    square = stage in ("scores", "scaled_scores", "mask", "masked_scores", "weights")  # n × n: tokens both ways
    cols = tuple(labels) if square else tuple(f"{'d' if stage == 'inputs' else 'c'}{j + 1}"
                                              for j in range(matrix.shape[1]))
    panel = Panel("", matrix, tuple(labels), cols,
                  row_title=Message(N_("token")) if stage == "inputs" else Message(N_("query token")),
                  col_title=Message(N_("key token")) if square else Message(N_("column")))
    details = (Message(N_("m_j is BERT's attention_mask: 1 for a real token, 0 for [PAD].")),) if stage == "mask" else ()
    return StepThrough(
        page=TRAINED_MODEL,
        stage=Stage(
            key=stage, panels=(panel,),
            formula=lambda tr: head_formula(stage, tr),
            entry=lambda row, col, head, tr: cached_head_entry_latex(head_entry_of(step, stage, row, col), tr),
            exercise=lambda row, col, head: trained_head_exercise(step, stage, row, col),
            code=(head_weights, head_step), details=details,
        ),
        checks=(Check(f"model(...).attentions[{step.layer}][0, {step.head}]", step.max_abs_diff, step.matches,
                       against=TRANSFORMERS),),
        row_field="trained_model.entry_row", col_field="trained_model.entry_col",
    )


@lru_cache(maxsize=None)
def header_latex() -> str:
    r"""The trained page's header: Z = softmax(Q Kᵀ / √d_k + M) V with BERT's biased projections, as LaTeX.

    Built from the stages' own matrix formulas (Vaswani et al. 2017, eq. 1; Devlin et al. 2019).
    """
    lines = [sp.latex(_matrix_formula(stage), order="none") for stage in ("output", "query", "key", "value")]
    return lines[0] + r",\quad " + r",\ ".join(lines[1:])


def trained_model_step_through(step: HeadStep, stage: str) -> StepThrough:
    """The trained model page's ``stage`` of one head, its rows labelled as on the page ("1 [CLS]", "2 the", ...)."""
    return trained_head_step_through(step, stage, token_labels(step.tokens))


# ---------------------------------------------------------------- the page

#: The page's default text.
MODEL_SENTENCE = "The cat sat on the mat because it was tired."


@dataclass(frozen=True)
class TrainedModelSettings:
    """The trained model page's own settings (``settings.trained_model``), all indices 0-based.

    Attributes:
        sentence: the text the model reads (any Unicode; never altered here, checked and cut by
            ``model.tokenize``: TRAINED_MODEL_MAX_TOKENS WordPieces, [PAD]s included).
        padding: how many [PAD] tokens to append (0..TRAINED_MODEL_MAX_PADDING; shows the mask).
        layer, head: the head that is opened (< TRAINED_MODEL_LAYERS and < TRAINED_MODEL_HEADS).
        entry_row, entry_col: the explained entry (the page clamps them to the stage's matrix, up to 512 × 512).
    """

    sentence: str = MODEL_SENTENCE
    padding: int = 0
    layer: int = 0
    head: int = 0
    entry_row: int = 8
    entry_col: int = 2


TRAINED_MODEL = Page(
    key="trained_model", title=N_("Inside a trained model"), icon=":material/model_training:", section="trained",
    summary=N_("Inside a trained model: the real heads of a pretrained Transformer"),
    stages={
        "inputs": N_("Layer input X (hidden states)"),
        "query": N_("Queries Q = X W_q + b_q"),
        "key": N_("Keys K = X W_k + b_k"),
        "value": N_("Values V = X W_v + b_v"),
        "scores": N_("Scores Q Kᵀ"),
        "scaled_scores": N_("Scaled scores ÷ √d_k"),
        "mask": N_("Padding mask M"),
        "masked_scores": N_("Masked scores + M"),
        "weights": N_("Weights: softmax"),
        "output": N_("Output: weights · V"),
    },
    step_through=trained_model_step_through, default_stage="weights",
    default_stage_why=N_("The weights are what the head's map above shows; the hidden states, projections and scores that make them come before."), recipe=trained_model_recipe,
    settings=TrainedModelSettings,
    fields=(
        Text("sentence", N_("The model's text must be text; restored the example sentence."),
             max_chars=TRAINED_MODEL_MAX_CHARS, what=label(N_("Your text"))),
        IntRange("padding", 0, TRAINED_MODEL_MAX_PADDING, label(N_("The number of [PAD] tokens"))),
        OneBasedIndex("layer", TRAINED_MODEL_LAYERS,
                      N_("The model has layers 1 to {count}; got layer {shown}, using layer 1.")),
        OneBasedIndex("head", TRAINED_MODEL_HEADS, N_("The model has heads 1 to {count}; got head {shown}, using head 1.")),
        IntRange("entry_row", 0, TRAINED_MODEL_MAX_TOKENS - 1, label(N_("The entry's row")), one_based=True),
        IntRange("entry_col", 0, max(TRAINED_MODEL_MAX_TOKENS, TRAINED_MODEL_WIDTH) - 1,
                 label(N_("The entry's column")), one_based=True),
    ),
    legacy={"model_sentence": "sentence", "model_padding": "padding", "model_layer": "layer", "model_head": "head", "model_stage": "stage", "model_entry_row": "entry_row", "model_entry_col": "entry_col"},
)
