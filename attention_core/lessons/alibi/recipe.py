"""The *ALiBi* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.alibi.walk import AlibiWalkthrough
from attention_core.modern import alibi
from attention_core.recipe import ATTEND, Recipe, projection_inputs, source


def alibi_recipe(walk: AlibiWalkthrough) -> Recipe:
    """The ALiBi page's recipe: the slopes and distances by the page's own functions, the biased scores, the weights."""
    s = walk.settings
    return Recipe(
        title="ALiBi, attention with linear biases",
        sources=("a_ij = q_i . k_j / sqrt(d) - m_h |i - j|, then the causal mask and softmax over j; "
                 "m_h = 2^(-8h/H)  (Press et al. 2022, sec. 3)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("H", len(walk.trace.slopes), "num_heads"),
                ("causal", s.causal_mask, ""),
                *projection_inputs(walk.inputs)),
        code=(*ATTEND, "",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d) each",
              "",
              *source(alibi.slopes, alibi.distances),
              "T = X.shape[0]",
              "mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None",
              "head_slopes = torch.tensor(slopes(H))  # (H,): m_h",
              "distance = distances(T)  # (T, T): |i - j|",
              "bias = -head_slopes[:, None, None] * distance  # (H, T, T)",
              "scaled_scores, biased_scores, weights, output = attend(Q.expand(H, T, -1), K.expand(H, T, -1), "
              "V.expand(H, T, -1), mask, bias)"),
        panels={"slopes": ("head_slopes[:, None]",), "distance": ("distance",),
                "bias": tuple(f"bias[{r}]" for r in range(len(walk.trace.slopes))),
                "biased_scores": tuple(f"biased_scores[{r}]" for r in range(len(walk.trace.slopes))),
                "weights": tuple(f"weights[{r}]" for r in range(len(walk.trace.slopes)))},
        references=(
            "float_mask = bias if mask is None else bias.masked_fill(~mask, -inf)",
            "same_as('F.scaled_dot_product_attention(q, k, v, attn_mask=bias)', output, "
            "F.scaled_dot_product_attention(Q.expand(H, T, -1), K.expand(H, T, -1), V.expand(H, T, -1), "
            "attn_mask=float_mask))",
            "# the weights entry by entry with math.exp: the naive reference",
            "loop = []",
            "for m_h in slopes(H):",
            "    for i in range(T):",
            "        a = {j: scaled_scores[0, i, j].item() - m_h * abs(i - j) for j in range(T) if not causal or j <= i}",
            "        top = max(a.values())",
            "        total = sum(math.exp(value - top) for value in a.values())",
            "        loop.append([math.exp(a[j] - top) / total if j in a else 0.0 for j in range(T)])",
            "same_as('a loop with math.exp, entry by entry', weights, torch.tensor(loop).view(H, T, T))",
        ),
    )
