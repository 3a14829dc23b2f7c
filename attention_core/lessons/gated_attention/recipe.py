"""The *gated attention* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.gated_attention.walk import GatedWalkthrough
from attention_core.recipe import ATTEND, Recipe

_NAMES = {"w_query": "W_q", "w_key": "W_k", "w_value": "W_v", "w_gate": "W_theta", "w_out": "W_O"}


def gated_attention_recipe(walk: GatedWalkthrough) -> Recipe:
    """The gated attention page's recipe: Q, K, V and the gate's logits, each head's output, σ, the gated output,
    W_O and a query that matches nothing; checked against transformers' ``Qwen3NextAttention`` where transformers is
    installed."""
    t = walk.trace
    return Recipe(
        title="gated attention (Qiu et al. 2025; Qwen3-Next)",
        sources=("Y_r = softmax(Q_r K_r^T / sqrt(d_h) + causal) V_r; G_r = X W_theta_r + b; Y'_r = Y_r * sigmoid(G_r) "
                 "(element-wise, or one gate per head and token); O = [Y'_1 ... Y'_h] W_O  (Qiu et al. 2025, 'Gated "
                 "Attention for Large Language Models', the gate after SDPA)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("h", t.num_heads, "heads"), ("d_h", t.head_dim, "head_dim"),
                ("headwise", t.headwise, "one gate per head and token"), ("b", t.shift, "added to every gate logit"),
                ("r", walk.head, "the head shown, 0-based"), ("X", t.x, "(T, D)"),
                *((_NAMES[name], weight, "") for name, weight in t.weights.items())),
        code=(*ATTEND, "",
              "T = X.shape[0]",
              "causal = torch.ones(T, T, dtype=torch.bool).tril()",
              "heads = lambda M: M.view(T, h, -1).transpose(0, 1)  # (T, h * w) -> (h, T, w)",
              "Q, K, V = heads(X @ W_q), heads(X @ W_k), heads(X @ W_v)  # (h, T, d_h)",
              "scaled, masked, weights, Y = attend(Q, K, V, causal)",
              "G = heads(X @ W_theta) + b  # (h, T, d_h), or (h, T, 1) head-wise",
              "gate = torch.sigmoid(G)",
              "Y_gated = Y * gate",
              "concat = Y_gated.transpose(0, 1).reshape(T, h * d_h)",
              "O = concat @ W_O",
              "O_ungated = Y.transpose(0, 1).reshape(T, h * d_h) @ W_O",
              "# a query that matches nothing: every score 0, 1/i on each of row i's keys",
              "null_weights = torch.softmax(torch.zeros(T, T).masked_fill(~causal, -inf), dim=-1)",
              "null_mean = null_weights @ V",
              "null_gated = null_mean * gate"),
        panels={"projections": ("Q[r]", "K[r]", "V[r]", "G[r]"), "attention": ("weights[r]", "Y[r]"),
                "gate": ("gate[r]",), "gated": ("Y[r]", "Y_gated[r]"), "output": ("concat", "O", "O_ungated"),
                "sink": ("null_weights", "null_mean[r]", "null_gated[r]")},
        references=(
            "same_as('SDPA times the gate', Y_gated, torch.nn.functional.scaled_dot_product_attention(Q, K, V, "
            "attn_mask=causal) * gate)",
            "try:",
            "    from transformers import Qwen3NextConfig",
            "    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextAttention",
            "except ImportError:",
            "    print('transformers is not installed: Qwen3NextAttention is not compared')",
            "else:",
            "    config = Qwen3NextConfig(hidden_size=X.shape[1], num_attention_heads=h, num_key_value_heads=h,",
            "        head_dim=d_h, attention_bias=True, num_hidden_layers=1, vocab_size=8, intermediate_size=8,",
            "        moe_intermediate_size=8, num_experts=1, num_experts_per_tok=1)",
            "    config._attn_implementation = 'eager'",
            "    layer = Qwen3NextAttention(config, layer_idx=0).eval()",
            "    layer.q_norm = layer.k_norm = torch.nn.Identity()  # the page shows no QK-norm",
            "    D = X.shape[1]",
            "    W_gate = W_theta.repeat_interleave(d_h, dim=1) if headwise else W_theta  # (D, h * d_h)",
            "    q_proj = torch.cat([W_q.view(D, h, d_h), W_gate.view(D, h, d_h)], dim=-1).reshape(D, 2 * h * d_h)",
            "    with torch.no_grad():",
            "        layer.q_proj.weight.copy_(q_proj.T)",
            "        layer.q_proj.bias.copy_(torch.cat([torch.zeros(h, d_h), torch.full((h, d_h), b)], -1).reshape(-1))",
            "        layer.k_proj.weight.copy_(W_k.T)",
            "        layer.v_proj.weight.copy_(W_v.T)",
            "        layer.o_proj.weight.copy_(W_O.T)",
            "        for linear in (layer.k_proj, layer.v_proj, layer.o_proj):",
            "            linear.bias.zero_()",
            "        no_rope = (torch.ones(1, T, d_h), torch.zeros(1, T, d_h))  # cos = 1, sin = 0: the page has no RoPE",
            "        additive = torch.zeros(T, T).masked_fill(~causal, -inf)[None, None]",
            "        theirs, _ = layer(X[None], no_rope, additive)",
            "    same_as('transformers Qwen3NextAttention', O, theirs[0])",
        ),
    )
