r"""Multi-head latent attention (MLA; DeepSeek-V2 2024, sec. 2.1; DeepSeek-V3): keys and values from one small latent.

Multi-head attention caches every head's key and value for every token: 2 h d_h numbers per token and layer. MLA
caches one latent vector per token, c_KV (d_c numbers), and rebuilds every head's key and value from it with
up-projections; one more small key, k^R (d_R numbers), carries the position (RoPE) and is shared by every head::

    c_KV = X W_DKV                       (T, d_c)        eq. 9   (the cached latent)
    K^C_r = c_KV W_UK,r,  V_r = c_KV W_UV,r  (T, d_h)    eq. 10-11
    c_Q = X W_DQ, Q^C_r = c_Q W_UQ,r     (T, d_c'), (T, d_h)  eq. 12-13
    q^R_r = RoPE(c_Q W_QR,r)             (T, d_R)        eq. 14
    k^R = RoPE(X W_KR)                   (T, d_R)        eq. 15  (cached; one for every head)
    q_r = [Q^C_r; q^R_r], k_r = [K^C_r; k^R]             eq. 16-17
    o_r = softmax(q_r k_rᵀ / √(d_h + d_R) + M) V_r       eq. 18  (M: causal, DeepSeek is a decoder)
    u = [o_1, …, o_h] W_O                                eq. 19

Weight absorption (sec. 2.1.2): q^C_r · k^C_j = q^C_r · (c_j W_UK,r) = (q^C_r W_UK,rᵀ) · c_j, so the scores come
straight from the cached latents, K^C is never built (:func:`absorbed_scores`). That only works because no
position-dependent matrix sits between W_UK and the query: put RoPE on k^C (R_j c_j W_UK,r) and the matrix between
q and c_j depends on j, no fixed W_UK,rᵀ can be absorbed (sec. 2.1.3; :func:`coupled_rope_scores` shows the
mismatch). Hence the decoupled k^R.

Conventions, those of transformers' ``DeepseekV3Attention`` (``models/deepseek_v3``) with ``rope_interleave=False``
(RoPE pairs dimension i with i + d/2, :mod:`attention_core.modern.rope`; DeepSeek's checkpoints use interleaved pairs
(2i, 2i + 1), the same rotation with the dimensions permuted); transformers puts an RMSNorm on both latents
(``q_a_layernorm``, ``kv_a_layernorm``), which the paper's equations do not have: the page follows the paper and its
reference check replaces those two norms with the identity (:func:`transformers_mla`). The scale is
``qk_head_dim ** -0.5`` = 1/√(d_h + d_R) (no YaRN here). v_head_dim = d_h.

Shape legend: T tokens, D = d_model, h = num_heads, d_h = head_dim (qk_nope_head_dim = v_head_dim), d_R = the RoPE
part (qk_rope_head_dim, even), d_c = kv_latent (kv_lora_rank), d_c' = q_latent (q_lora_rank); per-head tensors are
(h, T, ·). Float32 (RoPE angles in float64, then float32).

Sources: DeepSeek-AI 2024, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model",
sec. 2.1.2 (eqs. 9-13, low-rank key-value joint compression, absorption) and 2.1.3 (eqs. 14-19, decoupled RoPE);
DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", sec. 2.1.1 (the sizes in :data:`DEEPSEEK_V3`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import torch
from torch import nn

from attention_core.errors import N_, InputError, Message
from attention_core.masks import additive_mask, causal_mask
from attention_core.modern.rope import BASE, rotate, rotation_angles
from attention_core.multi_head.heads import split_heads
from attention_core.self_attention.functional import AttentionTrace, scaled_dot_product_attention
from attention_core.transformer.generation import kv_cache_bytes
from attention_core.weights import linear_weights

#: DeepSeek-V3's attention sizes (its config.json): d_model, heads, d_h (qk_nope_head_dim = v_head_dim), d_R
#: (qk_rope_head_dim), d_c (kv_lora_rank), d_c' (q_lora_rank), layers.
DEEPSEEK_V3: Mapping[str, int] = {"d_model": 7168, "num_heads": 128, "head_dim": 128, "rope_dim": 64,
                                  "kv_latent": 512, "q_latent": 1536, "layers": 61}
#: The key/value heads of the GQA row at DeepSeek-V3's size (8, as Llama 3 70B shares them).
V3_GQA_KV_HEADS = 8
#: Multi-head latent attention's heads, 1..MAX_MLA_HEADS, and its decoupled RoPE part d_R, 2..MAX_MLA_ROPE_DIM (odd: a
#: message, RoPE rotates pairs); d_h is 1..MAX_HEAD_DIM; the latents d_c, d_c' are 1..MAX_DIM and at most d_model (the
#: MLA page's ranges; DeepSeek sparse attention's main attention is the same MLA).
MAX_MLA_HEADS = 8

MAX_MLA_ROPE_DIM = 4
#: The weights' names, in the order they are drawn.
WEIGHT_NAMES = ("w_dkv", "w_uk", "w_uv", "w_dq", "w_uq", "w_qr", "w_kr", "w_out")


def fit_latents(d_model: int, kv_latent: int, q_latent: int) -> tuple[int, int, tuple[Message, ...]]:
    """(d_c, d_c', messages): each latent at most d_model (a latent compresses the token), with a message for each one
    that was narrowed; the settings keep what was typed, so widening d_model brings it back."""
    messages = []
    sizes = []
    for name, size in (("d_c", kv_latent), ("d_c'", q_latent)):
        if size > d_model:
            messages.append(Message(N_("The latent {name} = {size} is wider than d_model = {d_model}: a latent "
                                       "compresses the token, so this page uses {name} = {d_model}. Make {name} at "
                                       "most {d_model}, or widen d_model."), name=name, size=size, d_model=d_model))
        sizes.append(min(size, d_model))
    return sizes[0], sizes[1], tuple(messages)


def check_rope_dim(rope_dim: int, field: str = "mla.rope_dim") -> None:
    """Raise :class:`InputError` (on ``field``, the page's d_R setting) for an odd d_R: RoPE rotates pairs of
    dimensions."""
    if rope_dim % 2:
        raise InputError(N_("RoPE rotates pairs of dimensions, so d_R must be even (2, 4, …); got {d}."),
                         field=field, d=rope_dim)


def mla_weights(d_model: int, num_heads: int, head_dim: int, rope_dim: int, kv_latent: int, q_latent: int,
                seed: int) -> dict[str, torch.Tensor]:
    """The eight projections, drawn like ``nn.Linear`` (U(−1/√fan_in, 1/√fan_in)) from a local generator.

    Returns:
        ``w_dkv`` (D, d_c), ``w_uk``, ``w_uv`` (d_c, h d_h), ``w_dq`` (D, d_c'), ``w_uq`` (d_c', h d_h),
        ``w_qr`` (d_c', h d_R), ``w_kr`` (D, d_R), ``w_out`` (h d_h, D); float32, applied as x @ W.
    """
    g = torch.Generator().manual_seed(seed)
    shapes = {"w_dkv": (d_model, kv_latent), "w_uk": (kv_latent, num_heads * head_dim),
              "w_uv": (kv_latent, num_heads * head_dim), "w_dq": (d_model, q_latent),
              "w_uq": (q_latent, num_heads * head_dim), "w_qr": (q_latent, num_heads * rope_dim),
              "w_kr": (d_model, rope_dim), "w_out": (num_heads * head_dim, d_model)}
    return linear_weights({name: shapes[name] for name in WEIGHT_NAMES}, g)


@dataclass(frozen=True)
class MLATrace:
    """Every intermediate of multi-head latent attention on one sentence (module docstring for the equations).

    Attributes:
        x: (T, D). weights: :func:`mla_weights`. num_heads, head_dim, rope_dim: h, d_h, d_R.
        latent_kv: (T, d_c) c_KV. latent_q: (T, d_c') c_Q.
        key_content, value, query_content: (h, T, d_h) K^C, V, Q^C.
        query_rope_raw: (h, T, d_R) c_Q W_QR before RoPE. key_rope_raw: (T, d_R) X W_KR before RoPE.
        angles: (T, d_R / 2) m θ_i. query_rope: (h, T, d_R). key_rope: (T, d_R) (shared by every head).
        query, key: (h, T, d_h + d_R) [Q^C; q^R], [K^C; k^R].
        attention: scores, scaled (÷ √(d_h + d_R)), masked (causal), weights (h, T, T), output (h, T, d_h).
        concat: (T, h d_h). output: (T, D) concat W_O.
    """

    x: torch.Tensor
    weights: dict[str, torch.Tensor]
    num_heads: int
    head_dim: int
    rope_dim: int
    latent_kv: torch.Tensor
    latent_q: torch.Tensor
    key_content: torch.Tensor
    value: torch.Tensor
    query_content: torch.Tensor
    query_rope_raw: torch.Tensor
    key_rope_raw: torch.Tensor
    angles: torch.Tensor
    query_rope: torch.Tensor
    key_rope: torch.Tensor
    query: torch.Tensor
    key: torch.Tensor
    attention: AttentionTrace
    concat: torch.Tensor
    output: torch.Tensor

    @property
    def scale(self) -> float:
        """1/√(d_h + d_R)."""
        return 1.0 / math.sqrt(self.head_dim + self.rope_dim)


def multi_head_latent_attention(x: torch.Tensor, weights: Mapping[str, torch.Tensor], *, num_heads: int,
                                head_dim: int, rope_dim: int, base: float = BASE) -> MLATrace:
    """MLA on ``x`` (T, D), causal, positions 0 … T − 1 (DeepSeek-V2 eqs. 9-19; no RMSNorm on the latents).

    Args:
        x: (T, D) float32. weights: as :func:`mla_weights` returns. num_heads, head_dim, rope_dim: h, d_h, d_R.
        base: RoPE's base (10000).

    Raises:
        InputError: rope_dim odd (field ``mla.rope_dim``).
    """
    check_rope_dim(rope_dim)
    t = x.shape[0]
    w = weights
    latent_kv, latent_q = x @ w["w_dkv"], x @ w["w_dq"]  # (T, d_c), (T, d_c')
    key_content = split_heads(latent_kv @ w["w_uk"], num_heads)  # (h, T, d_h)
    value = split_heads(latent_kv @ w["w_uv"], num_heads)  # (h, T, d_h)
    query_content = split_heads(latent_q @ w["w_uq"], num_heads)  # (h, T, d_h)
    query_rope_raw = split_heads(latent_q @ w["w_qr"], num_heads)  # (h, T, d_R)
    key_rope_raw = x @ w["w_kr"]  # (T, d_R)
    angles = rotation_angles(torch.arange(t), rope_dim, base)  # (T, d_R / 2)
    query_rope, key_rope = rotate(query_rope_raw, angles), rotate(key_rope_raw, angles)
    query = torch.cat([query_content, query_rope], dim=-1)  # (h, T, d_h + d_R)
    key = torch.cat([key_content, key_rope.expand(num_heads, t, rope_dim)], dim=-1)  # k^R shared by every head
    attention = scaled_dot_product_attention(query, key, value, attn_mask=causal_mask(t),
                                             scale=1.0 / math.sqrt(head_dim + rope_dim))
    concat = attention.output.transpose(0, 1).reshape(t, num_heads * head_dim)  # (T, h d_h)
    return MLATrace(x=x, weights=dict(w), num_heads=num_heads, head_dim=head_dim, rope_dim=rope_dim,
                    latent_kv=latent_kv, latent_q=latent_q, key_content=key_content, value=value,
                    query_content=query_content, query_rope_raw=query_rope_raw, key_rope_raw=key_rope_raw,
                    angles=angles, query_rope=query_rope, key_rope=key_rope, query=query, key=key,
                    attention=attention, concat=concat, output=concat @ w["w_out"])


def absorbed_query(trace: MLATrace) -> torch.Tensor:
    """(h, T, d_c): q^C_r W_UK,rᵀ, each head's content query taken into the latent space (absorption)."""
    w_uk = trace.weights["w_uk"].view(-1, trace.num_heads, trace.head_dim).transpose(0, 1)  # (h, d_c, d_h)
    return trace.query_content @ w_uk.transpose(1, 2)  # (h, T, d_h) @ (h, d_h, d_c)


def absorbed_scores(trace: MLATrace) -> torch.Tensor:
    """(h, T, T) scaled scores from the cache alone: ((q^C W_UKᵀ) c_KVᵀ + q^R k^Rᵀ) / √(d_h + d_R), K^C never built;
    equal to ``trace.attention.scaled_scores`` (float32 rounding)."""
    content = absorbed_query(trace) @ trace.latent_kv.T  # (h, T, d_c) @ (d_c, T)
    return (content + trace.query_rope @ trace.key_rope.T) * trace.scale


def rotate_pairs(x: torch.Tensor, base: float = BASE) -> torch.Tensor:
    """RoPE on the last dim of ``x`` (..., T, d) at positions 0 … T − 1; an odd d leaves its last dimension as it is
    (only 2⌊d/2⌋ dimensions form pairs)."""
    even = x.shape[-1] - x.shape[-1] % 2
    if even == 0:
        return x
    angles = rotation_angles(torch.arange(x.shape[-2]), even, base)
    return torch.cat([rotate(x[..., :even], angles), x[..., even:]], dim=-1)


@dataclass(frozen=True)
class CoupledTrace:
    """RoPE put on the content keys instead (the design MLA rejects), for every head.

    Attributes:
        scores: (h, T, T) R_i q^C_i · R_j k^C_j, the scores of that design (÷ √d_h).
        absorbed: (h, T, T) (R_i q^C_i W_UKᵀ) · c_j ÷ √d_h, what absorption computes from the cache: R_j is lost.
        difference: (h, T, T) absorbed − scores.
    """

    scores: torch.Tensor
    absorbed: torch.Tensor
    difference: torch.Tensor


def coupled_rope_scores(trace: MLATrace) -> CoupledTrace:
    """Rotate k^C inside (RoPE(c_KV W_UK)) and compare the true scores with the absorbed product q W_UKᵀ c_KVᵀ."""
    scale = 1.0 / math.sqrt(trace.head_dim)
    query = rotate_pairs(trace.query_content)  # (h, T, d_h)
    scores = query @ rotate_pairs(trace.key_content).transpose(1, 2) * scale
    w_uk = trace.weights["w_uk"].view(-1, trace.num_heads, trace.head_dim).transpose(0, 1)  # (h, d_c, d_h)
    absorbed = (query @ w_uk.transpose(1, 2)) @ trace.latent_kv.T * scale
    return CoupledTrace(scores, absorbed, absorbed - scores)


def loop_scores(trace: MLATrace) -> torch.Tensor:
    """(h, T, T) the scaled scores with Python floats from c_KV, k^R, Q^C, q^R and W_UK (entry by entry): the naive
    reference."""
    h, d_h = trace.num_heads, trace.head_dim
    c, w_uk = trace.latent_kv.tolist(), trace.weights["w_uk"].tolist()
    q_c, q_r, k_r = trace.query_content.tolist(), trace.query_rope.tolist(), trace.key_rope.tolist()
    out = []
    for r in range(h):
        k_c = [[math.fsum(c_j[a] * w_uk[a][r * d_h + b] for a in range(len(c_j))) for b in range(d_h)]
               for c_j in c]  # K^C of head r, row by row
        out.append([[(math.fsum(a * b for a, b in zip(q_c[r][i], k_c[j]))
                      + math.fsum(a * b for a, b in zip(q_r[r][i], k_r[j]))) * trace.scale for j in range(len(c))]
                    for i in range(len(c))])
    return torch.tensor(out)


# ---------------------------------------------------------------- the KV cache


def cache_numbers(num_heads: int, head_dim: int, kv_latent: int, rope_dim: int, gqa_kv_heads: int,
                  layers: int = 1) -> torch.Tensor:
    """(4,) numbers cached per token over ``layers`` layers: MHA 2 h d_h, GQA 2 g d_h, MQA 2 d_h (each
    :func:`~attention_core.transformer.generation.kv_cache_bytes` at 1 byte a number), MLA d_c + d_R. Float32 (exact
    below 2²⁴)."""
    kv = [kv_cache_bytes(layers, heads, head_dim, 1, 1) for heads in (num_heads, gqa_kv_heads, 1)]
    return torch.tensor([*kv, layers * (kv_latent + rope_dim)], dtype=torch.float32)


def toy_gqa_kv_heads(num_heads: int) -> int:
    """The key/value heads of the toy GQA row: h / 2 for an even h, else 1."""
    return num_heads // 2 if num_heads % 2 == 0 else 1


def copy_mla_weights(layer: nn.Module, trace: MLATrace, interleave: bool = False) -> None:
    """Copy the trace's eight weights into a transformers MLA layer (``DeepseekV3Attention`` and its kin:
    ``q_a_proj``, ``q_b_proj``, ``kv_a_proj_with_mqa``, ``kv_b_proj``, ``o_proj``) and set its two latent RMSNorms to
    the identity (the paper's equations have no norm there). With ``interleave`` (DeepSeek's checkpoints, and
    ``DeepseekV32Attention`` always) the RoPE columns of W_QR and W_KR are laid out as pairs (2i, 2i + 1) first: the
    same rotation, so the same output."""
    w, h, d_r = dict(trace.weights), trace.num_heads, trace.rope_dim
    if interleave:  # column 2i <- i, 2i + 1 <- i + d_R/2: the pair (i, i + d_R/2) becomes neighbours
        pairs = torch.arange(d_r).view(2, -1).T.reshape(-1)
        w["w_kr"] = w["w_kr"][:, pairs]
        w["w_qr"] = w["w_qr"].view(-1, h, d_r)[:, :, pairs].reshape(-1, h * d_r)
    layer.q_a_layernorm, layer.kv_a_layernorm = nn.Identity(), nn.Identity()

    def per_head(*parts: torch.Tensor) -> torch.Tensor:  # (in, h w_1), (in, h w_2) -> (h (w_1 + w_2), in)
        split = [p.view(p.shape[0], h, -1) for p in parts]
        return torch.cat(split, dim=-1).reshape(parts[0].shape[0], -1).T

    with torch.no_grad():
        layer.q_a_proj.weight.copy_(w["w_dq"].T)
        layer.q_b_proj.weight.copy_(per_head(w["w_uq"], w["w_qr"]))
        layer.kv_a_proj_with_mqa.weight.copy_(torch.cat([w["w_dkv"], w["w_kr"]], dim=1).T)
        layer.kv_b_proj.weight.copy_(per_head(w["w_uk"], w["w_uv"]))
        layer.o_proj.weight.copy_(w["w_out"].T)


def transformers_mla(trace: MLATrace, base: float = BASE, interleave: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(output (T, D), weights (h, T, T)) of transformers' ``DeepseekV3Attention`` with the trace's weights copied in.

    A small ``DeepseekV3Config`` (hidden_size D, h heads, q_lora_rank d_c', kv_lora_rank d_c, qk_nope_head_dim =
    v_head_dim = d_h, qk_rope_head_dim d_R, rope_interleave=``interleave``, eager attention, no bias); the weights
    and the identity norms as :func:`copy_mla_weights` puts them; cos and sin from its ``DeepseekV3RotaryEmbedding`` at
    positions 0 … T − 1; an additive causal mask (0 / −inf). Imported on first use.
    """
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding

    w, h, d_h, d_r = trace.weights, trace.num_heads, trace.head_dim, trace.rope_dim
    t, d_model = trace.x.shape
    config = DeepseekV3Config(hidden_size=d_model, num_attention_heads=h, num_key_value_heads=h,
                              q_lora_rank=w["w_dq"].shape[1], kv_lora_rank=w["w_dkv"].shape[1],
                              qk_nope_head_dim=d_h, qk_rope_head_dim=d_r, v_head_dim=d_h, rope_interleave=interleave,
                              rope_parameters={"rope_type": "default", "rope_theta": base}, attention_bias=False,
                              num_hidden_layers=1, vocab_size=8, intermediate_size=8, moe_intermediate_size=8,
                              n_routed_experts=1, num_experts_per_tok=1, n_group=1, topk_group=1)
    config._attn_implementation = "eager"
    layer = DeepseekV3Attention(config, layer_idx=0).eval()
    copy_mla_weights(layer, trace, interleave)
    with torch.no_grad():
        hidden = trace.x[None]  # (1, T, D)
        cos, sin = DeepseekV3RotaryEmbedding(config)(hidden, torch.arange(t)[None])
        mask = additive_mask(causal_mask(t))[None, None]
        output, weights = layer(hidden, (cos, sin), mask)
    return output[0], weights[0]
