r"""The Transformer encoder block around attention, step by step: attention, residual, LayerNorm, feed-forward.

One block (Vaswani et al. 2017, sec. 3.1 and 3.3; seed 003 ``003_734755b2d0b981d3.txt`` §2, which draws it as
"multi-head self-attention → add & norm → feed-forward → add & norm"):

* post-LN (the 2017 paper, ``norm_first=False``)::

      H = LayerNorm₁(X + MultiHead(X))
      Y = LayerNorm₂(H + FFN(H))

* pre-LN (GPT-2 and most current models, ``norm_first=True``)::

      H = X + MultiHead(LayerNorm₁(X))
      Y = H + FFN(LayerNorm₂(H))

with FFN(Z) = ReLU(Z W₁ + b₁) W₂ + b₂ (sec. 3.3, eq. 2) and, per row i, LayerNorm(z)_ij =
γ_j (z_ij − μ_i) / √(σ_i² + ε) + β_j, μ_i and σ_i² the mean and the biased variance of row i (Ba et al. 2016).
A stack applies N blocks one after another, each with its own weights.

:func:`encoder_block` computes every intermediate and returns an :class:`EncoderBlockTrace`; they equal
``torch.nn.TransformerEncoderLayer`` (``batch_first=True``, ``dropout=0``, ReLU, the same ``norm_first``)
with the same weights, which :func:`torch_layer` builds and the tests and the page compare against.

Shape legend: T tokens, D = d_model, F = dim_feedforward (d_ff), h = num_heads, head_dim = D / h.
Every tensor is float32; weights act as ``x @ W`` (the transpose of ``nn.Linear.weight``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from attention_core.multi_head.heads import MultiHeadTrace, multi_head_attention

#: LayerNorm's ε, torch's default (``layer_norm_eps=1e-5``).
EPS = 1e-5


@dataclass(frozen=True)
class LayerNormTrace:
    """LayerNorm of each row: the mean, the variance, the normalised row, then γ and β.

    Attributes:
        x: (T, D), the input rows.
        mean: (T,), μ_i, the mean of row i.
        var: (T,), σ_i², the biased variance of row i (divided by D, as torch does).
        normalized: (T, D), (x_ij − μ_i) / √(σ_i² + ε).
        gamma, beta: (D,), the learned scale and shift.
        output: (T, D), γ_j · normalized_ij + β_j.
        eps: ε.
    """

    x: torch.Tensor
    mean: torch.Tensor
    var: torch.Tensor
    normalized: torch.Tensor
    gamma: torch.Tensor
    beta: torch.Tensor
    output: torch.Tensor
    eps: float


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = EPS) -> LayerNormTrace:
    """LayerNorm over the last dimension, every intermediate kept (Ba et al. 2016; ``torch.nn.LayerNorm``).

    Args:
        x: (T, D) float32. gamma, beta: (D,). eps: > 0.

    Returns:
        The :class:`LayerNormTrace`; its ``output`` equals ``F.layer_norm(x, (D,), gamma, beta, eps)``.
    """
    mean = x.mean(dim=-1)  # (T,)
    var = x.var(dim=-1, unbiased=False)  # (T,), divided by D
    normalized = (x - mean[:, None]) / torch.sqrt(var[:, None] + eps)
    return LayerNormTrace(x=x, mean=mean, var=var, normalized=normalized, gamma=gamma, beta=beta,
                          output=normalized * gamma + beta, eps=eps)


@dataclass(frozen=True)
class BlockWeights:
    """One encoder block's parameters, applied as ``x @ W``.

    Attributes:
        w_query, w_key, w_value, w_out: (D, D); b_query, b_key, b_value, b_out: (D,).
        w_1: (D, F), b_1: (F,); w_2: (F, D), b_2: (D,): the feed-forward layer.
        gamma_1, beta_1, gamma_2, beta_2: (D,): the two LayerNorms.
    """

    w_query: torch.Tensor
    w_key: torch.Tensor
    w_value: torch.Tensor
    w_out: torch.Tensor
    b_query: torch.Tensor
    b_key: torch.Tensor
    b_value: torch.Tensor
    b_out: torch.Tensor
    w_1: torch.Tensor
    b_1: torch.Tensor
    w_2: torch.Tensor
    b_2: torch.Tensor
    gamma_1: torch.Tensor
    beta_1: torch.Tensor
    gamma_2: torch.Tensor
    beta_2: torch.Tensor


def block_weights(d_model: int, dim_feedforward: int, seed: int) -> BlockWeights:
    """A block's weights from a local generator seeded with ``seed`` (the global one is not touched).

    The linear layers are drawn as ``nn.Linear`` initialises them: weight and bias uniform in ±1/√fan_in.
    torch starts γ at 1 and β at 0, which would make the γ, β step show nothing; here γ is drawn uniform
    in [0.5, 1.5] and β in [−0.5, 0.5], as after some training.

    Raises:
        ValueError: d_model or dim_feedforward below 1.
    """
    if d_model < 1 or dim_feedforward < 1:
        raise ValueError(f"d_model = {d_model} and dim_feedforward = {dim_feedforward} must be at least 1")
    g = torch.Generator().manual_seed(seed)

    def uniform(shape: tuple[int, ...], bound: float, centre: float = 0.0) -> torch.Tensor:
        return (torch.rand(shape, generator=g) * 2 - 1) * bound + centre

    def linear(fan_in: int, fan_out: int) -> tuple[torch.Tensor, torch.Tensor]:
        bound = 1.0 / math.sqrt(fan_in)
        return uniform((fan_in, fan_out), bound), uniform((fan_out,), bound)

    (w_query, b_query), (w_key, b_key), (w_value, b_value), (w_out, b_out) = (
        linear(d_model, d_model) for _ in range(4))
    w_1, b_1 = linear(d_model, dim_feedforward)
    w_2, b_2 = linear(dim_feedforward, d_model)
    gamma_1, beta_1, gamma_2, beta_2 = (uniform((d_model,), 0.5, centre) for centre in (1.0, 0.0, 1.0, 0.0))
    return BlockWeights(w_query=w_query, w_key=w_key, w_value=w_value, w_out=w_out, b_query=b_query, b_key=b_key,
                        b_value=b_value, b_out=b_out, w_1=w_1, b_1=b_1, w_2=w_2, b_2=b_2, gamma_1=gamma_1,
                        beta_1=beta_1, gamma_2=gamma_2, beta_2=beta_2)


@dataclass(frozen=True)
class EncoderBlockTrace:
    """Every intermediate of one encoder block.

    Attributes:
        norm_first: False = post-LN (2017), True = pre-LN.
        x: (T, D), the block's input.
        attention_input: (T, D): x (post-LN) or LayerNorm₁(x) (pre-LN).
        attention: the :class:`MultiHeadTrace` of the self-attention on ``attention_input``.
        residual_1: (T, D), x + attention output.
        norm_1: LayerNorm₁, of residual_1 (post-LN) or of x (pre-LN).
        hidden: (T, D), H: norm_1's output (post-LN) or residual_1 (pre-LN); the second sublayer's skip input.
        norm_2: LayerNorm₂, of residual_2 (post-LN) or of H (pre-LN).
        ffn_input: (T, D): H (post-LN) or LayerNorm₂(H) (pre-LN).
        ffn_pre_activation: (T, F), ffn_input W₁ + b₁.
        ffn_hidden: (T, F), ReLU of it.
        ffn_output: (T, D), ffn_hidden W₂ + b₂.
        residual_2: (T, D), H + ffn_output.
        output: (T, D), norm_2's output (post-LN) or residual_2 (pre-LN).
        weights: the block's :class:`BlockWeights`.
    """

    norm_first: bool
    x: torch.Tensor
    attention_input: torch.Tensor
    attention: MultiHeadTrace
    residual_1: torch.Tensor
    norm_1: LayerNormTrace
    hidden: torch.Tensor
    norm_2: LayerNormTrace
    ffn_input: torch.Tensor
    ffn_pre_activation: torch.Tensor
    ffn_hidden: torch.Tensor
    ffn_output: torch.Tensor
    residual_2: torch.Tensor
    output: torch.Tensor
    weights: BlockWeights


def encoder_block(x: torch.Tensor, weights: BlockWeights, num_heads: int, norm_first: bool) -> EncoderBlockTrace:
    """One Transformer encoder block on ``x``, post-LN or pre-LN, no dropout (module docstring for the formulas).

    Args:
        x: (T, D) float32. weights: :class:`BlockWeights` of width D. num_heads: h, must divide D.
        norm_first: False = post-LN (Vaswani et al. 2017), True = pre-LN.

    Returns:
        The :class:`EncoderBlockTrace`.

    Raises:
        InputError: num_heads does not divide D (from :func:`multi_head_attention`).
    """
    w = weights

    def attend(z: torch.Tensor) -> MultiHeadTrace:
        return multi_head_attention(z, z, w.w_query, w.w_key, w.w_value, w.w_out, b_query=w.b_query, b_key=w.b_key,
                                    b_value=w.b_value, b_out=w.b_out, num_heads=num_heads)

    def ffn(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        pre = z @ w.w_1 + w.b_1
        hidden = torch.relu(pre)
        return pre, hidden, hidden @ w.w_2 + w.b_2

    if norm_first:
        norm_1 = layer_norm(x, w.gamma_1, w.beta_1)
        attention = attend(norm_1.output)
        residual_1 = x + attention.output
        hidden = residual_1
        norm_2 = layer_norm(hidden, w.gamma_2, w.beta_2)
        ffn_input = norm_2.output
        pre, relu, out = ffn(ffn_input)
        residual_2 = hidden + out
        output = residual_2
        attention_input = norm_1.output
    else:
        attention = attend(x)
        residual_1 = x + attention.output
        norm_1 = layer_norm(residual_1, w.gamma_1, w.beta_1)
        hidden = norm_1.output
        ffn_input = hidden
        pre, relu, out = ffn(ffn_input)
        residual_2 = hidden + out
        norm_2 = layer_norm(residual_2, w.gamma_2, w.beta_2)
        output = norm_2.output
        attention_input = x
    return EncoderBlockTrace(norm_first=norm_first, x=x, attention_input=attention_input, attention=attention,
                             residual_1=residual_1, norm_1=norm_1, hidden=hidden, norm_2=norm_2, ffn_input=ffn_input,
                             ffn_pre_activation=pre, ffn_hidden=relu, ffn_output=out, residual_2=residual_2,
                             output=output, weights=w)


def encoder_stack(x: torch.Tensor, weights: tuple[BlockWeights, ...], num_heads: int,
                  norm_first: bool) -> tuple[EncoderBlockTrace, ...]:
    """N blocks one after another (block ℓ's output is block ℓ+1's input); one trace per block.

    Args:
        x: (T, D). weights: one :class:`BlockWeights` per block (N ≥ 1). num_heads, norm_first: as in
            :func:`encoder_block`.
    """
    traces = []
    for w in weights:
        traces.append(encoder_block(x, w, num_heads, norm_first))
        x = traces[-1].output
    return tuple(traces)


def fill_attention(mha: nn.MultiheadAttention, w) -> None:
    """Copy W_q, W_k, W_v, W_O and their biases (``x @ W`` layout) into ``mha`` (in_proj = cat of the transposes).

    ``w``: anything with w_query, w_key, w_value, w_out, b_query, b_key, b_value, b_out ((D, D) and (D,) each),
    such as :class:`BlockWeights` or the decoder's ``AttentionWeights``. Call under ``torch.no_grad()``.
    """
    mha.in_proj_weight.copy_(torch.cat([w.w_query.T, w.w_key.T, w.w_value.T]))
    mha.in_proj_bias.copy_(torch.cat([w.b_query, w.b_key, w.b_value]))
    mha.out_proj.weight.copy_(w.w_out.T)
    mha.out_proj.bias.copy_(w.b_out)


def torch_layer(weights: BlockWeights, num_heads: int, norm_first: bool) -> nn.TransformerEncoderLayer:
    """``torch.nn.TransformerEncoderLayer`` holding ``weights`` (eval mode, dropout 0, ReLU, batch_first).

    Built on the meta device and filled in, so creating it draws nothing from the global generator.
    """
    d_model, dim_feedforward = weights.w_1.shape
    with torch.device("meta"):
        layer = nn.TransformerEncoderLayer(d_model, num_heads, dim_feedforward=dim_feedforward, dropout=0.0,
                                           activation="relu", batch_first=True, norm_first=norm_first)
    layer = layer.to_empty(device="cpu").eval()
    w = weights
    with torch.no_grad():
        fill_attention(layer.self_attn, w)
        layer.linear1.weight.copy_(w.w_1.T)
        layer.linear1.bias.copy_(w.b_1)
        layer.linear2.weight.copy_(w.w_2.T)
        layer.linear2.bias.copy_(w.b_2)
        layer.norm1.weight.copy_(w.gamma_1)
        layer.norm1.bias.copy_(w.beta_1)
        layer.norm2.weight.copy_(w.gamma_2)
        layer.norm2.bias.copy_(w.beta_2)
    return layer


def torch_stack_output(x: torch.Tensor, weights: tuple[BlockWeights, ...], num_heads: int,
                       norm_first: bool) -> torch.Tensor:
    """The output of N ``torch.nn.TransformerEncoderLayer`` s with ``weights`` applied in turn to ``x`` (T, D)."""
    out = x[None]  # (1, T, D)
    with torch.no_grad():
        for w in weights:
            out = torch_layer(w, num_heads, norm_first)(out)
    return out[0]
