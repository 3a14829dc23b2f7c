r"""The *Differential attention* page's heatmaps, one entry with its numbers in, and that entry as an exercise.

:func:`differential_panels` gives each stage's panels for the walk-through's chosen head r (exactly one explained);
:func:`explain_differential` writes the explained entry as LaTeX with its numbers in; :func:`differential_exercise`
asks it in practice mode, naming this page's mistakes (λ_init forgotten, the second map not scaled by λ, the maps
added, one map only, the norm or its (1 − λ_init) scale forgotten) besides the shared ones.

Shape legend: T tokens, D = d_model, h heads, d = head_dim (each half of q and k; values are 2d wide). Indices on
screen are 1-based.

Sources: Ye et al. 2025, "Differential Transformer" (ICLR 2025), sec. 2.1-2.2.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

from attention_core import practice
from attention_core.entry_formulas import masked_weight_entry_latex
from attention_core.errors import N_, Message
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, aligned, factor, number, terms_lines
from attention_core.lessons.differential_attention.walk import DifferentialWalkthrough
from attention_core.modern.differential import LAMBDA_NAMES, NORM_EPS
from attention_core.stepthrough import Panel, explained_value

_TOKEN, _QUERY, _KEY = Message(N_("token")), Message(N_("query token")), Message(N_("key token"))
_COLUMN = Message(N_("column"))
#: The rows of the λ stage's table.
LAMBDA_ROWS = ("λ_q1 · λ_k1", "λ_q2 · λ_k2", "exp(λ_q1 · λ_k1)", "exp(λ_q2 · λ_k2)", "λ_init", "λ")


def _lambda_column(walk: DifferentialWalkthrough) -> torch.Tensor:
    t = walk.trace
    return torch.cat([t.lambda_parts, torch.tensor([t.lambda_init, t.lam])])[:, None]


def differential_panels(walk: DifferentialWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage`` for head r = ``walk.head``; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    t, r = walk.trace, walk.head
    rows = tuple(token_labels(walk.tokens))
    half, wide = tuple(dim_labels("d", t.head_dim)), tuple(dim_labels("d", 2 * t.head_dim))
    head = f"r = {r + 1}"
    if stage == "split":
        return (Panel(f"Q1 ({head})", t.query1[r], rows, half, _TOKEN, _COLUMN),
                Panel(f"Q2 ({head})", t.query2[r], rows, half, _TOKEN, _COLUMN, explained=False),
                Panel(f"K1 ({head})", t.key1[r], rows, half, _TOKEN, _COLUMN, explained=False),
                Panel(f"K2 ({head})", t.key2[r], rows, half, _TOKEN, _COLUMN, explained=False))
    if stage == "maps":
        return (Panel(Message(N_("The first map A1 = softmax(Q1 K1ᵀ / √d) ({head})"), head=head), t.first.weights[r],
                      rows, rows, _QUERY, _KEY),
                Panel(Message(N_("The second map A2 = softmax(Q2 K2ᵀ / √d) ({head})"), head=head),
                      t.second.weights[r], rows, rows, _QUERY, _KEY, explained=False))
    if stage == "lambda":
        vectors = torch.stack([t.weights[name] for name in LAMBDA_NAMES])
        return (Panel(Message(N_("λ's four learned vectors (shared by every head)")), vectors,
                      ("λ_q1", "λ_k1", "λ_q2", "λ_k2"), half, Message(N_("vector")), _COLUMN, explained=False),
                Panel(Message(N_("λ, step by step (layer l = {l})"), l=t.layer), _lambda_column(walk), LAMBDA_ROWS,
                      ("",), "", ""))
    if stage == "difference":
        return (Panel(Message(N_("A1 ({head})"), head=head), t.first.weights[r], rows, rows, _QUERY, _KEY,
                      explained=False),
                Panel(Message(N_("λ A2, λ = {lam:.3f} ({head})"), lam=t.lam, head=head), t.lam * t.second.weights[r],
                      rows, rows, _QUERY, _KEY, explained=False),
                Panel(Message(N_("The difference D = A1 − λ A2 ({head})"), head=head), t.difference[r], rows, rows,
                      _QUERY, _KEY))
    if stage == "values":
        return (Panel(f"V ({head})", t.value[r], rows, wide, _TOKEN, _COLUMN, explained=False),
                Panel(Message(N_("D V: the values weighed by the difference ({head})"), head=head), t.mixed[r], rows,
                      wide, _TOKEN, _COLUMN))
    if stage == "norm":
        return (Panel(Message(N_("D V ({head})"), head=head), t.mixed[r], rows, wide, _TOKEN, _COLUMN,
                      explained=False),
                Panel(Message(N_("(1 − λ_init) · RMSNorm(D V) ({head})"), head=head), t.head_output[r], rows, wide,
                      _TOKEN, _COLUMN))
    if stage == "output":
        d2 = 2 * t.head_dim
        heads = tuple(f"{k // d2 + 1}·{k % d2 + 1}" for k in range(t.concat.shape[-1]))
        return (Panel(Message(N_("The heads side by side")), t.concat, rows, heads, _TOKEN,
                      Message(N_("head · column")), explained=False),
                Panel("u = [o_1 … o_h] W_O", t.output, rows, tuple(dim_labels("d", t.output.shape[-1])), _TOKEN,
                      _COLUMN))
    if stage == "cancel":
        n = walk.noise
        return (Panel(Message(N_("The noise N, the same in both maps")), n.noise, rows, rows, _QUERY, _KEY,
                      explained=False),
                Panel(Message(N_("A1 with the noise ({head})"), head=head), n.first[r], rows, rows, _QUERY, _KEY,
                      explained=False),
                Panel(Message(N_("D with the noise: A1′ − λ A2′ ({head})"), head=head), n.difference[r], rows, rows,
                      _QUERY, _KEY))
    raise KeyError(stage)


def _dot(left: list[float], right: list[float]) -> list[str]:
    return [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(left, right)]


def _lambda_entry(walk: DifferentialWalkthrough, row: int) -> str:
    t = walk.trace
    w = {name: t.weights[name].tolist() for name in LAMBDA_NAMES}
    a, b, ea, eb = (float(v) for v in t.lambda_parts)
    if row in (0, 1):
        q, k = ("lambda_q1", "lambda_k1") if row == 0 else ("lambda_q2", "lambda_k2")
        return aligned(f"\\lambda_{{q{row + 1}}} \\cdot \\lambda_{{k{row + 1}}}",
                       [terms_lines(_dot(w[q], w[k])), number(a if row == 0 else b)])
    if row in (2, 3):
        x = a if row == 2 else b
        return aligned(f"e^{{\\lambda_{{q{row - 1}}} \\cdot \\lambda_{{k{row - 1}}}}}", [f"e^{{{x:.4g}}}",
                                                                                      number(ea if row == 2 else eb)])
    if row == 4:
        return aligned("\\lambda_{\\mathrm{init}}", [f"0.8 - 0.6\\, e^{{-0.3 ({t.layer} - 1)}}", number(t.lambda_init)])
    return aligned("\\lambda", ["e^{\\lambda_{q1} \\cdot \\lambda_{k1}} - e^{\\lambda_{q2} \\cdot \\lambda_{k2}} + "
                                "\\lambda_{\\mathrm{init}}", f"{factor(ea)} - {factor(eb)} + {factor(t.lambda_init)}",
                                number(t.lam)])


def explain_differential(walk: DifferentialWalkthrough, stage: str, row: int, col: int,
                         tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel, numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(differential_panels(walk, stage), row, col)
    t, r = walk.trace, walk.head
    i, j = row + 1, col + 1
    if stage == "split":
        return aligned(f"q^{{1}}_{{{i},{j}}}", [f"\\sum_l x_{{{i},l}}\\, W^{{q}}_{{l,{r * 2 * t.head_dim + j}}}",
                                                terms_lines(_dot(t.x[row].tolist(),
                                                                 t.weights["w_query"][:, r * 2 * t.head_dim + col]
                                                                 .tolist())), number(value)])
    if stage == "maps":
        return masked_weight_entry_latex(row, col, t.first.masked_scores[r, row].tolist(), value, head=r, tr=tr)
    if stage == "lambda":
        return _lambda_entry(walk, row)
    if stage == "difference":
        a1, a2 = float(t.first.weights[r, row, col]), float(t.second.weights[r, row, col])
        return aligned(f"D_{{{i},{j}}}", [f"A^{{1}}_{{{i},{j}}} - \\lambda\\, A^{{2}}_{{{i},{j}}}",
                                          f"{factor(a1)} - {factor(t.lam)} \\cdot {factor(a2)}", number(value)])
    if stage == "values":
        terms = _dot(t.difference[r, row, :row + 1].tolist(), t.value[r, :row + 1, col].tolist())
        return aligned(f"m_{{{i},{j}}}", [f"\\sum_{{l \\leq {i}}} D_{{{i},l}}\\, v_{{l,{j}}}", terms_lines(terms),
                                          number(value)])
    if stage == "norm":
        m = t.mixed[r, row].tolist()
        rms = math.sqrt(math.fsum(v * v for v in m) / len(m) + NORM_EPS)
        return aligned(f"o_{{{i},{j}}}", [
            "(1 - \\lambda_{\\mathrm{init}})\\, \\frac{m_{i,j}}{\\sqrt{\\frac{1}{2d} \\sum_l m_{i,l}^2 + \\epsilon}}",
            f"{factor(1 - t.lambda_init)} \\cdot \\frac{{{factor(m[col])}}}{{{number(rms)}}}", number(value)])
    if stage == "output":
        terms = _dot(t.concat[row].tolist(), t.weights["w_out"][:, col].tolist())
        return aligned(f"u_{{{i},{j}}}", [f"\\sum_l o_{{{i},l}}\\, W^{{O}}_{{l,{j}}}", terms_lines(terms), number(value)])
    if stage == "cancel":
        n = walk.noise
        a1, a2 = float(n.first[r, row, col]), float(n.second[r, row, col])
        return aligned(f"D'_{{{i},{j}}}", [f"A'^{{1}}_{{{i},{j}}} - \\lambda\\, A'^{{2}}_{{{i},{j}}}",
                                           f"{factor(a1)} - {factor(t.lam)} \\cdot {factor(a2)}", number(value)])
    raise KeyError(stage)


def _mistake(key: str, value: float, template: str, **params: object) -> practice.Mistake:
    return practice.Mistake(key, value, Message(template, value=f"{value:.4g}", **params))


def _difference_exercise(lhs: str, a1: float, a2: float, lam: float, value: float) -> practice.Exercise:
    mistakes = [_mistake("difference_no_lambda", a1 - a2, N_("That is {value} = A1 − A2: the second map is scaled by "
                                                             "λ = {lam} before it is subtracted."), lam=f"{lam:.4g}"),
                _mistake("difference_added", a1 + lam * a2, N_("That is {value} = A1 + λ A2: the second map is "
                                                               "subtracted, not added."))]
    return practice.Exercise(lhs, "A^{1} - \\lambda\\, A^{2}", (f"A^{{1}} = {number(a1)}", f"A^{{2}} = {number(a2)}",
                                                               f"\\lambda = {number(lam)}"),
                             value, practice._kept(value, mistakes))


def differential_exercise(walk: DifferentialWalkthrough, stage: str, row: int,
                          col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise; None for the λ table's first four rows (read off).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(differential_panels(walk, stage), row, col)
    t, r = walk.trace, walk.head
    i, j = row + 1, col + 1
    if stage == "split":
        column = r * 2 * t.head_dim + col
        return practice.dot_exercise(f"q^{{1}}_{{{i},{j}}}", f"\\sum_l x_{{{i},l}}\\, W^{{q}}_{{l,{column + 1}}}",
                                     (f"x_{{{i}}}", t.x[row].tolist()),
                                     (f"W^{{q}}_{{:,{column + 1}}}", t.weights["w_query"][:, column].tolist()), value)
    if stage == "maps":
        return practice.softmax_exercise(
            f"A^{{1}}_{{{i},{j}}}", f"\\frac{{e^{{s_{{{i},{j}}}}}}}{{\\sum_l e^{{s_{{{i},l}}}}}}", f"s_{{{i}}}",
            t.first.masked_scores[r].tolist(), row, col, value, unmasked=t.first.scaled_scores[r].tolist(),
            unscaled=t.first.scores[r].masked_fill(torch.isinf(t.first.masked_scores[r]), -math.inf).tolist(),
            d=t.head_dim)
    if stage == "lambda":
        a, b, ea, eb = (float(v) for v in t.lambda_parts)
        if row == 5:
            mistakes = [_mistake("lambda_init_forgotten", ea - eb, N_("That is {value}: add λ_init = {init}, which "
                                                                      "sets λ's starting size by the layer's depth."),
                                 init=f"{t.lambda_init:.4g}")]
            return practice.Exercise("\\lambda", "e^{\\lambda_{q1} \\cdot \\lambda_{k1}} - e^{\\lambda_{q2} \\cdot "
                                     "\\lambda_{k2}} + \\lambda_{\\mathrm{init}}",
                                     (f"\\lambda_{{q1}} \\cdot \\lambda_{{k1}} = {number(a)}",
                                      f"\\lambda_{{q2}} \\cdot \\lambda_{{k2}} = {number(b)}",
                                      f"\\lambda_{{\\mathrm{{init}}}} = {number(t.lambda_init)}"),
                                     value, practice._kept(value, mistakes))
        if row == 4:
            return practice.value_exercise("\\lambda_{\\mathrm{init}}", "0.8 - 0.6\\, e^{-0.3 (l - 1)}",
                                           (f"l = {t.layer}",), value)
        return None
    if stage == "difference":
        return _difference_exercise(f"D_{{{i},{j}}}", float(t.first.weights[r, row, col]),
                                    float(t.second.weights[r, row, col]), t.lam, value)
    if stage == "values":
        exercise = practice.weighted_sum_exercise(
            f"m_{{{i},{j}}}", f"\\sum_l D_{{{i},l}}\\, v_{{l,{j}}}", (f"D_{{{i}}}", t.difference[r, row].tolist()),
            (f"v_{{:,{j}}}", t.value[r, :, col].tolist()), value)
        single = float(t.first.weights[r, row] @ t.value[r, :, col])
        extra = _mistake("difference_single_map", single, N_("That is {value} = A1 V, the first map alone: weigh the "
                                                             "values by the difference A1 − λ A2."))
        return practice.Exercise(exercise.lhs, exercise.formula, exercise.inputs, value,
                                 practice._kept(value, list(exercise.mistakes) + [extra]))
    if stage == "norm":
        m = t.mixed[r, row].tolist()
        rms = math.sqrt(math.fsum(v * v for v in m) / len(m) + NORM_EPS)
        mistakes = [_mistake("norm_scale_forgotten", m[col] / rms, N_("That is {value} = RMSNorm alone: multiply by "
                                                                      "1 − λ_init = {scale}."),
                             scale=f"{1 - t.lambda_init:.4g}"),
                    _mistake("norm_forgotten", (1 - t.lambda_init) * m[col], N_("That is {value} = (1 − λ_init) m "
                                                                                "alone: divide by the row's RMS "
                                                                                "first.")),]
        return practice.Exercise(f"o_{{{i},{j}}}", "(1 - \\lambda_{\\mathrm{init}})\\, \\frac{m_{i,j}}"
                                 "{\\sqrt{\\frac{1}{2d} \\sum_l m_{i,l}^2 + \\epsilon}}",
                                 (practice.vector(f"m_{{{i}}}", m), f"\\lambda_{{\\mathrm{{init}}}} = "
                                  f"{number(t.lambda_init)}", "\\epsilon = 10^{-5}"),
                                 value, practice._kept(value, mistakes))
    if stage == "output":
        return practice.dot_exercise(f"u_{{{i},{j}}}", f"\\sum_l o_{{{i},l}}\\, W^{{O}}_{{l,{j}}}",
                                     (f"o_{{{i}}}", t.concat[row].tolist()),
                                     (f"W^{{O}}_{{:,{j}}}", t.weights["w_out"][:, col].tolist()), value)
    if stage == "cancel":
        n = walk.noise
        return _difference_exercise(f"D'_{{{i},{j}}}", float(n.first[r, row, col]), float(n.second[r, row, col]),
                                    t.lam, value)
    return None
