r"""DeepSeek Sparse Attention (DSA; DeepSeek-V3.2-Exp, 2025): a small *lightning indexer* scores every earlier token,
each query keeps its top-k, and MLA attends to those alone.

The indexer has its own few heads (H_I) of small width (d_I). Its queries come from MLA's query latent c_Q, its one key
per token (shared by its heads, as in MQA) and its per-head weights from the token itself::

    q^I_{t,j} = RoPE(c_Q,t W^I_Q,j)                     (H_I, T, d_I)  RoPE on the first d_R columns only
    k^I_s     = RoPE(x_s W^I_K)                         (T, d_I)
    w_{t,j}   = (x_t W^I_w)_j / √H_I                    (T, H_I)
    I_{t,s}   = Σ_j w_{t,j} · ReLU(q^I_{t,j} · k^I_s / √d_I)   (T, T), s ≤ t        eq. 1
    S_t       = the k keys s ≤ t with the largest I_{t,s}                            (top-k)
    u_t       = MLA's attention of query t over the keys in S_t only                 eq. 2

The paper's eq. 1 has no scales; DeepSeek's code (and transformers') multiplies the dot product by 1/√d_I and the
weights by 1/√H_I: both positive, so the ranking, hence the chosen keys, are the same. The top-k is ``torch.topk`` over
row t with −inf on the future keys, as DeepSeek's inference code and transformers call it; among equal scores (often 0,
where every head's ReLU cut the key) it picks in an order of its own, not by position. With k ≥ t, query t keeps every
key it may see: dense attention. The main attention then scores only T·k pairs instead of T(T + 1)/2, O(T k) instead of
O(T²); the indexer still scores every pair, but with few heads, small width and (in DeepSeek's kernels) FP8.

Conventions, those of transformers' ``DeepseekV32Indexer`` and ``DeepseekV32Attention`` (``models/deepseek_v32``):
the indexer's RoPE pairs column i with i + d_R/2 (half-split, :func:`attention_core.modern.rope.rotate`) on its first
d_R columns, at the main attention's angles; transformers normalises the indexer's key with a LayerNorm (``k_norm``)
and MLA's latents with RMSNorms: the page, like the MLA page, shows none of them, and its reference check sets them to
the identity (:func:`transformers_dsa`).

Shape legend: T tokens, D = d_model, d_c' = MLA's query latent, H_I = index_heads, d_I = index_dim, d_R = MLA's RoPE
part, k = top_k, h = MLA's heads. Float32 (RoPE angles in float64, then float32).

Sources: DeepSeek-AI 2025, "DeepSeek-V3.2-Exp: Boosting Long-Context Efficiency with DeepSeek Sparse Attention",
sec. 2.1 (eq. 1, the lightning indexer; eq. 2, attention over the selected entries); DeepSeek-V3.2-Exp's
``inference/model.py`` (``Indexer``, ``index_score.topk``); transformers' ``models/deepseek_v32``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Mapping

import torch

from attention_core.errors import N_, Message
from attention_core.masks import additive_mask, causal_mask
from attention_core.modern.mla import MLATrace, copy_mla_weights, multi_head_latent_attention
from attention_core.modern.rope import BASE, rotate
from attention_core.self_attention.functional import scaled_dot_product_attention
from attention_core.weights import linear_weights

#: DeepSeek-V3.2-Exp's indexer (its config.json): heads H_I, width d_I, and the keys each query keeps, k.
DEEPSEEK_V32 = {"index_heads": 64, "index_dim": 128, "top_k": 2048}
#: The long context of the work table: 128K tokens (DeepSeek-V3.2's context length).
LONG_CONTEXT = 128 * 1024
#: Added to the page's seed for the indexer's weights, so that they are not the MLA weights' first draws.
INDEXER_SEED_OFFSET = 7919
#: The indexer's weights' names, in the order they are drawn.
INDEXER_WEIGHT_NAMES = ("w_iq", "w_ik", "w_iw")


def fit_index_dim(index_dim: int, rope_dim: int) -> tuple[int, tuple[Message, ...]]:
    """(d_I, messages): the indexer's width is at least d_R (RoPE turns its first d_R columns), with a message when it
    was widened; the settings keep what was typed."""
    if index_dim >= rope_dim:
        return index_dim, ()
    return rope_dim, (Message(N_("The indexer's width d_I = {d_i} is narrower than MLA's RoPE part d_R = {d_r}: RoPE "
                                 "turns the indexer's first d_R columns, so this page uses d_I = {d_r}."),
                              d_i=index_dim, d_r=rope_dim),)


def indexer_weights(d_model: int, q_latent: int, index_heads: int, index_dim: int,
                    seed: int) -> dict[str, torch.Tensor]:
    """The indexer's three projections, drawn like ``nn.Linear`` from a generator seeded ``seed`` +
    :data:`INDEXER_SEED_OFFSET`.

    Returns:
        ``w_iq`` (d_c', H_I d_I) from c_Q, ``w_ik`` (D, d_I), ``w_iw`` (D, H_I); float32, applied as x @ W.
    """
    g = torch.Generator().manual_seed(seed + INDEXER_SEED_OFFSET)
    shapes = {"w_iq": (q_latent, index_heads * index_dim), "w_ik": (d_model, index_dim),
              "w_iw": (d_model, index_heads)}
    return linear_weights({name: shapes[name] for name in INDEXER_WEIGHT_NAMES}, g)


@dataclass(frozen=True)
class IndexerTrace:
    """Every intermediate of the lightning indexer on one sentence (module docstring for the equations).

    Attributes:
        weights: :func:`indexer_weights`. index_heads, index_dim, top_k: H_I, d_I, k (as asked; may exceed T).
        query_raw: (H_I, T, d_I) c_Q W^I_Q before RoPE. query: (H_I, T, d_I) q^I.
        key_raw: (T, d_I) X W^I_K before RoPE. key: (T, d_I) k^I.
        head_weights: (T, H_I) w = X W^I_w / √H_I.
        dots: (H_I, T, T) q^I_{t,j} · k^I_s / √d_I, every pair (the future too). relu: (H_I, T, T) ReLU(dots).
        scores: (T, T) I_{t,s} with −inf on the future keys (s > t).
        chosen: (T, min(k, T)) long, torch.topk's indices of each row (may name future keys where k > t: harmless).
        kept: (T, T) bool, key s is chosen for query t and s ≤ t.
    """

    weights: dict[str, torch.Tensor]
    index_heads: int
    index_dim: int
    top_k: int
    query_raw: torch.Tensor
    query: torch.Tensor
    key_raw: torch.Tensor
    key: torch.Tensor
    head_weights: torch.Tensor
    dots: torch.Tensor
    relu: torch.Tensor
    scores: torch.Tensor
    chosen: torch.Tensor
    kept: torch.Tensor


def _rope_first(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """RoPE (half-split) on the first 2 · angles.shape[-1] columns of ``x``; the rest pass unchanged."""
    d_r = 2 * angles.shape[-1]
    return torch.cat([rotate(x[..., :d_r], angles), x[..., d_r:]], dim=-1)


def kept_keys(chosen: torch.Tensor, tokens: int) -> torch.Tensor:
    """(T, T) bool: key s is among query t's top-k indices ``chosen`` (T, k') and s ≤ t (an index of a future key,
    which torch.topk returns where k > t, keeps nothing)."""
    return torch.zeros(tokens, tokens, dtype=torch.bool).scatter(-1, chosen, True) & causal_mask(tokens)


def lightning_indexer(x: torch.Tensor, latent_q: torch.Tensor, angles: torch.Tensor,
                      weights: Mapping[str, torch.Tensor], *, index_heads: int, index_dim: int,
                      top_k: int) -> IndexerTrace:
    """The indexer's scores I (T, T) and each query's top-k keys (DeepSeek-V3.2-Exp eq. 1, and its top-k).

    The operations are transformers' ``DeepseekV32Indexer.forward`` in the same order and shapes (the batch dropped),
    so that the same float32 scores, hence the same ``torch.topk`` choice among ties, come out.

    Args:
        x: (T, D) float32. latent_q: (T, d_c') MLA's c_Q. angles: (T, d_R / 2) MLA's RoPE angles (d_R ≤ d_I).
        weights: :func:`indexer_weights`. index_heads, index_dim: H_I, d_I. top_k: k ≥ 1.
    """
    t = x.shape[0]
    query_raw = (latent_q @ weights["w_iq"]).view(t, index_heads, index_dim)  # (T, H_I, d_I)
    key_raw = x @ weights["w_ik"]  # (T, d_I)
    query, key = _rope_first(query_raw.transpose(0, 1), angles), _rope_first(key_raw, angles)
    dots = torch.matmul(query.transpose(0, 1), key.T.unsqueeze(0)) * index_dim ** -0.5  # (T, H_I, T)
    relu = torch.relu(dots)
    head_weights = (x @ weights["w_iw"]) * index_heads ** -0.5  # (T, H_I)
    scores = torch.matmul(head_weights.unsqueeze(-2), relu).squeeze(-2) + additive_mask(causal_mask(t))  # (T, T)
    chosen = scores.topk(min(top_k, t), dim=-1).indices  # (T, min(k, T))
    kept = kept_keys(chosen, t)
    return IndexerTrace(weights=dict(weights), index_heads=index_heads, index_dim=index_dim, top_k=top_k,
                        query_raw=query_raw.transpose(0, 1), query=query, key_raw=key_raw, key=key,
                        head_weights=head_weights, dots=dots.transpose(0, 1), relu=relu.transpose(0, 1),
                        scores=scores, chosen=chosen, kept=kept)


@dataclass(frozen=True)
class SparseTrace:
    """DeepSeek sparse attention on one sentence: the indexer, and MLA with and without its choice.

    Attributes:
        indexer: :class:`IndexerTrace`. dense: :class:`~attention_core.modern.mla.MLATrace`, causal MLA (every key).
        sparse: the same MLA with only the kept keys: the dense trace's projections, its attention (masked scores,
            weights, output), concat and output over the kept keys.
        dropped_mass: (h, T) the weight dense attention gave to the keys the indexer dropped, per head and query.
        work: (2, 2) pairs scored by the main attention, dense T(T + 1)/2 and sparse Σ_t min(t, k): at the page's T
            and k (row 0) and at :data:`LONG_CONTEXT` tokens with DeepSeek's k = 2048 (row 1); float64.
    """

    indexer: IndexerTrace
    dense: MLATrace
    sparse: MLATrace
    dropped_mass: torch.Tensor
    work: torch.Tensor

    @property
    def max_difference(self) -> float:
        """max |u_sparse − u_dense| over the output."""
        return float((self.sparse.output - self.dense.output).abs().max())


def pairs_scored(tokens: int, top_k: int) -> tuple[float, float]:
    """(dense, sparse) key–query pairs a causal attention scores: T(T + 1)/2, and Σ_{t=1}^{T} min(t, k)."""
    k = min(top_k, tokens)
    return tokens * (tokens + 1) / 2, k * (k + 1) / 2 + (tokens - k) * k


def sparse_attention(x: torch.Tensor, mla_weights: Mapping[str, torch.Tensor],
                     index_weights: Mapping[str, torch.Tensor], *, num_heads: int, head_dim: int, rope_dim: int,
                     index_heads: int, index_dim: int, top_k: int, base: float = BASE) -> SparseTrace:
    """DeepSeek sparse attention on ``x`` (T, D): MLA (:mod:`attention_core.modern.mla`) over each query's top-k keys.

    Args:
        x: (T, D) float32. mla_weights: :func:`~attention_core.modern.mla.mla_weights`; num_heads, head_dim,
            rope_dim: h, d_h, d_R (even). index_weights: :func:`indexer_weights`; index_heads, index_dim, top_k:
            H_I, d_I (≥ d_R), k ≥ 1. base: RoPE's base.

    Raises:
        InputError: an odd d_R (field ``mla.rope_dim``).
    """
    dense = multi_head_latent_attention(x, mla_weights, num_heads=num_heads, head_dim=head_dim, rope_dim=rope_dim,
                                        base=base)
    indexer = lightning_indexer(x, dense.latent_q, dense.angles, index_weights, index_heads=index_heads,
                                index_dim=index_dim, top_k=top_k)
    attention = scaled_dot_product_attention(dense.query, dense.key, dense.value, attn_mask=indexer.kept,
                                             scale=dense.scale)  # the same q, k, V: only the mask differs
    concat = attention.output.transpose(0, 1).reshape(x.shape[0], num_heads * head_dim)
    sparse = dataclasses.replace(dense, attention=attention, concat=concat, output=concat @ mla_weights["w_out"])
    dropped = causal_mask(x.shape[0]) & ~indexer.kept  # (T, T)
    dropped_mass = (dense.attention.weights * dropped).sum(dim=-1)  # (h, T)
    work = torch.tensor([pairs_scored(x.shape[0], top_k), pairs_scored(LONG_CONTEXT, DEEPSEEK_V32["top_k"])],
                        dtype=torch.float64)
    return SparseTrace(indexer=indexer, dense=dense, sparse=sparse, dropped_mass=dropped_mass, work=work)


def ties_at_the_cut(trace: IndexerTrace, row: int, atol: float = 0.0) -> tuple[list[int], list[int]]:
    """(kept, dropped): the keys of ``row`` (0-based, s ≤ row) whose score equals the lowest kept one (within ``atol``),
    split by torch.topk's choice; a tie decided by topk when both lists are non-empty."""
    visible = trace.scores[row, :row + 1]
    kept = trace.kept[row, :row + 1]
    if bool(kept.all()):
        return [], []
    cut = float(visible[kept].min())
    tied = (visible - cut).abs() <= atol
    return ([int(s) for s in torch.nonzero(tied & kept).flatten()],
            [int(s) for s in torch.nonzero(tied & ~kept).flatten()])


