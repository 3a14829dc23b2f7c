"""The *linear attention and the delta rule* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.linear_attention.walk import LinearWalkthrough
from attention_core.modern.linear_attention import MODEL_CONTEXTS, MODEL_HEAD_DIM
from attention_core.recipe import ATTEND, Recipe, projection_inputs


def linear_attention_recipe(walk: LinearWalkthrough) -> Recipe:
    """The linear-attention page's recipe: φ, the parallel and the recurrent form, the memory table, the delta rule and
    its gated form at the shown step; checked against the papers' form of the update and, where transformers is
    installed, its Qwen3-Next kernel."""
    s = walk.settings
    own = s.linear_attention
    return Recipe(
        title="linear attention and the (gated) delta rule",
        sources=("phi(x) = elu(x) + 1; S_t = S_(t-1) + phi(k_t) v_t^T, z_t = z_(t-1) + phi(k_t), "
                 "o_t = S_t^T phi(q_t) / z_t^T phi(q_t)  (Katharopoulos et al. 2020)",
                 "S_t = a_t S_(t-1) + b_t k_t (v_t - a_t S_(t-1)^T k_t)^T, o_t = S_t^T q_t, k and q L2-normalised, "
                 "q / sqrt(d)  (Yang et al. 2024; Yang, Kautz & Hatamizadeh 2025; transformers' Qwen3-Next)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("beta", own.beta, "the share of the error written"),
                ("alpha", own.alpha, "the decay per step (g = log alpha)"), ("t", walk.step, "the step shown, 0-based"),
                *projection_inputs(walk.inputs)),
        code=(*ATTEND, "",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d) each",
              "T, d = Q.shape",
              "causal = torch.ones(T, T, dtype=torch.bool).tril()",
              "phi_Q, phi_K = F.elu(Q) + 1, F.elu(K) + 1  # phi(x) = elu(x) + 1 > 0",
              "kernel = (phi_Q @ phi_K.T) * causal  # (T, T): phi(q_i) . phi(k_j) for j <= i, else 0",
              "A = kernel / kernel.sum(dim=-1, keepdim=True)  # each row sums to 1, no softmax",
              "O = A @ V",
              "_, _, softmax_weights, _ = attend(Q, K, V, causal)",
              "",
              "# the recurrent form: only S (d, d) and z (d,) go from one token to the next",
              "S, z, states, sums, recurrent = torch.zeros(d, d), torch.zeros(d), [], [], []",
              "for i in range(T):",
              "    S = S + torch.outer(phi_K[i], V[i])",
              "    z = z + phi_K[i]",
              "    states.append(S)",
              "    sums.append(z)",
              "    recurrent.append(S.T @ phi_Q[i] / (z @ phi_Q[i]))",
              "recurrent = torch.stack(recurrent)  # (T, d)",
              "",
              "# numbers kept after t tokens: the KV cache t (d_k + d_v), S and z, S alone",
              "def memory_table(contexts, width):",
              "    n = torch.tensor([float(c) for c in contexts])",
              "    return torch.stack([n * 2 * width, torch.full_like(n, width * width + width), "
              "torch.full_like(n, width * width)], dim=1)",
              "",
              "memory = memory_table(range(1, T + 1), d)",
              f"memory_at_scale = memory_table({list(MODEL_CONTEXTS)!r}, {MODEL_HEAD_DIM})",
              "",
              "# the gated delta rule, token by token (alpha = 1: the delta rule), as transformers' Qwen3-Next computes it",
              "q_hat = Q * torch.rsqrt((Q * Q).sum(dim=-1, keepdim=True) + 1e-6) / math.sqrt(d)",
              "k_hat = K * torch.rsqrt((K * K).sum(dim=-1, keepdim=True) + 1e-6)",
              "",
              "def delta_rule(decay):",
              "    S, steps = torch.zeros(d, d), []",
              "    for i in range(T):",
              "        decayed = decay * S",
              "        prediction = decayed.T @ k_hat[i]  # what the state recalls for this key",
              "        error = V[i] - prediction",
              "        new = decayed + beta * torch.outer(k_hat[i], error)",
              "        steps.append(dict(previous=S, decayed=decayed, table=torch.stack([V[i], prediction, error]), S=new,",
              "                          o=new.T @ q_hat[i]))",
              "        S = new",
              "    return steps",
              "",
              "delta, gated = delta_rule(1.0), delta_rule(alpha)",
              "gated_outputs = torch.stack([step['o'] for step in gated])  # (T, d)"),
        panels={"features": ("phi_Q", "phi_K"), "parallel": ("A", "softmax_weights", "O"),
                "recurrent": ("states[t]", "sums[t][:, None]", "recurrent", "recurrent - O"),
                "memory": ("memory", "memory_at_scale"),
                "delta": ("delta[t]['previous']", "k_hat[t][None, :]", "delta[t]['table']", "delta[t]['S']"),
                "gated": ("gated[t]['previous']", "gated[t]['decayed']", "k_hat[t][None, :]", "gated[t]['table']",
                          "gated[t]['S']", "gated_outputs")},
        references=(
            "same_as('the parallel form, phi(Q) phi(K)^T masked and normalised', recurrent, O)",
            "# the papers' form of the update, S_t = alpha (I - beta k k^T) S_(t-1) + beta k v^T (transposed, as here)",
            "S = torch.zeros(d, d)",
            "for i in range(T):",
            "    S = alpha * (torch.eye(d) - beta * torch.outer(k_hat[i], k_hat[i])) @ S + beta * torch.outer(k_hat[i], "
            "V[i])",
            "same_as(\"the papers' form alpha (I - beta k k^T) S + beta k v^T\", gated[-1]['S'], S)",
            "try:",
            "    from transformers.models.qwen3_next.modeling_qwen3_next import torch_chunk_gated_delta_rule",
            "except ImportError:",
            "    print('transformers is not installed: its Qwen3-Next kernel is not compared')",
            "else:",
            "    theirs, _ = torch_chunk_gated_delta_rule(Q[None, :, None], K[None, :, None], V[None, :, None],",
            "                                             g=torch.full((1, T, 1), math.log(alpha)),",
            "                                             beta=torch.full((1, T, 1), beta), use_qk_l2norm_in_kernel=True)",
            "    same_as('transformers torch_chunk_gated_delta_rule (Qwen3-Next)', gated_outputs, theirs[0, :, 0])",
        ),
    )
