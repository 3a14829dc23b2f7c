r"""From settings to every number on the masking & heads pages.

The four pages (causal attention, dropout, multi-head attention,
cross-attention) build up like seed 001's classes: ``CausalAttention`` adds a
mask and dropout to self-attention, ``MultiHeadAttention`` splits d_out into
heads and adds W_O, cross-attention takes its keys and values from a second
sentence. Each ``build_*`` function turns a
:class:`~attention_core.settings.Settings` and the user's edits into a frozen
walkthrough holding every number its page shows, the heatmap panels of each
stage, and the checks against PyTorch. Pages never compute.

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
renormalise" route and dropout.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Mapping, Optional

import torch
import torch.nn.functional as F
from torch import nn

from attention_core import formulas_multihead, stages
from attention_core.errors import N_, InputError, Message
from attention_core.inputs.presets import PRESETS
from attention_core.inputs.tokens import Vocabulary, seed000_tables, tokenize
from attention_core.latex import Translate, number
from attention_core.masking import formulas as fm
from attention_core.masking.masks import (
    MaskAfterSoftmaxTrace,
    additive_mask,
    causal_mask,
    combine_masks,
    key_padding_mask,
    mask_after_softmax,
)
from attention_core.multihead import MultiHeadTrace, head_columns, multi_head_attention
from attention_core.self_attention import functional, modules
from attention_core.self_attention.functional import SelfAttentionTrace, self_attention
from attention_core.self_attention.walkthrough import (
    Walkthrough,
    base_matrices,
    build_walkthrough,
    dim_labels,
    token_labels,
)
from attention_core.settings import MAX_TOKENS, Edits, Settings
from attention_core.stepthrough import Check, Panel, Stage, StepThrough, compare

#: The name under which the user's mask edits are stored: {(i, j): 1.0 allowed / 0.0 blocked}.
MASK_EDITS = "mask"


# ---------------------------------------------------------------- shared pieces


@dataclass(frozen=True)
class MaskParts:
    """The attention mask of the causal, dropout and multi-head pages, and where each block comes from.

    Attributes:
        causal: bool (T, T), the causal mask (all True when it is switched off).
        real_keys: bool (T,), False for the trailing padding tokens.
        edited: {(i, j): allowed} the user's clicked cells inside T × T that differ from
            what the causal and padding masks say.
        attn_mask: bool (T, T), causal ∧ padding, then the user's cells; True = may attend.
        additive: (T, T) float32, 0 where allowed and -inf where blocked (M).
        padding: how many trailing tokens are padding (at most T).
    """

    causal: torch.Tensor
    real_keys: torch.Tensor
    edited: Mapping[tuple[int, int], bool]
    attn_mask: torch.Tensor
    additive: torch.Tensor
    padding: int

    def reasons(self, row: int, col: int) -> tuple[str, ...]:
        """Why entry (row, col) is allowed or blocked, as short phrases (:class:`Message`, no user text)."""
        out = []
        key, query = col + 1, row + 1
        if (row, col) in self.edited:
            out.append(Message(N_("you set this cell")))
        elif not bool(self.causal[row, col]):
            out.append(Message(N_("key {key} is in the future of query {query}"), key=key, query=query))
        if not bool(self.real_keys[col]) and (row, col) not in self.edited:
            out.append(Message(N_("key {key} is padding"), key=key))
        if not out:
            out.append(Message(N_("key {key} is at or before query {query}"), key=key, query=query) if col <= row
                       else Message(N_("no mask blocks it")))
        return tuple(out)


def module_weights(d_in: int, d_out: int, seed: int, *, out_proj: bool) -> dict[str, torch.Tensor]:
    """W_q, W_k, W_v (and W_O, b_O) drawn the way seed 001's modules draw them, from a local generator.

    ``CausalAttention(d_in, d_out, ...)`` and ``MultiHeadAttention(d_in, d_out, ...)``
    (``qkv_bias=False``) create ``nn.Linear(d_in, d_out)`` for W_query, W_key,
    W_value in that order, then MultiHeadAttention's ``out_proj =
    nn.Linear(d_out, d_out)`` with a bias. ``nn.Linear`` initialises its (out, in)
    weight with ``kaiming_uniform_(a=√5)`` = U(-1/√in, 1/√in) and its bias with
    U(-1/√in, 1/√in). The same calls here, on ``torch.Generator().manual_seed(seed)``,
    give the modules' numbers after ``torch.manual_seed(seed)``.

    Args:
        d_in: D, the input width. d_out: the width of q, k, v. seed: >= 0.
        out_proj: also draw W_O (d_out, d_out) and b_O (d_out,).

    Returns:
        {"w_query", "w_key", "w_value"}: (d_in, d_out) float32, applied as x @ W
        (= ``linear.weight.T``); with out_proj also "w_out" (d_out, d_out) and "b_out" (d_out,).
    """
    g = torch.Generator().manual_seed(seed)

    def linear(fan_in: int, fan_out: int, bias: bool) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        weight = torch.empty(fan_out, fan_in)  # nn.Linear's layout: (out, in)
        nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=g)
        b = None
        if bias:
            bound = 1.0 / math.sqrt(fan_in)
            b = nn.init.uniform_(torch.empty(fan_out), -bound, bound, generator=g)
        return weight.T.contiguous(), b  # (in, out): x @ W

    out = {name: linear(d_in, d_out, False)[0] for name in ("w_query", "w_key", "w_value")}
    if out_proj:
        out["w_out"], out["b_out"] = linear(d_out, d_out, True)
    return out


_TOO_LONG = {
    "sentence": N_("The sentence has {num_tokens} tokens but the context length is {context_length}: the "
                   "module's mask buffer is only {context_length} × {context_length}. Raise the context length "
                   "(at most {max_tokens}) or shorten the sentence."),
    "decoder": N_("The decoder sentence has {num_tokens} tokens but the context length is {context_length}: the "
                  "module's mask buffer is only {context_length} × {context_length}. Raise the context length "
                  "(at most {max_tokens}) or shorten the sentence."),
    "encoder": N_("The encoder sentence has {num_tokens} tokens but the context length is {context_length}: the "
                  "module's mask buffer is only {context_length} × {context_length}. Raise the context length "
                  "(at most {max_tokens}) or shorten the sentence."),
}


def _check_context(num_tokens: int, context_length: int, what: str) -> None:
    """``what``: "sentence", "decoder" or "encoder" (which sentence is too long)."""
    if num_tokens > context_length:
        raise InputError(_TOO_LONG[what], field="context_length", num_tokens=num_tokens,
                         context_length=context_length, max_tokens=MAX_TOKENS)


def build_mask(num_tokens: int, settings: Settings, cells: Mapping[tuple[int, int], Optional[float]]) -> MaskParts:
    """The mask from the settings (causal switch, padding) and the user's clicked cells.

    Args:
        num_tokens: T.
        settings: uses ``causal`` and ``padding``.
        cells: {(i, j): 1.0 (allow) or 0.0 (block)}; cells outside T × T are kept but not applied.

    Returns:
        The :class:`MaskParts`.
    """
    t = num_tokens
    causal = causal_mask(t) if settings.causal else torch.ones(t, t, dtype=torch.bool)  # (T, T)
    padding = min(settings.padding, t)
    real_keys = key_padding_mask([t - padding], t)[0, 0]  # (1, 1, T) -> (T,)
    attn_mask = combine_masks(causal, real_keys).clone()  # (T, T) & (T,) -> (T, T)
    edited = {}
    for (i, j), value in sorted(cells.items()):
        if 0 <= i < t and 0 <= j < t and value is not None and not (isinstance(value, float) and math.isnan(value)):
            if bool(value) != bool(attn_mask[i, j]):  # a cell clicked twice is back to what the masks say
                edited[(i, j)] = bool(value)
            attn_mask[i, j] = bool(value)
    return MaskParts(causal=causal, real_keys=real_keys, edited=edited, attn_mask=attn_mask,
                     additive=additive_mask(attn_mask), padding=padding)


def _blocked_notes(blocked: torch.Tensor, tokens: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[str, ...]]:
    rows = tuple(int(i) for i in blocked.nonzero().flatten().tolist())
    notes = tuple(
        Message(N_("Row {row} (query “{token}”) has every key blocked. The softmax over no keys would be 0 / 0 "
                   "(NaN), so its weights are set to 0 and its context vector is all zeros — PyTorch's "
                   "scaled_dot_product_attention does the same. Allow at least one key in row {row} "
                   "(click a grey cell of the mask, lower the padding, or reset the mask)."),
                row=i + 1, token=tokens[i])
        for i in rows
    )
    return rows, notes


def _x_edits(edits: Optional[Edits]) -> dict:
    # Only X is shared with the self-attention pages; their W edits do not apply to the modules' W.
    return {"x": (edits or {}).get("x", {})}


def _head_labels(d_out: int, num_heads: int) -> tuple[str, ...]:
    """Column labels of a d_out-wide matrix that say which head owns each column: h1·c1, h1·c2, h2·c1, ..."""
    return tuple(f"h{r + 1}·c{c + 1}" for r, cols in enumerate(head_columns(d_out, num_heads)) for c in range(len(cols)))


# ---------------------------------------------------------------- causal attention and dropout


@dataclass(frozen=True)
class CausalWalkthrough:
    """Every number of the causal-attention and dropout pages.

    Attributes:
        settings: the settings it was built from.
        base: the self-attention walkthrough that supplies the tokens and X (with the user's X edits).
        tokens: the T tokens.
        weights: "w_query", "w_key", "w_value", (D, d_k): ``CausalAttention``'s, see :func:`module_weights`.
        mask: the :class:`MaskParts`.
        trace: the traced attention with the mask (and, on the dropout page in
            training, dropout): scores, weights, dropout_mask ... (T, T); output (T, d_k).
        other_route: the "softmax, zero the blocked, renormalise" route on the same scaled scores.
        route_max_abs_diff: max |other_route.weights - trace.weights| (0 up to rounding).
        dropout_p: the p applied (0 in eval mode or off the dropout page).
        keep: bool (T, T), the dropout mask (True = kept; all True when no dropout).
        row_sums: (T,), the row sums of the weights after dropout.
        blocked_rows: the rows (0-based) with every key blocked.
        checks: the comparisons with PyTorch.
        warnings: one explanation per fully blocked row (plain text; may contain the user's tokens).
        notes: other remarks for the user (plain text; may contain the user's tokens).
    """

    settings: Settings
    base: Walkthrough
    tokens: tuple[str, ...]
    weights: Mapping[str, torch.Tensor]
    mask: MaskParts
    trace: SelfAttentionTrace
    other_route: MaskAfterSoftmaxTrace
    route_max_abs_diff: float
    dropout_p: float
    keep: torch.Tensor
    row_sums: torch.Tensor
    blocked_rows: tuple[int, ...]
    checks: tuple[Check, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def scale(self) -> float:
        """1 / (1 - p), the factor kept weights are multiplied by."""
        return 1.0 / (1.0 - self.dropout_p)


def build_causal_walkthrough(settings: Settings, edits: Optional[Edits] = None, *,
                             dropout: bool = False) -> CausalWalkthrough:
    """Causal attention (seed 001's ``CausalAttention``) on the settings' sentence, step by step.

    Args:
        settings: validated settings: sentence, d_model, d_k, seed, context_length,
            causal, padding; with ``dropout`` also dropout_p, training, dropout_seed.
        edits: the user's edits: "x" (cells of X) and :data:`MASK_EDITS` (mask cells).
        dropout: apply dropout to the weights (the dropout page) when training and p > 0.

    Returns:
        The :class:`CausalWalkthrough`.

    Raises:
        InputError: a bad sentence or X cell (see ``walkthrough.build_walkthrough``),
            or more tokens than the context length.
    """
    edits = edits or {}
    base = build_walkthrough(settings, _x_edits(edits))
    tokens, x = base.tokens, base.trace.x  # x: (T, D)
    t = len(tokens)
    _check_context(t, settings.context_length, "sentence")
    w = module_weights(settings.d_model, settings.d_k, settings.seed, out_proj=False)
    mask = build_mask(t, settings, edits.get(MASK_EDITS, {}))
    p = settings.dropout_p if dropout and settings.training else 0.0
    generator = torch.Generator().manual_seed(settings.dropout_seed)
    trace = self_attention(x, w["w_query"], w["w_key"], w["w_value"], attn_mask=mask.attn_mask,
                           dropout_p=p, generator=generator)
    att = trace.attention
    other = mask_after_softmax(att.scaled_scores, mask.attn_mask)
    route_diff = float((other.weights - att.weights).abs().max())
    keep = att.dropout_mask if att.dropout_mask is not None else torch.ones(t, t, dtype=torch.bool)
    blocked_rows, warnings = _blocked_notes(att.blocked_rows, tokens)
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
        drawn = torch.empty(t, t).bernoulli_(1.0 - p, generator=torch.Generator().manual_seed(settings.dropout_seed))
        reference = (att.weights * drawn / (1.0 - p)) @ v  # what nn.Dropout(p) does to the weights, then · V
        checks.append(compare(
            att.output, reference,
            f"weights * torch.empty(T, T).bernoulli_(1 - p, generator=torch.Generator().manual_seed("
            f"{settings.dropout_seed})) / (1 - p) @ V",
            Message(N_("our output against nn.Dropout's draw made afresh from the same seed"))))
    if settings.padding >= t:
        warnings = (Message(N_("All {t} tokens are padding, so every key is blocked."), t=t),) + warnings
    return CausalWalkthrough(
        settings=settings, base=base, tokens=tokens, weights=w, mask=mask, trace=trace, other_route=other,
        route_max_abs_diff=route_diff, dropout_p=p, keep=keep, row_sums=att.dropped_weights.sum(dim=-1),
        blocked_rows=blocked_rows, checks=tuple(checks), warnings=warnings, notes=notes,
    )


def causal_panels(walk: CausalWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of a causal or dropout page stage (keys of CAUSAL_STAGES or DROPOUT_STAGES)."""
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
    matrix = causal_panels(walk, stage)[-1 if stage == "other_route" else 0].matrix
    if not (0 <= row < matrix.shape[0] and 0 <= col < matrix.shape[1]):
        raise IndexError(f"entry ({row}, {col}) is outside {tuple(matrix.shape)}")
    allowed = bool(walk.mask.attn_mask[row, col])
    if stage == "scaled_scores":
        return fm.scaled_score_entry_latex(row, col, att.query[row].tolist(), att.key[col].tolist(),
                                           att.query.shape[-1], float(att.scaled_scores[row, col]))
    if stage == "mask":
        return fm.mask_entry_latex(row, col, allowed, tuple(tr(reason) for reason in walk.mask.reasons(row, col)))
    if stage == "masked_scores":
        return fm.masked_score_entry_latex(row, col, float(att.scaled_scores[row, col]), allowed)
    if stage == "weights":
        return fm.masked_weight_entry_latex(row, col, att.masked_scores[row].tolist(), float(att.weights[row, col]),
                                            tr=tr)
    if stage == "other_route":
        route = walk.other_route
        return fm.renormalised_entry_latex(row, col, route.unmasked_weights[row].tolist(),
                                           route.attn_mask[row].tolist(), float(route.weights[row, col]), tr)
    if stage == "dropout_mask":
        return fm.dropout_mask_entry_latex(row, col, bool(walk.keep[row, col]), walk.settings.dropout_p,
                                           walk.dropout_p > 0, tr)
    if stage == "dropped_weights":
        return fm.dropped_weight_entry_latex(row, col, float(att.weights[row, col]), bool(walk.keep[row, col]),
                                             walk.dropout_p, float(att.dropped_weights[row, col]))
    if stage == "output":
        symbol = r"\tilde{\alpha}" if walk.dropout_p > 0 else r"\alpha"
        return fm.weighted_sum_entry_latex(row, col, att.dropped_weights[row].tolist(), att.value[:, col].tolist(),
                                           float(att.output[row, col]), weight_symbol=symbol)
    raise KeyError(stage)


# ---------------------------------------------------------------- multi-head self- and cross-attention


@dataclass(frozen=True)
class MultiHeadWalkthrough:
    """Every number of the multi-head and cross-attention pages.

    Attributes:
        settings: the settings it was built from.
        base: the self-attention walkthrough that supplies the (decoder) tokens and X.
        tokens: the m query tokens (the sentence; the decoder's in cross-attention).
        kv_tokens: the n key/value tokens (the same as ``tokens`` in self-attention;
            the encoder sentence's in cross-attention).
        x_query: (m, D). x_kv: (n, D).
        weights: "w_query", "w_key", "w_value" (D, d_out), "w_out" (d_out, d_out),
            "b_out" (d_out,): ``MultiHeadAttention``'s, see :func:`module_weights`.
        mask: the :class:`MaskParts` (self-attention), or None (cross-attention: no mask).
        trace: the unbatched :class:`MultiHeadTrace`: per head (h, m, n) scores and
            weights, concat (m, d_out), output (m, d_out).
        columns: head r owns columns ``columns[r]`` of Q, K, V and the concatenation.
        shapes: the reshape chain with b = 1: (b, m, d_out), (b, m, h, head_dim), (b, h, m, head_dim).
        blocked_rows, checks, warnings, notes: as in :class:`CausalWalkthrough`.
    """

    settings: Settings
    base: Walkthrough
    tokens: tuple[str, ...]
    kv_tokens: tuple[str, ...]
    x_query: torch.Tensor
    x_kv: torch.Tensor
    weights: Mapping[str, torch.Tensor]
    mask: Optional[MaskParts]
    trace: MultiHeadTrace
    columns: tuple[range, ...]
    shapes: tuple[tuple[int, ...], ...]
    blocked_rows: tuple[int, ...]
    checks: tuple[Check, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def is_cross(self) -> bool:
        return self.mask is None

    @property
    def scale(self) -> float:
        """1 / √head_dim, the factor every head's scores are multiplied by."""
        return self.trace.scale

    @property
    def wrong_scale(self) -> float:
        """1 / √d_out: the factor of a common published bug (every head's softmax too flat)."""
        return 1.0 / math.sqrt(self.trace.concat.shape[-1])


def _torch_mha_checks(trace: MultiHeadTrace, weights: Mapping[str, torch.Tensor], x_query: torch.Tensor,
                      x_kv: torch.Tensor, attn_mask: Optional[torch.Tensor],
                      blocked: torch.Tensor) -> list[Check]:
    """Our output against SDPA per head (always) and nn.MultiheadAttention (when d_model == d_out)."""
    h = trace.num_heads
    m, d_out = trace.concat.shape
    checks = []
    per_head = F.scaled_dot_product_attention(trace.query_heads, trace.key_heads, trace.value_heads,
                                              attn_mask=attn_mask)  # (h, m, hd)
    concat = per_head.transpose(0, 1).reshape(m, d_out)  # (h, m, hd) -> (m, h, hd) -> (m, d_out)
    checks.append(compare(trace.output, concat @ weights["w_out"] + weights["b_out"],
                           "torch.nn.functional.scaled_dot_product_attention(Q_heads, K_heads, V_heads"
                           + (", attn_mask=mask" if attn_mask is not None else "") + ") → concat · W_O + b_O"))
    d_model, d_kv = x_query.shape[-1], x_kv.shape[-1]
    if d_model != d_out:
        return checks
    # Built on the meta device, so that creating it draws nothing from the global generator.
    with torch.device("meta"):
        mha = nn.MultiheadAttention(d_out, h, kdim=d_kv, vdim=d_kv, batch_first=True)
    mha = mha.to_empty(device="cpu").eval()
    with torch.no_grad():
        if mha._qkv_same_embed_dim:
            mha.in_proj_weight.copy_(torch.cat([weights[n].T for n in ("w_query", "w_key", "w_value")]))
        else:
            mha.q_proj_weight.copy_(weights["w_query"].T)
            mha.k_proj_weight.copy_(weights["w_key"].T)
            mha.v_proj_weight.copy_(weights["w_value"].T)
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(weights["w_out"].T)
        mha.out_proj.bias.copy_(weights["b_out"])
        out, attn = mha(x_query[None], x_kv[None], x_kv[None],
                        attn_mask=None if attn_mask is None else ~attn_mask,  # torch's bool mask: True = NOT allowed
                        need_weights=True, average_attn_weights=False)
    keep = ~blocked  # nn.MultiheadAttention gives NaN for a query with every key blocked
    note = "" if bool(keep.all()) else Message(N_("rows with every key blocked left out (nn.MultiheadAttention "
                                                  "gives NaN there)"))
    code = (f"torch.nn.MultiheadAttention({d_out}, num_heads={h}"
            + (f", kdim={d_kv}, vdim={d_kv}" if d_kv != d_out else "") + ", batch_first=True)")
    # the call as code: [0] is the output, [1] the per-head weights
    call = code + ("(x, x, x" if x_query is x_kv else "(x_dec, x_enc, x_enc") + (
        ", attn_mask=~mask" if attn_mask is not None else "")
    checks.append(compare(trace.output[keep], out[0][keep], call + ")[0]", note))
    checks.append(compare(trace.weights[:, keep], attn[0][:, keep], call + ", average_attn_weights=False)[1]",
                           note))
    return checks


def _reshape_chain(m: int, d_out: int, h: int) -> tuple[tuple[int, ...], ...]:
    return (1, m, d_out), (1, m, h, d_out // h), (1, h, m, d_out // h)


def build_multihead_walkthrough(settings: Settings, edits: Optional[Edits] = None) -> MultiHeadWalkthrough:
    """Multi-head self-attention (seed 001's ``MultiHeadAttention``) on the settings' sentence.

    The mask is the causal page's (causal switch, padding, clicked cells); no dropout (eval mode).

    Args:
        settings: validated settings: sentence, d_model, seed, d_out, num_heads,
            context_length, causal, padding.
        edits: "x" and :data:`MASK_EDITS`.

    Returns:
        The :class:`MultiHeadWalkthrough`.

    Raises:
        InputError: a bad sentence or X cell, more tokens than the context
            length, or num_heads not dividing d_out (the message lists the head
            counts that fit).
    """
    edits = edits or {}
    base = build_walkthrough(settings, _x_edits(edits))
    tokens, x = base.tokens, base.trace.x  # x: (T, D)
    t = len(tokens)
    _check_context(t, settings.context_length, "sentence")
    columns = head_columns(settings.d_out, settings.num_heads)  # raises if h does not divide d_out
    w = module_weights(settings.d_model, settings.d_out, settings.seed, out_proj=True)
    mask = build_mask(t, settings, edits.get(MASK_EDITS, {}))
    trace = multi_head_attention(x, x, w["w_query"], w["w_key"], w["w_value"], w["w_out"], b_out=w["b_out"],
                                 num_heads=settings.num_heads, attn_mask=mask.attn_mask)
    blocked = trace.heads[0].blocked_rows  # the same mask for every head: (T,)
    blocked_rows, warnings = _blocked_notes(blocked, tokens)
    checks = _torch_mha_checks(trace, w, x, x, mask.attn_mask, blocked)
    notes: tuple[str, ...] = ()
    if settings.d_model != settings.d_out:
        notes = notes + (
            Message(N_("torch.nn.MultiheadAttention needs queries as wide as d_out (its embed_dim); here d_model = "
                       "{d_model} ≠ d_out = {d_out}, so the check uses scaled_dot_product_attention per head. Set "
                       "d_out = d_model to see it checked against nn.MultiheadAttention too."),
                    d_model=settings.d_model, d_out=settings.d_out),
        )
    return MultiHeadWalkthrough(
        settings=settings, base=base, tokens=tokens, kv_tokens=tokens, x_query=x, x_kv=x, weights=w, mask=mask,
        trace=trace, columns=columns, shapes=_reshape_chain(t, settings.d_out, settings.num_heads),
        blocked_rows=blocked_rows, checks=tuple(checks), warnings=warnings, notes=notes,
    )


def encoder_inputs(settings: Settings, base: Walkthrough) -> tuple[tuple[str, ...], torch.Tensor]:
    """The encoder sentence's tokens and embeddings X_enc (n, D), from the same table as the decoder's.

    Fixed vocabularies (seed 000's dictionary, the articles' word vectors) give
    each word the same vector in both sentences. With a vocabulary built from
    the sentence, the encoder's new words get the next ids and the next rows of
    the same seeded table (drawn after everything else, so the decoder's X is
    unchanged); the user's X edits apply to the decoder only.

    Raises:
        InputError: an empty encoder sentence, more than MAX_TOKENS tokens, or
            words outside a fixed vocabulary (field "encoder_sentence").
    """
    raw = tokenize(settings.encoder_sentence)
    if not raw:
        raise InputError(N_("The encoder sentence is empty: type a few words (the tokens the decoder looks at)."),
                         field="encoder_sentence")
    if len(raw) > MAX_TOKENS:
        raise InputError(
            N_("The encoder sentence has {num_tokens} tokens; this page shows at most {max_tokens} "
               "(a grid of {max_tokens} × {max_tokens} numbers is the most that stays readable). Shorten it."),
            field="encoder_sentence", num_tokens=len(raw), max_tokens=MAX_TOKENS,
        )
    preset = PRESETS[settings.preset]
    if preset.vocabulary is not None or preset.table is not None:
        try:
            words, ids = base.vocabulary.encode(raw)
        except InputError as error:
            raise InputError(N_("Encoder sentence: {problem}"), field="encoder_sentence",
                             problem=error.message) from None
        return words, base_matrices(settings, ids, base.vocabulary)["x"]
    extended = Vocabulary.from_tokens(base.tokens + raw)  # the decoder's words keep their ids
    words, ids = extended.encode(raw)
    extra = extended.num_rows - base.vocabulary.num_rows
    table = seed000_tables(settings.seed, base.vocabulary.num_rows, settings.d_model, settings.d_k)[0]
    if extra:
        # seed000_tables' generator, continued: the same draws, then `extra` more rows.
        g = torch.Generator().manual_seed(settings.seed)
        torch.randn(base.vocabulary.num_rows - 1, settings.d_model, generator=g)
        for _i in range(3):
            torch.randn(settings.d_model, settings.d_k, generator=g)
        torch.randn(1, settings.d_model, generator=g)
        table = torch.cat([table, torch.randn(extra, settings.d_model, generator=g)])
    return words, table[torch.tensor(ids)]


def build_cross_walkthrough(settings: Settings, edits: Optional[Edits] = None) -> MultiHeadWalkthrough:
    """Cross-attention: the decoder sentence's queries attend to the encoder sentence's keys and values.

    Queries come from ``settings.sentence`` (m tokens, its X with the user's
    edits), keys and values from ``settings.encoder_sentence`` (n tokens); the
    weights are m × n per head, m ≠ n is fine, and there is no mask (every
    decoder token may look at every encoder token). Weights as
    ``MultiHeadAttention(D, d_out, context_length, 0.0, num_heads)``.

    Raises:
        InputError: a bad decoder or encoder sentence, either longer than the
            context length, or num_heads not dividing d_out.
    """
    edits = edits or {}
    base = build_walkthrough(settings, _x_edits(edits))
    _check_context(len(base.tokens), settings.context_length, "decoder")
    enc_tokens, x_enc = encoder_inputs(settings, base)
    _check_context(len(enc_tokens), settings.context_length, "encoder")
    columns = head_columns(settings.d_out, settings.num_heads)
    x_dec = base.trace.x  # (m, D)
    w = module_weights(settings.d_model, settings.d_out, settings.seed, out_proj=True)
    trace = multi_head_attention(x_dec, x_enc, w["w_query"], w["w_key"], w["w_value"], w["w_out"],
                                 b_out=w["b_out"], num_heads=settings.num_heads)
    m, n = len(base.tokens), len(enc_tokens)
    checks = _torch_mha_checks(trace, w, x_dec, x_enc, None, torch.zeros(m, dtype=torch.bool))
    notes = []
    if m != n:
        notes.append(Message(N_("m = {m} decoder tokens attend to n = {n} encoder tokens: every head's weights are "
                                "{m} × {n}, not square, and each row still sums to 1 over the {n} encoder tokens."),
                             m=m, n=n))
    if settings.d_model != settings.d_out:
        notes.append(Message(
            N_("torch.nn.MultiheadAttention needs queries as wide as d_out (its embed_dim); here d_model = "
               "{d_model} ≠ d_out = {d_out}, so the check uses scaled_dot_product_attention per head."),
            d_model=settings.d_model, d_out=settings.d_out))
    return MultiHeadWalkthrough(
        settings=settings, base=base, tokens=base.tokens, kv_tokens=enc_tokens, x_query=x_dec, x_kv=x_enc,
        weights=w, mask=None, trace=trace, columns=columns, shapes=_reshape_chain(m, settings.d_out,
                                                                                   settings.num_heads),
        blocked_rows=(), checks=tuple(checks), warnings=(), notes=tuple(notes),
    )


def multihead_panels(walk: MultiHeadWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of a multi-head (MHA_STAGES) or cross-attention (CROSS_STAGES) stage."""
    trace = walk.trace
    rows, kv_rows = tuple(token_labels(walk.tokens)), tuple(token_labels(walk.kv_tokens))
    d_out, h, hd = trace.concat.shape[-1], trace.num_heads, trace.head_dim
    by_head = _head_labels(d_out, h)
    cross = walk.is_cross
    token, dimension, by_column = Message(N_("token")), Message(N_("dimension")), Message(N_("head · column"))
    decoder_token, encoder_token = Message(N_("decoder token")), Message(N_("encoder token"))
    q_title = decoder_token if cross else Message(N_("query token"))
    k_title = encoder_token if cross else Message(N_("key token"))
    span = lambda r: f"{walk.columns[r].start + 1}–{walk.columns[r].stop}" if hd > 1 else f"{walk.columns[r].start + 1}"  # noqa: E731

    def per_head(matrix: torch.Tensor, title: str, cols: Optional[tuple[str, ...]], col_title: str,
                 **params) -> tuple[Panel, ...]:
        # title: a template with {r} (the head) and {span} (its columns); cols None: head r's columns are
        # labelled by the columns of the d_out-wide matrix they come from / go to
        return tuple(Panel(Message(title, r=r + 1, span=span(r), **params), matrix[r], rows,
                           cols if cols is not None else tuple(Message(N_("col {j}"), j=j + 1) for j in walk.columns[r]),
                           q_title, col_title, head=r)
                     for r in range(h))

    d_model = walk.x_query.shape[-1]
    if stage == "inputs":
        if cross:
            return (Panel(Message(N_("X_dec: the decoder's tokens (queries)")), walk.x_query, rows,
                          tuple(dim_labels("d", d_model)), decoder_token, dimension),
                    Panel(Message(N_("X_enc: the encoder's tokens (keys, values)")), walk.x_kv, kv_rows,
                          tuple(dim_labels("d", d_model)), encoder_token, dimension, explained=False))
        return (Panel("X", walk.x_query, rows, tuple(dim_labels("d", d_model)), token, dimension),)
    if stage in ("projections", "query"):
        panels = [Panel(Message(N_("Q = X W_q: columns grouped by head")), trace.query, rows, by_head, q_title, by_column)]
        if stage == "projections":
            panels += [Panel("K = X W_k", trace.key, rows, by_head, token, by_column, explained=False),
                       Panel("V = X W_v", trace.value, rows, by_head, token, by_column, explained=False)]
        return tuple(panels)
    if stage == "key":
        return (Panel("K = X_enc W_k", trace.key, kv_rows, by_head, encoder_token, by_column),)
    if stage == "value":
        return (Panel("V = X_enc W_v", trace.value, kv_rows, by_head, encoder_token, by_column),)
    if stage == "split":
        return per_head(trace.query_heads, N_("Q_{r} = Q's columns {span}"), None, Message(N_("column of Q")))
    if stage == "scaled_scores":
        return per_head(trace.attention.scaled_scores, N_("head {r}: Q_{r} K_{r}ᵀ / √{hd}"), kv_rows, k_title, hd=hd)
    if stage == "masked_scores":
        return per_head(trace.attention.masked_scores, N_("head {r}: + M"), kv_rows, k_title)
    if stage == "weights":
        return per_head(trace.attention.weights, N_("head {r}: weights"), kv_rows, k_title)
    if stage == "head":
        return per_head(trace.attention.output, N_("head {r}: context vectors → Concat's columns {span}"), None,
                        Message(N_("column of Concat")))
    if stage == "concat":
        return (Panel("C = Concat(head_1, …, head_h)", trace.concat, rows, by_head, q_title, by_column),)
    if stage == "output":
        out_cols = tuple(dim_labels("o", trace.output.shape[-1]))
        column = Message(N_("column"))
        return (Panel("O = C W_O + b_O", trace.output, rows, out_cols, q_title, column),
                Panel("W_O", trace.w_out, by_head, out_cols, Message(N_("row of W_O (= column of C)")), column,
                      explained=False),
                Panel("b_O", trace.b_out.unsqueeze(0), ("b_O",), out_cols, "", column, explained=False))
    raise KeyError(stage)


def explain_multihead(walk: MultiHeadWalkthrough, stage: str, row: int, col: int, head: int,
                      tr: Translate = Message) -> str:
    """One entry of a multi-head or cross-attention stage, with its numbers in, as LaTeX.

    ``tr`` puts the formula's words in the interface language (default: English; pages pass ``ui.i18n._``).

    Raises:
        KeyError: unknown stage. IndexError: (row, col, head) outside the stage's matrices.
    """
    trace = walk.trace
    panels = [p for p in multihead_panels(walk, stage) if p.explained]
    if not 0 <= head < trace.num_heads:
        raise IndexError(f"head {head} outside 0..{trace.num_heads - 1}")
    matrix = panels[0].matrix
    if not (0 <= row < matrix.shape[0] and 0 <= col < matrix.shape[1]):
        raise IndexError(f"entry ({row}, {col}) is outside {tuple(matrix.shape)}")
    att = trace.heads[head]
    cross = walk.is_cross
    if stage == "inputs":
        sup = "^{dec}" if cross else ""
        return f"x{sup}_{{{row + 1},{col + 1}}} = {number(float(walk.x_query[row, col]))}"
    if stage in ("projections", "query"):
        return fm.projection_entry_latex("q", row, col, walk.x_query[row].tolist(), trace.w_query[:, col].tolist(),
                                         float(trace.query[row, col]), "x^{dec}" if cross else "x")
    if stage in ("key", "value"):
        w, out = (trace.w_key, trace.key) if stage == "key" else (trace.w_value, trace.value)
        return fm.projection_entry_latex(stage[0], row, col, walk.x_kv[row].tolist(), w[:, col].tolist(),
                                         float(out[row, col]), "x^{enc}")
    if stage in ("split", "concat"):
        return formulas_multihead.multihead_entry_latex(trace, stage, row, col, head)
    if stage == "scaled_scores":
        return fm.scaled_score_entry_latex(row, col, att.query[row].tolist(), att.key[col].tolist(), trace.head_dim,
                                           float(att.scaled_scores[row, col]), head=head, width_symbol="d_{head}")
    if stage == "masked_scores":
        return fm.masked_score_entry_latex(row, col, float(att.scaled_scores[row, col]),
                                           att.attn_mask is None or bool(att.attn_mask[row, col]), head)
    if stage == "weights":
        return fm.masked_weight_entry_latex(row, col, att.masked_scores[row].tolist(), float(att.weights[row, col]),
                                            head, tr)
    if stage == "head":
        return fm.weighted_sum_entry_latex(row, col, att.dropped_weights[row].tolist(), att.value[:, col].tolist(),
                                           float(att.output[row, col]), head=head)
    if stage == "output":
        return fm.output_entry_latex(row, col, trace.concat[row].tolist(), trace.w_out[:, col].tolist(),
                                     float(trace.b_out[col]), float(trace.output[row, col]))
    raise KeyError(stage)


# ---------------------------------------------------------------- the step-through protocol


def _causal_code(stage: str) -> tuple:
    if stage == "mask":
        return (causal_mask, key_padding_mask, build_mask)
    if stage == "other_route":
        return (mask_after_softmax,)
    return (functional.scaled_dot_product_attention,)


def causal_steps(walk: CausalWalkthrough, stage: str, page: str = "causal") -> StepThrough:
    """The causal ("causal") or dropout ("dropout") page's ``stage`` in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's (see :mod:`attention_core.stages`).
    """
    if stage not in stages.PAGES[page][1]:
        raise KeyError(stage)
    remark, details = None, ()
    if stage == "other_route":
        remark = Message(N_("Both routes give the same weights: max |difference| = {diff}."),
                         diff=f"{walk.route_max_abs_diff:.2e}")
    if page == "dropout" and stage in ("dropped_weights", "output"):
        details = (Message(N_("**Row sums of the weights used:** {sums}"),
                           sums=", ".join(f"{v:.3g}" for v in walk.row_sums.tolist())),)
        if walk.dropout_p == 0:
            details += (Message(N_("(eval mode: every row sums to 1)")),)
    check_caption = None
    if page == "dropout" and walk.dropout_p > 0:
        check_caption = Message(N_(
            "In training, torch's own dropout would draw D from its global generator, so the check recomputes the "
            "output from our D; tests/test_functional.py checks that D equals nn.Dropout's after torch.manual_seed "
            "with the same seed."))
    return StepThrough(
        page=page,
        stage=Stage(
            key=stage, panels=causal_panels(walk, stage),
            formula=functools.partial(fm.masking_formula, page, stage),
            entry=lambda row, col, head, tr: explain_causal(walk, stage, row, col, tr),
            code=_causal_code(stage), mask=walk.mask if stage == "mask" else None, remark=remark, details=details,
        ),
        checks=walk.checks, warnings=walk.warnings, notes=walk.notes, check_caption=check_caption,
    )


def multihead_steps(walk: MultiHeadWalkthrough, stage: str) -> StepThrough:
    """The multi-head ("mha") or cross-attention ("cross") page's ``stage`` in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's (see :mod:`attention_core.stages`).
    """
    page = "cross" if walk.is_cross else "mha"
    if stage not in stages.PAGES[page][1]:
        raise KeyError(stage)
    return StepThrough(
        page=page,
        stage=Stage(
            key=stage, panels=multihead_panels(walk, stage),
            formula=functools.partial(fm.masking_formula, page, stage),
            entry=lambda row, col, head, tr: explain_multihead(walk, stage, row, col, head, tr),
            code=(multi_head_attention,) if walk.is_cross else (modules.MultiHeadAttention.forward,),
        ),
        checks=walk.checks, warnings=walk.warnings, notes=walk.notes, num_heads=walk.trace.num_heads,
        head_field="head",
    )