def indexer_loop(trace: IndexerTrace) -> torch.Tensor:
    """(T, T) float64: I_{t,s} = Σ_j w_{t,j} · max(0, Σ_c q_{t,j,c} k_{s,c} / √d_I) with Python floats from the
    rotated queries and keys (s ≤ t; −inf above the diagonal)."""
    q, k, w = trace.query.double().tolist(), trace.key.double().tolist(), trace.head_weights.double().tolist()
    t, scale = len(k), 1 / math.sqrt(trace.index_dim)
    out = torch.full((t, t), -math.inf, dtype=torch.float64)
    for row in range(t):
        for s in range(row + 1):
            out[row, s] = math.fsum(w[row][j] * max(0.0, math.fsum(a * b for a, b in zip(q[j][row], k[s])) * scale)
                                    for j in range(trace.index_heads))
    return out


def sparse_loop(trace: SparseTrace) -> torch.Tensor:
    """(h, T, d_h) float64: each head's output from the dense trace's float32 scores, with softmax and the weighted sum
    over the kept keys only, in Python floats."""
    scores = trace.dense.attention.scaled_scores.double().tolist()
    values = trace.dense.value.double().tolist()
    kept = trace.indexer.kept.tolist()
    h, t, d_h = trace.dense.value.shape
    out = torch.zeros(h, t, d_h, dtype=torch.float64)
    for r in range(h):
        for row in range(t):
            keys = [s for s in range(t) if kept[row][s]]
            top = max(scores[r][row][s] for s in keys)
            e = {s: math.exp(scores[r][row][s] - top) for s in keys}
            total = math.fsum(e.values())
            for c in range(d_h):
                out[r, row, c] = math.fsum(e[s] / total * values[r][s][c] for s in keys)
    return out


