r"""Multi-head attention (self- and cross-), returning every intermediate.

Shape legend: b any leading batch dims (possibly none), m query tokens, n
key/value tokens (m = n = T in self-attention), d_in query input width, d_kv
key/value input width, h = num_heads, d_out = h · head_dim, d_o output width.

.. math::
    \operatorname{head}_i = \operatorname{softmax}\!\left(
        \frac{Q_i K_i^\top}{\sqrt{d_{head}}} + M\right) V_i, \qquad
    \operatorname{MultiHead} = \operatorname{Concat}(\operatorname{head}_1, \dots,
        \operatorname{head}_h)\, W_O

where Q_i, K_i, V_i are the columns ``head_columns(d_out, h)[i]`` of
Q = X_q W_q, K = X_kv W_k, V = X_kv W_v. Self-attention: X_q = X_kv.
Cross-attention (the encoder-decoder attention): queries from one sequence
(m tokens), keys and values from another (n tokens).

Weights are (input width, output width) and applied as ``x @ W`` like
:func:`functional.self_attention`. An ``nn.Linear(d_in, d_out)`` stores its
weight as (d_out, d_in), so W = ``linear.weight.T``; ``torch.nn.MultiheadAttention``
stores ``in_proj_weight = cat(W_q.T, W_k.T, W_v.T)`` and ``out_proj.weight = W_O.T``.

Sources: Vaswani et al. 2017, "Attention Is All You Need", sec. 3.2.2
(multi-head attention) and eq. 1; seed 001 (001_9275b51964da46b3.txt) for the
formulas and ``MultiHeadAttention``'s view/transpose code; seed 004
(004_56c592a3d25bc184.txt), after rasbt/LLMs-from-scratch ch03; seed 003
(003_734755b2d0b981d3.txt) for cross-attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from attention_core.errors import N_, InputError
from attention_core.self_attention.functional import AttentionTrace, scaled_dot_product_attention


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(T, h · w) -> (h, T, w): head r's columns r w … (r + 1) w − 1 (seed 001's view and transpose)."""
    return x.view(x.shape[0], num_heads, -1).transpose(0, 1)


def head_columns(d_out: int, num_heads: int) -> tuple[range, ...]:
    """Which columns of Q, K and V (and of the concatenation) belong to which head.

    Head i owns the consecutive columns ``i * head_dim ... (i + 1) * head_dim - 1``:
    that is what ``view(..., num_heads, head_dim)`` does to the last dim.

    Args:
        d_out: the width of Q, K and V.
        num_heads: h.

    Returns:
        h ranges of head_dim = d_out // h column indices each.

    Raises:
        InputError: if num_heads < 1 or d_out is not a multiple of num_heads.
    """
    _check_heads(d_out, num_heads)
    head_dim = d_out // num_heads
    return tuple(range(i * head_dim, (i + 1) * head_dim) for i in range(num_heads))


def head_labels(d_out: int, num_heads: int) -> tuple[str, ...]:
    """Labels of a d_out-wide matrix's columns that say which head owns each: h1·c1, h1·c2, h2·c1, ... (as
    :func:`head_columns`). Raises InputError as :func:`head_columns`."""
    return tuple(f"h{r + 1}·c{c + 1}" for r, cols in enumerate(head_columns(d_out, num_heads)) for c in range(len(cols)))


def _check_heads(d_out: int, num_heads: int) -> None:
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        raise InputError(N_("The number of heads must be a whole number >= 1, got {num_heads}."),
                         field="num_heads", num_heads=repr(num_heads))
    if isinstance(d_out, bool) or not isinstance(d_out, int) or d_out < 1:
        raise InputError(N_("d_out must be a whole number >= 1, got {d_out}."), field="d_out", d_out=repr(d_out))
    if d_out % num_heads != 0:
        fits = [h for h in range(1, d_out + 1) if d_out % h == 0]
        raise InputError(
            N_("d_out = {d_out} cannot be split into {num_heads} equal heads: d_out must be a "
               "multiple of num_heads. With d_out = {d_out} you can use {fits} heads."),
            field="num_heads", d_out=d_out, num_heads=num_heads, fits=", ".join(map(str, fits)),
        )


