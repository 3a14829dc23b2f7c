r"""Differential attention (Ye et al. 2025, "Differential Transformer", ICLR 2025): two softmax maps, one subtracted.

Each head splits its query and key in two halves and computes two attention maps; their difference, the second
scaled by a learned λ, weighs the values (2d wide); a per-head RMSNorm and a fixed scale follow::

    [Q1_r, Q2_r] = X W_q,r,  [K1_r, K2_r] = X W_k,r    (T, d) each      d = head_dim
    V_r = X W_v,r                                    (T, 2d)
    A1_r = softmax(Q1_r K1_rᵀ / √d + M),  A2_r = softmax(Q2_r K2_rᵀ / √d + M)   M: causal
    λ = exp(λ_q1 · λ_k1) − exp(λ_q2 · λ_k2) + λ_init,  λ_init = 0.8 − 0.6 exp(−0.3 (l − 1))   (l: the layer, 1 …)
    D_r = A1_r − λ A2_r                              (T, T)  rows sum to 1 − λ, entries may be negative
    O_r = (1 − λ_init) · RMSNorm(D_r V_r)              (T, 2d) the norm without weights, over the 2d columns
    O = [O_1, …, O_h] W_O                            (T, D)

Noise that both maps share cancels in the difference, as a differential amplifier cancels common-mode noise: adding
the same matrix N to both maps' scores changes each map much more than it changes D (:func:`common_noise`).

Conventions, those of transformers' ``DiffLlamaAttention`` (``models/diffllama``): it runs 2h ordinary heads of width
d, whose first h give A1 and last h give A2, with the values of head r as [v-head r; v-head h + r]; λ's vectors are
shared by every head of the layer; ``groupnorm`` is ``nn.RMSNorm(2d, eps=1e-5, elementwise_affine=False)``; scale
1/√d; ``layer_idx`` = l − 1. The page shows no RoPE, so its reference check passes cos = 1, sin = 0
(:func:`transformers_differential`, which also lays out the page's weights as that module's heads).

Shape legend: T tokens, D = d_model, h differential heads, d = head_dim (the width of each half of q and k; values
are 2d wide); per-head tensors are (h, T, ·). Float32.

Sources: Ye et al. 2025, "Differential Transformer" (ICLR 2025; arXiv 2410.05258), sec. 2.1 (the differential
attention, λ's re-parameterisation and λ_init), sec. 2.2 (multi-head: GroupNorm per head, the (1 − λ_init) scale);
transformers' ``models/diffllama/modeling_diffllama.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import torch

from attention_core.errors import N_, InputError
from attention_core.masks import additive_mask, causal_mask
from attention_core.multi_head.heads import split_heads
from attention_core.self_attention.functional import AttentionTrace, scaled_dot_product_attention
from attention_core.weights import linear_weights

#: The layers l the page offers (λ_init's depth): 1 … MAX_LAYER.
MAX_LAYER = 32
#: The standard deviation of λ's four vectors at initialisation (DiffLlamaConfig's lambda_std_dev).
LAMBDA_STD = 0.1
#: The RMSNorm's ε (DiffLlamaConfig's rms_norm_eps).
NORM_EPS = 1e-5
#: The largest size of the shared noise the cancellation stage adds to both maps' scores.
MAX_NOISE = 5.0
#: The weights' names, in the order they are drawn.
WEIGHT_NAMES = ("w_query", "w_key", "w_value", "w_out")
LAMBDA_NAMES = ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")


def lambda_init(layer: int) -> float:
    """λ_init = 0.8 − 0.6 exp(−0.3 (l − 1)) of layer l (1-based; Ye et al. 2025, sec. 2.1).

    Raises:
        InputError: l not in 1 … MAX_LAYER (field ``differential_attention.layer``).
    """
    if not 1 <= layer <= MAX_LAYER:
        raise InputError(N_("The layer l must be between 1 and {high}; got {value}."),
                         field="differential_attention.layer", high=MAX_LAYER, value=layer)
    return 0.8 - 0.6 * math.exp(-0.3 * (layer - 1))


def differential_weights(d_model: int, num_heads: int, head_dim: int, seed: int) -> dict[str, torch.Tensor]:
    """The projections, drawn like ``nn.Linear`` from a local generator, and λ's four vectors ~ N(0, 0.1²).

    Returns:
        ``w_query``, ``w_key``, ``w_value`` (D, h · 2d): head r's columns r·2d … (r + 1)·2d − 1, the first d of q
        and k its first half; ``w_out`` (h · 2d, D); ``lambda_q1``, ``lambda_k1``, ``lambda_q2``, ``lambda_k2`` (d,).
        Float32, applied as x @ W.
    """
    g = torch.Generator().manual_seed(seed)
    width = num_heads * 2 * head_dim
    shapes = {"w_query": (d_model, width), "w_key": (d_model, width), "w_value": (d_model, width),
              "w_out": (width, d_model)}
    out = linear_weights({name: shapes[name] for name in WEIGHT_NAMES}, g)
    for name in LAMBDA_NAMES:
        out[name] = torch.randn(head_dim, generator=g) * LAMBDA_STD
    return out


def rms_norm(x: torch.Tensor, eps: float = NORM_EPS) -> torch.Tensor:
    """x / √(mean(x²) + ε) over the last dimension, no weights (``nn.RMSNorm(..., elementwise_affine=False)``)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


