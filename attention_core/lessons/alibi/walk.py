"""What the *ALiBi* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.inputs.stage import Inputs
from attention_core.modern.alibi import AlibiTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class AlibiWalkthrough:
    """Every number of the *ALiBi* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X).
        tokens: the T tokens. query, key: (T, d). trace: the :class:`AlibiTrace`. checks: against PyTorch and a loop.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    query: torch.Tensor
    key: torch.Tensor
    trace: AlibiTrace
    checks: tuple[Check, ...]
