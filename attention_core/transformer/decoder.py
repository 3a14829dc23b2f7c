r"""The Transformer decoder block: masked self-attention, cross-attention over the encoder, feed-forward.

One post-LN block (Vaswani et al. 2017, sec. 3.1; seed 003 ``003_734755b2d0b981d3.txt`` §2: "masked multi-head
self-attention → add & norm → encoder-decoder attention → add & norm → feed-forward → add & norm")::

    H₁ = LayerNorm₁(Y + MultiHead(Y, Y, Y, causal mask))
    H₂ = LayerNorm₂(H₁ + MultiHead(H₁, M, M))          M: the encoder's output (the "memory")
    Z  = LayerNorm₃(H₂ + FFN(H₂))

with FFN and LayerNorm as in :mod:`attention_core.transformer.encoder`. The causal mask lets token i see tokens
1..i only, so row i of every intermediate depends on rows 1..i alone. That is what makes a **KV cache** exact:
when a new token arrives, the rows of the tokens before it do not change, so their keys and values can be
kept instead of recomputed. :func:`decoder_block` with ``cache`` computes only the new rows and reads the
earlier keys and values from the cache.

:func:`decoder_block` equals ``torch.nn.TransformerDecoderLayer`` (``batch_first=True``, ``dropout=0``, ReLU,
``norm_first=False``) with the same weights; :func:`torch_decoder_layer` builds that layer.

Shape legend: T decoder tokens (p of them already cached, T − p new), S source tokens (the memory's rows),
D = d_model, F = dim_feedforward, h = num_heads. Float32; weights act as ``x @ W``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from attention_core.masks import causal_mask
from attention_core.multi_head.heads import MultiHeadTrace, multi_head_attention
from attention_core.transformer.encoder import BlockWeights, LayerNormTrace, fill_attention, layer_norm


@dataclass(frozen=True)
class AttentionWeights:
    """One multi-head attention's parameters, applied as ``x @ W``: w_* (D, D), b_* (D,)."""

    w_query: torch.Tensor
    w_key: torch.Tensor
    w_value: torch.Tensor
    w_out: torch.Tensor
    b_query: torch.Tensor
    b_key: torch.Tensor
    b_value: torch.Tensor
    b_out: torch.Tensor


