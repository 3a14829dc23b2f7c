r"""Attention sinks on small numbers: why softmax must put its weight somewhere, and gpt-oss's learned sink.

Softmax's weights on a query's keys are positive and sum to 1, so a head that has nothing to look for still hands out
all of its weight: a query that matches no key (every score equal) spreads 1/i over the i keys it may see, and its
output is the mean of their values, not 0. Trained models learn to park that weight on the first token
(StreamingLLM's attention sink; Xiao et al. 2024 §3.1). gpt-oss (OpenAI 2025) gives every head one learned logit b
in the softmax's denominator instead, a sink with no value:

.. math::
    w_{ij} = \frac{e^{s_{ij}}}{\sum_{l \le i} e^{s_{il}} + e^{b}}, \qquad \text{sink share}_i = \frac{e^{b}}
    {\sum_{l \le i} e^{s_{il}} + e^{b}}, \qquad \sum_{j \le i} w_{ij} = 1 - \text{sink share}_i < 1,

so a head can put weight "nowhere" and its output o_i = Σ_j w_ij v_j shrinks toward 0.

* :func:`sink_softmax`: the weights with a sink logit, and the sink's share; the largest logit of the row (the sink's
  included) is subtracted first, as transformers does (no change to the result).
* :func:`uniform_query`: the weights and output of a query that matches nothing (every score 0), with or without a
  sink.
* :func:`gpt_oss_reference`: transformers' ``GptOssAttention`` (a 1-head config, the page's W_q, W_k, W_v and sink
  copied in) and its ``eager_attention_forward``: the reference the page checks against.
* :func:`check_sink_logit`: a sink logit outside [MIN_SINK_LOGIT, MAX_SINK_LOGIT] raises InputError.

Shape legend: T tokens, D = d_model, d = d_k (width of q, k, v). Float32; scores and logits are unitless.

Sources: Xiao, Tian, Chen, Han & Lewis 2024, "Efficient Streaming Language Models with Attention Sinks", §3.1;
OpenAI 2025, "gpt-oss-120b & gpt-oss-20b model card" (attention: "a learned bias in the denominator of the
softmax" per head); transformers' ``models/gpt_oss/modeling_gpt_oss.py`` (``eager_attention_forward``: the sinks
concatenated to the logits as one more column, softmax, that column dropped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attention_core import practice
from attention_core.errors import N_, InputError, Message
from attention_core.latex import number

#: gpt-oss's learned sink logit b on the page: [MIN_SINK_LOGIT, MAX_SINK_LOGIT]. e^20 ≈ 5 · 10^8 already takes
#: every weight from scores of the page's size; beyond ±20 nothing more is seen (and e^b stays far from float32's
#: overflow at 88).
MIN_SINK_LOGIT, MAX_SINK_LOGIT = -20.0, 20.0


@dataclass(frozen=True)
class SinkSoftmax:
    """Softmax over a row's keys plus one sink logit.

    Attributes:
        weights: (T, T) e^{s_ij} / (Σ_l e^{s_il} + e^b); 0 where the mask blocks (s = −∞).
        share: (T,) e^b / (Σ_l e^{s_il} + e^b), the weight the sink takes (what the row's weights lack from 1).
        denominator: (T,) Σ_l e^{s_il − m_i} + e^{b − m_i}, with m_i = max(max_l s_il, b) (the shift transformers
            subtracts). shift: (T,) m_i.
    """

    weights: torch.Tensor
    share: torch.Tensor
    denominator: torch.Tensor
    shift: torch.Tensor


def check_sink_logit(sink: float) -> None:
    """Raise :class:`InputError` (field "sinks.sink_logit") for a sink logit outside the page's range or not finite."""
    if not (math.isfinite(sink) and MIN_SINK_LOGIT <= sink <= MAX_SINK_LOGIT):
        raise InputError(N_("The sink logit b must be between {low} and {high}; got {sink}."), field="sinks.sink_logit",
                         low=MIN_SINK_LOGIT, high=MAX_SINK_LOGIT, sink=sink)


def sink_softmax(scores: torch.Tensor, sink: float) -> SinkSoftmax:
    """The weights of (T, T) scores (−∞ where masked) with one sink logit ``sink`` in every row's denominator.

    Raises:
        InputError: the sink logit out of range (see :func:`check_sink_logit`).
    """
    check_sink_logit(sink)
    column = torch.full((scores.shape[0], 1), float(sink))
    combined = torch.cat([scores, column], dim=-1)  # (T, T + 1): the sink is one more key with no value
    shift = combined.max(dim=-1, keepdim=True).values
    exp = torch.exp(combined - shift)
    denominator = exp.sum(dim=-1)
    probs = exp / denominator[:, None]
    return SinkSoftmax(weights=probs[:, :-1], share=probs[:, -1], denominator=denominator, shift=shift[:, 0])


def uniform_query(value: torch.Tensor, sink: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A query that matches no key (every score 0), causal: ((T, T) weights, (..., T, d) outputs) for each position;
    ``value`` is (T, d) or per head (h, T, d).

    Without a sink row i spreads 1/i over its i keys and outputs the mean of v_1 … v_i; with a sink logit b each key
    gets 1/(i + e^b) and the output is i/(i + e^b) times that mean.
    """
    t = value.shape[-2]
    scores = torch.zeros(t, t).masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    weights = torch.softmax(scores, dim=-1) if sink is None else sink_softmax(scores, sink).weights
    return weights, weights @ value


@dataclass(frozen=True)
class GptOssReference:
    """transformers' gpt-oss attention on the page's numbers.

    Attributes:
        module_weights: (T, T) the weights ``GptOssAttention.forward`` returns (X in, its own projections, copied
            from the page's W_q, W_k, W_v). eager_weights, eager_output: (T, T), (T, d) ``eager_attention_forward``
            on the page's Q, K, V directly.
    """

    module_weights: torch.Tensor
    eager_weights: torch.Tensor
    eager_output: torch.Tensor


def gpt_oss_reference(x: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor,
                      sink: float) -> GptOssReference:
    """transformers' ``GptOssAttention`` with a config of 1 head (hidden_size D, head_dim d, no bias, full
    attention), the page's weights as its q/k/v projections (``nn.Linear`` holds Wᵀ) and ``sink`` as its one sink;
    RoPE switched off (cos = 1, sin = 0: the page's Q and K carry no positions); causal additive mask (0 / −∞).
    gpt-oss's rotation splits a head in halves, so an odd d gets one zero column in W_q, W_k and W_v (it adds 0 to
    every score) and the module's scaling is set back to 1/√d.

    Args:
        x: (T, D). w_query, w_key, w_value: (D, d), applied as x @ W. sink: b.
    """
    from transformers import GptOssConfig  # noqa: PLC0415 - only this page's checks need it
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention, eager_attention_forward  # noqa: PLC0415

    t, width = x.shape
    d = w_query.shape[1]
    even = d + d % 2
    padded = [torch.nn.functional.pad(w, (0, even - d)) for w in (w_query, w_key, w_value)]
    config = GptOssConfig(hidden_size=width, num_attention_heads=1, num_key_value_heads=1, head_dim=even,
                          attention_bias=False, num_hidden_layers=1, layer_types=["full_attention"],
                          attention_dropout=0.0)
    config._attn_implementation = "eager"
    module = GptOssAttention(config, layer_idx=0).eval()
    module.scaling = d ** -0.5
    with torch.no_grad():
        for linear, w in zip((module.q_proj, module.k_proj, module.v_proj), padded):
            linear.weight.copy_(w.T)
        module.o_proj.weight.zero_()
        module.sinks.fill_(float(sink))
        mask = torch.zeros(t, t).masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))[None, None]
        identity = (torch.ones(1, t, even // 2), torch.zeros(1, t, even // 2))  # cos, sin: no rotation
        _, module_weights = module(x[None], position_embeddings=identity, attention_mask=mask)
        q, k, v = ((x @ w)[None, None] for w in (w_query, w_key, w_value))  # (1, 1, T, d)
        output, weights = eager_attention_forward(module, q, k, v, mask, scaling=d ** -0.5)
    return GptOssReference(module_weights=module_weights[0, 0], eager_weights=weights[0, 0],
                           eager_output=output[0, :, 0])


def overflow_shift(scores: list[float], b: float) -> float:
    """The logit subtracted before e^x when the largest (the sink's included) is above 80 (e^x would overflow)."""
    top = max([s for s in scores if not math.isinf(s)] + [b])
    return top if top > 80 else 0.0


def _mistake(key: str, value: float, template: str, **params: object) -> practice.Mistake:
    return practice.Mistake(key, value, Message(template, value=f"{value:.4g}", **params))


def sink_weight_exercise(row_scores: list[float], b: float, i: int, c: int, value: float) -> practice.Exercise:
    """Weight w_{i,c} = e^{s_ic} / (Σ_{l≤i} e^{s_il} + e^b) as an exercise (the sinks page's practice, the check):
    ``row_scores`` query i's scores against keys 1..i, ``b`` the sink logit, ``value`` the weight as shown. Named
    mistakes: the sink forgotten (the plain softmax), b added instead of e^b, the sink's own share."""
    m = overflow_shift(row_scores, b)
    exps = [math.exp(s - m) for s in row_scores]
    sink = math.exp(b - m)
    plain, numerator = math.fsum(exps), exps[c - 1]
    mistakes = [
        _mistake("sink_forgotten", numerator / plain, N_("That is {value}, the plain softmax: add e^b = {sink} to "
                                                         "the denominator."), sink=f"{math.exp(b):.4g}"),
        _mistake("sink_not_exponentiated", numerator / (plain + b - m) if plain + b - m > 0 else math.nan,
                 N_("That is {value}: you added b itself to the denominator. The sink is one more logit: add "
                    "e^b, like every score's e^s.")),
        _mistake("sink_share_instead", sink / (plain + sink),
                 N_("That is {value}, the sink's own share e^b / (Σ e^s + e^b). Key j's weight has e^(s_ij) on "
                    "top.")),
    ]
    return practice.Exercise(
        f"w_{{{i},{c}}}", f"\\frac{{e^{{s_{{{i},{c}}}}}}}{{\\sum_{{l \\leq {i}}} e^{{s_{{{i},l}}}} + e^{{b}}}}",
        (practice.vector(f"s_{{{i},1..{i}}}", row_scores), f"b = {number(b)}"), value,
        practice._kept(value, [m_ for m_ in mistakes if not math.isnan(m_.value)]))