@dataclass(frozen=True)
class MultiHeadTrace:
    """Every intermediate of one multi-head attention call.

    Attributes:
        x_query: the inputs the queries come from, (b, m, d_in).
        x_kv: the inputs the keys and values come from, (b, n, d_kv); the same
            tensor as x_query in self-attention.
        w_query: (d_in, d_out). w_key, w_value: (d_kv, d_out). w_out: (d_out, d_o),
            or None for no output projection. Applied as x @ W.
        b_query, b_key, b_value: optional (d_out,) biases. b_out: optional (d_o,).
        num_heads: h. head_dim: d_out // h. scale: 1 / sqrt(head_dim).
        query: Q = x_query W_q + b_q, (b, m, d_out).
        key: K = x_kv W_k + b_k, (b, n, d_out).
        value: V = x_kv W_v + b_v, (b, n, d_out).
        query_heads: Q split into heads, (b, h, m, head_dim).
        key_heads, value_heads: (b, h, n, head_dim).
        attention: the :class:`AttentionTrace` of all heads at once: scores and
            weights (b, h, m, n), output (b, h, m, head_dim).
        heads: h per-head :class:`AttentionTrace` s (that of head i is
            ``attention`` at index i of the head dim: scores (b, m, n) ...).
        concat: the heads' outputs side by side, (b, m, d_out); head i's
            output is in columns ``head_columns(d_out, h)[i]``.
        output: concat W_O + b_O, (b, m, d_o) (concat itself if w_out is None).
    """

    x_query: torch.Tensor
    x_kv: torch.Tensor
    w_query: torch.Tensor
    w_key: torch.Tensor
    w_value: torch.Tensor
    w_out: Optional[torch.Tensor]
    b_query: Optional[torch.Tensor]
    b_key: Optional[torch.Tensor]
    b_value: Optional[torch.Tensor]
    b_out: Optional[torch.Tensor]
    num_heads: int
    head_dim: int
    scale: float
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    query_heads: torch.Tensor
    key_heads: torch.Tensor
    value_heads: torch.Tensor
    attention: AttentionTrace
    heads: tuple[AttentionTrace, ...]
    concat: torch.Tensor
    output: torch.Tensor

    @property
    def is_self_attention(self) -> bool:
        """True when queries, keys and values come from the same inputs."""
        return self.x_query is self.x_kv

    @property
    def weights(self) -> torch.Tensor:
        """The attention weights of every head, (b, h, m, n)."""
        return self.attention.weights


def _head_trace(att: AttentionTrace, i: int) -> AttentionTrace:
    """Head i of a trace whose tensors have the head dim at -3 (or -2 for row flags)."""

    def pick(t: Optional[torch.Tensor], dim: int) -> Optional[torch.Tensor]:
        return None if t is None else t.select(dim, i)

    return AttentionTrace(
        query=pick(att.query, -3), key=pick(att.key, -3), value=pick(att.value, -3),
        scale=att.scale,
        scores=pick(att.scores, -3), scaled_scores=pick(att.scaled_scores, -3),
        attn_mask=pick(att.attn_mask, -3), masked_scores=pick(att.masked_scores, -3),
        weights=pick(att.weights, -3), blocked_rows=pick(att.blocked_rows, -2),
        dropout_mask=pick(att.dropout_mask, -3), dropout_p=att.dropout_p,
        dropped_weights=pick(att.dropped_weights, -3), output=pick(att.output, -3),
    )


def _project(x, w, b, name):
    if w.dim() != 2 or w.shape[0] != x.shape[-1]:
        raise InputError(
            N_("The inputs have width {width} but {name} has shape {shape}; {name} needs {width} rows for "
               "x @ {name}."),
            field=name, width=x.shape[-1], name=name, shape=tuple(w.shape),
        )
    if b is not None and tuple(b.shape) != (w.shape[1],):
        raise InputError(
            N_("The bias of {name} must have {entries} entries, got shape {shape}."),
            field=name, name=name, entries=w.shape[1], shape=tuple(b.shape),
        )
    out = x @ w  # (b, T, d) @ (d, d_out) -> (b, T, d_out)
    return out if b is None else out + b


