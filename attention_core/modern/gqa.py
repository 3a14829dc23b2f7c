r"""Grouped-query attention (GQA) and multi-query attention (MQA): fewer key/value heads than query heads.

Multi-head attention gives each of the h query heads its own keys and values. Multi-query attention
(Shazeer 2019) keeps h query heads but only **one** key head and one value head, shared by all; grouped-query
attention (Ainslie et al. 2023) sits between: ``num_kv_heads`` key/value heads, each shared by a group of
h / num_kv_heads consecutive query heads. Query head r uses key/value head ⌊r / (h / num_kv_heads)⌋::

    Q = X W_q  (T, h · head_dim)          K = X W_k, V = X W_v  (T, num_kv_heads · head_dim)
    head_r = softmax(Q_r K_{g(r)}ᵀ / √head_dim + M) V_{g(r)},   g(r) = ⌊r · num_kv_heads / h⌋
    O = Concat(head_1, …, head_h) W_O

num_kv_heads = h is multi-head attention, num_kv_heads = 1 is MQA. The KV cache holds num_kv_heads heads per
token instead of h (:func:`attention_core.transformer.generation.kv_cache_bytes`). ``torch.nn.functional.scaled_dot_product_attention``
computes the same with ``enable_gqa=True`` (it repeats K and V the same way, ``repeat_interleave``).

Shape legend: T tokens, D = d_model, h = num_heads, kv = num_kv_heads, head_dim = d_out / h, d_o = W_O's width.
Float32; weights act as ``x @ W``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from attention_core.errors import N_, InputError
from attention_core.multi_head.heads import head_columns
from attention_core.self_attention.functional import AttentionTrace, scaled_dot_product_attention


def check_kv_heads(num_heads: int, num_kv_heads: int) -> None:
    """Raise :class:`InputError` (field ``num_kv_heads``) unless 1 ≤ num_kv_heads and it divides num_heads."""
    if num_kv_heads < 1 or num_heads % num_kv_heads:
        fits = [k for k in range(1, num_heads + 1) if num_heads % k == 0]
        raise InputError(
            N_("{num_heads} query heads cannot be shared equally by {num_kv_heads} key/value heads: num_kv_heads "
               "must divide num_heads. With {num_heads} query heads you can use {fits}."),
            field="gqa.num_kv_heads", num_heads=num_heads, num_kv_heads=num_kv_heads, fits=", ".join(map(str, fits)))


def kv_head_of(num_heads: int, num_kv_heads: int) -> tuple[int, ...]:
    """g(r) for each query head r (0-based): the key/value head it reads, ⌊r · num_kv_heads / num_heads⌋.

    Raises:
        InputError: num_kv_heads does not divide num_heads.
    """
    check_kv_heads(num_heads, num_kv_heads)
    group = num_heads // num_kv_heads
    return tuple(r // group for r in range(num_heads))


@dataclass(frozen=True)
class GroupedQueryTrace:
    """Every intermediate of one grouped-query attention call (unbatched).

    Attributes:
        x: (T, D). w_query: (D, h · head_dim). w_key, w_value: (D, kv · head_dim). w_out: (h · head_dim, d_o) or None.
        num_heads, num_kv_heads, head_dim: h, kv, head_dim. groups: g(r) per query head (:func:`kv_head_of`).
        query: (T, h · head_dim). key, value: (T, kv · head_dim).
        query_heads: (h, T, head_dim). key_heads, value_heads: (kv, T, head_dim).
        key_repeated, value_repeated: (h, T, head_dim): head r's row is key/value head g(r) (repeat_interleave).
        attention: the :class:`AttentionTrace` of all h heads at once (scores, weights (h, T, T), output).
        concat: (T, h · head_dim). output: concat W_O + b_O, (T, d_o), or concat when w_out is None.
    """

    x: torch.Tensor
    w_query: torch.Tensor
    w_key: torch.Tensor
    w_value: torch.Tensor
    w_out: Optional[torch.Tensor]
    b_out: Optional[torch.Tensor]
    num_heads: int
    num_kv_heads: int
    head_dim: int
    groups: tuple[int, ...]
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    query_heads: torch.Tensor
    key_heads: torch.Tensor
    value_heads: torch.Tensor
    key_repeated: torch.Tensor
    value_repeated: torch.Tensor
    attention: AttentionTrace
    concat: torch.Tensor
    output: torch.Tensor


def grouped_query_attention(x: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor,
                            w_out: Optional[torch.Tensor], *, num_heads: int, num_kv_heads: int,
                            b_out: Optional[torch.Tensor] = None,
                            attn_mask: Optional[torch.Tensor] = None) -> GroupedQueryTrace:
    """Grouped-query self-attention on ``x``, every intermediate kept (module docstring for the formula).

    Args:
        x: (T, D) float32. w_query: (D, h · head_dim). w_key, w_value: (D, kv · head_dim).
        w_out: (h · head_dim, d_o) or None. b_out: (d_o,) or None.
        num_heads: h, must divide w_query's width. num_kv_heads: kv, must divide h.
        attn_mask: optional bool (T, T), True = may attend; the same for every head.

    Raises:
        InputError: h does not divide the query width, kv does not divide h, or K/V are not kv · head_dim wide.
    """
    d_out = w_query.shape[-1]
    head_columns(d_out, num_heads)  # raises when h does not divide d_out
    groups = kv_head_of(num_heads, num_kv_heads)
    head_dim = d_out // num_heads
    if w_key.shape[-1] != num_kv_heads * head_dim or w_value.shape != w_key.shape:
        raise InputError(N_("W_k and W_v must have num_kv_heads · head_dim = {width} columns; got {k} and {v}."),
                         field="gqa.num_kv_heads", width=num_kv_heads * head_dim, k=w_key.shape[-1], v=w_value.shape[-1])
    t = x.shape[0]
    query, key, value = x @ w_query, x @ w_key, x @ w_value  # (T, h·hd), (T, kv·hd), (T, kv·hd)
    query_heads = query.view(t, num_heads, head_dim).transpose(0, 1)  # (T, h, hd) -> (h, T, hd)
    key_heads = key.view(t, num_kv_heads, head_dim).transpose(0, 1)  # (kv, T, hd)
    value_heads = value.view(t, num_kv_heads, head_dim).transpose(0, 1)
    group = num_heads // num_kv_heads
    key_repeated = key_heads.repeat_interleave(group, dim=0)  # (kv, T, hd) -> (h, T, hd): head r gets g(r)
    value_repeated = value_heads.repeat_interleave(group, dim=0)
    attention = scaled_dot_product_attention(query_heads, key_repeated, value_repeated, attn_mask=attn_mask,
                                             scale=1.0 / math.sqrt(head_dim))
    concat = attention.output.transpose(0, 1).contiguous().view(t, d_out)  # (h, T, hd) -> (T, h·hd)
    output = concat if w_out is None else concat @ w_out + (0 if b_out is None else b_out)
    return GroupedQueryTrace(x=x, w_query=w_query, w_key=w_key, w_value=w_value, w_out=w_out, b_out=b_out,
                             num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim, groups=groups,
                             query=query, key=key, value=value, query_heads=query_heads, key_heads=key_heads,
                             value_heads=value_heads, key_repeated=key_repeated, value_repeated=value_repeated,
                             attention=attention, concat=concat, output=output)

