"""What the *gated attention* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.errors import Message
from attention_core.inputs.stage import Inputs
from attention_core.modern.gated import GatedTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class GatedWalkthrough:
    """Every number of the *Gated attention* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X). tokens: the T tokens.
        trace: the :class:`~attention_core.modern.gated.GatedTrace`. head: the head shown (0-based, kept below h).
        null_weights: (T, T) a query that matches nothing: 1/i on each of row i's keys. null_mean: (h, T, d_h) what
            each head outputs then without a gate (the mean of v_1 … v_i). null_gated: (h, T, d_h) with the gate.
        checks: see :mod:`attention_core.lessons.gated_attention.page`. warnings: the gates shut or wide open.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    trace: GatedTrace
    head: int
    null_weights: torch.Tensor
    null_mean: torch.Tensor
    null_gated: torch.Tensor
    checks: tuple[Check, ...]
    warnings: tuple[Message, ...] = ()
