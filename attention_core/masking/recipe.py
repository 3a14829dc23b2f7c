"""The causal and dropout pages' export recipes (:class:`attention_core.recipe.Recipe`).

softmax(Q Kᵀ / √d_k + M) V, seed 004's other route (softmax, zero, renormalise) and dropout's D / (1 − p).
Sources: Vaswani et al. 2017, eq. 1 and sec. 3.2.3; seed 001's CausalAttention; seed 004 (nn.Dropout).
Shapes: T tokens, D = d_model, d_k the width of q, k, v."""

from __future__ import annotations

import torch

from attention_core.masking.walk import CausalWalkthrough
from attention_core.recipe import ATTEND, Recipe


def causal_recipe(walk: CausalWalkthrough) -> Recipe:
    """The causal page's recipe: the mask, the masked scores, the weights both ways, the output."""
    return _masked_recipe(walk, dropout=False)


def dropout_recipe(walk: CausalWalkthrough) -> Recipe:
    """The dropout page's recipe: the causal page's, then the dropout mask D and the weights · D / (1 − p)."""
    return _masked_recipe(walk, dropout=True)


def _masked_recipe(walk: CausalWalkthrough, dropout: bool) -> Recipe:
    p = walk.dropout_p
    inputs = [("tokens", walk.tokens, "the rows"), ("X", walk.trace.x, "(T, D)"),
              ("W_q", walk.weights["w_query"], "(D, d_k), drawn like CausalAttention's nn.Linear"),
              ("W_k", walk.weights["w_key"], "(D, d_k)"), ("W_v", walk.weights["w_value"], "(D, d_k)"),
              ("mask", walk.mask.attn_mask, "(T, T) bool, True = may attend: causal, padding and clicked cells")]
    if dropout:
        inputs += [("p", p, "dropout_p (0 in eval mode)"), ("dropout_seed", walk.settings.dropout.seed, ""),
                   ("keep", walk.keep, "(T, T) bool, the dropout mask D: True = kept")]
    code = [
        *ATTEND, "",
        "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d_k) each",
        "T = X.shape[0]",
        "M = torch.zeros(T, T).masked_fill(~mask, -inf)  # the additive mask: 0 = may attend, -inf = blocked",
        "scaled_scores, masked_scores, weights, output = attend(Q, K, V, mask)  # softmax(Q K^T / sqrt(d_k) + M) V",
        "# the other route (Raschka's first attempt): softmax over all keys, zero the blocked weights, divide by the "
        "row sums",
        "unmasked_weights = torch.softmax(scaled_scores, dim=-1)",
        "zeroed_weights = unmasked_weights.masked_fill(~mask, 0.0)",
        "row_sums = zeroed_weights.sum(dim=-1, keepdim=True)  # (T, 1)",
        "empty = row_sums == 0  # rows with every key blocked: 0, not 0 / 0",
        "route_weights = (zeroed_weights / row_sums.masked_fill(empty, 1.0)).masked_fill(empty, 0.0)",
    ]
    if dropout:
        code += ["# dropout (nn.Dropout): keep each weight with probability 1 - p, scale the kept ones by 1 / (1 - p)",
                 "dropped_weights = weights * keep / (1.0 - p)  # (T, T)",
                 "output = dropped_weights @ V  # (T, d_k)"]
    references = []
    if p == 0.0:
        references.append("same_as('torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask)', "
                          "output, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))")
        if torch.equal(walk.mask.attn_mask, torch.ones_like(walk.mask.attn_mask).tril()):
            references.append("same_as('torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)', "
                              "output, F.scaled_dot_product_attention(Q, K, V, is_causal=True))")
    else:
        references += [
            "same_as('torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask) (weights before "
            "dropout, times V)', weights @ V, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))",
            "# nn.Dropout's own draw, bernoulli_(1 - p), made afresh from a generator with the same seed",
            "drawn = torch.empty(T, T).bernoulli_(1 - p, generator=torch.Generator().manual_seed(dropout_seed))",
            "assert torch.equal(drawn.bool(), keep), 'the dropout mask D differs from a fresh draw with the same seed'",
            "same_as('weights * D / (1 - p) @ V with D drawn afresh', output, weights * drawn / (1 - p) @ V)",
        ]
    return Recipe(
        title="dropout on the attention weights" if dropout else "causal attention",
        sources=("weights = softmax(Q K^T / sqrt(d_k) + M), output = weights V  (Vaswani et al. 2017, eq. 1 and "
                 "sec. 3.2.3; CausalAttention of Raschka, Build a Large Language Model (From Scratch), 2024, ch. 3)",
                 *(("dropout: weights * D / (1 - p), D kept with probability 1 - p (nn.Dropout, as in Raschka, Build a "
                    "Large Language Model (From Scratch), 2024, ch. 3)",)
                   if dropout else ())),
        inputs=tuple(inputs), code=tuple(code),
        panels={"scaled_scores": ("scaled_scores",), "mask": ("M",), "masked_scores": ("masked_scores",),
                "weights": ("weights",),
                "other_route": ("unmasked_weights", "zeroed_weights", "route_weights"),
                "dropout_mask": ("keep.float()",),
                "dropped_weights": ("dropped_weights", "dropped_weights.sum(dim=-1, keepdim=True)"),
                "output": ("output",)},
        references=tuple(references),
    )
