"""The *FlashAttention* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.flash_attention.walk import FlashWalkthrough
from attention_core.recipe import Recipe, projection_inputs


def flash_attention_recipe(walk: FlashWalkthrough) -> Recipe:
    """The FlashAttention page's recipe: the tiles, the running max, sum and output, the final output."""
    s = walk.settings
    return Recipe(
        title="FlashAttention's tiles and the online softmax",
        sources=("S = Q_i K_j^T / sqrt(d), m' = max(m, rowmax S), P = exp(S - m'), l' = e^(m - m') l + rowsum P,",
                 "O' = e^(m - m') O + P V_j; output = O / l  (Milakov & Gimelshein 2018; Dao et al. 2022)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("B_q", s.flash_attention.block_q, "query block"),
                ("B_k", s.flash_attention.block_k, "key block"), ("causal", s.causal_mask, ""), ("shown", walk.tile, "the tile shown"),
                *projection_inputs(walk.inputs)),
        code=("Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d), (T, d), (T, d_v)",
              "T, d = Q.shape",
              "mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None",
              "tiles, outputs = [], []",
              "for start in range(0, T, B_q):",
              "    rows = slice(start, min(start + B_q, T))",
              "    m = torch.full((rows.stop - start,), -inf)  # the running maximum of each row",
              "    l = torch.zeros(rows.stop - start)  # the running sum",
              "    O = torch.zeros(rows.stop - start, V.shape[1])  # the running (unnormalised) output",
              "    for key_start in range(0, T, B_k):",
              "        cols = slice(key_start, min(key_start + B_k, T))",
              "        S = Q[rows] @ K[cols].T * (1.0 / math.sqrt(d))  # (B_q, B_k)",
              "        if mask is not None:",
              "            S = S.masked_fill(~mask[rows, cols], -inf)",
              "        m_new = torch.maximum(m, S.max(dim=-1).values)",
              "        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # rows with nothing yet",
              "        P = torch.exp(S - safe[:, None])  # exponents <= 0",
              "        rescale = torch.exp(m - safe)  # e^(m - m'), 0 while m = -inf",
              "        l_new = rescale * l + P.sum(dim=-1)",
              "        O_new = rescale[:, None] * O + P @ V[cols]",
              "        tiles.append(dict(S=S, m=m, m_new=m_new, P=P, rescale=rescale, l=l, l_new=l_new, O=O, O_new=O_new))",
              "        m, l, O = m_new, l_new, O_new",
              "    outputs.append(O / l[:, None])",
              "output = torch.cat(outputs)  # (T, d_v)",
              "tile = tiles[shown]",
              "blocks_k = math.ceil(T / B_k)",
              "i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]",
              "tile_number = ((i // B_q) * blocks_k + j // B_k + 1).float()",
              "full = torch.softmax((Q @ K.T / math.sqrt(d)).masked_fill(~mask, -inf) if causal else Q @ K.T / "
              "math.sqrt(d), dim=-1) @ V  # the full T x T way"),
        panels={"tiles": ("tile_number",), "tile_scores": ("tile['S']",),
                "running_max": ("torch.stack([tile['m'], tile['S'].max(dim=-1).values, tile['m_new']], dim=1)",),
                "running_sum": ("tile['P']", "torch.stack([tile['l'], tile['rescale'], tile['P'].sum(dim=-1), "
                                "tile['l_new']], dim=1)"),
                "partial_output": ("tile['O']", "tile['O_new']"),
                "final": ("output", "full", "output - full")},
        references=("same_as('F.scaled_dot_product_attention(q, k, v, is_causal=causal)', output, "
                    "F.scaled_dot_product_attention(Q[None], K[None], V[None], is_causal=causal)[0])",),
    )
