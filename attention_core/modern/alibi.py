r"""ALiBi, attention with linear biases (Press et al. 2022): no position embedding, a distance penalty per head.

Each head h adds −m_h · |i − j| to the score of query i and key j, so far-away keys lose weight linearly in
the distance; each head has its own slope, a geometric sequence (sec. 3)::

    m_h = 2^(−8h/H),  h = 1 … H          (H a power of 2; otherwise the paper's interleaving, :func:`slopes`)
    a_ij = q_i · k_j / √d + b_ij,   b_ij = −m_h · |i − j|,   then the causal mask (as in the paper's
    language models) and softmax over j

Shape legend: T tokens, d = d_k, H = num_heads. Float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from attention_core.self_attention.functional import AttentionTrace, scaled_dot_product_attention


def slopes(num_heads: int) -> tuple[float, ...]:
    """The H slopes of the paper's reference code (github.com/ofirpress/attention_with_linear_biases).

    For H a power of 2: 2^(−8/H), 2^(−16/H), …, 2^(−8). Otherwise the slopes of the nearest smaller power of 2,
    then every other slope of the next power of 2, as many as are missing.

    Raises:
        ValueError: num_heads below 1.
    """
    if num_heads < 1:
        raise ValueError(f"num_heads = {num_heads} must be at least 1")

    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))  # 2^(-8/n)
        return [start * start ** i for i in range(n)]

    if math.log2(num_heads).is_integer():
        return tuple(power_of_2(num_heads))
    closest = 2 ** math.floor(math.log2(num_heads))
    return tuple(power_of_2(closest) + list(slopes(2 * closest)[0::2][:num_heads - closest]))


def distances(tokens: int) -> torch.Tensor:
    """|i − j| for every query i and key j, (T, T) float32."""
    positions = torch.arange(tokens, dtype=torch.float32)
    return (positions[:, None] - positions[None, :]).abs()


@dataclass(frozen=True)
class AlibiTrace:
    """Every intermediate of ALiBi with H heads sharing one q and k (so the heads differ by their slope only).

    Attributes:
        slopes: (H,), m_h. distance: (T, T), |i − j|. bias: (H, T, T), −m_h |i − j|.
        scaled_scores: (T, T), q · k / √d, the same for every head.
        attention: the :class:`AttentionTrace` of the H heads: masked_scores (H, T, T) = scaled score + bias
            (−inf where masked), weights (H, T, T), output (H, T, d_v).
    """

    slopes: torch.Tensor
    distance: torch.Tensor
    bias: torch.Tensor
    scaled_scores: torch.Tensor
    attention: AttentionTrace


def alibi_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, num_heads: int,
                    attn_mask: Optional[torch.Tensor] = None) -> AlibiTrace:
    """ALiBi attention of H heads on one query, key and value (T, d): each head's scores get its own bias.

    Raises:
        ValueError: num_heads below 1.
    """
    t, d = query.shape
    m = torch.tensor(slopes(num_heads))
    distance = distances(t)
    bias = -m[:, None, None] * distance  # (H, 1, 1) * (T, T) -> (H, T, T)
    attention = scaled_dot_product_attention(query.expand(num_heads, t, d), key.expand(num_heads, t, d),
                                             value.expand(num_heads, t, value.shape[-1]), attn_mask=attn_mask,
                                             bias=bias)
    return AlibiTrace(slopes=m, distance=distance, bias=bias, scaled_scores=attention.scaled_scores[0],
                      attention=attention)


def alibi_weights_loop(scaled_scores: list[list[float]], head_slopes: tuple[float, ...],
                       causal: bool) -> list[list[list[float]]]:
    """The weights entry by entry with ``math.exp``: the naive reference (H × T × T nested lists).

    For each head h, query i: a_ij = scaled_scores[i][j] − m_h |i − j| for the keys j it may see (j ≤ i when
    causal), then exp(a_ij) / Σ exp(a_il); blocked keys get 0.
    """
    t = len(scaled_scores)
    table = []
    for m in head_slopes:
        head = []
        for i in range(t):
            keys = [j for j in range(t) if not causal or j <= i]
            a = {j: scaled_scores[i][j] - m * abs(i - j) for j in keys}
            top = max(a.values())
            total = sum(math.exp(v - top) for v in a.values())
            head.append([math.exp(a[j] - top) / total if j in a else 0.0 for j in range(t)])
        table.append(head)
    return table
