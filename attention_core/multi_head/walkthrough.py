"""From settings to every number on the multi-head and cross-attention pages, and their step-through.

Seed 001's ``MultiHeadAttention`` splits d_out into h heads of head_dim columns, attends per head (with the
causal page's mask) and mixes the concatenated heads with W_O; cross-attention takes its keys and values from
a second (encoder) sentence (seed 003). :func:`build_multi_head_walkthrough` and
:func:`attention_core.lessons.cross_attention.page.build_cross_attention_walkthrough` hold every number their page shows and the checks against
``torch.nn.functional.scaled_dot_product_attention`` and ``torch.nn.MultiheadAttention``;
:func:`step_through_for_page` puts a stage of a page on this machinery (multi-head, cross-attention) in the one step-through
protocol.

Shape legend: m query tokens (the decoder's in cross-attention), n key/value tokens, D = d_model,
d_out = h · head_dim, h = num_heads. Matrices are float32; masks bool with True = may attend.

Sources: Vaswani et al. 2017, eq. 1 and sec. 3.2.2; seed 001 (001_9275b51964da46b3.txt); seed 003
(003_734755b2d0b981d3.txt) for cross-attention; rasbt/LLMs-from-scratch ch03 via seed 004."""

from __future__ import annotations

import functools
import math
from typing import Mapping, Optional

import torch
import torch.nn.functional as F
from torch import nn

from attention_core import entry_formulas as entries
from attention_core import practice
from attention_core.errors import N_, Message
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, index, number
from attention_core.masking.user_mask import (
    MASK_EDITS,
    blocked_row_notes,
    build_mask,
    check_context_length,
)
from attention_core.multi_head import formulas as formulas_multi_head
from attention_core.multi_head import modules
from attention_core.multi_head.heads import MultiHeadTrace, head_columns, head_labels, multi_head_attention
from attention_core.multi_head.walk import MultiHeadWalkthrough
from attention_core.page import Page
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import HEAD_FIELD, Check, Panel, Stage, StepThrough, compare, explained_value
from attention_core.weights import module_weights


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


def build_multi_head_walkthrough(settings: SharedSettings, edits: Optional[Edits] = None) -> MultiHeadWalkthrough:
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
    inputs = build_inputs(settings, edits, edited=("x",))
    tokens, x = inputs.tokens, inputs.x  # x: (T, D)
    t = len(tokens)
    check_context_length(t, settings.context_length, "sentence")
    columns = head_columns(settings.d_out, settings.num_heads)  # raises if h does not divide d_out
    w = module_weights(settings.d_model, settings.d_out, settings.seed, out_proj=True)
    mask = build_mask(t, settings, edits.get(MASK_EDITS, {}))
    trace = multi_head_attention(x, x, w["w_query"], w["w_key"], w["w_value"], w["w_out"], b_out=w["b_out"],
                                 num_heads=settings.num_heads, attn_mask=mask.attn_mask)
    blocked = trace.heads[0].blocked_rows  # the same mask for every head: (T,)
    blocked_rows, warnings = blocked_row_notes(blocked, tokens)
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
        settings=settings, inputs=inputs, tokens=tokens, kv_tokens=tokens, x_query=x, x_kv=x, weights=w, mask=mask,
        trace=trace, columns=columns, shapes=_reshape_chain(t, settings.d_out, settings.num_heads),
        blocked_rows=blocked_rows, checks=tuple(checks), warnings=warnings, notes=notes,
    )


