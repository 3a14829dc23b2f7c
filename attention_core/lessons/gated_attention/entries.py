r"""The *Gated attention* page's heatmaps, one entry with its numbers in, and that entry as an exercise.

:func:`gated_panels` gives each stage's panels for the walk-through's chosen head r (exactly one explained);
:func:`explain_gated` writes the explained entry as LaTeX with its numbers in; :func:`gated_exercise` asks it in
practice mode, naming this page's mistakes (the gate's shift b forgotten, the logit used instead of σ, σ(−g), the
gate added instead of multiplied, the gate forgotten) besides the shared ones.

Shape legend: T tokens, D = d_model, h heads, d_h = head_dim, g the gate's width per head (d_h, or 1 head-wise).
Head r's columns of W_q, W_k, W_v, W_θ are r d_h … (r + 1) d_h − 1 (0-based; head-wise W_θ's column r). Indices on
screen are 1-based.

Sources: Qiu et al. 2025, "Gated Attention for Large Language Models" (NeurIPS 2025); Vaswani et al. 2017, eq. 1.
"""

from __future__ import annotations

import math
from typing import Optional

from attention_core import practice
from attention_core.errors import N_, Message
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import aligned, factor, number, terms_lines
from attention_core.lessons.gated_attention.walk import GatedWalkthrough
from attention_core.modern.gated import gated_output_exercise
from attention_core.stepthrough import Panel, explained_value

_TOKEN, _QUERY, _KEY = Message(N_("token")), Message(N_("query token")), Message(N_("key token"))
_COLUMN = Message(N_("column"))


def _gate_cols(walk: GatedWalkthrough) -> tuple:
    return (Message(N_("head")),) if walk.trace.headwise else tuple(dim_labels("d", walk.trace.head_dim))


def _gate_column(walk: GatedWalkthrough, col: int) -> int:
    """The gate's column for column ``col`` of a head's output (0 head-wise)."""
    return 0 if walk.trace.headwise else col


