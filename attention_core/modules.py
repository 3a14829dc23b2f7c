"""nn.Module versions of the seed articles' attention classes, each with ``trace(x)``.

Shape legend: B batch, T tokens, D = d_in, d_out = d_k = d_v.

The constructors have the signatures and parameter-creation order of seed 001
(001_9275b51964da46b3.txt) ``SelfAttention_v1`` and ``SelfAttention_v2``
(after rasbt/LLMs-from-scratch ch03), so the same ``torch.manual_seed``
gives the same weights and the seed articles' printed outputs. The versions
build up as in the seeds: v1 keeps W as raw parameters (``x @ W``), v2 uses
``nn.Linear`` (which stores Wᵀ and can have a bias).

``forward`` is the seed's code; ``trace`` runs :func:`functional.self_attention`
on the same weights and returns every intermediate; tests check they agree.
"""

from __future__ import annotations

import torch
from torch import nn

from .functional import SelfAttentionTrace, self_attention


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