@dataclass(frozen=True)
class DifferentialTrace:
    """Every intermediate of differential attention on one sentence (the module docstring's equations).

    Attributes:
        x: (T, D). weights: :func:`differential_weights`. num_heads, head_dim: h, d. layer: l (1-based).
        query1, query2, key1, key2: (h, T, d). value: (h, T, 2d).
        first, second: the two maps (scores, scaled, causal, weights (h, T, T)).
        lambda_parts: (4,) λ_q1 · λ_k1, λ_q2 · λ_k2, exp of each. lambda_init: λ_init. lam: λ.
        difference: (h, T, T) A1 − λ A2. mixed: (h, T, 2d) difference @ V. normed: (h, T, 2d) RMSNorm(mixed).
        head_output: (h, T, 2d) (1 − λ_init) normed. concat: (T, h 2d). output: (T, D) concat W_O.
    """

    x: torch.Tensor
    weights: dict[str, torch.Tensor]
    num_heads: int
    head_dim: int
    layer: int
    query1: torch.Tensor
    query2: torch.Tensor
    key1: torch.Tensor
    key2: torch.Tensor
    value: torch.Tensor
    first: AttentionTrace
    second: AttentionTrace
    lambda_parts: torch.Tensor
    lambda_init: float
    lam: float
    difference: torch.Tensor
    mixed: torch.Tensor
    normed: torch.Tensor
    head_output: torch.Tensor
    concat: torch.Tensor
    output: torch.Tensor


def differential_attention(x: torch.Tensor, weights: Mapping[str, torch.Tensor], *, num_heads: int, head_dim: int,
                           layer: int = 1) -> DifferentialTrace:
    """Differential attention on ``x`` (T, D), causal (Ye et al. 2025, sec. 2.1-2.2).

    Args:
        x: (T, D) float32. weights: as :func:`differential_weights` returns. num_heads, head_dim: h, d.
        layer: l, 1 … MAX_LAYER (λ_init's depth).

    Raises:
        InputError: a layer out of range (field ``differential_attention.layer``).
    """
    init = lambda_init(layer)
    t, d = x.shape[0], head_dim
    w = weights
    query, key = split_heads(x @ w["w_query"], num_heads), split_heads(x @ w["w_key"], num_heads)  # (h, T, 2d)
    query1, query2, key1, key2 = query[..., :d], query[..., d:], key[..., :d], key[..., d:]
    value = split_heads(x @ w["w_value"], num_heads)  # (h, T, 2d)
    mask = causal_mask(t)
    first = scaled_dot_product_attention(query1, key1, value, attn_mask=mask)
    second = scaled_dot_product_attention(query2, key2, value, attn_mask=mask)
    dots = torch.stack([(w["lambda_q1"] * w["lambda_k1"]).sum(), (w["lambda_q2"] * w["lambda_k2"]).sum()])
    lambda_parts = torch.cat([dots, torch.exp(dots)])
    lam = float(lambda_parts[2] - lambda_parts[3]) + init
    difference = first.weights - lam * second.weights
    mixed = difference @ value
    normed = rms_norm(mixed)
    head_output = (1 - init) * normed
    concat = head_output.transpose(0, 1).reshape(t, num_heads * 2 * d)
    return DifferentialTrace(x=x, weights=dict(w), num_heads=num_heads, head_dim=d, layer=layer, query1=query1,
                             query2=query2, key1=key1, key2=key2, value=value, first=first, second=second,
                             lambda_parts=lambda_parts, lambda_init=init, lam=lam, difference=difference,
                             mixed=mixed, normed=normed, head_output=head_output, concat=concat,
                             output=concat @ w["w_out"])


@dataclass(frozen=True)
class CommonNoise:
    """The same noise N added to both maps' scaled scores (causal), and what each map and the difference do with it.

    Attributes:
        noise: (T, T) N, the same for every head and both maps. first, second, difference: (h, T, T) A1, A2 and
        A1 − λ A2 with the noise. first_change, difference_change: (h,) the largest |change| the noise makes to A1 and to the
        difference, per head.
    """

    noise: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    difference: torch.Tensor
    first_change: torch.Tensor
    difference_change: torch.Tensor


