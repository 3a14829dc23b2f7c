"""The *DeepSeek sparse attention* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.sparse_attention.walk import SparseWalkthrough
from attention_core.modern import mla, rope, sparse
from attention_core.recipe import ATTEND, Recipe, source


def sparse_attention_recipe(walk: SparseWalkthrough) -> Recipe:
    """The DeepSeek sparse attention page's recipe: MLA's queries, keys and values, the indexer's queries, keys and
    weights, the index scores, torch.topk's choice, MLA with and without it, what was lost and the work; checked
    against transformers' ``DeepseekV32Attention`` and ``DeepseekV32Indexer`` where transformers is installed."""
    t = walk.trace
    ix = t.indexer
    shown = min(ix.index_heads, 2)
    return Recipe(
        title="DeepSeek sparse attention (DeepSeek-V3.2-Exp): a lightning indexer picks the keys MLA attends to",
        sources=("I[t, s] = sum_j w[t, j] * relu(q_I[t, j] . k_I[s] / sqrt(d_I)), w = X W_w / sqrt(H_I), s <= t; "
                 "each query keeps torch.topk(I[t], k); MLA (DeepSeek-V2 eqs. 9-19) over the kept keys only  "
                 "(DeepSeek-AI 2025, 'DeepSeek-V3.2-Exp', sec. 2.1, eqs. 1-2)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("h", t.dense.num_heads, "MLA's heads"),
                ("d_h", t.dense.head_dim, "MLA's head_dim"), ("d_R", t.dense.rope_dim, "the RoPE part"),
                ("H_I", ix.index_heads, "the indexer's heads"), ("d_I", ix.index_dim, "the indexer's width"),
                ("top_k", ix.top_k, "the keys each query keeps"), ("r", walk.head, "MLA's head shown, 0-based"),
                ("X", t.dense.x, "(T, D)"),
                *((name.replace("w_", "W_").upper().replace("W_OUT", "W_O"), t.dense.weights[name], "")
                  for name in mla.WEIGHT_NAMES),
                ("W_IQ", ix.weights["w_iq"], "(d_c', H_I d_I)"), ("W_IK", ix.weights["w_ik"], "(D, d_I)"),
                ("W_IW", ix.weights["w_iw"], "(D, H_I)"),
                ("LONG", sparse.LONG_CONTEXT, "tokens"), ("K_LONG", sparse.DEEPSEEK_V32["top_k"], "DeepSeek's k")),
        code=(*ATTEND, "", "BASE = 10000.0  # RoPE's base", "", *source(rope.rotation_angles, rope.rotate,
                                                                        sparse.pairs_scored),
              "T = X.shape[0]",
              "causal = torch.ones(T, T, dtype=torch.bool).tril()",
              "blocked = torch.zeros(T, T).masked_fill(~causal, -inf)",
              "heads = lambda M: M.view(T, h, -1).transpose(0, 1)  # (T, h * w) -> (h, T, w)",
              "# MLA, as on its page",
              "c_KV, c_Q = X @ W_DKV, X @ W_DQ",
              "K_C, V, Q_C = heads(c_KV @ W_UK), heads(c_KV @ W_UV), heads(c_Q @ W_UQ)",
              "angles = rotation_angles(torch.arange(T), d_R, BASE)",
              "k_R, q_R = rotate(X @ W_KR, angles), rotate(heads(c_Q @ W_QR), angles)",
              "q = torch.cat([Q_C, q_R], dim=-1)",
              "k = torch.cat([K_C, k_R.expand(h, T, d_R)], dim=-1)",
              "# the lightning indexer: RoPE on the first d_R columns of its queries and keys",
              "rope_first = lambda M: torch.cat([rotate(M[..., :d_R], angles), M[..., d_R:]], dim=-1)",
              "q_I = rope_first((c_Q @ W_IQ).view(T, H_I, d_I).transpose(0, 1))  # (H_I, T, d_I)",
              "k_I = rope_first(X @ W_IK)  # (T, d_I)",
              "dots = torch.matmul(q_I.transpose(0, 1), k_I.T.unsqueeze(0)) * d_I ** -0.5  # (T, H_I, T)",
              "relu_I = torch.relu(dots).transpose(0, 1)  # (H_I, T, T)",
              "w_I = (X @ W_IW) * H_I ** -0.5  # (T, H_I)",
              "I = torch.matmul(w_I.unsqueeze(-2), torch.relu(dots)).squeeze(-2) + blocked",
              "chosen = I.topk(min(top_k, T), dim=-1).indices  # DeepSeek's code calls torch.topk",
              "kept = torch.zeros(T, T, dtype=torch.bool).scatter(-1, chosen, True) & causal",
              "kept_shown = kept.float().masked_fill(~causal, -inf)",
              "# MLA over every key, and over the kept keys only",
              "_, masked_d, weights_d, o_d = attend(q, k, V, causal)",
              "_, masked_s, weights_s, o_s = attend(q, k, V, kept)",
              "u_d = o_d.transpose(0, 1).reshape(T, h * d_h) @ W_O",
              "u_s = o_s.transpose(0, 1).reshape(T, h * d_h) @ W_O",
              "dropped_mass = (weights_d * (causal & ~kept)).sum(dim=-1)  # (h, T)",
              "work = torch.tensor([pairs_scored(T, top_k), pairs_scored(LONG, K_LONG)], dtype=torch.float64)",
              "fewer = (work[:, :1] / work[:, 1:]).float()  # how many times fewer pairs",
              "here, long = work[:1].float(), (work[1:] / 1e6).float()  # pairs; at 128K in millions"),
        panels={"indexer": ("q_I.transpose(0, 1).reshape(T, -1)", "k_I", "w_I"),
                "scores": (*(f"relu_I[{j}].masked_fill(~causal, -inf)" for j in range(shown)), "I"),
                "topk": ("I", "kept_shown"),
                "weights": ("masked_s[r]", "weights_s[r]", "weights_d[r]"),
                "output": ("o_s[r]", "u_s", "u_d"),
                "lost": ("dropped_mass.T", "(u_s - u_d).abs()"),
                "work": ("fewer", "here", "long")},
        references=(
            "same_as('SDPA over the kept keys', o_s, torch.nn.functional.scaled_dot_product_attention(q, k, V, "
            "attn_mask=kept))",
            "try:",
            "    from transformers import DeepseekV32Config",
            "    from transformers.models.deepseek_v32.modeling_deepseek_v32 import DeepseekV32Attention, "
            "DeepseekV32RotaryEmbedding",
            "except ImportError:",
            "    print('transformers is not installed: DeepseekV32Attention is not compared')",
            "else:",
            "    config = DeepseekV32Config(hidden_size=X.shape[1], num_attention_heads=h, num_key_value_heads=h,",
            "        q_lora_rank=W_DQ.shape[1], kv_lora_rank=W_DKV.shape[1], qk_nope_head_dim=d_h, qk_rope_head_dim=d_R,",
            "        v_head_dim=d_h, index_n_heads=H_I, index_head_dim=d_I, index_topk=top_k, attention_bias=False,",
            "        rope_parameters={'rope_type': 'default', 'rope_theta': BASE}, num_hidden_layers=1, vocab_size=8,",
            "        intermediate_size=8, moe_intermediate_size=8, n_routed_experts=1, num_experts_per_tok=1, n_group=1,",
            "        topk_group=1)",
            "    config._attn_implementation = 'eager'",
            "    layer = DeepseekV32Attention(config, layer_idx=0).eval()",
            "    layer.q_a_layernorm = layer.kv_a_layernorm = torch.nn.Identity()  # the paper has no norm there",
            "    layer.indexer.k_norm = torch.nn.Identity()  # the page shows no LayerNorm on the indexer's key",
            "    pairs = torch.arange(d_R).view(2, -1).T.reshape(-1)  # its MLA pairs columns (2i, 2i + 1)",
            "    W_QR_i = W_QR.view(-1, h, d_R)[:, :, pairs].reshape(-1, h * d_R)",
            "    per_head = lambda *ms: torch.cat([m.view(m.shape[0], h, -1) for m in ms], dim=-1).reshape(ms[0].shape[0], -1).T",
            "    with torch.no_grad():",
            "        layer.q_a_proj.weight.copy_(W_DQ.T)",
            "        layer.q_b_proj.weight.copy_(per_head(W_UQ, W_QR_i))",
            "        layer.kv_a_proj_with_mqa.weight.copy_(torch.cat([W_DKV, W_KR[:, pairs]], dim=1).T)",
            "        layer.kv_b_proj.weight.copy_(per_head(W_UK, W_UV))",
            "        layer.o_proj.weight.copy_(W_O.T)",
            "        layer.indexer.wq_b.weight.copy_(W_IQ.T)",
            "        layer.indexer.wk.weight.copy_(W_IK.T)",
            "        layer.indexer.weights_proj.weight.copy_(W_IW.T)",
            "        cos, sin = DeepseekV32RotaryEmbedding(config)(X[None], torch.arange(T)[None])",
            "        theirs, _ = layer(X[None], (cos, sin), blocked[None, None])",
            "        their_chosen = layer.indexer(X[None], X[None] @ W_DQ, (cos, sin), blocked[None], None)[0]",
            "    same_as('transformers DeepseekV32Attention', u_s, theirs[0])",
            "    same_as('transformers DeepseekV32Indexer: the kept keys',",
            "            (torch.zeros(T, T, dtype=torch.bool).scatter(-1, their_chosen.long(), True) & causal).float(),",
            "            kept.float())",
        ),
    )
