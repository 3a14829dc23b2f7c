"""From settings to every number on the self-attention pages.

:func:`build_walkthrough` turns a :class:`~attention_core.settings.Settings`
and the user's :data:`~attention_core.settings.Edits` into tokens, the
embedding matrix X, the weights and the full attention trace, and checks the
result against ``torch.nn.functional.scaled_dot_product_attention``.

Shape legend: T tokens, D = d_model, V vocabulary rows."""

from __future__ import annotations

from typing import Optional

import torch.nn.functional as F

from attention_core.errors import N_, Message
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.page import Page
from attention_core.self_attention import functional
from attention_core.self_attention.formulas import (
    entry_latex,
    entry_of,
    exercise_of,
    self_attention_formula,
    stage_matrix,
)
from attention_core.self_attention.functional import (
    attention_without_weights,
    self_attention,
)
from attention_core.self_attention.walk import Walkthrough
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check, Panel, Stage, StepThrough, compare


def build_walkthrough(settings: SharedSettings, edits: Optional[Edits] = None) -> Walkthrough:
    """Everything the self-attention pages show.

    Args:
        settings: validated settings (see ``settings.validate_settings``).
        edits: the user's cell edits by matrix name ("x", "w_query", "w_key", "w_value").

    Returns:
        The :class:`Walkthrough`.

    Raises:
        InputError: for a bad sentence or a bad edited cell (see :func:`attention_core.inputs.stage.build_inputs`).
    """
    inputs = build_inputs(settings, edits)
    m = inputs.matrices
    trace = self_attention(m["x"], m["w_query"], m["w_key"], m["w_value"])
    att = trace.attention
    check = compare(att.output, F.scaled_dot_product_attention(att.query, att.key, att.value),
                    "torch.nn.functional.scaled_dot_product_attention(Q, K, V)")
    diff, matches = check.max_abs_diff, check.matches
    weightless = attention_without_weights(m["x"])
    weightless_check = compare(weightless.output, F.scaled_dot_product_attention(m["x"], m["x"], m["x"], scale=1.0), "torch.nn.functional.scaled_dot_product_attention(X, X, X, scale=1.0)")
    w_diff, w_matches = weightless_check.max_abs_diff, weightless_check.matches
    notes = []
    saturated = (att.weights.max(dim=-1).values > 0.999).nonzero().flatten().tolist()
    if saturated:
        which = ", ".join(str(i + 1) for i in saturated)
        notes.append(Message(
            N_("Weight row(s) {rows} are (almost) one-hot: the scaled scores differ by so much that the "
               "softmax puts all the weight on one key. This saturation is what ÷ √d_k is there to reduce."),
            rows=which,
        ))
    return Walkthrough(
        settings=settings, preset=inputs.preset, tokens=inputs.tokens, token_ids=inputs.token_ids,
        vocabulary=inputs.vocabulary, base=inputs.base, trace=trace, weightless=weightless,
        torch_max_abs_diff=diff, torch_matches=matches,
        weightless_torch_diff=w_diff, weightless_torch_matches=w_matches, notes=tuple(notes),
    )


def stage_labels(walk: Walkthrough, stage: str) -> tuple[list[str], list[str]]:
    """(row labels, column labels) of a stage's matrix; rows are the tokens (queries)."""
    rows = token_labels(walk.tokens)
    if stage in ("scores", "scaled_scores", "weights"):
        return rows, rows
    width = stage_matrix(walk.trace, stage).shape[1]
    return rows, dim_labels("d" if stage == "inputs" else "c", width)


def step_through_for_page(walk: Walkthrough, stage: str, page: Page) -> StepThrough:
    """``page``'s ``stage`` (the self-attention page's; the no-weights page's) in the one step-through protocol (:mod:`attention_core.stepthrough`).

    One heatmap per stage: X, Q, K, V (T × D or T × d_k), the scores, scaled scores and weights (T × T), the
    output (T × d_k); its general formula and one entry with its numbers from :mod:`attention_core.self_attention.formulas`
    (Vaswani et al. 2017, eq. 1); the check against ``torch.nn.functional.scaled_dot_product_attention``.

    Raises:
        KeyError: a stage not in ``page.stages``.
    """
    if stage not in page.stages:
        raise KeyError(stage)
    rows, cols = stage_labels(walk, stage)
    panel = Panel(
        "", stage_matrix(walk.trace, stage), tuple(rows), tuple(cols),
        row_title=Message(N_("token")) if stage == "inputs" else Message(N_("query token")),
        col_title=Message(N_("key token")) if cols == rows else Message(N_("column")),
    )
    return StepThrough(
        page=page,
        stage=Stage(
            key=stage, panels=(panel,),
            formula=lambda tr: self_attention_formula(stage),
            entry=lambda row, col, head, tr: entry_latex(entry_of(walk.trace, stage, row, col)),
            exercise=lambda row, col, head: exercise_of(walk.trace, stage, row, col),
            code=(functional.scaled_dot_product_attention,),
        ),
        checks=(Check("torch.nn.functional.scaled_dot_product_attention(Q, K, V)", walk.torch_max_abs_diff,
                      walk.torch_matches),),
        notes=walk.notes,
    )
