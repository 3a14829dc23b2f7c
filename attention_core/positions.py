r"""Position encodings every concept shares: the sinusoidal table of Vaswani et al. and a learned table as it
starts.

The positional-encoding page shows and shuffles them; the toy word reverser (``transformer/toy_model.py``) adds the
sinusoidal table to its embeddings; the RoPE page sets it beside RoPE's rotations (with RoPE's base).

Shape legend: P positions (rows, starting at position 0), D = d_model (columns).

Sources: Vaswani et al. 2017, "Attention Is All You Need", §3.5 (PE(pos, 2i) = sin(pos / 10000^{2i/d_model}),
PE(pos, 2i+1) = cos(...), added to the embeddings; learned positional embeddings as the alternative).
"""

from __future__ import annotations

import math

import torch

from attention_core.errors import N_, InputError

#: The base of the sinusoidal encoding's wavelengths (Vaswani et al. §3.5: 10000).
BASE = 10000.0


def _check_size(positions: int, d_model: int) -> None:
    if positions < 1 or d_model < 1:
        raise InputError(N_("A positional encoding needs at least 1 position and 1 dimension; got "
                            "{positions} × {d_model}."), field="positional_encoding.positions", positions=positions, d_model=d_model)


def sinusoidal_encoding(positions: int, d_model: int, base: float = BASE, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    r"""The sinusoidal encoding, (positions, d_model), vectorised.

    PE[pos, 2i] = sin(pos / base^{2i/d_model}), PE[pos, 2i+1] = cos(pos / base^{2i/d_model});
    positions start at 0. For an odd d_model the last column is a sine.
    (Vaswani et al. 2017 §3.5.) Computed in float64, returned as ``dtype``.

    Raises:
        InputError: positions or d_model below 1.
    """
    _check_size(positions, d_model)
    pos = torch.arange(positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    two_i = torch.arange(d_model, dtype=torch.float64).div(2, rounding_mode="floor") * 2  # (D,): 0, 0, 2, 2, 4, ...
    angle = pos / base ** (two_i / d_model)  # (P, 1) / (D,) -> (P, D)
    even = torch.arange(d_model) % 2 == 0  # (D,)
    return torch.where(even, torch.sin(angle), torch.cos(angle)).to(dtype)


def sinusoidal_encoding_loop(positions: int, d_model: int, base: float = BASE) -> list[list[float]]:
    """The same encoding entry by entry with ``math.sin``/``math.cos``: the naive reference."""
    table = []
    for pos in range(positions):
        row = []
        for j in range(d_model):
            two_i = j - j % 2
            angle = pos / base ** (two_i / d_model)
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        table.append(row)
    return table


def learned_encoding(positions: int, d_model: int, generator: torch.Generator) -> torch.Tensor:
    """A learned encoding as it starts: ``nn.Embedding(positions, d_model)``'s N(0, 1) table, (P, D).

    Drawn from the local ``generator``; training would then shape it like any embedding.

    Raises:
        InputError: positions or d_model below 1.
    """
    _check_size(positions, d_model)
    return torch.randn(positions, d_model, generator=generator)
