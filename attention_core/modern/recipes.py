"""The modern attention pages' export recipes (:class:`attention_core.recipe.Recipe`): GQA, RoPE, ALiBi,
sliding-window attention, FlashAttention, linear attention with the delta rule, and multi-head latent attention.

Where the page's own function is plain torch (ALiBi's slopes and distances, the receptive field of stacked windows,
RoPE's angles and rotation), the script holds that function's source and runs it as the page does.
Sources: Ainslie et al. 2023 (GQA); Su et al. 2021 (RoPE); Press et al. 2022 (ALiBi); Beltagy et al. 2020 and
Jiang et al. 2023 (sliding window); Milakov & Gimelshein 2018 and Dao et al. 2022 (FlashAttention); Katharopoulos
et al. 2020, Yang et al. 2024 and Yang, Kautz & Hatamizadeh 2025 (linear attention, DeltaNet, Gated DeltaNet);
DeepSeek-AI 2024 (DeepSeek-V2, multi-head latent attention).
Shapes: T tokens, D = d_model, h query heads, kv key/value heads, head_dim = d.
"""

from __future__ import annotations

from attention_core.modern import alibi, mla, rope, sliding
from attention_core.modern.linear_attention import MODEL_CONTEXTS, MODEL_HEAD_DIM
from attention_core.modern.walks import (
    AlibiWalkthrough,
    FlashWalkthrough,
    GQAWalkthrough,
    LinearWalkthrough,
    MLAWalkthrough,
    RopeWalkthrough,
    SinksWalkthrough,
    SlidingWalkthrough,
)
from attention_core.recipe import ATTEND, Recipe, drawn_weights, projection_inputs, source


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


def sliding_window_recipe(walk: SlidingWalkthrough) -> Recipe:
    """The sliding-window page's recipe: the window mask, the weights, the receptive field by the page's own function."""
    s = walk.settings
    return Recipe(
        title="sliding-window attention",
        sources=("key j is in query i's window when i - w < j <= i (causal) or |i - j| < w; then softmax(Q K^T / "
                 "sqrt(d_k) + M) V  (Beltagy et al. 2020; Jiang et al. 2023)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("w", s.sliding_window.window, "the window"),
                ("layers", s.sliding_window.layers, ""), ("causal", s.causal_mask, ""),
                *projection_inputs(walk.inputs)),
        code=(*ATTEND, "",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d_k) each",
              "T = X.shape[0]",
              "i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]",
              "window = ((j <= i) & (j > i - w)) if causal else ((i - j).abs() < w)  # (T, T) bool",
              "_, masked_scores, weights, output = attend(Q, K, V, window)",
              "",
              *source(sliding.receptive_field),
              "receptive = receptive_field(window, layers).float()  # (layers, T, T)"),
        panels={"mask": ("window.float()",), "masked_scores": ("masked_scores",), "weights": ("weights",),
                "receptive": tuple(f"receptive[{n}]" for n in range(walk.reach.shape[0]))},
        references=("same_as('F.scaled_dot_product_attention(q, k, v, attn_mask=window_mask)', output, "
                    "F.scaled_dot_product_attention(Q[None], K[None], V[None], attn_mask=window)[0])",),
    )


