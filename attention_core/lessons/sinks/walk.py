"""What the *attention sinks* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.inputs.stage import Inputs
from attention_core.modern.sinks import SinkSoftmax
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class SinksWalkthrough:
    """Every number of the *Attention sinks* page's step-through.

    Attributes:
        settings: the settings it was built from. inputs: the input stage. tokens: the T tokens.
        query, key, value: (T, d) X W_q, X W_k, X W_v.
        scores: (T, T) q_i · k_j / √d, −∞ above the diagonal. weights: (T, T) their softmax. output: (T, d) weights V.
        uniform_weights, uniform_output: (T, T), (T, d) a query matching nothing (every score 0), no sink.
        uniform_sink_weights, uniform_sink_output: the same with the sink logit b.
        sink: the weights with the sink (:class:`SinkSoftmax`). sink_output: (T, d) sink.weights V.
        checks: see the module's docstring.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    scores: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor
    uniform_weights: torch.Tensor
    uniform_output: torch.Tensor
    uniform_sink_weights: torch.Tensor
    uniform_sink_output: torch.Tensor
    sink: SinkSoftmax
    sink_output: torch.Tensor
    checks: tuple[Check, ...]

    @property
    def sink_logit(self) -> float:
        return self.settings.sinks.sink_logit
