r"""Gated attention (Qiu et al. 2025, NeurIPS; Qwen3-Next, Qwen3.5): a sigmoid gate on each head's output before W_O.

Multi-head attention as ever, causal (the models are decoders), then each head's output Y is multiplied element by
element by a gate computed from the same hidden state as the query::

    Q_r = X W_q,r,  K_r = X W_k,r,  V_r = X W_v,r                (T, d_h)   per head r
    Y_r = softmax(Q_r K_rᵀ / √d_h + M) V_r                       (T, d_h)   M: causal, 0 / −∞
    G_r = X W_θ,r + b                                            (T, d_h)   the gate's logits (head-wise: (T, 1))
    Y′_r = Y_r ⊙ σ(G_r)                                          (T, d_h)   the gate at the paper's position G1
    O = [Y′_1, …, Y′_h] W_O                                      (T, D)

The paper's finding that matters here: softmax makes every row of weights sum to 1, so a head that has nothing to
add must still output a weighted mean of values; trained models park that weight on the first token, whose value is
small (the attention sink). A gate can close instead (σ → 0): the output goes to 0 whatever the weights, and in the
paper's trained models the weight on the first token mostly disappears.
:func:`null_query_output` shows the arithmetic: a query that matches nothing spends 1/i on each of its i keys.

``b`` is a constant added to every gate logit (the page's control; 0 in the paper and in Qwen3-Next, whose q_proj
has no bias): very negative closes every gate, very positive opens it (σ = 1, ordinary multi-head attention).

Conventions, those of transformers' ``Qwen3NextAttention`` (``models/qwen3_next``): ``q_proj`` is twice as wide and
holds, per head, the query's d_h columns then the gate's d_h; the output is ``attn_output * torch.sigmoid(gate)``
before ``o_proj``; scale 1/√d_h. Qwen3-Next also puts an RMSNorm on each head's query and key and RoPE on both;
the page shows neither (they change Q and K, not the gate), so its reference check replaces both norms by the
identity and passes cos = 1, sin = 0 (:func:`transformers_gated`). The head-wise variant (one gate per head and
token, the paper's second-best) is the element-wise one with each head's gate column repeated d_h times, which is how
it is checked against the same module.

Shape legend: T tokens, D = d_model, h = num_heads, d_h = head_dim, g = the gate's width per head (d_h, or 1
head-wise); per-head tensors are (h, T, ·). Float32.

Sources: Qiu et al. 2025, "Gated Attention for Large Language Models: Non-linearity, Sparsity, and
Attention-Sink-Free" (NeurIPS 2025; arXiv 2505.06708): the gate Y′ = Y ⊙ σ(X W_θ) after SDPA (position G1),
element-wise and head-specific (the best variant), head-wise (the second), and its analysis of the attention sink;
Qwen Team 2025, Qwen3-Next;
transformers' ``models/qwen3_next/modeling_qwen3_next.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import torch
from torch import nn

from attention_core import practice
from attention_core.errors import N_, InputError, Message
from attention_core.latex import number
from attention_core.masks import additive_mask, causal_mask
from attention_core.modern.sinks import uniform_query
from attention_core.multi_head.heads import split_heads
from attention_core.self_attention.functional import AttentionTrace, scaled_dot_product_attention
from attention_core.weights import linear_weights

#: The range of b, the shift added to every gate logit: σ(±20) is 1 − 2e-9 and 2e-9, shut and open in float32.
MIN_GATE_SHIFT, MAX_GATE_SHIFT = -20.0, 20.0
#: Below this σ a gate counts as closed, above 1 − this as open (the page says so).
GATE_SHUT = 0.01
#: The weights' names, in the order they are drawn.
WEIGHT_NAMES = ("w_query", "w_key", "w_value", "w_gate", "w_out")


def check_gate_shift(shift: float) -> None:
    """Raises InputError (field ``gated_attention.gate_shift``) for a shift outside [MIN, MAX] or NaN."""
    if not MIN_GATE_SHIFT <= shift <= MAX_GATE_SHIFT:  # also NaN
        raise InputError(N_("The gate's shift b must be between {low} and {high}; got {value}."),
                         field="gated_attention.gate_shift", low=MIN_GATE_SHIFT, high=MAX_GATE_SHIFT, value=shift)


def gated_weights(d_model: int, num_heads: int, head_dim: int, headwise: bool, seed: int) -> dict[str, torch.Tensor]:
    """The five projections, drawn like ``nn.Linear`` (U(−1/√fan_in, 1/√fan_in)) from a local generator.

    Returns:
        ``w_query``, ``w_key``, ``w_value`` (D, h d_h), ``w_gate`` (D, h d_h), or (D, h) head-wise, ``w_out``
        (h d_h, D); float32, applied as x @ W. Head r owns columns r·w … (r + 1)·w − 1.
    """
    g = torch.Generator().manual_seed(seed)
    width = num_heads * head_dim
    shapes = {"w_query": (d_model, width), "w_key": (d_model, width), "w_value": (d_model, width),
              "w_gate": (d_model, num_heads if headwise else width), "w_out": (width, d_model)}
    return linear_weights({name: shapes[name] for name in WEIGHT_NAMES}, g)


@dataclass(frozen=True)
class GatedTrace:
    """Every intermediate of gated multi-head attention on one sentence (the module docstring's equations).

    Attributes:
        x: (T, D). weights: :func:`gated_weights`. num_heads, head_dim: h, d_h. headwise: one gate per head and
            token. shift: b, added to every gate logit.
        query, key, value: (h, T, d_h). attention: scores, scaled, causal, weights (h, T, T), output Y (h, T, d_h).
        gate_logits: (h, T, g) X W_θ + b. gate: (h, T, g) σ(gate_logits). gated: (h, T, d_h) Y ⊙ σ (broadcast
            over d_h head-wise).
        concat: (T, h d_h) the gated heads side by side. output: (T, D) concat W_O.
        ungated_concat: (T, h d_h) Y without the gate. ungated_output: (T, D) ordinary multi-head attention.
    """

    x: torch.Tensor
    weights: dict[str, torch.Tensor]
    num_heads: int
    head_dim: int
    headwise: bool
    shift: float
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    attention: AttentionTrace
    gate_logits: torch.Tensor
    gate: torch.Tensor
    gated: torch.Tensor
    concat: torch.Tensor
    output: torch.Tensor
    ungated_concat: torch.Tensor
    ungated_output: torch.Tensor


def gated_attention(x: torch.Tensor, weights: Mapping[str, torch.Tensor], *, num_heads: int, head_dim: int,
                    headwise: bool = False, shift: float = 0.0) -> GatedTrace:
    """Gated multi-head attention on ``x`` (T, D), causal (Qiu et al. 2025, the gate G1 after SDPA).

    Args:
        x: (T, D) float32. weights: as :func:`gated_weights` returns (``w_gate`` (D, h) when ``headwise``).
        num_heads, head_dim: h, d_h. headwise: one gate per head and token instead of one per element.
        shift: b, added to every gate logit, in [MIN_GATE_SHIFT, MAX_GATE_SHIFT].

    Raises:
        InputError: a shift out of range or NaN (field ``gated_attention.gate_shift``).
    """
    check_gate_shift(shift)
    t = x.shape[0]
    w = weights
    query, key, value = (split_heads(x @ w[name], num_heads) for name in ("w_query", "w_key", "w_value"))
    attention = scaled_dot_product_attention(query, key, value, attn_mask=causal_mask(t))
    gate_logits = split_heads(x @ w["w_gate"], num_heads) + shift  # (h, T, d_h) or (h, T, 1)
    gate = torch.sigmoid(gate_logits)
    gated = attention.output * gate
    concat = gated.transpose(0, 1).reshape(t, num_heads * head_dim)
    ungated = attention.output.transpose(0, 1).reshape(t, num_heads * head_dim)
    return GatedTrace(x=x, weights=dict(w), num_heads=num_heads, head_dim=head_dim, headwise=headwise,
                      shift=float(shift), query=query, key=key, value=value, attention=attention,
                      gate_logits=gate_logits, gate=gate, gated=gated, concat=concat, output=concat @ w["w_out"],
                      ungated_concat=ungated, ungated_output=ungated @ w["w_out"])


def null_query_output(trace: GatedTrace) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A query that matches nothing (every score 0), causal, through each head and its gate.

    Returns:
        weights (T, T): 1/i on each of row i's i keys (no head can do otherwise: softmax sums to 1);
        mean (h, T, d_h): what each head outputs without a gate, the mean of v_1 … v_i;
        gated (h, T, d_h): that mean times the head's gate for token i, σ(G_r,i) (→ 0 as the gate closes).
    """
    weights, mean = uniform_query(trace.value)  # the sinks page's query that matches nothing, for every head
    return weights, mean, mean * trace.gate


def gated_loop(trace: GatedTrace) -> torch.Tensor:
    """(h, T, d_h) Y ⊙ σ(G) entry by entry in float64 Python arithmetic from Q, K, V and X W_θ: the naive reference
    (scores, causal softmax, weighted sum, sigmoid, product)."""
    h, d_h = trace.num_heads, trace.head_dim
    q, k, v = trace.query.tolist(), trace.key.tolist(), trace.value.tolist()
    logits = split_heads(trace.x.double() @ trace.weights["w_gate"].double(), h).tolist()
    t = len(q[0])
    out = []
    for r in range(h):
        rows = []
        for i in range(t):
            scores = [math.fsum(a * b for a, b in zip(q[r][i], k[r][j])) / math.sqrt(d_h) for j in range(i + 1)]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            total = math.fsum(exps)
            gates = [1.0 / (1.0 + math.exp(-(g + trace.shift))) for g in logits[r][i]]
            rows.append([math.fsum(e / total * v[r][j][c] for j, e in enumerate(exps)) * gates[0 if trace.headwise else c]
                         for c in range(d_h)])
        out.append(rows)
    return torch.tensor(out, dtype=torch.float32)


def transformers_gated(trace: GatedTrace) -> tuple[torch.Tensor, torch.Tensor]:
    """(output (T, D), weights (h, T, T)) of transformers' ``Qwen3NextAttention`` with the trace's weights copied in.

    A small ``Qwen3NextConfig`` (hidden_size D, h heads and h key/value heads, head_dim d_h, attention_bias=True so
    that b can sit in the gate's half of q_proj's bias; every other bias 0), eager attention; ``q_norm`` and
    ``k_norm`` replaced by the identity and (cos, sin) = (1, 0), as the page shows neither QK-norm nor RoPE; an
    additive causal mask (0 / −inf). Head-wise, each head's gate column is repeated d_h times (the module gates
    element-wise). Imported on first use.
    """
    from transformers import Qwen3NextConfig
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextAttention

    w, h, d_h = trace.weights, trace.num_heads, trace.head_dim
    t, d_model = trace.x.shape
    config = Qwen3NextConfig(hidden_size=d_model, num_attention_heads=h, num_key_value_heads=h, head_dim=d_h,
                             attention_bias=True, num_hidden_layers=1, vocab_size=8, intermediate_size=8,
                             moe_intermediate_size=8, num_experts=1, num_experts_per_tok=1)
    config._attn_implementation = "eager"
    layer = Qwen3NextAttention(config, layer_idx=0).eval()
    layer.q_norm, layer.k_norm = nn.Identity(), nn.Identity()
    gate = w["w_gate"].repeat_interleave(d_h, dim=1) if trace.headwise else w["w_gate"]  # (D, h d_h)
    query_and_gate = torch.cat([w["w_query"].view(d_model, h, d_h), gate.view(d_model, h, d_h)], dim=-1)
    bias = torch.cat([torch.zeros(h, d_h), torch.full((h, d_h), trace.shift)], dim=-1)  # b in the gate's half
    with torch.no_grad():
        layer.q_proj.weight.copy_(query_and_gate.reshape(d_model, 2 * h * d_h).T)
        layer.q_proj.bias.copy_(bias.reshape(-1))
        layer.k_proj.weight.copy_(w["w_key"].T)
        layer.v_proj.weight.copy_(w["w_value"].T)
        layer.o_proj.weight.copy_(w["w_out"].T)
        for linear in (layer.k_proj, layer.v_proj, layer.o_proj):
            linear.bias.zero_()
        hidden = trace.x[None]  # (1, T, D)
        cos, sin = torch.ones(1, t, d_h), torch.zeros(1, t, d_h)  # no rotation
        mask = additive_mask(causal_mask(t))[None, None]
        output, weights = layer(hidden, (cos, sin), mask)
    return output[0], weights[0]


def gated_output_exercise(y: float, logit: float, gate: float, gate_name: str, i: int, j: int,
                          value: float) -> practice.Exercise:
    r"""y'_{i,j} = y_{i,j} · σ(g) as an exercise (the gated page's practice, the check): ``y`` the head's output
    before the gate, ``logit`` g, ``gate`` σ(g), ``gate_name`` g's LaTeX (g_i headwise, g_{i,j} elementwise), ``value``
    the gated entry as shown (Qiu et al. 2025, the gate G1 after SDPA). Named mistakes: the gate forgotten, added, or its logit used."""
    mistakes = [practice.Mistake("gate_not_applied", y, Message(N_(
                    "That is {value}, y before the gate: multiply it by σ(g)."), value=f"{y:.4g}")),
                practice.Mistake("gate_added", y + gate, Message(N_(
                    "That is {value} = y + σ(g): the gate multiplies, y · σ(g)."), value=f"{y + gate:.4g}")),
                practice.Mistake("gate_no_sigmoid", y * logit, Message(N_(
                    "That is {value} = y · g: the gate is σ(g), not the logit g."), value=f"{y * logit:.4g}"))]
    return practice.Exercise(f"y'_{{{i},{j}}}", f"y_{{{i},{j}}} \\cdot \\sigma({gate_name})",
                             (f"y_{{{i},{j}}} = {number(y)}", f"{gate_name} = {number(logit)}"),
                             value, practice._kept(value, mistakes))
