"""nn.Module versions of the seed articles' attention classes, each with ``trace(x)``.

Shape legend: B batch, T tokens, D = d_in, d_out = d_k = d_v, H = num_heads,
hd = head_dim = d_out // H.

The constructors have the signatures and parameter-creation order of seed 001
(001_9275b51964da46b3.txt) ``SelfAttention_v1``, ``SelfAttention_v2``,
``CausalAttention`` and ``MultiHeadAttention`` (after rasbt/LLMs-from-scratch
ch03; also in seed 004, 004_56c592a3d25bc184.txt), so the same
``torch.manual_seed`` gives the same weights and the seed articles' printed
outputs. The versions build up as in the seeds: v1 keeps W as raw parameters
(``x @ W``), v2 uses ``nn.Linear`` (which stores Wᵀ and can have a bias),
CausalAttention adds the causal mask and dropout on the weights;
seed 001's MultiHeadAttention, which splits d_out into heads, is in
:mod:`attention_core.multi_head.modules`.

``forward`` is the seed's code; ``trace`` runs :func:`functional.self_attention`
on the same weights and returns
every intermediate; tests check they agree.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from attention_core.errors import N_, InputError
from attention_core.self_attention.functional import SelfAttentionTrace, self_attention


class SelfAttentionV1(nn.Module):
    """Self-attention with W_query, W_key, W_value as (d_in, d_out) parameters.

    Args:
        d_in: D, the input width.
        d_out: the width of queries, keys and values.

    Parameters are created in the order W_query, W_key, W_value with
    ``torch.rand`` (uniform on [0, 1)), as in seed 001.
    """

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Context vectors for x: (T, d_in) -> (T, d_out)."""
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values

    @torch.no_grad()
    def trace(self, x: torch.Tensor) -> SelfAttentionTrace:
        """Every intermediate of ``forward(x)``; ``trace(x).output`` equals it."""
        return self_attention(x, self.W_query.detach(), self.W_key.detach(), self.W_value.detach())


class SelfAttentionV2(nn.Module):
    """Self-attention with ``nn.Linear`` projections (optionally with bias).

    Args:
        d_in: D, the input width.
        d_out: the width of queries, keys and values.
        qkv_bias: whether the three projections have a bias.

    ``nn.Linear`` stores its weight as (d_out, d_in), so W_q = ``W_query.weight.T``.
    Layers are created in the order W_query, W_key, W_value, as in seed 001.
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Context vectors for x: (T, d_in) -> (T, d_out)."""
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values

    @torch.no_grad()
    def trace(self, x: torch.Tensor) -> SelfAttentionTrace:
        """Every intermediate of ``forward(x)``; ``trace(x).output`` equals it."""

        def bias(layer: nn.Linear):
            return None if layer.bias is None else layer.bias.detach()

        return self_attention(
            x,
            self.W_query.weight.detach().T,  # (d_out, d_in) -> (d_in, d_out)
            self.W_key.weight.detach().T,
            self.W_value.weight.detach().T,
            b_query=bias(self.W_query),
            b_key=bias(self.W_key),
            b_value=bias(self.W_value),
        )


def _weight(layer: nn.Linear) -> torch.Tensor:
    return layer.weight.detach().T  # nn.Linear stores (d_out, d_in); x @ W needs (d_in, d_out)


def _bias(layer: nn.Linear):
    return None if layer.bias is None else layer.bias.detach()


def _check_context(x: torch.Tensor, context_length: int) -> int:
    """The number of tokens T of x (..., T, d_in); it may not exceed context_length."""
    num_tokens = x.shape[-2]
    if num_tokens > context_length:
        raise InputError(
            N_("The input has {num_tokens} tokens but the model's context_length is {context_length}; "
               "use a shorter input or a larger context_length."),
            field="context_length", num_tokens=num_tokens, context_length=context_length,
        )
    return num_tokens


class CausalAttention(nn.Module):
    """Self-attention where token i only sees tokens j <= i, with dropout on the weights.

    What changed from :class:`SelfAttentionV2`: a batch dim, the causal mask
    (future scores set to -inf before the softmax) and ``nn.Dropout`` on the
    attention weights (active in training mode only).

    Args:
        d_in: D, the input width.
        d_out: the width of queries, keys and values.
        context_length: the most tokens an input may have (size of the mask).
        dropout: the probability of zeroing an attention weight in training.
        qkv_bias: whether the three projections have a bias.

    Created in the order W_query, W_key, W_value (nn.Linear), dropout, and the
    buffer ``mask`` = ``triu(ones(context_length, context_length), diagonal=1)``,
    which holds 1 at the *blocked* (future) entries, as in seed 001.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Context vectors for x: (B, T, d_in) -> (B, T, d_out)."""
        b, num_tokens, d_in = x.shape
        _check_context(x, self.mask.shape[0])
        keys = self.W_key(x)  # (B, T, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)  # (B, T, d_out) @ (B, d_out, T) -> (B, T, T)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values  # (B, T, T) @ (B, T, d_out) -> (B, T, d_out)
        return context_vec

    @torch.no_grad()
    def trace(self, x: torch.Tensor, generator: Optional[torch.Generator] = None) -> SelfAttentionTrace:
        """Every intermediate of the causal attention over x, (B, T, d_in) or (T, d_in).

        The mask is the module's buffer, flipped to True = may attend. In eval
        mode (or with dropout 0) ``trace(x).output`` equals ``forward(x)``; in
        training mode the dropout mask is drawn from ``generator`` instead of
        the global random state, so it differs from ``forward``'s.

        Raises:
            InputError: if x has more than context_length tokens.
        """
        num_tokens = _check_context(x, self.mask.shape[0])
        return self_attention(
            x, _weight(self.W_query), _weight(self.W_key), _weight(self.W_value),
            b_query=_bias(self.W_query), b_key=_bias(self.W_key), b_value=_bias(self.W_value),
            attn_mask=~self.mask.bool()[:num_tokens, :num_tokens],  # (T, T), True = may attend
            dropout_p=self.dropout.p if self.training else 0.0,
            generator=generator,
        )
