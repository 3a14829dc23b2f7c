r"""Rotary position embedding (RoPE; Su et al. 2021, RoFormer, eq. 13-16): rotate q and k by their position.

Instead of adding a position vector to X (the sinusoidal encoding of the *Positional encoding* page), RoPE
rotates every pair of dimensions of a query or key at position m by the angle m · θᵢ::

    θᵢ = base^(−2i/d),  i = 0 … d/2 − 1                       (base = 10000 in the paper and in Llama)
    [q'ᵢ, q'ᵢ₊d/₂] = [[cos mθᵢ, −sin mθᵢ], [sin mθᵢ, cos mθᵢ]] · [qᵢ, qᵢ₊d/₂]

Because rotations compose, q'_m · k'_n = Σᵢ (rotation by (m − n)θᵢ of the pair) — the score depends on the
positions only through the offset m − n: shift every position by s and every score stays the same.

Pairs here are dimension i with dimension i + d/2 (the "rotate_half" layout of GPT-NeoX, Llama and Hugging Face
transformers); RoFormer pairs neighbours (2i, 2i + 1), which is the same rotation with the dimensions permuted.
:func:`rotate` equals ``transformers.models.llama.modeling_llama.apply_rotary_pos_emb`` with
``LlamaRotaryEmbedding``'s cos and sin.

Shape legend: T tokens, d = head_dim (even), d/2 pairs. Float32 (angles computed in float64).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attention_core.errors import N_, InputError

#: RoFormer's and Llama's base.
BASE = 10000.0


#: The bases the "base" stage compares with the chosen one: RoFormer's small-scale ablations, RoFormer / Llama 2,
#: Llama 3.
BASES = (100.0, 10000.0, 500000.0)


def check_head_dim(head_dim: int) -> None:
    """Raise :class:`InputError` (field ``rope.head_dim``) unless head_dim is even and at least 2."""
    if head_dim < 2 or head_dim % 2:
        raise InputError(N_("RoPE rotates pairs of dimensions, so head_dim must be even (2, 4, 6, …); got {d}."),
                         field="rope.head_dim", d=head_dim)


def frequencies(head_dim: int, base: float = BASE) -> torch.Tensor:
    """θᵢ = base^(−2i/d) for i = 0 … d/2 − 1, (d/2,) float32 (computed in float64).

    Raises:
        InputError: head_dim odd or below 2.
    """
    check_head_dim(head_dim)
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    return (base ** (-2 * i / head_dim)).float()


def rotate(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (j, j + d/2) of every row of ``x`` (T, d) by its angle in ``angles`` (T, d/2).

    x'_j = x_j cos φ − x_{j+d/2} sin φ and x'_{j+d/2} = x_{j+d/2} cos φ + x_j sin φ (φ = angles[:, j]).
    """
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    cos, sin = torch.cos(angles), torch.sin(angles)
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


@dataclass(frozen=True)
class RopeTrace:
    """Every intermediate of RoPE on one head's queries and keys.

    Attributes:
        query, key: (T, d), before rotation (Q = X W_q, K = X W_k).
        base: the base. theta: (d/2,), θᵢ. positions: (T,) int, m = 0 … T − 1.
        angles: (T, d/2), m · θᵢ (float32).
        query_rotated, key_rotated: (T, d).
        scores: (T, T), q'_m · k'_n / √d.
        shift: s. shifted_scores: (T, T), the same with every position m + s.
    """

    query: torch.Tensor
    key: torch.Tensor
    base: float
    theta: torch.Tensor
    positions: torch.Tensor
    angles: torch.Tensor
    query_rotated: torch.Tensor
    key_rotated: torch.Tensor
    scores: torch.Tensor
    shift: int
    shifted_scores: torch.Tensor

    @property
    def head_dim(self) -> int:
        return self.query.shape[-1]


def rotation_angles(positions: torch.Tensor, head_dim: int, base: float) -> torch.Tensor:
    """m θᵢ for every position m and pair i: (T, d/2) float32, computed in float64 (Su et al. 2021, eq. 15)."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    return (positions.double()[:, None] * base ** (-2 * i / head_dim)).float()  # (T, 1) * (d/2,) -> (T, d/2)


def rope_scores(query: torch.Tensor, key: torch.Tensor, base: float = BASE, shift: int = 0) -> RopeTrace:
    """Rotate ``query`` and ``key`` (T, d) by their positions 0 … T − 1 and score them; again at positions + shift.

    Raises:
        InputError: d odd or below 2.
    """
    head_dim = query.shape[-1]
    theta = frequencies(head_dim, base)
    positions = torch.arange(query.shape[0])
    angles = rotation_angles(positions, head_dim, base)
    q, k = rotate(query, angles), rotate(key, angles)
    scale = 1.0 / math.sqrt(head_dim)
    shifted = rotation_angles(positions + shift, head_dim, base)
    shifted_scores = rotate(query, shifted) @ rotate(key, shifted).T * scale
    return RopeTrace(query=query, key=key, base=base, theta=theta, positions=positions, angles=angles,
                     query_rotated=q, key_rotated=k, scores=q @ k.T * scale, shift=shift,
                     shifted_scores=shifted_scores)