def gated_panels(walk: GatedWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage`` for head r = ``walk.head``; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    t, r = walk.trace, walk.head
    rows = tuple(token_labels(walk.tokens))
    cols = tuple(dim_labels("d", t.head_dim))
    head = f"r = {r + 1}"
    if stage == "projections":
        return (Panel(f"Q = X W_q ({head})", t.query[r], rows, cols, _TOKEN, _COLUMN, explained=False),
                Panel(f"K = X W_k ({head})", t.key[r], rows, cols, _TOKEN, _COLUMN, explained=False),
                Panel(f"V = X W_v ({head})", t.value[r], rows, cols, _TOKEN, _COLUMN, explained=False),
                Panel(Message(N_("The gate's logits G = X W_θ + b ({head})"), head=head), t.gate_logits[r], rows,
                      _gate_cols(walk), _TOKEN, _COLUMN))
    if stage == "attention":
        return (Panel(Message(N_("Weights, head {r}"), r=r + 1), t.attention.weights[r], rows, rows, _QUERY, _KEY,
                      explained=False),
                Panel(Message(N_("The head's ordinary output Y = weights · V ({head})"), head=head),
                      t.attention.output[r], rows, cols, _TOKEN, _COLUMN))
    if stage == "gate":
        return (Panel(Message(N_("The gate σ(G) ({head})"), head=head), t.gate[r], rows, _gate_cols(walk), _TOKEN,
                      _COLUMN),)
    if stage == "gated":
        return (Panel(Message(N_("Y, before the gate ({head})"), head=head), t.attention.output[r], rows, cols,
                      _TOKEN, _COLUMN, explained=False),
                Panel(Message(N_("Y′ = Y ⊙ σ(G) ({head})"), head=head), t.gated[r], rows, cols, _TOKEN, _COLUMN))
    if stage == "output":
        d_h = t.head_dim
        heads = tuple(f"{k // d_h + 1}·{k % d_h + 1}" for k in range(t.concat.shape[-1]))
        out_cols = tuple(dim_labels("d", t.output.shape[-1]))
        return (Panel(Message(N_("The gated heads side by side")), t.concat, rows, heads, _TOKEN,
                      Message(N_("head · column")), explained=False),
                Panel("O = [Y′_1 … Y′_h] W_O", t.output, rows, out_cols, _TOKEN, _COLUMN),
                Panel(Message(N_("Without the gate: [Y_1 … Y_h] W_O")), t.ungated_output, rows, out_cols, _TOKEN,
                      _COLUMN, explained=False))
    if stage == "sink":
        return (Panel(Message(N_("A query that matches nothing: 1/i on each key")), walk.null_weights, rows, rows,
                      _QUERY, _KEY, explained=False),
                Panel(Message(N_("Its output without a gate: the mean of v_1 … v_i ({head})"), head=head),
                      walk.null_mean[r], rows, cols, _TOKEN, _COLUMN, explained=False),
                Panel(Message(N_("With the gate: σ(G) ⊙ that mean ({head})"), head=head), walk.null_gated[r], rows,
                      cols, _TOKEN, _COLUMN))
    raise KeyError(stage)


def _dot(left: list[float], right: list[float]) -> list[str]:
    return [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(left, right)]


def explain_gated(walk: GatedWalkthrough, stage: str, row: int, col: int) -> str:
    """One entry (row, col) of ``stage``'s explained panel, numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(gated_panels(walk, stage), row, col)
    t, r = walk.trace, walk.head
    i, j = row + 1, col + 1
    sup = f"^{{({r + 1})}}"
    g = _gate_column(walk, col)
    logit, gate = float(t.gate_logits[r, row, g]), float(t.gate[r, row, g])
    gate_index = f"{i}" if t.headwise else f"{i},{j}"
    if stage == "projections":
        w_column = r if t.headwise else r * t.head_dim + col
        terms = _dot(t.x[row].tolist(), t.weights["w_gate"][:, w_column].tolist())
        return aligned(f"g{sup}_{{{gate_index}}}", [
            f"\\sum_l x_{{{i},l}}\\, W^{{\\theta}}_{{l,{w_column + 1}}} + b",
            terms_lines(terms) + f" + {factor(t.shift)}", number(value)])
    if stage == "attention":
        terms = _dot(t.attention.weights[r, row, :row + 1].tolist(), t.attention.value[r, :row + 1, col].tolist())
        return aligned(f"y{sup}_{{{i},{j}}}", [f"\\sum_{{l \\leq {i}}} \\alpha{sup}_{{{i},l}}\\, v{sup}_{{l,{j}}}",
                                              terms_lines(terms), number(value)])
    if stage == "gate":
        return aligned(f"\\sigma(g{sup}_{{{gate_index}}})", [
            f"\\frac{{1}}{{1 + e^{{-g{sup}_{{{gate_index}}}}}}}", f"\\frac{{1}}{{1 + e^{{{-logit:.4g}}}}}",
            number(value)])
    if stage == "gated":
        y = float(t.attention.output[r, row, col])
        return aligned(f"y'{sup}_{{{i},{j}}}", [f"y{sup}_{{{i},{j}}} \\cdot \\sigma(g{sup}_{{{gate_index}}})",
                                                f"{factor(y)} \\cdot {factor(gate)}", number(value)])
    if stage == "output":
        terms = _dot(t.concat[row].tolist(), t.weights["w_out"][:, col].tolist())
        return aligned(f"o_{{{i},{j}}}", [f"\\sum_l y'_{{{i},l}}\\, W^{{O}}_{{l,{j}}}", terms_lines(terms),
                                          number(value)])
    if stage == "sink":
        values = t.value[r, :row + 1, col].tolist()
        mean = math.fsum(values) / (row + 1)
        return aligned(f"\\bar{{y}}'{sup}_{{{i},{j}}}", [
            f"\\sigma(g{sup}_{{{gate_index}}}) \\cdot \\frac{{1}}{{{i}}} \\sum_{{l \\leq {i}}} v{sup}_{{l,{j}}}",
            f"{factor(gate)} \\cdot \\frac{{{' + '.join(factor(v) for v in values)}}}{{{i}}}",
            f"{factor(gate)} \\cdot {factor(mean)}", number(value)])
    raise KeyError(stage)


def _mistake(key: str, value: float, template: str, **params: object) -> practice.Mistake:
    return practice.Mistake(key, value, Message(template, value=f"{value:.4g}", **params))


def gated_exercise(walk: GatedWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(gated_panels(walk, stage), row, col)
    t, r = walk.trace, walk.head
    i, j = row + 1, col + 1
    g = _gate_column(walk, col)
    logit, gate = float(t.gate_logits[r, row, g]), float(t.gate[r, row, g])
    gate_name = f"g_{{{i}}}" if t.headwise else f"g_{{{i},{j}}}"
    if stage == "projections":
        w_column = r if t.headwise else r * t.head_dim + col
        mistakes = [_mistake("gate_shift_forgotten", value - t.shift,
                             N_("That is {value} = x · W_θ alone: add the shift b = {b:g} to every gate logit."),
                             b=t.shift)] if t.shift else []
        return practice.Exercise(
            gate_name, "\\sum_l x_{i,l}\\, W^{\\theta}_{l,j} + b",
            (practice.vector(f"x_{{{i}}}", t.x[row].tolist()),
             practice.vector(f"W^{{\\theta}}_{{:,{w_column + 1}}}", t.weights["w_gate"][:, w_column].tolist()),
             f"b = {number(t.shift)}"),
            value, practice._kept(value, mistakes))
    if stage == "attention":
        return practice.weighted_sum_exercise(
            f"y_{{{i},{j}}}", f"\\sum_l \\alpha_{{{i},l}}\\, v_{{l,{j}}}",
            (f"\\alpha_{{{i}}}", t.attention.weights[r, row].tolist()),
            (f"v_{{:,{j}}}", t.attention.value[r, :, col].tolist()), value)
    if stage == "gate":
        mistakes = [_mistake("gate_no_sigmoid", logit, N_("That is {value}, the logit g itself: squash it with "
                                                          "σ(g) = 1 / (1 + e^(−g)), always between 0 and 1.")),
                    _mistake("gate_sigmoid_sign", 1.0 - value, N_("That is {value} = σ(−g) = 1 − σ(g): the exponent "
                                                                  "is −g, so σ(g) = 1 / (1 + e^(−g)).") )]
        return practice.Exercise(f"\\sigma({gate_name})", f"\\frac{{1}}{{1 + e^{{-{gate_name}}}}}",
                                 (f"{gate_name} = {number(logit)}",), value, practice._kept(value, mistakes))
    if stage == "gated":
        return gated_output_exercise(float(t.attention.output[r, row, col]), logit, gate, gate_name, i, j, value)
    if stage == "output":
        return practice.dot_exercise(f"o_{{{i},{j}}}", f"\\sum_l y'_{{{i},l}}\\, W^{{O}}_{{l,{j}}}",
                                     (f"y'_{{{i}}}", t.concat[row].tolist()),
                                     (f"W^{{O}}_{{:,{j}}}", t.weights["w_out"][:, col].tolist()), value)
    if stage == "sink":
        values = t.value[r, :row + 1, col].tolist()
        mean = math.fsum(values) / (row + 1)
        mistakes = [_mistake("nothing_is_zero", 0.0, N_("That is {value}: softmax still gives each of the {n} keys "
                                                        "1/{n}; only the gate can shrink the output."), n=i),
                    _mistake("gate_not_applied", mean, N_("That is {value}, the mean of the values without the gate: "
                                                          "multiply it by σ(g) = {gate}."), gate=f"{gate:.4g}"),
                    _mistake("nothing_sum_not_mean", gate * math.fsum(values),
                             N_("That is {value}: σ(g) times the sum of the values. Each key gets 1/{n}: the mean."),
                             n=i)]
        return practice.Exercise(f"\\bar{{y}}'_{{{i},{j}}}", f"\\sigma({gate_name}) \\cdot \\frac{{1}}{{{i}}} "
                                 f"\\sum_{{l \\leq {i}}} v_{{l,{j}}}",
                                 (practice.vector(f"v_{{1..{i},{j}}}", values), f"\\sigma({gate_name}) = {number(gate)}"),
                                 value, practice._kept(value, mistakes))
    return None
