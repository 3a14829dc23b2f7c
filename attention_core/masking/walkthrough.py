"""From settings to every number on the causal-attention and dropout pages, and their step-through.

The pages build up like seed 001's classes: ``CausalAttention`` adds a mask and dropout to self-attention.
:func:`build_causal_walkthrough` turns a :class:`~attention_core.settings.Settings` and the user's edits into a
frozen walk-through holding every number its page shows and the checks against PyTorch;
:func:`step_through_for_page` puts a stage of the causal or dropout page in the one step-through protocol. The mask with the
user's clicked cells and the
context-length check, which the multi-head pages share, are in :mod:`attention_core.masking.user_mask`; the seeded
module weights in :mod:`attention_core.weights`.

Shape legend: T tokens (m decoder tokens in cross-attention), n encoder
tokens, D = d_model, d_k the width of q, k, v on the causal page, d_out = h ·
head_dim, h = num_heads. Matrices are float32; masks are bool with True =
may attend (``torch.nn.functional.scaled_dot_product_attention``'s convention).

Weights: drawn the way seed 001's modules draw them (``nn.Linear`` init,
U(-1/√fan_in, 1/√fan_in)) after ``torch.manual_seed(settings.seed)``, but from
a local ``torch.Generator`` (the global one is shared by every user of a
server): ``CausalAttention(D, d_k, context_length, dropout)`` for the causal and
dropout pages, ``MultiHeadAttention(D, d_out, context_length, dropout,
num_heads)`` for the multi-head and cross-attention pages. With the "Your
journey starts with one step" inputs and seed 123 they reproduce the printed
outputs of rasbt/LLMs-from-scratch ch03 (quoted by seed 004,
004_56c592a3d25bc184.txt).

Sources: Vaswani et al. 2017, eq. 1 and sec. 3.2.2-3.2.3; seed 001
(001_9275b51964da46b3.txt); seed 003 (003_734755b2d0b981d3.txt) for
cross-attention; seed 004 for the causal mask, the "softmax, zero,
renormalise" route and dropout."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F

from attention_core import entry_formulas as entries
from attention_core import practice
from attention_core.errors import N_, Message
from attention_core.inputs.edits import Edits
from attention_core.inputs.presets import PRESETS
from attention_core.inputs.stage import Inputs, build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, index
from attention_core.masking import formulas as fm
from attention_core.masking.user_mask import (
    MASK_EDITS,
    blocked_row_notes,
    build_mask,
    check_context_length,
)
from attention_core.masking.walk import CausalWalkthrough
from attention_core.masks import (
    causal_mask,
    key_padding_mask,
    mask_after_softmax,
)
from attention_core.page import Page
from attention_core.self_attention import functional
from attention_core.self_attention.functional import self_attention
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Panel, Stage, StepThrough, compare, explained_value
from attention_core.weights import module_weights

#: Dropout probabilities accepted: dropout_p in [0, MAX_DROPOUT]. p = 1 would drop every weight
#: (and divide by 1 - p = 0), so the nearest allowed value below 1 is used instead.
MAX_DROPOUT = 0.99


@dataclass(frozen=True)
class DropoutSettings:
    """The dropout page's own settings (``settings.dropout``).

    Attributes:
        dropout_p: the probability of zeroing an attention weight, in [0, MAX_DROPOUT].
        training: True = training mode (dropout active), False = eval mode.
        seed: the seed of the local generator that draws the dropout mask (0..MAX_SEED).
    """

    dropout_p: float = 0.5
    training: bool = True
    seed: int = 123


def causal_weights(settings: SharedSettings, inputs: Inputs) -> tuple[dict[str, torch.Tensor], Message]:
    """W_q, W_k, W_v of the causal and dropout pages, (D, d_k) float32 each, and a sentence for the page saying where
    they come from.

    The self-attention page's (``Inputs.projections``: seeded by the example's recipe, with the learner's edits), so
    the scaled scores the mask is added to are that page's; except on an example whose tutorial draws its causal
    module's weights otherwise (``Preset.causal_init``: "Your journey starts with one step" with SelfAttention_v1,
    whose chapter follows it with ``CausalAttention`` and nn.Linear after the same ``torch.manual_seed(123)``):
    there the page draws them as that module does (:func:`attention_core.weights.module_weights`), so the chapter's
    printed context vectors come out, and says so.
    """
    preset = PRESETS[settings.preset]
    if preset.causal_init == "linear":
        return module_weights(settings.d_model, settings.d_k, settings.seed, out_proj=False), Message(
            N_("W_q, W_k, W_v ({d_model} × {d_k}) are drawn as `CausalAttention({d_model}, {d_k}, …)` in Raschka's "
               "chapter 3 draws them: nn.Linear after `torch.manual_seed({seed})`, so the chapter's printed context "
               "vectors come out here. The Self-attention page's SelfAttention_v1 draws torch.rand instead, so its "
               "scores differ from these."), d_model=settings.d_model, d_k=settings.d_k, seed=settings.seed)
    return inputs.projections, Message(
        N_("W_q, W_k, W_v ({d_model} × {d_k}) are the Self-attention page's (seed {seed}, with your edits), so the "
           "scaled scores the mask is added to are that page's."),
        d_model=settings.d_model, d_k=settings.d_k, seed=settings.seed)


def build_causal_walkthrough(settings: SharedSettings, edits: Optional[Edits] = None, *,
                             dropout: Optional[DropoutSettings] = None) -> CausalWalkthrough:
    """Causal attention (seed 001's ``CausalAttention``) on the settings' sentence, step by step.

    Args:
        settings: validated shared settings: sentence, d_model, d_k, seed, context_length, causal, padding.
        edits: the user's edits: "x" (cells of X) and :data:`MASK_EDITS` (mask cells).
        dropout: the dropout page's own settings (``settings.dropout``: dropout_p p, training, seed), to apply
            dropout to the weights when training and p > 0 (:func:`build_dropout_walkthrough`); None (the causal
            page): no dropout.

    Returns:
        The :class:`CausalWalkthrough`.

    Raises:
        InputError: a bad sentence or X cell (see ``attention_core.inputs.stage.build_inputs``),
            or more tokens than the context length.
    """
    edits = edits or {}
    inputs = build_inputs(settings, edits)
    tokens, x = inputs.tokens, inputs.x  # x: (T, D)
    t = len(tokens)
    check_context_length(t, settings.context_length, "sentence")
    w, weights_note = causal_weights(settings, inputs)
    mask = build_mask(t, settings, edits.get(MASK_EDITS, {}))
    p = dropout.dropout_p if dropout is not None and dropout.training else 0.0
    generator = torch.Generator().manual_seed(dropout.seed) if dropout is not None else None  # used when p > 0
    trace = self_attention(x, w["w_query"], w["w_key"], w["w_value"], attn_mask=mask.attn_mask,
                           dropout_p=p, generator=generator)
    att = trace.attention
    other = mask_after_softmax(att.scaled_scores, mask.attn_mask)
    route_diff = float((other.weights - att.weights).abs().max())
    keep = att.dropout_mask if att.dropout_mask is not None else torch.ones(t, t, dtype=torch.bool)
    blocked_rows, warnings = blocked_row_notes(att.blocked_rows, tokens)
    notes: tuple[str, ...] = ()

    q, k, v = att.query, att.key, att.value
    checks = []
    if p == 0.0:
        checks.append(compare(att.output, F.scaled_dot_product_attention(q, k, v, attn_mask=mask.attn_mask),
                               "torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask)"))
        if torch.equal(mask.attn_mask, causal_mask(t)):
            checks.append(compare(att.output, F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                   "torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)"))
    else:
        # PyTorch's dropout draws from the global generator, so no PyTorch call gives our mask. Check the two
        # parts instead: the weights before dropout (SDPA's output with them), and the dropout rule.
        undropped = att.weights @ v  # (T, T) @ (T, d_k) -> (T, d_k)
        checks.append(compare(undropped, F.scaled_dot_product_attention(q, k, v, attn_mask=mask.attn_mask),
                               "torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask)",
                               Message(N_("weights before dropout, times V"))))
        # nn.Dropout's own draw, bernoulli_(1 - p), made afresh from a generator with the same seed.
        drawn = torch.empty(t, t).bernoulli_(1.0 - p, generator=torch.Generator().manual_seed(dropout.seed))
        reference = (att.weights * drawn / (1.0 - p)) @ v  # what nn.Dropout(p) does to the weights, then · V
        checks.append(compare(
            att.output, reference,
            f"weights * torch.empty(T, T).bernoulli_(1 - p, generator=torch.Generator().manual_seed("
            f"{dropout.seed})) / (1 - p) @ V",
            Message(N_("our output against nn.Dropout's draw made afresh from the same seed"))))
    if settings.padding >= t:
        warnings = (Message(N_("All {t} tokens are padding, so every key is blocked."), t=t),) + warnings
    return CausalWalkthrough(
        settings=settings, inputs=inputs, tokens=tokens, weights=w, weights_note=weights_note, mask=mask, trace=trace,
        other_route=other,
        route_max_abs_diff=route_diff, dropout_p=p, keep=keep, row_sums=att.dropped_weights.sum(dim=-1),
        blocked_rows=blocked_rows, checks=tuple(checks), warnings=warnings, notes=notes,
    )


def causal_panels(walk: CausalWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of a causal or dropout page stage (keys of CAUSAL_PAGE.stages or DROPOUT_PAGE.stages)."""
    att = walk.trace.attention
    rows = tuple(token_labels(walk.tokens))
    if stage == "scaled_scores":
        return (Panel("A = Q Kᵀ / √d_k", att.scaled_scores, rows, rows),)
    if stage == "mask":
        return (Panel(Message(N_("M: 0 = may attend, −∞ (grey) = blocked. Click a cell to flip it.")),
                      walk.mask.additive, rows, rows),)
    if stage == "masked_scores":
        return (Panel("A' = A + M", att.masked_scores, rows, rows),)
    if stage == "weights":
        return (Panel(Message(N_("softmax(A') — each row sums to 1 over its allowed keys")), att.weights, rows, rows),)
    if stage == "other_route":
        route = walk.other_route
        return (
            Panel(Message(N_("1. softmax(A) over all keys")), route.unmasked_weights, rows, rows, explained=False),
            Panel(Message(N_("2. blocked weights set to 0")), route.zeroed_weights, rows, rows, explained=False),
            Panel(Message(N_("3. ÷ row sums: the same weights")), route.weights, rows, rows),
        )
    if stage == "dropout_mask":
        return (Panel(Message(N_("D: 1 = kept, 0 = dropped")), walk.keep.float(), rows, rows),)
    if stage == "dropped_weights":
        sums = walk.row_sums.unsqueeze(-1)  # (T,) -> (T, 1)
        return (
            Panel(Message(N_("weights ⊙ D × 1/(1 − p) = × {scale}"), scale=f"{walk.scale:.4g}"), att.dropped_weights,
                  rows, rows),
            Panel(Message(N_("row sums")), sums, rows, (Message(N_("sum")),), col_title="", explained=False),
        )
    if stage == "output":
        return (Panel(Message(N_("Z = weights · V: the context vectors")), att.output, rows,
                      tuple(dim_labels("c", att.output.shape[-1])), col_title=Message(N_("column"))),)
    raise KeyError(stage)


def explain_causal(walk: CausalWalkthrough, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """One entry of a causal or dropout page stage, with its numbers in, as LaTeX.

    ``tr`` puts the formula's words in the interface language (default: English; pages pass ``ui.i18n._``).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the stage's matrix.
    """
    att = walk.trace.attention
    explained_value(causal_panels(walk, stage), row, col)  # raises outside the explained panel
    # (row, col) is a query and a key only on the T × T stages: the output's columns are d_v's, which may outnumber T
    allowed = bool(walk.mask.attn_mask[row, col]) if stage in ("mask", "masked_scores") else True
    if stage == "scaled_scores":
        return entries.scaled_score_entry_latex(row, col, att.query[row].tolist(), att.key[col].tolist(),
                                           att.query.shape[-1], float(att.scaled_scores[row, col]))
    if stage == "mask":
        return entries.mask_entry_latex(row, col, allowed, tuple(tr(reason) for reason in walk.mask.reasons(row, col)))
    if stage == "masked_scores":
        return entries.masked_score_entry_latex(row, col, float(att.scaled_scores[row, col]), allowed)
    if stage == "weights":
        return entries.masked_weight_entry_latex(row, col, att.masked_scores[row].tolist(), float(att.weights[row, col]),
                                            tr=tr)
    if stage == "other_route":
        route = walk.other_route
        return fm.renormalised_entry_latex(row, col, route.unmasked_weights[row].tolist(),
                                           route.attn_mask[row].tolist(), float(route.weights[row, col]), tr)
    if stage == "dropout_mask":
        return fm.dropout_mask_entry_latex(row, col, bool(walk.keep[row, col]), walk.settings.dropout.dropout_p,
                                           walk.dropout_p > 0, tr)
    if stage == "dropped_weights":
        return fm.dropped_weight_entry_latex(row, col, float(att.weights[row, col]), bool(walk.keep[row, col]),
                                             walk.dropout_p, float(att.dropped_weights[row, col]))
    if stage == "output":
        symbol = r"\tilde{\alpha}" if walk.dropout_p > 0 else r"\alpha"
        return entries.weighted_sum_entry_latex(row, col, att.dropped_weights[row].tolist(), att.value[:, col].tolist(),
                                           float(att.output[row, col]), weight_symbol=symbol)
    raise KeyError(stage)


def causal_exercise(walk: CausalWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of a causal or dropout page stage as an exercise (practice mode); None where nothing is
    computed (the mask, the masked scores, the dropout mask, the weights after dropout in eval mode).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the stage's matrix.
    """
    att = walk.trace.attention
    value = explained_value(causal_panels(walk, stage), row, col)  # raises outside the explained panel
    i, j = row + 1, col + 1
    if stage == "scaled_scores":
        q, k = att.query, att.key
        return practice.scale_exercise(
            index("a", row, col), f"\\frac{{q_{{{i}}} \\cdot k_{{{j}}}}}{{\\sqrt{{d_k}}}}", "", float(att.scores[row, col]),
            q.shape[-1], value, d_model=walk.inputs.x.shape[-1],
            dot=((f"q_{{{i}}}", q[row].tolist()), (f"k_{{{j}}}", k[col].tolist())),
            swapped=float(q[col] @ k[row]))
    if stage == "weights":
        allowed = walk.mask.attn_mask
        return practice.softmax_exercise(
            index(r"\alpha", row, col), f"\\frac{{e^{{a'_{{{i},{j}}}}}}}{{\\sum_l e^{{a'_{{{i},l}}}}}}", f"a'_{{{i}}}",
            att.masked_scores.tolist(), row, col, value, unmasked=att.scaled_scores.tolist(),
            unscaled=att.scores.masked_fill(~allowed, float("-inf")).tolist(), d=att.query.shape[-1])
    if stage == "other_route":
        route = walk.other_route
        return practice.renormalise_exercise(
            index(r"\alpha", row, col),
            f"\\frac{{\\hat{{\\alpha}}_{{{i},{j}}}\\, m_{{{i},{j}}}}}{{\\sum_l \\hat{{\\alpha}}_{{{i},l}}\\, m_{{{i},l}}}}",
            (f"\\hat{{\\alpha}}_{{{i}}}", route.unmasked_weights[row].tolist()),
            (f"m_{{{i}}}", route.attn_mask[row].tolist()), col, value)
    if stage == "dropped_weights":
        if walk.dropout_p == 0:
            return None
        return practice.dropout_exercise(
            index(r"\tilde{\alpha}", row, col), f"\\frac{{\\alpha_{{{i},{j}}}\\, d_{{{i},{j}}}}}{{1 - p}}",
            index(r"\alpha", row, col), float(att.weights[row, col]), bool(walk.keep[row, col]), walk.dropout_p, value,
            mask_name=index("d", row, col))
    if stage == "output":
        symbol = r"\tilde{\alpha}" if walk.dropout_p > 0 else r"\alpha"
        return practice.weighted_sum_exercise(
            index("z", row, col), f"\\sum_l {symbol}_{{{i},l}}\\, v_{{l,{j}}}",
            (f"{symbol}_{{{i}}}", att.dropped_weights[row].tolist()), (f"v_{{:,{j}}}", att.value[:, col].tolist()),
            value, dropout_p=walk.dropout_p)
    return None


def _causal_code(stage: str) -> tuple:
    if stage == "mask":
        return (causal_mask, key_padding_mask, build_mask)
    if stage == "other_route":
        return (mask_after_softmax,)
    return (functional.scaled_dot_product_attention,)


def step_through_for_page(walk: CausalWalkthrough, stage: str, page: Page) -> StepThrough:
    """``page``'s ``stage`` in the one step-through protocol: the causal page's, or the dropout page's (its key
    "dropout": its dropped weights and their output).

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in page.stages:
        raise KeyError(stage)
    remark, details = None, ()
    if stage == "other_route":
        remark = Message(N_("Both routes give the same weights: max |difference| = {diff}."),
                         diff=f"{walk.route_max_abs_diff:.2e}")
    if page.key == "dropout" and stage in ("dropped_weights", "output"):
        details = (Message(N_("**Row sums of the weights used:** {sums}"),
                           sums=", ".join(f"{v:.3g}" for v in walk.row_sums.tolist())),)
        if walk.dropout_p == 0:
            details += (Message(N_("(eval mode: every row sums to 1)")),)
    check_caption = None
    if page.key == "dropout" and walk.dropout_p > 0:
        check_caption = Message(N_(
            "In training, torch's own dropout would draw D from its global generator, so the check recomputes the "
            "output from our D. That D is the one nn.Dropout itself draws after torch.manual_seed with the same seed "
            "(the app's own tests check this)."))
    return StepThrough(
        page=page,
        stage=Stage(
            key=stage, panels=causal_panels(walk, stage),
            formula=functools.partial(fm.masking_formula, page.key, stage),
            entry=lambda row, col, head, tr: explain_causal(walk, stage, row, col, tr),
            exercise=lambda row, col, head: causal_exercise(walk, stage, row, col),
            code=_causal_code(stage), mask=walk.mask if stage == "mask" else None, remark=remark, details=details,
        ),
        checks=walk.checks, warnings=walk.warnings, notes=walk.notes, check_caption=check_caption,
    )
