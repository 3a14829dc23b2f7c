"""From settings to every number on the self-attention pages.

:func:`build_walkthrough` turns a :class:`~attention_core.settings.Settings`
and the user's :data:`~attention_core.settings.Edits` into tokens, the
embedding matrix X, the weights and the full attention trace, and checks the
result against ``torch.nn.functional.scaled_dot_product_attention``.

Shape legend: T tokens, D = d_model, V vocabulary rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch.nn.functional as F

from attention_core.errors import N_, Message
from attention_core.fields import IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.limits import MAX_TOKENS
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
from attention_core.self_attention.recipes import self_attention_recipe
from attention_core.self_attention.walks import Walkthrough
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


def self_attention_steps(walk: Walkthrough, stage: str) -> StepThrough:
    """The self-attention page's ``stage`` in the one step-through protocol (:mod:`attention_core.stepthrough`).

    One heatmap per stage: X, Q, K, V (T × D or T × d_k), the scores, scaled scores and weights (T × T), the
    output (T × d_k); its general formula and one entry with its numbers from :mod:`attention_core.self_attention.formulas`
    (Vaswani et al. 2017, eq. 1); the check against ``torch.nn.functional.scaled_dot_product_attention``.

    Raises:
        KeyError: a stage not in ``SELF_ATTENTION_PAGE.stages``.
    """
    if stage not in SELF_ATTENTION_PAGE.stages:
        raise KeyError(stage)
    rows, cols = stage_labels(walk, stage)
    panel = Panel(
        "", stage_matrix(walk.trace, stage), tuple(rows), tuple(cols),
        row_title=Message(N_("token")) if stage == "inputs" else Message(N_("query token")),
        col_title=Message(N_("key token")) if cols == rows else Message(N_("column")),
    )
    return StepThrough(
        page=SELF_ATTENTION_PAGE,
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


# ---------------------------------------------------------------- the pages

TOKENS = Page(
    key="tokens", title=N_("Tokens & embeddings"), icon=":material/abc:", section="self_attention",
    summary=N_("Tokens & embeddings: from a sentence to the matrix X"),
)


@dataclass(frozen=True)
class NoWeightsSettings:
    """The page of attention without trainable weights: its own settings (``settings.no_weights``).

    Attributes:
        query_index: the token whose context vector the page explains (0-based, < MAX_TOKENS).
    """

    query_index: int = 1


NO_WEIGHTS = Page(
    key="no_weights", title=N_("Attention without trainable weights"), icon=":material/front_hand:",
    section="self_attention", summary=N_("Attention without trainable weights: one context vector by hand"),
    settings=NoWeightsSettings,
    fields=(
        IntRange("query_index", 0, MAX_TOKENS - 1, label(N_("The query token")), one_based=True),
    ),
    legacy={"query_index": "query_index"},
)


SELF_ATTENTION_PAGE = Page(
    key="self_attention", title=N_("Scaled dot-product self-attention"), icon=":material/calculate:",
    section="self_attention", summary=N_("Scaled dot-product self-attention, step by step"),
    stages={
        "inputs": N_("Inputs X"),
        "query": N_("Queries Q = X W_q"),
        "key": N_("Keys K = X W_k"),
        "value": N_("Values V = X W_v"),
        "scores": N_("Scores Q Kᵀ"),
        "scaled_scores": N_("Scaled scores ÷ √d_k"),
        "weights": N_("Weights: softmax"),
        "output": N_("Output: weights · V"),
    },
    build=build_walkthrough, steps=self_attention_steps, default_stage="scores",
    default_stage_why=N_("The scores Q Kᵀ are where attention begins; X, Q, K and V before them are plain matrix products."), recipe=self_attention_recipe,
    legacy={"stage": "stage"},
)