def flash_attention_recipe(walk: FlashWalkthrough) -> Recipe:
    """The FlashAttention page's recipe: the tiles, the running max, sum and output, the final output."""
    s = walk.settings
    return Recipe(
        title="FlashAttention's tiles and the online softmax",
        sources=("S = Q_i K_j^T / sqrt(d), m' = max(m, rowmax S), P = exp(S - m'), l' = e^(m - m') l + rowsum P,",
                 "O' = e^(m - m') O + P V_j; output = O / l  (Milakov & Gimelshein 2018; Dao et al. 2022)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("B_q", s.flash_attention.block_q, "query block"),
                ("B_k", s.flash_attention.block_k, "key block"), ("causal", s.causal_mask, ""), ("shown", walk.tile, "the tile shown"),
                *projection_inputs(walk.inputs)),
        code=("Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d), (T, d), (T, d_v)",
              "T, d = Q.shape",
              "mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None",
              "tiles, outputs = [], []",
              "for start in range(0, T, B_q):",
              "    rows = slice(start, min(start + B_q, T))",
              "    m = torch.full((rows.stop - start,), -inf)  # the running maximum of each row",
              "    l = torch.zeros(rows.stop - start)  # the running sum",
              "    O = torch.zeros(rows.stop - start, V.shape[1])  # the running (unnormalised) output",
              "    for key_start in range(0, T, B_k):",
              "        cols = slice(key_start, min(key_start + B_k, T))",
              "        S = Q[rows] @ K[cols].T * (1.0 / math.sqrt(d))  # (B_q, B_k)",
              "        if mask is not None:",
              "            S = S.masked_fill(~mask[rows, cols], -inf)",
              "        m_new = torch.maximum(m, S.max(dim=-1).values)",
              "        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # rows with nothing yet",
              "        P = torch.exp(S - safe[:, None])  # exponents <= 0",
              "        rescale = torch.exp(m - safe)  # e^(m - m'), 0 while m = -inf",
              "        l_new = rescale * l + P.sum(dim=-1)",
              "        O_new = rescale[:, None] * O + P @ V[cols]",
              "        tiles.append(dict(S=S, m=m, m_new=m_new, P=P, rescale=rescale, l=l, l_new=l_new, O=O, O_new=O_new))",
              "        m, l, O = m_new, l_new, O_new",
              "    outputs.append(O / l[:, None])",
              "output = torch.cat(outputs)  # (T, d_v)",
              "tile = tiles[shown]",
              "blocks_k = math.ceil(T / B_k)",
              "i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]",
              "tile_number = ((i // B_q) * blocks_k + j // B_k + 1).float()",
              "full = torch.softmax((Q @ K.T / math.sqrt(d)).masked_fill(~mask, -inf) if causal else Q @ K.T / "
              "math.sqrt(d), dim=-1) @ V  # the full T x T way"),
        panels={"tiles": ("tile_number",), "tile_scores": ("tile['S']",),
                "running_max": ("torch.stack([tile['m'], tile['S'].max(dim=-1).values, tile['m_new']], dim=1)",),
                "running_sum": ("tile['P']", "torch.stack([tile['l'], tile['rescale'], tile['P'].sum(dim=-1), "
                                "tile['l_new']], dim=1)"),
                "partial_output": ("tile['O']", "tile['O_new']"),
                "final": ("output", "full", "output - full")},
        references=("same_as('F.scaled_dot_product_attention(q, k, v, is_causal=causal)', output, "
                    "F.scaled_dot_product_attention(Q[None], K[None], V[None], is_causal=causal)[0])",),
    )


def rope_recipe(walk: RopeWalkthrough) -> Recipe:
    """The RoPE page's recipe: the angles and the rotation by the page's own functions, the scores, the shift."""
    t = walk.trace
    return Recipe(
        title="RoPE, rotary position embedding",
        sources=("theta_i = base^(-2i/d); the pair (q_i, q_(i+d/2)) at position m is rotated by m theta_i;",
                 "scores = q'_m . k'_n / sqrt(d) depend only on m - n  (Su et al. 2021, RoFormer, eq. 13-16)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("base", t.base, ""), ("shift", t.shift, ""),
                *drawn_weights(walk.inputs.x, walk.settings.rope.head_dim, walk.settings.seed, value=False)),
        code=("Q, K = X @ W_q, X @ W_k  # (T, d) each: one head's queries and keys",
              "T, d = Q.shape",
              "half = torch.arange(d // 2, dtype=torch.float64)",
              "",
              "def frequencies(b):",
              "    return (b ** (-2 * half / d)).float()  # (d/2,): theta_i, computed in float64",
              "",
              *source(rope.rotation_angles, rope.rotate),
              "theta = frequencies(base)",
              "positions = torch.arange(T)",
              "angles = rotation_angles(positions, d, base)  # (T, d/2)",
              "Q_rotated, K_rotated = rotate(Q, angles), rotate(K, angles)",
              "scores = Q_rotated @ K_rotated.T * (1.0 / math.sqrt(d))  # (T, T)",
              "shifted = rotation_angles(positions + shift, d, base)",
              "shifted_scores = rotate(Q, shifted) @ rotate(K, shifted).T * (1.0 / math.sqrt(d))",
              "# the sinusoidal encoding with the same base (Vaswani et al. 2017, sec. 3.5): sin on even, cos on odd",
              "two_i = torch.arange(d, dtype=torch.float64).div(2, rounding_mode='floor') * 2",
              "angle = torch.arange(T, dtype=torch.float64)[:, None] / base ** (two_i / d)",
              "PE = torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle)).float()",
              f"bases = sorted(set({list(rope.BASES)!r}) | {{base}})",
              "theta_table = torch.stack([frequencies(b) for b in bases])"),
        panels={"projections": ("Q", "K"), "angles": ("theta[None]", "angles"),
                "sinusoidal": ("PE", "torch.cos(angles)", "torch.sin(angles)"),
                "rotate_query": ("Q", "Q_rotated"), "rotate_key": ("K", "K_rotated"), "scores": ("scores",),
                "relative": ("scores", "shifted_scores", "shifted_scores - scores"), "base": ("theta_table",)},
        references=(
            "# the same rotation written the way transformers' Llama writes it (apply_rotary_pos_emb):",
            "# q * cos + rotate_half(q) * sin, with cos and sin of the angles repeated over both halves",
            "emb = torch.cat([angles, angles], dim=-1)",
            "rotate_half = lambda x: torch.cat([-x[:, d // 2:], x[:, :d // 2]], dim=-1)  # noqa: E731",
            "same_as('apply_rotary_pos_emb(q, k, cos, sin) (the Llama formula)', torch.cat([Q_rotated, K_rotated]), "
            "torch.cat([Q * emb.cos() + rotate_half(Q) * emb.sin(), K * emb.cos() + rotate_half(K) * emb.sin()]))",
        ),
    )


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


