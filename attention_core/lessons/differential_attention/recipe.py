"""The *differential attention* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.differential_attention.walk import DifferentialWalkthrough
from attention_core.modern.differential import NORM_EPS
from attention_core.recipe import ATTEND, Recipe

_NAMES = {"w_query": "W_q", "w_key": "W_k", "w_value": "W_v", "w_out": "W_O", "lambda_q1": "lambda_q1",
          "lambda_k1": "lambda_k1", "lambda_q2": "lambda_q2", "lambda_k2": "lambda_k2"}


def differential_attention_recipe(walk: DifferentialWalkthrough) -> Recipe:
    """The differential attention page's recipe: the halves of Q and K, both maps, λ, the difference, times V, the
    RMSNorm and its scale, W_O and the same noise in both maps; checked against transformers' ``DiffLlamaAttention``
    where transformers is installed."""
    t = walk.trace
    return Recipe(
        title="differential attention (Ye et al. 2025, Differential Transformer)",
        sources=("D = softmax(Q1 K1^T / sqrt(d)) - lambda softmax(Q2 K2^T / sqrt(d)), causal; o = (1 - lambda_init) "
                 "RMSNorm(D V); lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init, lambda_init = 0.8 - 0.6 "
                 "exp(-0.3 (l - 1)); u = [o_1 ... o_h] W_O  (Ye et al. 2025, sec. 2.1-2.2)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("h", t.num_heads, "heads"), ("d", t.head_dim, "head_dim"),
                ("l", t.layer, "the layer, 1-based"), ("r", walk.head, "the head shown, 0-based"),
                ("X", t.x, "(T, D)"), ("N", walk.noise.noise, "(T, T) the same noise in both maps' scores"),
                *((_NAMES[name], weight, "") for name, weight in t.weights.items())),
        code=(*ATTEND, "",
              f"EPS = {NORM_EPS!r}  # the RMSNorm's epsilon",
              "T = X.shape[0]",
              "causal = torch.ones(T, T, dtype=torch.bool).tril()",
              "heads = lambda M: M.view(T, h, -1).transpose(0, 1)  # (T, h * w) -> (h, T, w)",
              "Q, K, V = heads(X @ W_q), heads(X @ W_k), heads(X @ W_v)  # (h, T, 2d)",
              "Q1, Q2, K1, K2 = Q[..., :d], Q[..., d:], K[..., :d], K[..., d:]",
              "scaled1, masked1, A1, _ = attend(Q1, K1, V, causal)",
              "scaled2, masked2, A2, _ = attend(Q2, K2, V, causal)",
              "dots = torch.stack([(lambda_q1 * lambda_k1).sum(), (lambda_q2 * lambda_k2).sum()])",
              "lambda_init = 0.8 - 0.6 * math.exp(-0.3 * (l - 1))",
              "parts = torch.cat([dots, torch.exp(dots)])",
              "lam = float(parts[2] - parts[3]) + lambda_init",
              "lambda_table = torch.cat([parts, torch.tensor([lambda_init, lam])])[:, None]",
              "lambda_vectors = torch.stack([lambda_q1, lambda_k1, lambda_q2, lambda_k2])",
              "D = A1 - lam * A2",
              "M = D @ V",
              "O = (1 - lambda_init) * M * torch.rsqrt(M.pow(2).mean(-1, keepdim=True) + EPS)",
              "concat = O.transpose(0, 1).reshape(T, -1)",
              "u = concat @ W_O",
              "# the same noise N in both maps' scores",
              "A1_noisy = torch.softmax((scaled1 + N).masked_fill(~causal, -inf), dim=-1)",
              "A2_noisy = torch.softmax((scaled2 + N).masked_fill(~causal, -inf), dim=-1)",
              "D_noisy = A1_noisy - lam * A2_noisy"),
        panels={"split": ("Q1[r]", "Q2[r]", "K1[r]", "K2[r]"), "maps": ("A1[r]", "A2[r]"),
                "lambda": ("lambda_vectors", "lambda_table"), "difference": ("A1[r]", "lam * A2[r]", "D[r]"),
                "values": ("V[r]", "M[r]"), "norm": ("M[r]", "O[r]"), "output": ("concat", "u"),
                "cancel": ("N", "A1_noisy[r]", "D_noisy[r]")},
        references=(
            "try:",
            "    from transformers import DiffLlamaConfig",
            "    from transformers.models.diffllama.modeling_diffllama import DiffLlamaAttention",
            "except ImportError:",
            "    print('transformers is not installed: DiffLlamaAttention is not compared')",
            "else:",
            "    config = DiffLlamaConfig(hidden_size=X.shape[1], num_attention_heads=2 * h, num_key_value_heads=2 * h,",
            "        head_dim=d, num_hidden_layers=1, vocab_size=8, intermediate_size=8, rms_norm_eps=EPS)",
            "    config._attn_implementation = 'eager'",
            "    layer = DiffLlamaAttention(config, layer_idx=l - 1).eval()",
            "    halves = lambda M: torch.cat([M.view(M.shape[0], h, 2, d)[:, :, k].reshape(M.shape[0], h * d) "
            "for k in (0, 1)], 1)",
            "    with torch.no_grad():",
            "        layer.q_proj.weight.copy_(halves(W_q).T)",
            "        layer.k_proj.weight.copy_(halves(W_k).T)",
            "        layer.v_proj.weight.copy_(halves(W_v).T)",
            "        layer.o_proj.weight.copy_(W_O.T)",
            "        for name, vector in (('lambda_q1', lambda_q1), ('lambda_k1', lambda_k1), ('lambda_q2', lambda_q2),",
            "                             ('lambda_k2', lambda_k2)):",
            "            getattr(layer, name).copy_(vector)",
            "        no_rope = (torch.ones(1, T, d), torch.zeros(1, T, d))  # cos = 1, sin = 0: the page has no RoPE",
            "        additive = torch.zeros(T, T).masked_fill(~causal, -inf)[None, None]",
            "        theirs, _ = layer(X[None], no_rope, additive)",
            "    same_as('transformers DiffLlamaAttention', u, theirs[0])",
        ),
    )
