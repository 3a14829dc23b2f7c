"""The *sliding-window attention* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.sliding_window.walk import SlidingWalkthrough
from attention_core.modern import sliding
from attention_core.recipe import ATTEND, Recipe, projection_inputs, source


def sliding_window_recipe(walk: SlidingWalkthrough) -> Recipe:
    """The sliding-window page's recipe: the window mask, the weights, the receptive field by the page's own function."""
    s = walk.settings
    return Recipe(
        title="sliding-window attention",
        sources=("key j is in query i's window when i - w < j <= i (causal) or |i - j| < w; then softmax(Q K^T / "
                 "sqrt(d_k) + M) V  (Beltagy et al. 2020; Jiang et al. 2023)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("w", s.sliding_window.window, "the window"),
                ("layers", s.sliding_window.layers, ""), ("causal", s.causal_mask, ""),
                *projection_inputs(walk.inputs)),
        code=(*ATTEND, "",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d_k) each",
              "T = X.shape[0]",
              "i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]",
              "window = ((j <= i) & (j > i - w)) if causal else ((i - j).abs() < w)  # (T, T) bool",
              "_, masked_scores, weights, output = attend(Q, K, V, window)",
              "",
              *source(sliding.receptive_field),
              "receptive = receptive_field(window, layers).float()  # (layers, T, T)"),
        panels={"mask": ("window.float()",), "masked_scores": ("masked_scores",), "weights": ("weights",),
                "receptive": tuple(f"receptive[{n}]" for n in range(walk.reach.shape[0]))},
        references=("same_as('F.scaled_dot_product_attention(q, k, v, attn_mask=window_mask)', output, "
                    "F.scaled_dot_product_attention(Q[None], K[None], V[None], attn_mask=window)[0])",),
    )