@dataclass(frozen=True)
class DecoderBlockWeights:
    """One decoder block's parameters.

    Attributes:
        self_attention, cross_attention: the two :class:`AttentionWeights`.
        w_1: (D, F), b_1: (F,); w_2: (F, D), b_2: (D,): the feed-forward layer.
        gammas, betas: the three LayerNorms' γ and β, (D,) each.
    """

    self_attention: AttentionWeights
    cross_attention: AttentionWeights
    w_1: torch.Tensor
    b_1: torch.Tensor
    w_2: torch.Tensor
    b_2: torch.Tensor
    gammas: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    betas: tuple[torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class KVCache:
    """The keys and values of the tokens seen so far, for one block's self-attention.

    Attributes:
        key, value: (p, D), K = Y W_k + b_k and V = Y W_v + b_v of the p earlier tokens, all heads side by side.
    """

    key: torch.Tensor
    value: torch.Tensor

    @property
    def length(self) -> int:
        """p, the number of cached tokens."""
        return self.key.shape[0]


@dataclass(frozen=True)
class DecoderBlockTrace:
    """Every intermediate of one decoder block, for its new rows.

    Attributes:
        y: (T − p, D), the block's input rows (all T when nothing was cached).
        self_attention: the masked self-attention's :class:`MultiHeadTrace`; its ``key``/``value`` are (T, D):
            the cache and the new rows.
        residual_1, norm_1: y + self-attention output, and LayerNorm₁ of it.
        cross_attention: the :class:`MultiHeadTrace` with queries from norm_1's output, keys and values from
            the memory (S, D); its weights are (h, T − p, S).
        residual_2, norm_2: H₁ + cross-attention output, and LayerNorm₂ of it.
        ffn_hidden: (T − p, F), ReLU(H₂ W₁ + b₁). ffn_output: (T − p, D).
        residual_3, norm_3: H₂ + FFN(H₂), and LayerNorm₃ of it.
        output: (T − p, D), norm_3's output.
        cache: the :class:`KVCache` after this call (p + new rows).
    """

    y: torch.Tensor
    self_attention: MultiHeadTrace
    residual_1: torch.Tensor
    norm_1: LayerNormTrace
    cross_attention: MultiHeadTrace
    residual_2: torch.Tensor
    norm_2: LayerNormTrace
    ffn_hidden: torch.Tensor
    ffn_output: torch.Tensor
    residual_3: torch.Tensor
    norm_3: LayerNormTrace
    output: torch.Tensor
    cache: KVCache


def _attend(query_input: torch.Tensor, kv_input: torch.Tensor, w: AttentionWeights, num_heads: int,
            mask: Optional[torch.Tensor] = None, cache: Optional[KVCache] = None) -> MultiHeadTrace:
    return multi_head_attention(query_input, kv_input, w.w_query, w.w_key, w.w_value, w.w_out, b_query=w.b_query,
                                b_key=w.b_key, b_value=w.b_value, b_out=w.b_out, num_heads=num_heads,
                                attn_mask=mask, past_key=None if cache is None else cache.key,
                                past_value=None if cache is None else cache.value)


def decoder_block(y: torch.Tensor, memory: torch.Tensor, weights: DecoderBlockWeights, num_heads: int,
                  cache: Optional[KVCache] = None, memory_cache: Optional[KVCache] = None) -> DecoderBlockTrace:
    """One post-LN decoder block on the new rows ``y`` (module docstring for the formulas), no dropout.

    Args:
        y: (T − p, D) float32, the rows of the tokens not yet cached (all T rows when ``cache`` is None).
        memory: (S, D), the encoder's output. weights: the block's :class:`DecoderBlockWeights`.
        num_heads: h, must divide D. cache: the p earlier tokens' keys and values, or None.
        memory_cache: the memory's cross-attention keys and values, computed once (then the memory is not
            projected again), or None.

    Returns:
        The :class:`DecoderBlockTrace`; with a cache its rows equal the last T − p rows of the uncached call
        on all T tokens.

    Raises:
        InputError: num_heads does not divide D (from :func:`multi_head_attention`).
    """
    w = weights
    past = 0 if cache is None else cache.length
    total = past + y.shape[0]
    # causal: new row i (token past + i) may see tokens 0 .. past + i
    mask = causal_mask(total)[past:]  # (T − p, T)
    attention = _attend(y, y, w.self_attention, num_heads, mask, cache)
    residual_1 = y + attention.output
    norm_1 = layer_norm(residual_1, w.gammas[0], w.betas[0])
    if memory_cache is None:
        cross = _attend(norm_1.output, memory, w.cross_attention, num_heads)
    else:  # nothing new to project: every key and value comes from the cache
        cross = _attend(norm_1.output, memory[:0], w.cross_attention, num_heads, cache=memory_cache)
    residual_2 = norm_1.output + cross.output
    norm_2 = layer_norm(residual_2, w.gammas[1], w.betas[1])
    hidden = torch.relu(norm_2.output @ w.w_1 + w.b_1)
    ffn = hidden @ w.w_2 + w.b_2
    residual_3 = norm_2.output + ffn
    norm_3 = layer_norm(residual_3, w.gammas[2], w.betas[2])
    return DecoderBlockTrace(y=y, self_attention=attention, residual_1=residual_1, norm_1=norm_1,
                             cross_attention=cross, residual_2=residual_2, norm_2=norm_2, ffn_hidden=hidden,
                             ffn_output=ffn, residual_3=residual_3, norm_3=norm_3, output=norm_3.output,
                             cache=KVCache(attention.key, attention.value))


# ---------------------------------------------------------------- to and from torch's modules

def attention_weights(mha: nn.MultiheadAttention) -> AttentionWeights:
    """The weights of ``mha`` as ``x @ W`` matrices (``in_proj_weight`` = cat(W_q.T, W_k.T, W_v.T))."""
    w_query, w_key, w_value = mha.in_proj_weight.detach().chunk(3)
    b_query, b_key, b_value = mha.in_proj_bias.detach().chunk(3)
    return AttentionWeights(w_query=w_query.T, w_key=w_key.T, w_value=w_value.T,
                            w_out=mha.out_proj.weight.detach().T, b_query=b_query, b_key=b_key, b_value=b_value,
                            b_out=mha.out_proj.bias.detach())


def encoder_weights(layer: nn.TransformerEncoderLayer) -> BlockWeights:
    """A ``torch.nn.TransformerEncoderLayer``'s parameters as the encoder page's :class:`BlockWeights`."""
    a = attention_weights(layer.self_attn)
    return BlockWeights(w_query=a.w_query, w_key=a.w_key, w_value=a.w_value, w_out=a.w_out, b_query=a.b_query,
                        b_key=a.b_key, b_value=a.b_value, b_out=a.b_out,
                        w_1=layer.linear1.weight.detach().T, b_1=layer.linear1.bias.detach(),
                        w_2=layer.linear2.weight.detach().T, b_2=layer.linear2.bias.detach(),
                        gamma_1=layer.norm1.weight.detach(), beta_1=layer.norm1.bias.detach(),
                        gamma_2=layer.norm2.weight.detach(), beta_2=layer.norm2.bias.detach())


def decoder_weights(layer: nn.TransformerDecoderLayer) -> DecoderBlockWeights:
    """A ``torch.nn.TransformerDecoderLayer``'s parameters as :class:`DecoderBlockWeights`."""
    norms = (layer.norm1, layer.norm2, layer.norm3)
    return DecoderBlockWeights(
        self_attention=attention_weights(layer.self_attn), cross_attention=attention_weights(layer.multihead_attn),
        w_1=layer.linear1.weight.detach().T, b_1=layer.linear1.bias.detach(),
        w_2=layer.linear2.weight.detach().T, b_2=layer.linear2.bias.detach(),
        gammas=tuple(n.weight.detach() for n in norms), betas=tuple(n.bias.detach() for n in norms))


def torch_decoder_layer(weights: DecoderBlockWeights, num_heads: int) -> nn.TransformerDecoderLayer:
    """``torch.nn.TransformerDecoderLayer`` holding ``weights`` (eval, dropout 0, ReLU, batch_first, post-LN).

    Built on the meta device and filled in, so creating it draws nothing from the global generator.
    """
    d_model, dim_feedforward = weights.w_1.shape
    with torch.device("meta"):
        layer = nn.TransformerDecoderLayer(d_model, num_heads, dim_feedforward=dim_feedforward, dropout=0.0,
                                           activation="relu", batch_first=True, norm_first=False)
    layer = layer.to_empty(device="cpu").eval()
    w = weights
    with torch.no_grad():
        fill_attention(layer.self_attn, w.self_attention)
        fill_attention(layer.multihead_attn, w.cross_attention)
        layer.linear1.weight.copy_(w.w_1.T)
        layer.linear1.bias.copy_(w.b_1)
        layer.linear2.weight.copy_(w.w_2.T)
        layer.linear2.bias.copy_(w.b_2)
        for norm, gamma, beta in zip((layer.norm1, layer.norm2, layer.norm3), w.gammas, w.betas):
            norm.weight.copy_(gamma)
            norm.bias.copy_(beta)
    return layer