def multi_head_attention(
    x_query: torch.Tensor,
    x_kv: torch.Tensor,
    w_query: torch.Tensor,
    w_key: torch.Tensor,
    w_value: torch.Tensor,
    w_out: Optional[torch.Tensor],
    *,
    b_query: Optional[torch.Tensor] = None,
    b_key: Optional[torch.Tensor] = None,
    b_value: Optional[torch.Tensor] = None,
    b_out: Optional[torch.Tensor] = None,
    num_heads: int,
    attn_mask: Optional[torch.Tensor] = None,
    dropout_p: float = 0.0,
    generator: Optional[torch.Generator] = None,
    past_key: Optional[torch.Tensor] = None,
    past_value: Optional[torch.Tensor] = None,
) -> MultiHeadTrace:
    """Multi-head attention step by step: project, split, attend per head, concat, project.

    Each head's scores are scaled by 1 / sqrt(head_dim), the width of *one
    head's* queries and keys, never by 1 / sqrt(d_out): a common published bug
    that makes every head's softmax too flat by a factor sqrt(num_heads).

    Self-attention: pass the same tensor as ``x_query`` and ``x_kv``.
    Cross-attention: queries from ``x_query`` (m tokens), keys and values from
    ``x_kv`` (n tokens); m != n is fine.

    With ``dropout_p == 0`` the output equals ``torch.nn.MultiheadAttention``
    with the same weights (see the module docstring for the weight layout).

    Args:
        x_query: (b, m, d_in), floating point; b is any leading dims, possibly none.
        x_kv: (b, n, d_kv), the same dtype and leading dims.
        w_query: (d_in, d_out). w_key, w_value: (d_kv, d_out).
        w_out: W_O, (d_out, d_o), or None to stop at the concatenation.
        b_query, b_key, b_value: optional (d_out,) biases. b_out: optional (d_o,).
        num_heads: h, which must divide d_out.
        attn_mask: optional bool mask broadcastable to (b, m, n), True = may
            attend (see :mod:`masks`); the same mask applies to every head.
        dropout_p: probability of zeroing each attention weight, in [0, 1).
        generator: the random source for the dropout mask.
        past_key, past_value: a KV cache, (b, p, d_out) each: the keys and values of p earlier tokens,
            already projected. Only ``x_kv``'s new tokens are projected; K = [past_key; x_kv W_k + b_k] and
            V likewise, so n = p + (tokens of x_kv), and ``key``/``value`` in the trace are the grown cache.
            The mask, if any, must fit all n keys.

    Returns:
        The :class:`MultiHeadTrace`.

    Raises:
        InputError: if the widths, batch dims, biases or mask do not fit, if
            d_out is not a multiple of num_heads, or dropout_p is outside [0, 1).
    """
    if x_query.dim() < 2 or x_kv.dim() < 2:
        raise InputError(N_("The inputs must be tables of tokens: (tokens, width) or (batch, tokens, width)."),
                         field="x")
    if x_query.shape[:-2] != x_kv.shape[:-2]:
        raise InputError(
            N_("The query inputs have batch shape {query_batch} but the key/value inputs have {kv_batch}; "
               "they must match."),
            field="x", query_batch=tuple(x_query.shape[:-2]), kv_batch=tuple(x_kv.shape[:-2]),
        )
    d_out = w_query.shape[-1]
    if w_key.shape[-1] != d_out or w_value.shape[-1] != d_out:
        raise InputError(
            N_("W_q, W_k and W_v must have the same number of columns d_out; got {q}, {k} and {v}."),
            field="d_out", q=w_query.shape[-1], k=w_key.shape[-1], v=w_value.shape[-1],
        )
    _check_heads(d_out, num_heads)
    head_dim = d_out // num_heads
    batch, m, n = x_query.shape[:-2], x_query.shape[-2], x_kv.shape[-2]
    if (past_key is None) != (past_value is None):
        raise InputError(N_("A KV cache needs both its keys and its values."), field="past_key")
    if past_key is not None:
        if past_key.shape != past_value.shape or past_key.shape[:-2] != batch or past_key.shape[-1] != d_out:
            raise InputError(
                N_("The KV cache has shapes {k} and {v}; both must be (batch, tokens, {d_out})."),
                field="past_key", k=tuple(past_key.shape), v=tuple(past_value.shape), d_out=d_out)
        n += past_key.shape[-2]

    if attn_mask is not None:
        if not isinstance(attn_mask, torch.Tensor) or attn_mask.dtype != torch.bool:
            raise InputError(N_("attn_mask must be a bool tensor (True = may attend)."), field="attn_mask")
        target = (*batch, m, n)
        try:
            fits = attn_mask.dim() <= len(target) and torch.broadcast_shapes(attn_mask.shape, target) == target
        except RuntimeError:
            fits = False
        if not fits:
            raise InputError(
                N_("A mask of shape {shape} does not fit {m} queries and {n} keys (batch shape {batch}): "
                   "it must broadcast to {target}."),
                field="attn_mask", shape=tuple(attn_mask.shape), m=m, n=n, batch=tuple(batch), target=target,
            )
        attn_mask = attn_mask.unsqueeze(-3)  # (b, m, n) -> (b, 1, m, n): the same for every head

    query = _project(x_query, w_query, b_query, "W_q")  # (b, m, d_in) -> (b, m, d_out)
    key = _project(x_kv, w_key, b_key, "W_k")  # (b, n, d_kv) -> (b, n, d_out)
    value = _project(x_kv, w_value, b_value, "W_v")  # (b, n, d_kv) -> (b, n, d_out)
    if past_key is not None:  # the KV cache: earlier tokens' keys and values are read, not recomputed
        key = torch.cat([past_key, key], dim=-2)  # (b, p, d_out) + (b, n - p, d_out) -> (b, n, d_out)
        value = torch.cat([past_value, value], dim=-2)
    if w_out is not None and (w_out.dim() != 2 or w_out.shape[0] != d_out):
        raise InputError(N_("W_O must have d_out = {d_out} rows, got shape {shape}."), field="W_O", d_out=d_out,
                         shape=tuple(w_out.shape))
    if b_out is not None and (w_out is None or tuple(b_out.shape) != (w_out.shape[1],)):
        raise InputError(N_("The bias of W_O must have one entry per column of W_O."), field="W_O")

    # Split the last dim into heads: head i gets columns head_columns(d_out, h)[i].
    query_heads = query.view(*batch, m, num_heads, head_dim).transpose(-3, -2)  # (b, m, h, hd) -> (b, h, m, hd)
    key_heads = key.view(*batch, n, num_heads, head_dim).transpose(-3, -2)  # (b, n, h, hd) -> (b, h, n, hd)
    value_heads = value.view(*batch, n, num_heads, head_dim).transpose(-3, -2)  # (b, n, h, hd) -> (b, h, n, hd)

    # Every head at once; d_k = head_dim, so the scale is 1 / sqrt(head_dim).
    attention = scaled_dot_product_attention(
        query_heads, key_heads, value_heads,
        attn_mask=attn_mask, dropout_p=dropout_p, scale=1.0 / math.sqrt(head_dim), generator=generator,
    )  # scores, weights (b, h, m, n); output (b, h, m, hd)
    heads = tuple(_head_trace(attention, i) for i in range(num_heads))

    # Put the heads back side by side.
    concat = attention.output.transpose(-3, -2)  # (b, h, m, hd) -> (b, m, h, hd)
    concat = concat.contiguous().view(*batch, m, d_out)  # (b, m, h, hd) -> (b, m, d_out)

    if w_out is None:
        output = concat
    else:
        output = concat @ w_out  # (b, m, d_out) @ (d_out, d_o) -> (b, m, d_o)
        if b_out is not None:
            output = output + b_out

    return MultiHeadTrace(
        x_query=x_query, x_kv=x_kv, w_query=w_query, w_key=w_key, w_value=w_value, w_out=w_out,
        b_query=b_query, b_key=b_key, b_value=b_value, b_out=b_out,
        num_heads=num_heads, head_dim=head_dim, scale=attention.scale,
        query=query, key=key, value=value,
        query_heads=query_heads, key_heads=key_heads, value_heads=value_heads,
        attention=attention, heads=heads, concat=concat, output=output,
    )
