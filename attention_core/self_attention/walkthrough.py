"""From settings to every number on the self-attention pages.

:func:`build_walkthrough` turns a :class:`~attention_core.settings.Settings`
and the user's :data:`~attention_core.settings.Edits` into tokens, the
embedding matrix X, the weights and the full attention trace, and checks the
result against ``torch.nn.functional.scaled_dot_product_attention``.

Shape legend: T tokens, D = d_model, V vocabulary rows.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional

import torch
import torch.nn.functional as F

from attention_core.errors import N_, InputError, Message
from attention_core.fields import IntRange, label
from attention_core.inputs.edits import EDITABLE, Edits
from attention_core.inputs.presets import PRESETS, Preset
from attention_core.inputs.tokens import Vocabulary, seed000_tables, token_labels, tokenize
from attention_core.limits import MAX_ABS_VALUE, MAX_TOKENS
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
    AttentionTrace,
    SelfAttentionTrace,
    attention_without_weights,
    self_attention,
)
from attention_core.self_attention.recipes import self_attention_recipe
from attention_core.stepthrough import Check, Panel, Stage, StepThrough, compare

if TYPE_CHECKING:  # the settings are composed above every page (attention_core/settings.py)
    from attention_core.settings import Settings


@dataclass(frozen=True)
class Walkthrough:
    """Every number the self-attention pages show, for one settings + edits.

    Attributes:
        settings: the settings it was built from.
        preset: their preset.
        tokens: the tokens as words of the vocabulary, length T.
        token_ids: their ids, length T.
        vocabulary: word -> id.
        base: the seeded (unedited) matrices by name: "x" (T, D), "w_query",
            "w_key", "w_value" (D, d_k); float32.
        trace: self-attention on the edited matrices.
        weightless: seed 004's attention without trainable weights on the edited X.
        torch_max_abs_diff: max |trace.output - F.scaled_dot_product_attention(Q, K, V)|.
        torch_matches: whether they agree to rtol = atol = 1e-5.
        weightless_torch_diff, weightless_torch_matches: the same for ``weightless``
            against ``F.scaled_dot_product_attention(X, X, X, scale=1.0)``.
        notes: remarks for the user (e.g. the softmax saturates).
    """

    settings: Settings
    preset: Preset
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    vocabulary: Vocabulary
    base: Mapping[str, torch.Tensor]
    trace: SelfAttentionTrace
    weightless: AttentionTrace
    torch_max_abs_diff: float
    torch_matches: bool
    weightless_torch_diff: float
    weightless_torch_matches: bool
    notes: tuple[str, ...]


def check_tokens(settings: Settings) -> tuple[tuple[str, ...], tuple[int, ...], Vocabulary]:
    """Tokenise the sentence and check it against the preset's vocabulary and the page's cap.

    Returns:
        (words, ids, vocabulary).

    Raises:
        InputError: empty sentence, a single token, more than MAX_TOKENS tokens,
            or words outside a fixed vocabulary (all named).
    """
    preset = PRESETS[settings.preset]
    raw = tokenize(settings.sentence)
    if not raw:
        raise InputError(N_("The sentence is empty: type a few words, separated by spaces."), field="sentence")
    if len(raw) == 1:
        raise InputError(
            N_("The sentence has one token (“{token}”). Attention relates tokens to each other: "
               "type at least two words."),
            field="sentence", token=raw[0],
        )
    if len(raw) > MAX_TOKENS:
        raise InputError(
            N_("The sentence has {n} tokens; this page shows at most {cap} "
               "(a {cap} × {cap} grid of numbers is the most that stays readable). "
               "Shorten the sentence."),
            field="sentence", n=len(raw), cap=MAX_TOKENS,
        )
    if preset.vocabulary is not None:
        vocabulary = preset.vocabulary
    elif preset.table is not None:
        vocabulary = Vocabulary({w: i for i, w in enumerate(preset.table)})
    else:
        vocabulary = Vocabulary.from_tokens(raw)
    words, ids = vocabulary.encode(raw)
    return words, ids, vocabulary


def base_matrices(settings: Settings, token_ids: tuple[int, ...], vocabulary: Vocabulary) -> dict[str, torch.Tensor]:
    """The seeded, unedited X (T, D) and W_q, W_k, W_v (D, d_k), float32.

    Follows the preset's recipe (see ``presets.WeightInit``); every random draw
    comes from a local ``torch.Generator`` seeded with ``settings.seed``.
    """
    preset = PRESETS[settings.preset]
    d_model, d_k, seed = settings.d_model, settings.d_k, settings.seed
    ids = torch.tensor(token_ids)
    if preset.table is not None:
        table = torch.tensor(list(preset.table.values()), dtype=torch.float32)  # (V, D)
    else:
        table, w_q, w_k, w_v = seed000_tables(seed, vocabulary.num_rows, d_model, d_k)
    x = table[ids]  # (T, D)

    if preset.weight_init == "randn" and preset.table is None:
        weights = (w_q, w_k, w_v)
    elif preset.weight_init == "rand":
        g = torch.Generator().manual_seed(seed)
        weights = tuple(torch.rand(d_model, d_k, generator=g) for _ in range(3))
    elif preset.weight_init == "linear":
        # nn.Linear(D, d_k) draws its (d_k, D) weight from U(-1/√D, 1/√D); W = weight.T.
        g = torch.Generator().manual_seed(seed)
        bound = 1.0 / math.sqrt(d_model)
        weights = tuple(torch.empty(d_k, d_model).uniform_(-bound, bound, generator=g).T for _ in range(3))
    else:  # identity
        weights = tuple(torch.eye(d_model, d_k) for _ in range(3))
    return {"x": x, "w_query": weights[0], "w_key": weights[1], "w_value": weights[2]}


def apply_edits(name: str, base: torch.Tensor, cells: Mapping[tuple[int, int], Optional[float]]) -> torch.Tensor:
    """``base`` with the user's cell edits; edits outside its shape are kept but not applied.

    Raises:
        InputError: for an emptied, non-numeric, non-finite or too large cell,
            naming the matrix and the cell (1-based).
    """
    if not cells:
        return base
    out = base.clone()
    rows, cols = base.shape
    label = EDITABLE.get(name, name)
    for (i, j), value in sorted(cells.items()):
        if not (0 <= i < rows and 0 <= j < cols):
            continue
        if value is None or (isinstance(value, numbers.Real) and math.isnan(value)):
            raise InputError(N_("The cell {matrix} row {row}, column {col} is empty: type a number."), field=name,
                             matrix=label, row=i + 1, col=j + 1)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InputError(N_("The cell {matrix} row {row}, column {col} holds “{value}”, which is not a number."),
                             field=name, matrix=label, row=i + 1, col=j + 1, value=value)
        if not math.isfinite(value) or abs(value) > MAX_ABS_VALUE:
            raise InputError(
                N_("The cell {matrix} row {row}, column {col} is {value:g}; values must lie between −{limit:g} and "
                   "{limit:g}."),
                field=name, matrix=label, row=i + 1, col=j + 1, value=value, limit=MAX_ABS_VALUE,
            )
        out[i, j] = float(value)
    return out


def build_walkthrough(settings: Settings, edits: Optional[Edits] = None) -> Walkthrough:
    """Everything the self-attention pages show.

    Args:
        settings: validated settings (see ``settings.validate_settings``).
        edits: the user's cell edits by matrix name ("x", "w_query", "w_key", "w_value").

    Returns:
        The :class:`Walkthrough`.

    Raises:
        InputError: for a bad sentence (see :func:`check_tokens`) or a bad edited cell.
    """
    edits = edits or {}
    words, ids, vocabulary = check_tokens(settings)
    base = base_matrices(settings, ids, vocabulary)
    m = {name: apply_edits(name, base[name], edits.get(name, {})) for name in base}
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
        settings=settings, preset=PRESETS[settings.preset], tokens=words, token_ids=ids,
        vocabulary=vocabulary, base=base, trace=trace, weightless=weightless,
        torch_max_abs_diff=diff, torch_matches=matches,
        weightless_torch_diff=w_diff, weightless_torch_matches=w_matches, notes=tuple(notes),
    )


def dim_labels(prefix: str, n: int) -> list[str]:
    """Column labels for vector components: "d1", "d2", ..."""
    return [f"{prefix}{j + 1}" for j in range(n)]


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
        IntRange("query_index", 0, MAX_TOKENS - 1, label(N_("The query token"))),
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
    steps=self_attention_steps, default_stage="scores",
    default_stage_why=N_("The scores Q Kᵀ are where attention begins; X, Q, K and V before them are plain matrix products."), recipe=self_attention_recipe,
    legacy={"stage": "stage"},
)
