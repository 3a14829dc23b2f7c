"""The *grouped-query attention* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.gqa.walk import GQAWalkthrough
from attention_core.recipe import ATTEND, Recipe


def gqa_recipe(walk: GQAWalkthrough) -> Recipe:
    """The grouped-query attention page's recipe: key/value heads shared by groups of query heads, the KV cache's bytes."""
    t, s = walk.trace, walk.settings
    return Recipe(
        title="grouped-query attention",
        sources=("head_r = softmax(Q_r K_g(r)^T / sqrt(head_dim) + M) V_g(r), g(r) = floor(r * kv / h), "
                 "output = Concat(head_1, ..., head_h) W_O + b_O",
                 "(Ainslie et al. 2023; Shazeer 2019 for kv = 1)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("h", t.num_heads, "query heads"),
                ("kv", t.num_kv_heads, "key/value heads"), ("head_dim", t.head_dim, ""), ("causal", s.causal_mask, ""),
                ("X", t.x, "(T, D)"), ("W_q", t.w_query, "(D, h * head_dim)"),
                ("W_k", t.w_key, "(D, kv * head_dim)"), ("W_v", t.w_value, "(D, kv * head_dim)"),
                ("W_O", t.w_out, "(h * head_dim, d_o)"), ("b_O", t.b_out, "(d_o,)")),
        code=(*ATTEND, "",
              "T = X.shape[0]",
              "mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, h * head_dim), (T, kv * head_dim), (T, kv * head_dim)",
              "Q_heads = Q.view(T, h, head_dim).transpose(0, 1)  # (h, T, head_dim)",
              "K_heads = K.view(T, kv, head_dim).transpose(0, 1)  # (kv, T, head_dim)",
              "V_heads = V.view(T, kv, head_dim).transpose(0, 1)",
              "groups = [r // (h // kv) for r in range(h)]  # g(r): the key/value head query head r reads",
              "share = torch.zeros(h, kv)",
              "share[torch.arange(h), torch.tensor(groups)] = 1.0",
              "K_repeated = K_heads.repeat_interleave(h // kv, dim=0)  # (h, T, head_dim)",
              "V_repeated = V_heads.repeat_interleave(h // kv, dim=0)",
              "_, _, weights, heads = attend(Q_heads, K_repeated, V_repeated, mask)  # (h, T, T), (h, T, head_dim)",
              "output = heads.transpose(0, 1).reshape(T, h * head_dim) @ W_O + b_O",
              "# the KV cache per token and layer, float32: 2 (K and V) * key/value heads * head_dim * 4 bytes",
              "cache_bytes = torch.tensor([[2.0 * heads_ * head_dim * 4] for heads_ in (h, kv, 1)])  # MHA, GQA, MQA"),
        panels={"inputs": ("X",), "projections": ("Q", "K", "V"), "groups": ("share",),
                "repeat": tuple(f"K_repeated[{r}]" for r in range(t.num_heads)),
                "weights": tuple(f"weights[{r}]" for r in range(t.num_heads)), "output": ("output",),
                "kv_cache": ("cache_bytes",)},
        references=("same_as('F.scaled_dot_product_attention(Q, K, V, is_causal=causal, enable_gqa=True)', heads, "
                    "F.scaled_dot_product_attention(Q_heads[None], K_heads[None], V_heads[None], is_causal=causal, "
                    "enable_gqa=True)[0])",),
    )
