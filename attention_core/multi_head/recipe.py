"""The multi-head and cross-attention pages' export recipe (:class:`attention_core.recipe.Recipe`).

head_r = softmax(Q_r K_rᵀ / √head_dim + M) V_r, output = Concat(head_1, …, head_h) W_O + b_O, checked against
``F.scaled_dot_product_attention`` per head and ``nn.MultiheadAttention``. Sources: Vaswani et al. 2017,
sec. 3.2.2; seed 001's MultiHeadAttention; seed 003 for cross-attention. Shapes: m queries, n keys, D = d_model,
d_out = h · head_dim.
"""

from __future__ import annotations

from attention_core.multi_head.walk import MultiHeadWalkthrough
from attention_core.recipe import ATTEND, Recipe


def multi_head_recipe(walk: MultiHeadWalkthrough) -> Recipe:
    """The recipe of the multi-head page, or of the cross-attention page when ``walk.is_cross``."""
    tr, w = walk.trace, walk.weights
    cross = walk.is_cross
    inputs = [("tokens", walk.tokens, "the query rows")]
    if cross:
        inputs += [("encoder_tokens", walk.kv_tokens, "the key/value rows"),
                   ("X", walk.x_query, "(m, D): the decoder's tokens"), ("X_enc", walk.x_kv, "(n, D): the encoder's")]
    else:
        inputs += [("X", walk.x_query, "(T, D)"),
                   ("mask", walk.mask.attn_mask, "(T, T) bool, True = may attend (the causal page's mask)")]
    inputs += [("h", tr.num_heads, "num_heads"), ("W_q", w["w_query"], "(D, d_out), drawn like MultiHeadAttention's"),
               ("W_k", w["w_key"], "(D, d_out)"), ("W_v", w["w_value"], "(D, d_out)"),
               ("W_O", w["w_out"], "(d_out, d_out)"), ("b_O", w["b_out"], "(d_out,)")]
    kv = "X_enc" if cross else "X"
    mask = "None" if cross else "mask"
    code = [
        *ATTEND, "",
        f"Q, K, V = X @ W_q, {kv} @ W_k, {kv} @ W_v  # (m, d_out), (n, d_out), (n, d_out)",
        "m, n, d_out = Q.shape[0], K.shape[0], Q.shape[1]",
        "head_dim = d_out // h",
        "# split (as MultiHeadAttention does): view(m, h, head_dim), then transpose: head r owns columns "
        "r * head_dim ... (r + 1) * head_dim",
        "Q_heads = Q.view(m, h, head_dim).transpose(0, 1)  # (h, m, head_dim)",
        "K_heads = K.view(n, h, head_dim).transpose(0, 1)  # (h, n, head_dim)",
        "V_heads = V.view(n, h, head_dim).transpose(0, 1)",
        f"scaled_scores, masked_scores, weights, heads = attend(Q_heads, K_heads, V_heads, {mask})  "
        "# per head, scaled by 1 / sqrt(head_dim)",
        "concat = heads.transpose(0, 1).reshape(m, d_out)  # (h, m, head_dim) -> (m, d_out): Concat(head_1, ..., head_h)",
        "output = concat @ W_O + b_O  # (m, d_out)  (Vaswani et al. 2017, sec. 3.2.2)",
    ]
    per_head = lambda name: tuple(f"{name}[{r}]" for r in range(tr.num_heads))  # noqa: E731
    panels = {"inputs": ("X", "X_enc") if cross else ("X",), "projections": ("Q", "K", "V"),
              "query": ("Q",), "key": ("K",), "value": ("V",), "split": per_head("Q_heads"),
              "scaled_scores": per_head("scaled_scores"), "masked_scores": per_head("masked_scores"),
              "weights": per_head("weights"), "head": per_head("heads"), "concat": ("concat",),
              "output": ("output", "W_O", "b_O[None]")}
    references = [
        "per_head = F.scaled_dot_product_attention(Q_heads, K_heads, V_heads"
        + ("" if cross else ", attn_mask=mask") + ")  # (h, m, head_dim)",
        "same_as('torch.nn.functional.scaled_dot_product_attention(Q_heads, K_heads, V_heads"
        + ("" if cross else ", attn_mask=mask") + ") -> concat . W_O + b_O', output, "
        "per_head.transpose(0, 1).reshape(m, d_out) @ W_O + b_O)",
    ]
    if walk.x_query.shape[-1] == tr.concat.shape[-1]:  # the page compares with nn.MultiheadAttention when D == d_out
        references += [
            "mha = torch.nn.MultiheadAttention(d_out, h, batch_first=True).eval()",
            "with torch.no_grad():",
            "    mha.in_proj_weight.copy_(torch.cat([W_q.T, W_k.T, W_v.T]))  # nn.Linear keeps W^T",
            "    mha.in_proj_bias.zero_()",
            "    mha.out_proj.weight.copy_(W_O.T)",
            "    mha.out_proj.bias.copy_(b_O)",
            f"    ours, theirs = mha(X[None], {kv}[None], {kv}[None], "
            + ("" if cross else "attn_mask=~mask, ") + "average_attn_weights=False)  # torch's mask: True = blocked",
            "keep = " + ("torch.ones(m, dtype=torch.bool)" if cross else "mask.any(dim=-1)")
            + "  # nn.MultiheadAttention gives NaN for a row with every key blocked: left out",
            "same_as('torch.nn.MultiheadAttention(...)[0]', output[keep], ours[0][keep])",
            "same_as('torch.nn.MultiheadAttention(..., average_attn_weights=False)[1]', weights[:, keep], "
            "theirs[0][:, keep])",
        ]
    return Recipe(
        title="cross-attention" if cross else "multi-head attention",
        sources=("head_r = softmax(Q_r K_r^T / sqrt(head_dim) + M) V_r, output = Concat(head_1, ..., head_h) W_O + b_O",
                 "(Vaswani et al. 2017, sec. 3.2.2; MultiHeadAttention of Raschka, Build a Large Language Model (From "
                 "Scratch), 2024, ch. 3"
                 + ("; Hung-yi Lee's Transformer lecture: queries from the decoder, keys and values from the encoder)"
                    if cross else ")")),
        inputs=tuple(inputs), code=tuple(code), panels=panels, references=tuple(references),
    )
