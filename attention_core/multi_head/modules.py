"""Seed 001's ``MultiHeadAttention`` as an nn.Module with ``trace(x)``.

Shape legend: B batch, T tokens, D = d_in, d_out = num_heads * head_dim, H = num_heads, hd = head_dim.

The constructor has the signature and parameter-creation order of seed 001 (001_9275b51964da46b3.txt)
``MultiHeadAttention`` (after rasbt/LLMs-from-scratch ch03; also in seed 004, 004_56c592a3d25bc184.txt), so the same
``torch.manual_seed`` gives the same weights and the seed articles' printed outputs. What changed from
:class:`attention_core.self_attention.modules.CausalAttention`: Q, K, V are split into heads and the output
projection W_O mixes them. ``forward`` is the seed's code; ``trace`` runs :func:`heads.multi_head_attention` on the
same weights and returns every intermediate; tests check they agree.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from attention_core.multi_head.heads import MultiHeadTrace, _check_heads, multi_head_attention
from attention_core.self_attention.modules import _bias, _check_context, _weight


class MultiHeadAttention(nn.Module):
    """Causal multi-head self-attention: num_heads heads of head_dim = d_out // num_heads.

    What changed from :class:`CausalAttention`: Q, K, V are split into
    num_heads heads (``view`` + ``transpose``), each head attends with scale
    1 / sqrt(head_dim), and the heads' outputs are concatenated and mixed by
    ``out_proj`` (W_O, with bias).

    Args:
        d_in: D, the input width.
        d_out: the width of Q, K, V and the output; a multiple of num_heads.
        context_length: the most tokens an input may have.
        dropout: the probability of zeroing an attention weight in training.
        num_heads: H.
        qkv_bias: whether the Q, K, V projections have a bias.

    Created in the order W_query, W_key, W_value, out_proj (nn.Linear), dropout,
    buffer ``mask``, as in seed 001.

    Raises:
        InputError: (a ValueError) if d_out is not a multiple of num_heads.
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        _check_heads(d_out, num_heads)  # the seed's assert, with a learner-friendly message
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Context vectors for x: (B, T, d_in) -> (B, T, d_out)."""
        b, num_tokens, d_in = x.shape
        _check_context(x, self.mask.shape[0])
        keys = self.W_key(x)  # (B, T, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)  # (B, T, d_out) -> (B, T, H, hd)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        keys = keys.transpose(1, 2)  # (B, T, H, hd) -> (B, H, T, hd)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)  # (B, H, T, hd) @ (B, H, hd, T) -> (B, H, T, T)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # keys.shape[-1] = hd
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)  # (B, H, T, hd) -> (B, T, H, hd)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # -> (B, T, d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec

    @torch.no_grad()
    def trace(self, x: torch.Tensor, generator: Optional[torch.Generator] = None) -> MultiHeadTrace:
        """Every intermediate of the causal multi-head attention over x, (B, T, d_in) or (T, d_in).

        In eval mode (or with dropout 0) ``trace(x).output`` equals
        ``forward(x)``; in training mode the dropout mask is drawn from
        ``generator``, so it differs from ``forward``'s.

        Raises:
            InputError: if x has more than context_length tokens.
        """
        num_tokens = _check_context(x, self.mask.shape[0])
        return multi_head_attention(
            x, x, _weight(self.W_query), _weight(self.W_key), _weight(self.W_value), _weight(self.out_proj),
            b_query=_bias(self.W_query), b_key=_bias(self.W_key), b_value=_bias(self.W_value),
            b_out=_bias(self.out_proj),
            num_heads=self.num_heads,
            attn_mask=~self.mask.bool()[:num_tokens, :num_tokens],  # (T, T), True = may attend
            dropout_p=self.dropout.p if self.training else 0.0,
            generator=generator,
        )