def transformers_dsa(trace: SparseTrace, base: float = BASE) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(top-k indices (T, min(k, T)), output (T, D), weights (h, T, T)) of transformers' ``DeepseekV32Attention``
    (and of its ``DeepseekV32Indexer``, called on its own for the indices) with the trace's weights copied in.

    A small ``DeepseekV32Config`` (the MLA sizes as :func:`~attention_core.modern.mla.transformers_mla`, index_n_heads
    H_I, index_head_dim d_I, index_topk k, eager attention); MLA's weights and identity norms as
    :func:`~attention_core.modern.mla.copy_mla_weights` puts them, interleaved (its main attention always pairs
    (2i, 2i + 1)); the indexer's ``wq_b``, ``wk``, ``weights_proj`` copied, its key LayerNorm (``k_norm``) the identity;
    cos and sin from its rotary embedding at positions 0 … T − 1; an additive causal mask. Imported on first use.
    """
    from torch import nn
    from transformers import DeepseekV32Config
    from transformers.models.deepseek_v32.modeling_deepseek_v32 import (
        DeepseekV32Attention,
        DeepseekV32RotaryEmbedding,
    )

    mla, index = trace.dense, trace.indexer
    w, h = mla.weights, mla.num_heads
    t, d_model = mla.x.shape
    config = DeepseekV32Config(hidden_size=d_model, num_attention_heads=h, num_key_value_heads=h,
                               q_lora_rank=w["w_dq"].shape[1], kv_lora_rank=w["w_dkv"].shape[1],
                               qk_nope_head_dim=mla.head_dim, qk_rope_head_dim=mla.rope_dim, v_head_dim=mla.head_dim,
                               index_n_heads=index.index_heads, index_head_dim=index.index_dim,
                               index_topk=index.top_k, rope_parameters={"rope_type": "default", "rope_theta": base},
                               attention_bias=False, num_hidden_layers=1, vocab_size=8, intermediate_size=8,
                               moe_intermediate_size=8, n_routed_experts=1, num_experts_per_tok=1, n_group=1,
                               topk_group=1)
    config._attn_implementation = "eager"
    layer = DeepseekV32Attention(config, layer_idx=0).eval()
    copy_mla_weights(layer, mla, interleave=True)
    layer.indexer.k_norm = nn.Identity()
    with torch.no_grad():
        layer.indexer.wq_b.weight.copy_(index.weights["w_iq"].T)
        layer.indexer.wk.weight.copy_(index.weights["w_ik"].T)
        layer.indexer.weights_proj.weight.copy_(index.weights["w_iw"].T)
        hidden = mla.x[None]  # (1, T, D)
        positions = torch.arange(t)[None]
        cos, sin = DeepseekV32RotaryEmbedding(config)(hidden, positions)
        mask = additive_mask(causal_mask(t))[None, None]  # (1, 1, T, T)
        chosen = layer.indexer(hidden, layer.q_a_proj(hidden), (cos, sin), mask[:, 0], positions)
        output, weights = layer(hidden, (cos, sin), mask)
    return chosen[0].long(), output[0], weights[0]
