"""What the *sliding-window attention* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.inputs.stage import Inputs
from attention_core.self_attention.functional import AttentionTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class SlidingWalkthrough:
    """Every number of the *Sliding-window attention* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X).
        tokens: the T tokens. mask: (T, T) bool, the window. trace: the :class:`AttentionTrace` with that mask.
        reach: (L, T, T) bool, the receptive field after 1 … L layers. checks: against PyTorch.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    mask: torch.Tensor
    trace: AttentionTrace
    reach: torch.Tensor
    checks: tuple[Check, ...]

    @property
    def window(self) -> int:
        return self.settings.sliding_window.window