def common_noise(trace: DifferentialTrace, size: float, seed: int) -> CommonNoise:
    """Add ``size`` · N (N ~ N(0, 1), seeded, (T, T)) to both maps' scaled scores and recompute the maps.

    Raises:
        InputError: ``size`` outside [0, MAX_NOISE] or NaN (field ``differential_attention.noise``).
    """
    if not 0.0 <= size <= MAX_NOISE:
        raise InputError(N_("The noise's size must be between 0 and {high}; got {value}."),
                         field="differential_attention.noise", high=MAX_NOISE, value=size)
    t = trace.x.shape[0]
    noise = size * torch.randn(t, t, generator=torch.Generator().manual_seed(seed))
    mask = causal_mask(t)

    def noisy(scaled: torch.Tensor) -> torch.Tensor:
        return torch.softmax((scaled + noise).masked_fill(~mask, -math.inf), dim=-1)

    first, second = noisy(trace.first.scaled_scores), noisy(trace.second.scaled_scores)
    difference = first - trace.lam * second
    return CommonNoise(noise=noise.masked_fill(~mask, 0.0), first=first, second=second, difference=difference,
                       first_change=(first - trace.first.weights).abs().amax(dim=(-2, -1)),
                       difference_change=(difference - trace.difference).abs().amax(dim=(-2, -1)))


def differential_loop(trace: DifferentialTrace) -> torch.Tensor:
    """(h, T, 2d) the heads' outputs (1 − λ_init) RMSNorm((A1 − λ A2) V) in float64 Python arithmetic from Q1, Q2,
    K1, K2, V and λ's vectors, entry by entry: the naive reference."""
    d = trace.head_dim
    w = {name: trace.weights[name].tolist() for name in LAMBDA_NAMES}
    lam = (math.exp(math.fsum(a * b for a, b in zip(w["lambda_q1"], w["lambda_k1"])))
           - math.exp(math.fsum(a * b for a, b in zip(w["lambda_q2"], w["lambda_k2"]))) + trace.lambda_init)
    q1, q2, k1, k2, v = (m.tolist() for m in (trace.query1, trace.query2, trace.key1, trace.key2, trace.value))
    t = len(q1[0])

    def softmax_row(q: list[float], keys: list[list[float]], i: int) -> list[float]:
        scores = [math.fsum(a * b for a, b in zip(q, keys[j])) / math.sqrt(d) for j in range(i + 1)]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        return [e / math.fsum(exps) for e in exps]

    out = []
    for r in range(trace.num_heads):
        rows = []
        for i in range(t):
            a1, a2 = softmax_row(q1[r][i], k1[r], i), softmax_row(q2[r][i], k2[r], i)
            mixed = [math.fsum((a1[j] - lam * a2[j]) * v[r][j][c] for j in range(i + 1)) for c in range(2 * d)]
            scale = 1.0 / math.sqrt(math.fsum(m * m for m in mixed) / (2 * d) + NORM_EPS)
            rows.append([(1 - trace.lambda_init) * m * scale for m in mixed])
        out.append(rows)
    return torch.tensor(out, dtype=torch.float32)


def transformers_differential(trace: DifferentialTrace) -> tuple[torch.Tensor, torch.Tensor]:
    """(output (T, D), weights (2h, T, T): A1's h heads then A2's) of transformers' ``DiffLlamaAttention`` with the
    trace's weights copied in.

    A small ``DiffLlamaConfig`` (hidden_size D, 2h heads and 2h key/value heads of head_dim d, no bias, eager
    attention), ``layer_idx`` = l − 1; the page's head r becomes the module's heads r (its first halves of q and k,
    the first d columns of its values) and h + r (the second halves); λ's four vectors copied in; (cos, sin) =
    (1, 0), as the page shows no RoPE; an additive causal mask (0 / −inf). Imported on first use.
    """
    from transformers import DiffLlamaConfig
    from transformers.models.diffllama.modeling_diffllama import DiffLlamaAttention

    w, h, d = trace.weights, trace.num_heads, trace.head_dim
    t, d_model = trace.x.shape
    config = DiffLlamaConfig(hidden_size=d_model, num_attention_heads=2 * h, num_key_value_heads=2 * h, head_dim=d,
                             num_hidden_layers=1, vocab_size=8, intermediate_size=8, rms_norm_eps=NORM_EPS)
    config._attn_implementation = "eager"
    layer = DiffLlamaAttention(config, layer_idx=trace.layer - 1).eval()

    def halves(m: torch.Tensor) -> torch.Tensor:  # (D, h · 2d), head r = [half 1, half 2] -> (D, [halves 1; halves 2])
        split = m.view(m.shape[0], h, 2, d)
        return torch.cat([split[:, :, 0].reshape(m.shape[0], h * d), split[:, :, 1].reshape(m.shape[0], h * d)], 1)

    with torch.no_grad():
        layer.q_proj.weight.copy_(halves(w["w_query"]).T)
        layer.k_proj.weight.copy_(halves(w["w_key"]).T)
        layer.v_proj.weight.copy_(halves(w["w_value"]).T)
        layer.o_proj.weight.copy_(w["w_out"].T)
        for name in LAMBDA_NAMES:
            getattr(layer, name).copy_(w[name])
        cos, sin = torch.ones(1, t, d), torch.zeros(1, t, d)  # no rotation
        mask = additive_mask(causal_mask(t))[None, None]
        output, weights = layer(trace.x[None], (cos, sin), mask)
    return output[0], weights[0]
