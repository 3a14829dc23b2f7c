"""What the *RoPE* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.inputs.stage import Inputs
from attention_core.modern.rope import RopeTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class RopeWalkthrough:
    """Every number of the *RoPE* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X).
        tokens: the T tokens. w_query: (D, d), W_q (Q = X W_q). trace: the :class:`RopeTrace`.
        checks: the rotation against transformers' Llama RoPE (the shift invariance is the "relative" stage's
            remark).
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    w_query: torch.Tensor
    trace: RopeTrace
    checks: tuple[Check, ...]