def sinks_recipe(walk: SinksWalkthrough) -> Recipe:
    """The attention-sinks page's recipe: causal softmax (rows sum to 1), a query that matches nothing, gpt-oss's
    learned sink (one more logit b in every row's denominator, no value) and its output; checked against
    transformers' gpt-oss eager attention where transformers is installed."""
    s = walk.settings
    return Recipe(
        title="attention sinks: softmax's 1 and gpt-oss's learned sink",
        sources=("w_ij = e^(s_ij) / sum_l e^(s_il); a query matching nothing (s = 0) gets 1/i per key  "
                 "(Xiao et al. 2024, StreamingLLM, sec. 3.1)",
                 "w_ij = e^(s_ij) / (sum_l e^(s_il) + e^b), sink share = e^b / (...)  (OpenAI 2025, gpt-oss model "
                 "card; transformers' modeling_gpt_oss.eager_attention_forward)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("b", float(s.sinks.sink_logit), "the sink logit"),
                *projection_inputs(walk.inputs)),
        code=(*ATTEND, "",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d) each",
              "T, d = Q.shape",
              "causal = torch.ones(T, T, dtype=torch.bool).tril()",
              "_, S, W, O = attend(Q, K, V, causal)  # S: scaled scores, -inf above the diagonal",
              "row_sums = W.sum(dim=-1, keepdim=True)  # every row sums to 1",
              "",
              "# a query that matches nothing: every score 0, so 1/i on each of the i keys it sees",
              "zeros = torch.zeros(T, T).masked_fill(~causal, -inf)",
              "W0 = torch.softmax(zeros, dim=-1)",
              "O0 = W0 @ V",
              "",
              "def with_sink(scores, b):",
              "    combined = torch.cat([scores, torch.full((scores.shape[0], 1), b)], dim=-1)  # one more logit",
              "    probs = torch.softmax(combined, dim=-1)",
              "    return probs[:, :-1], probs[:, -1]  # the keys' weights, the sink's share",
              "",
              "W_sink, share = with_sink(S, b)",
              "O0_sink = with_sink(zeros, b)[0] @ V",
              "sums = torch.stack([W_sink.sum(dim=-1), share], dim=1)  # (T, 2): they add up to 1",
              "O_sink = W_sink @ V  # the sink has no value"),
        panels={"weights": ("S", "W", "row_sums"), "nothing": ("W0", "O0", "O0_sink"),
                "sink_weights": ("S", "W_sink", "sums"), "sink_output": ("O_sink", "O")},
        references=(
            "same_as('F.scaled_dot_product_attention(Q, K, V, is_causal=True)', O, "
            "F.scaled_dot_product_attention(Q[None], K[None], V[None], is_causal=True)[0])",
            "try:",
            "    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward",
            "except ImportError:",
            "    print('transformers is not installed: its gpt-oss attention is not compared')",
            "else:",
            "    class Head(torch.nn.Module):  # what eager_attention_forward reads of its module",
            "        num_key_value_groups = 1",
            "        training = False",
            "        sinks = torch.tensor([b])",
            "    mask = torch.zeros(T, T).masked_fill(~causal, -inf)[None, None]",
            "    theirs_out, theirs_w = eager_attention_forward(Head(), Q[None, None], K[None, None], V[None, None], "
            "mask, scaling=d ** -0.5)",
            "    same_as('transformers gpt_oss eager_attention_forward: weights', W_sink, theirs_w[0, 0])",
            "    same_as('transformers gpt_oss eager_attention_forward: output', O_sink, theirs_out[0, :, 0])",
        ),
    )
