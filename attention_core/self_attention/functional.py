r"""Scaled dot-product attention, returning every intermediate.

Shape legend: ``...`` any batch dims, m queries, n keys/values, d_k query/key
width, d_v value width, T tokens, D = d_model.

.. math::
    \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V

Sources: Vaswani et al. 2017, "Attention Is All You Need", eq. 1; seed 000
(000_9be6d646ed7e85e8.txt) for the step-by-step code; seed 002
(002_26eab86218c0ec33.txt) for m queries against n keys; seed 004
(004_56c592a3d25bc184.txt) for attention without trainable weights.
The sympy form of each step lives beside this module, in ``formulas.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from attention_core.errors import N_, InputError


@dataclass(frozen=True)
class AttentionTrace:
    """Every intermediate of one scaled dot-product attention call.

    All tensors share the input dtype (float32 in the app). Shapes:

    Attributes:
        query: (..., m, d_k).
        key: (..., n, d_k).
        value: (..., n, d_v).
        scale: the factor the scores are multiplied by (1 / sqrt(d_k) unless given).
        scores: Q Kᵀ, (..., m, n), before scaling.
        scaled_scores: scores * scale, (..., m, n).
        attn_mask: bool (..., m, n), True = may attend; None when no mask was given.
        masked_scores: scaled_scores (plus the bias, if one was given) with blocked entries set to -inf,
            (..., m, n).
        weights: softmax over the last dim, (..., m, n); rows sum to 1, except
            rows with every key blocked, which are all 0 (see ``blocked_rows``).
        blocked_rows: bool (..., m), True where the mask blocks every key.
        dropout_mask: bool (..., m, n), True = kept; None when dropout_p == 0.
        dropout_p: the dropout probability used.
        dropped_weights: weights after dropout (kept entries scaled by 1 / (1 - p)).
        output: dropped_weights @ V, the context vectors, (..., m, d_v).
    """

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    scale: float
    scores: torch.Tensor
    scaled_scores: torch.Tensor
    attn_mask: Optional[torch.Tensor]
    masked_scores: torch.Tensor
    weights: torch.Tensor
    blocked_rows: torch.Tensor
    dropout_mask: Optional[torch.Tensor]
    dropout_p: float
    dropped_weights: torch.Tensor
    output: torch.Tensor


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    *,
    attn_mask: Optional[torch.Tensor] = None,
    dropout_p: float = 0.0,
    scale: Optional[float] = None,
    generator: Optional[torch.Generator] = None,
    bias: Optional[torch.Tensor] = None,
) -> AttentionTrace:
    r"""softmax(Q Kᵀ / √d_k) V, step by step (Vaswani et al. 2017, eq. 1).

    Same arguments and conventions as
    ``torch.nn.functional.scaled_dot_product_attention``; with ``dropout_p == 0``
    the trace's ``output`` equals that function's result.

    Args:
        query: Q, (..., m, d_k), floating point.
        key: K, (..., n, d_k), same dtype.
        value: V, (..., n, d_v), same dtype.
        attn_mask: optional bool (..., m, n) or broadcastable; True = may attend.
        dropout_p: probability of zeroing each weight, in [0, 1).
        scale: multiplier of the scores; default 1 / sqrt(d_k). Seed 004's
            attention without trainable weights uses ``scale=1.0``.
        generator: the random source for the dropout mask (reproducible when seeded).
            Each weight is kept with probability 1 - p by the same call ``nn.Dropout``
            makes, ``bernoulli_(1 - p)``, so a generator seeded s gives ``nn.Dropout``'s
            mask after ``torch.manual_seed(s)``.
        bias: optional float (..., m, n) or broadcastable, added to the scaled scores before the mask
            (ALiBi's −m |i − j|; what torch's SDPA does with a float ``attn_mask``).

    Returns:
        The :class:`AttentionTrace` of every intermediate.

    Raises:
        InputError: if the shapes do not fit together, the mask is not boolean,
            or dropout_p is outside [0, 1).
    """
    if query.shape[-1] != key.shape[-1]:
        raise InputError(
            N_("Queries have d_k = {q} but keys have d_k = {k}; they must match for the dot products q · k."),
            field="d_k", q=query.shape[-1], k=key.shape[-1],
        )
    if key.shape[-2] != value.shape[-2]:
        raise InputError(
            N_("There are {n_keys} keys but {n_values} values; each key needs its value."),
            field="value", n_keys=key.shape[-2], n_values=value.shape[-2],
        )
    if not 0.0 <= dropout_p < 1.0:
        raise InputError(N_("dropout_p must be in [0, 1), got {p}."), field="dropout_p", p=dropout_p)
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        raise InputError(N_("attn_mask must be boolean (True = may attend)."), field="attn_mask")

    d_k = query.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)

    scores = query @ key.transpose(-2, -1)  # (..., m, d_k) @ (..., d_k, n) -> (..., m, n)
    scaled_scores = scores * scale
    biased = scaled_scores if bias is None else scaled_scores + bias
    if attn_mask is None:
        masked_scores = biased
        blocked_rows = torch.zeros(scores.shape[:-1], dtype=torch.bool)
    else:
        attn_mask = attn_mask.expand_as(scores)
        masked_scores = biased.masked_fill(~attn_mask, float("-inf"))
        blocked_rows = ~attn_mask.any(dim=-1)  # (..., m)
    weights = torch.softmax(masked_scores, dim=-1)
    # A row with every key blocked is softmax(-inf, ..., -inf) = 0/0: show 0, flag it.
    weights = weights.masked_fill(blocked_rows.unsqueeze(-1), 0.0)

    if dropout_p > 0.0:
        # The draw nn.Dropout makes (bernoulli_(1 - p)), but from our generator: with a generator seeded s,
        # the mask equals nn.Dropout's after torch.manual_seed(s) (rasbt ch03's printed 6 x 6 example).
        dropout_mask = torch.empty(weights.shape).bernoulli_(1.0 - dropout_p, generator=generator).bool()
        dropped_weights = weights * dropout_mask / (1.0 - dropout_p)
    else:
        dropout_mask = None
        dropped_weights = weights

    output = dropped_weights @ value  # (..., m, n) @ (..., n, d_v) -> (..., m, d_v)
    return AttentionTrace(
        query=query, key=key, value=value, scale=scale,
        scores=scores, scaled_scores=scaled_scores, attn_mask=attn_mask,
        masked_scores=masked_scores, weights=weights, blocked_rows=blocked_rows,
        dropout_mask=dropout_mask, dropout_p=dropout_p,
        dropped_weights=dropped_weights, output=output,
    )


@dataclass(frozen=True)
class SelfAttentionTrace:
    """Self-attention: the projections of X and the attention over them.

    Attributes:
        x: the inputs X, (T, D) or (..., T, D).
        w_query, w_key: (D, d_k). w_value: (D, d_v). Applied as X @ W.
        b_query, b_key, b_value: optional biases (d_k,) / (d_v,), or None.
        attention: the :class:`AttentionTrace` of Q = X W_q + b_q, K = X W_k + b_k,
            V = X W_v + b_v.
    """

    x: torch.Tensor
    w_query: torch.Tensor
    w_key: torch.Tensor
    w_value: torch.Tensor
    b_query: Optional[torch.Tensor]
    b_key: Optional[torch.Tensor]
    b_value: Optional[torch.Tensor]
    attention: AttentionTrace

    @property
    def output(self) -> torch.Tensor:
        """The context vectors, (..., T, d_v)."""
        return self.attention.output


def self_attention(
    x: torch.Tensor,
    w_query: torch.Tensor,
    w_key: torch.Tensor,
    w_value: torch.Tensor,
    *,
    b_query: Optional[torch.Tensor] = None,
    b_key: Optional[torch.Tensor] = None,
    b_value: Optional[torch.Tensor] = None,
    attn_mask: Optional[torch.Tensor] = None,
    dropout_p: float = 0.0,
    scale: Optional[float] = None,
    generator: Optional[torch.Generator] = None,
) -> SelfAttentionTrace:
    """Q = X W_q, K = X W_k, V = X W_v, then scaled dot-product attention.

    Seed 000's pipeline; seed 001's ``SelfAttention_v1`` (W as parameters,
    ``x @ W``) and ``SelfAttention_v2`` (``nn.Linear``, whose weight is Wᵀ).

    Args:
        x: X, (..., T, D), floating point.
        w_query, w_key: (D, d_k). w_value: (D, d_v).
        b_query, b_key, b_value: optional biases of the projections.
        attn_mask, dropout_p, scale, generator: as in
            :func:`scaled_dot_product_attention`.

    Returns:
        The :class:`SelfAttentionTrace`.

    Raises:
        InputError: if X's width D does not match the weights' rows, or as
            :func:`scaled_dot_product_attention`.
    """
    for name, w in (("W_q", w_query), ("W_k", w_key), ("W_v", w_value)):
        if w.shape[0] != x.shape[-1]:
            raise InputError(
                N_("X has d_model = {d} columns but {name} has {rows} rows; they must match for X @ W."),
                field="d_model", d=x.shape[-1], name=name, rows=w.shape[0],
            )
    query = x @ w_query  # (..., T, D) @ (D, d_k) -> (..., T, d_k)
    key = x @ w_key
    value = x @ w_value  # (..., T, d_v)
    if b_query is not None:
        query = query + b_query
    if b_key is not None:
        key = key + b_key
    if b_value is not None:
        value = value + b_value
    attention = scaled_dot_product_attention(
        query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, scale=scale, generator=generator
    )
    return SelfAttentionTrace(
        x=x, w_query=w_query, w_key=w_key, w_value=w_value,
        b_query=b_query, b_key=b_key, b_value=b_value, attention=attention,
    )


def attention_without_weights(x: torch.Tensor) -> AttentionTrace:
    """Seed 004's first example: Q = K = V = X and no scaling.

    Scores are plain dot products x_i · x_j, the weights their row softmax,
    and each context vector z_i = Σ_j α_ij x_j.

    Args:
        x: X, (T, D).

    Returns:
        The :class:`AttentionTrace` with ``scale == 1.0``.
    """
    return scaled_dot_product_attention(x, x, x, scale=1.0)


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """The entropy of each row of weights (the *Why divide by √d_k?* and *Temperature* pages): −Σ_j p_j ln p_j over the last dim (nats), with 0 · ln 0 = 0. (..., n) -> (...)."""
    return torch.special.entr(weights).sum(dim=-1)
