"""The self-attention page's export recipe (:class:`attention_core.recipe.Recipe`): eq. 1 recomputed in torch.

Source: Vaswani et al. 2017, eq. 1; seed 001's SelfAttention_v2. Shapes: T tokens, D = d_model, d_k = d_v.
"""

from __future__ import annotations

from attention_core.recipe import Recipe
from attention_core.self_attention.walk import Walkthrough


def self_attention_recipe(walk: Walkthrough) -> Recipe:
    """How the self-attention page's numbers are recomputed: Q, K, V, the scores, their scaling, softmax, output."""
    t = walk.trace
    return Recipe(
        title="scaled dot-product self-attention",
        sources=("Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (Vaswani et al. 2017, eq. 1)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("d_k", t.attention.query.shape[-1], ""),
                ("X", t.x, "(T, D)"), ("W_q", t.w_query, "(D, d_k)"), ("W_k", t.w_key, "(D, d_k)"),
                ("W_v", t.w_value, "(D, d_v)")),
        code=("Q = X @ W_q  # (T, d_k)", "K = X @ W_k  # (T, d_k)", "V = X @ W_v  # (T, d_v)",
              "scores = Q @ K.T  # (T, T): q_i . k_j",
              "scaled_scores = scores * (1.0 / math.sqrt(d_k))",
              "weights = torch.softmax(scaled_scores, dim=-1)  # each row sums to 1",
              "output = weights @ V  # (T, d_v): the context vectors"),
        panels={"inputs": ("X",), "query": ("Q",), "key": ("K",), "value": ("V",), "scores": ("scores",),
                "scaled_scores": ("scaled_scores",), "weights": ("weights",), "output": ("output",)},
        references=("same_as('torch.nn.functional.scaled_dot_product_attention(Q, K, V)', output, "
                    "F.scaled_dot_product_attention(Q, K, V))",),
    )