def multi_head_panels(walk: MultiHeadWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of a multi-head (MULTI_HEAD.stages) or cross-attention (CROSS_ATTENTION.stages) stage."""
    trace = walk.trace
    rows, kv_rows = tuple(token_labels(walk.tokens)), tuple(token_labels(walk.kv_tokens))
    d_out, h, hd = trace.concat.shape[-1], trace.num_heads, trace.head_dim
    by_head = head_labels(d_out, h)
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


def explain_multi_head(walk: MultiHeadWalkthrough, stage: str, row: int, col: int, head: int,
                      tr: Translate = Message) -> str:
    """One entry of a multi-head or cross-attention stage, with its numbers in, as LaTeX.

    ``tr`` puts the formula's words in the interface language (default: English; pages pass ``ui.i18n._``).

    Raises:
        KeyError: unknown stage. IndexError: (row, col, head) outside the stage's matrices.
    """
    trace = walk.trace
    panels = [p for p in multi_head_panels(walk, stage) if p.explained]
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
        return entries.projection_entry_latex("q", row, col, walk.x_query[row].tolist(), trace.w_query[:, col].tolist(),
                                         float(trace.query[row, col]), "x^{dec}" if cross else "x")
    if stage in ("key", "value"):
        w, out = (trace.w_key, trace.key) if stage == "key" else (trace.w_value, trace.value)
        return entries.projection_entry_latex(stage[0], row, col, walk.x_kv[row].tolist(), w[:, col].tolist(),
                                         float(out[row, col]), "x^{enc}")
    if stage in ("split", "concat"):
        return formulas_multi_head.multi_head_entry_latex(trace, stage, row, col, head)
    if stage == "scaled_scores":
        return entries.scaled_score_entry_latex(row, col, att.query[row].tolist(), att.key[col].tolist(), trace.head_dim,
                                           float(att.scaled_scores[row, col]), head=head, width_symbol="d_{head}")
    if stage == "masked_scores":
        return entries.masked_score_entry_latex(row, col, float(att.scaled_scores[row, col]),
                                           att.attn_mask is None or bool(att.attn_mask[row, col]), head)
    if stage == "weights":
        return entries.masked_weight_entry_latex(row, col, att.masked_scores[row].tolist(), float(att.weights[row, col]),
                                            head, tr)
    if stage == "head":
        return entries.weighted_sum_entry_latex(row, col, att.dropped_weights[row].tolist(), att.value[:, col].tolist(),
                                           float(att.output[row, col]), head=head)
    if stage == "output":
        return entries.output_entry_latex(row, col, trace.concat[row].tolist(), trace.w_out[:, col].tolist(),
                                     float(trace.b_out[col]), float(trace.output[row, col]))
    raise KeyError(stage)


def multi_head_exercise(walk: MultiHeadWalkthrough, stage: str, row: int, col: int,
                       head: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of head ``head`` of a multi-head or cross-attention stage as an exercise (practice mode);
    None where nothing is computed (the inputs, the split and concat, which move numbers, the masked scores).

    Raises:
        KeyError: unknown stage. IndexError: (row, col, head) outside the stage's matrices.
    """
    trace = walk.trace
    if not 0 <= head < trace.num_heads:
        raise IndexError(f"head {head} outside 0..{trace.num_heads - 1}")
    value = explained_value(multi_head_panels(walk, stage), row, col, head)  # raises outside the explained panel
    att, hd = trace.heads[head], trace.head_dim
    i, j, r = row + 1, col + 1, head + 1
    cross = walk.is_cross
    if stage in ("projections", "query", "key", "value"):
        letter = "q" if stage in ("projections", "query") else stage[0]
        x, w = ((walk.x_query, trace.w_query) if letter == "q"
                else (walk.x_kv, trace.w_key if letter == "k" else trace.w_value))
        sup = ("^{dec}" if letter == "q" else "^{enc}") if cross else ""
        return practice.dot_exercise(
            index(letter, row, col), f"\\sum_l x{sup}_{{{i},l}}\\, W^{{{letter}}}_{{l,{j}}}",
            (f"x{sup}_{{{i}}}", x[row].tolist()), (f"W^{{{letter}}}_{{:,{j}}}", w[:, col].tolist()), value)
    if stage == "scaled_scores":
        q, k = att.query, att.key
        swapped = float(q[col] @ k[row]) if col < q.shape[0] and row < k.shape[0] else None
        return practice.scale_exercise(
            index("a", row, col, head),
            f"\\frac{{q^{{({r})}}_{{{i}}} \\cdot k^{{({r})}}_{{{j}}}}}{{\\sqrt{{d_{{head}}}}}}", "",
            float(q[row] @ k[col]), hd, value, d_name="head_dim", d_latex="d_{head}", d_model=trace.concat.shape[-1],
            dot=((f"q^{{({r})}}_{{{i}}}", q[row].tolist()), (f"k^{{({r})}}_{{{j}}}", k[col].tolist())),
            swapped=swapped)
    if stage == "weights":
        blocked = torch.isinf(att.masked_scores)
        return practice.softmax_exercise(
            index(r"\alpha", row, col, head),
            f"\\frac{{e^{{a'^{{({r})}}_{{{i},{j}}}}}}}{{\\sum_l e^{{a'^{{({r})}}_{{{i},l}}}}}}", f"a'^{{({r})}}_{{{i}}}",
            att.masked_scores.tolist(), row, col, value,
            unmasked=att.scaled_scores.tolist() if bool(blocked.any()) else None,
            unscaled=(att.scaled_scores * math.sqrt(hd)).masked_fill(blocked, float("-inf")).tolist(), d=hd)
    if stage == "head":
        return practice.weighted_sum_exercise(
            index("z", row, col, head), f"\\sum_l \\alpha^{{({r})}}_{{{i},l}}\\, v^{{({r})}}_{{l,{j}}}",
            (f"\\alpha^{{({r})}}_{{{i}}}", att.dropped_weights[row].tolist()),
            (f"v^{{({r})}}_{{:,{j}}}", att.value[:, col].tolist()), value)
    if stage == "output":
        return practice.dot_exercise(
            index("o", row, col), f"\\sum_l c_{{{i},l}}\\, W^O_{{l,{j}}} + b^O_{{{j}}}",
            (f"c_{{{i}}}", trace.concat[row].tolist()), (f"W^O_{{:,{j}}}", trace.w_out[:, col].tolist()), value,
            extra=(f"b^O_{{{j}}} = {number(float(trace.b_out[col]))}",))
    return None


def step_through_for_page(walk: MultiHeadWalkthrough, stage: str, page: Page) -> StepThrough:
    """``page``'s ``stage`` in the one step-through protocol (the multi-head page's, or another page's on the same
    machinery: the cross-attention page's).

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in page.stages:
        raise KeyError(stage)
    return StepThrough(
        page=page,
        stage=Stage(
            key=stage, panels=multi_head_panels(walk, stage),
            formula=functools.partial(formulas_multi_head.page_formula, page.key, stage),
            entry=lambda row, col, head, tr: explain_multi_head(walk, stage, row, col, head, tr),
            exercise=lambda row, col, head: multi_head_exercise(walk, stage, row, col, head),
            code=(multi_head_attention,) if walk.is_cross else (modules.MultiHeadAttention.forward,),
        ),
        checks=walk.checks, warnings=walk.warnings, notes=walk.notes, num_heads=walk.trace.num_heads,
        head_field=HEAD_FIELD,
    )
