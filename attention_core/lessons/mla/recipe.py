"""The *multi-head latent attention* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.mla.walk import MLAWalkthrough
from attention_core.modern import mla, rope
from attention_core.recipe import ATTEND, Recipe, source


def mla_recipe(walk: MLAWalkthrough) -> Recipe:
    """The multi-head latent attention page's recipe: the latents, the up-projections, the decoupled RoPE, scores,
    weights, output, the cache table, absorption and RoPE inside k^C; checked against transformers'
    ``DeepseekV3Attention`` where transformers is installed."""
    t = walk.trace
    v3 = mla.DEEPSEEK_V3
    return Recipe(
        title="multi-head latent attention (DeepSeek-V2 / V3)",
        sources=("c_KV = X W_DKV, K^C = c_KV W_UK, V = c_KV W_UV; c_Q = X W_DQ, Q^C = c_Q W_UQ; q^R = RoPE(c_Q W_QR), "
                 "k^R = RoPE(X W_KR) shared by every head; scores [q^C; q^R] . [k^C; k^R] / sqrt(d_h + d_R), causal; "
                 "u = [o_1 ... o_h] W_O  (DeepSeek-V2 2024, sec. 2.1.2-2.1.3, eqs. 9-19; no RMSNorm on the latents)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("h", t.num_heads, "heads"), ("d_h", t.head_dim, "head_dim"),
                ("d_R", t.rope_dim, "the RoPE part"), ("r", walk.head, "the head shown, 0-based"),
                ("gqa_kv", walk.gqa_kv_heads, "the GQA row's key/value heads"), ("X", t.x, "(T, D)"),
                *((name.replace("w_", "W_").upper().replace("W_OUT", "W_O"), t.weights[name], "")
                  for name in mla.WEIGHT_NAMES)),
        code=(*ATTEND, "", "BASE = 10000.0  # RoPE's base", "", *source(rope.rotation_angles, rope.rotate, mla.rotate_pairs),
              "T = X.shape[0]",
              "causal = torch.ones(T, T, dtype=torch.bool).tril()",
              "heads = lambda M: M.view(T, h, -1).transpose(0, 1)  # (T, h * w) -> (h, T, w)",
              "c_KV, c_Q = X @ W_DKV, X @ W_DQ  # (T, d_c), (T, d_c')",
              "K_C, V, Q_C = heads(c_KV @ W_UK), heads(c_KV @ W_UV), heads(c_Q @ W_UQ)  # (h, T, d_h)",
              "angles = rotation_angles(torch.arange(T), d_R, BASE)",
              "k_R_raw = X @ W_KR",
              "k_R, q_R = rotate(k_R_raw, angles), rotate(heads(c_Q @ W_QR), angles)  # (T, d_R), (h, T, d_R)",
              "q = torch.cat([Q_C, q_R], dim=-1)",
              "k = torch.cat([K_C, k_R.expand(h, T, d_R)], dim=-1)",
              "scaled, masked, weights, o = attend(q, k, V, causal)  # attend divides by sqrt(d_h + d_R)",
              "concat = o.transpose(0, 1).reshape(T, h * d_h)",
              "u = concat @ W_O",
              "# numbers cached per token and layer: MHA, GQA, MQA, MLA",
              "cache = torch.tensor([[2.0 * h * d_h], [2.0 * gqa_kv * d_h], [2.0 * d_h], [c_KV.shape[1] + d_R]])",
              f"v3 = torch.tensor([2.0 * {v3['num_heads']} * {v3['head_dim']}, 2.0 * {mla.V3_GQA_KV_HEADS} * "
              f"{v3['head_dim']}, 2.0 * {v3['head_dim']}, {v3['kv_latent']} + {v3['rope_dim']}])",
              "cache_v3 = (v3 / v3[3])[:, None]  # DeepSeek-V3: how many times MLA's cache per token and layer",
              "# absorption: q^C W_UK^T against the cached latent, K^C never built",
              "W_UK_heads = W_UK.view(-1, h, d_h).transpose(0, 1)  # (h, d_c, d_h)",
              "q_tilde = Q_C @ W_UK_heads.transpose(1, 2)  # (h, T, d_c)",
              "absorbed = (q_tilde @ c_KV.T + q_R @ k_R.T) / math.sqrt(d_h + d_R)",
              "# RoPE inside k^C: the true scores, and what absorption would compute",
              "rotated_q = rotate_pairs(Q_C)",
              "coupled = rotated_q @ rotate_pairs(K_C).transpose(1, 2) / math.sqrt(d_h)",
              "coupled_absorbed = (rotated_q @ W_UK_heads.transpose(1, 2)) @ c_KV.T / math.sqrt(d_h)"),
        panels={"latents": ("c_KV", "c_Q"), "up": ("K_C[r]", "V[r]", "Q_C[r]"), "rope": ("k_R_raw", "k_R", "q_R[r]"),
                "scores": ("q[r]", "k[r]", "masked[r]"), "weights": ("weights[r]", "o[r]"), "output": ("concat", "u"),
                "cache": ("cache", "cache_v3"), "absorption": ("q_tilde[r]", "absorbed[r]", "absorbed[r] - scaled[r]"),
                "decoupling": ("coupled[r]", "coupled_absorbed[r]", "coupled_absorbed[r] - coupled[r]")},
        references=(
            "same_as('absorbed scores = scores', absorbed, scaled)",
            "try:",
            "    from transformers import DeepseekV3Config",
            "    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, "
            "DeepseekV3RotaryEmbedding",
            "except ImportError:",
            "    print('transformers is not installed: DeepseekV3Attention is not compared')",
            "else:",
            "    config = DeepseekV3Config(hidden_size=X.shape[1], num_attention_heads=h, num_key_value_heads=h,",
            "        q_lora_rank=W_DQ.shape[1], kv_lora_rank=W_DKV.shape[1], qk_nope_head_dim=d_h, qk_rope_head_dim=d_R,",
            "        v_head_dim=d_h, rope_interleave=False, attention_bias=False, num_hidden_layers=1, vocab_size=8,",
            "        intermediate_size=8, moe_intermediate_size=8, n_routed_experts=1, num_experts_per_tok=1, n_group=1,",
            "        topk_group=1)",
            "    config._attn_implementation = 'eager'",
            "    layer = DeepseekV3Attention(config, layer_idx=0).eval()",
            "    layer.q_a_layernorm = layer.kv_a_layernorm = torch.nn.Identity()  # the paper has no norm there",
            "    per_head = lambda *ms: torch.cat([m.view(m.shape[0], h, -1) for m in ms], dim=-1).reshape(ms[0].shape[0], -1).T",
            "    with torch.no_grad():",
            "        layer.q_a_proj.weight.copy_(W_DQ.T)",
            "        layer.q_b_proj.weight.copy_(per_head(W_UQ, W_QR))",
            "        layer.kv_a_proj_with_mqa.weight.copy_(torch.cat([W_DKV, W_KR], dim=1).T)",
            "        layer.kv_b_proj.weight.copy_(per_head(W_UK, W_UV))",
            "        layer.o_proj.weight.copy_(W_O.T)",
            "        cos, sin = DeepseekV3RotaryEmbedding(config)(X[None], torch.arange(T)[None])",
            "        additive = torch.zeros(T, T).masked_fill(~causal, -inf)[None, None]",
            "        theirs, _ = layer(X[None], (cos, sin), additive)",
            "    same_as('transformers DeepseekV3Attention', u, theirs[0])",
        ),
    )
