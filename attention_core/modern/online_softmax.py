r"""Online softmax and FlashAttention's tiling: attention without ever holding the n × n matrix.

Milakov & Gimelshein 2018 compute a softmax in one pass with a running maximum m and a running sum l; Dao et
al. 2022 (FlashAttention; version 2, Dao 2023, loops key blocks inside query blocks as here) apply it to
attention tile by tile. For a block of queries Q_i and each block of keys and values K_j, V_j in turn::

    S     = Q_i K_jᵀ / √d                     the tile's scores (B_q × B_k), −∞ where masked
    m'    = max(m, rowmax(S))                 the running maximum, per query row
    P     = exp(S − m')                       (B_q × B_k)
    l'    = e^(m − m') · l + rowsum(P)        the running sum, rescaled to the new maximum
    O'    = e^(m − m') · O + P V_j            the running (unnormalised) output
    ...   and after the last key block: output = O / l

Rescaling by e^(m − m') keeps every exponent ≤ 0 (no overflow) and makes the result exactly softmax(S) V:
:class:`FlashTrace` holds every tile's m, l and O, and the final output equals full attention.

Shape legend: T tokens, d = d_k, d_v value width, B_q and B_k the query and key block sizes. Float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from attention_core.errors import N_, InputError


@dataclass(frozen=True)
class Tile:
    """One step: query block ``query_block``, key block ``key_block``.

    Attributes:
        rows, cols: the token indices of the query and key blocks (ranges).
        scores: (B_q, B_k), Q_i K_jᵀ / √d, −inf where masked.
        max_before, max_after: (B_q,), m and m'. exp_scores: (B_q, B_k), P = exp(S − m').
        rescale: (B_q,), e^(m − m') (0 at the first key block, where m = −inf).
        sum_before, sum_after: (B_q,), l and l'. output_before, output_after: (B_q, d_v), O and O'.
    """

    query_block: int
    key_block: int
    rows: range
    cols: range
    scores: torch.Tensor
    max_before: torch.Tensor
    max_after: torch.Tensor
    exp_scores: torch.Tensor
    rescale: torch.Tensor
    sum_before: torch.Tensor
    sum_after: torch.Tensor
    output_before: torch.Tensor
    output_after: torch.Tensor


@dataclass(frozen=True)
class FlashTrace:
    """Every tile of tiled attention, the final output and what each way keeps in memory.

    Attributes:
        tiles: in order: query block 0 with key blocks 0, 1, …, then query block 1, …
        output: (T, d_v), O / l per query block. maximum, total: (T,), the final m and l of every row.
        block_q, block_k: the block sizes.
    """

    tiles: tuple[Tile, ...]
    output: torch.Tensor
    maximum: torch.Tensor
    total: torch.Tensor
    block_q: int
    block_k: int

    def stored_numbers(self, tokens: int, d_v: int) -> tuple[int, int]:
        """(standard attention's T × T scores, the tiled kernel's working set B_q × B_k + B_q (d_v + 2))."""
        return tokens * tokens, self.block_q * self.block_k + self.block_q * (d_v + 2)


def check_blocks(tokens: int, block_q: int, block_k: int) -> None:
    """Raise :class:`InputError` (field ``block_q`` or ``block_k``) for a block size below 1 or above T."""
    for name, size in (("block_q", block_q), ("block_k", block_k)):
        if not 1 <= size <= tokens:
            raise InputError(N_("The block size {name} = {size} must be between 1 and the number of tokens, {tokens}: "
                                "a block is a group of rows of Q (block_q) or of K and V (block_k)."),
                             field=name, name=name, size=size, tokens=tokens)


def flash_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, block_q: int, block_k: int,
                    attn_mask: Optional[torch.Tensor] = None) -> FlashTrace:
    """Attention tile by tile with the online softmax (module docstring); no T × T matrix is formed.

    Args:
        query, key: (T, d). value: (T, d_v). block_q, block_k: 1..T.
        attn_mask: optional bool (T, T), True = may attend; every row must allow at least one key.

    Raises:
        InputError: a block size outside 1..T.
    """
    t, d = query.shape
    check_blocks(t, block_q, block_k)
    scale = 1.0 / math.sqrt(d)
    tiles, outputs, maxima, totals = [], [], [], []
    for qb, start in enumerate(range(0, t, block_q)):
        rows = range(start, min(start + block_q, t))
        q = query[rows.start:rows.stop]
        m = torch.full((len(rows),), float("-inf"))
        total = torch.zeros(len(rows))
        out = torch.zeros(len(rows), value.shape[-1])
        for kb, kstart in enumerate(range(0, t, block_k)):
            cols = range(kstart, min(kstart + block_k, t))
            s = q @ key[cols.start:cols.stop].T * scale  # (B_q, d) @ (d, B_k) -> (B_q, B_k)
            if attn_mask is not None:
                s = s.masked_fill(~attn_mask[rows.start:rows.stop, cols.start:cols.stop], float("-inf"))
            m_new = torch.maximum(m, s.max(dim=-1).values)  # (B_q,)
            safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # rows with nothing yet
            p = torch.exp(s - safe[:, None])  # exponents ≤ 0
            rescale = torch.exp(m - safe)  # e^(m − m'), 0 while m = −inf
            total_new = rescale * total + p.sum(dim=-1)
            out_new = rescale[:, None] * out + p @ value[cols.start:cols.stop]
            tiles.append(Tile(query_block=qb, key_block=kb, rows=rows, cols=cols, scores=s, max_before=m,
                              max_after=m_new, exp_scores=p, rescale=rescale, sum_before=total, sum_after=total_new,
                              output_before=out, output_after=out_new))
            m, total, out = m_new, total_new, out_new
        outputs.append(out / total[:, None])
        maxima.append(m)
        totals.append(total)
    return FlashTrace(tiles=tuple(tiles), output=torch.cat(outputs), maximum=torch.cat(maxima),
                      total=torch.cat(totals), block_q=block_q, block_k=block_k)
