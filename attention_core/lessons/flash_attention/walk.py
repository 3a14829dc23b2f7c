"""What the *FlashAttention* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.inputs.stage import Inputs
from attention_core.modern.online_softmax import FlashTrace, Tile
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class FlashWalkthrough:
    """Every number of the *FlashAttention* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X).
        tokens: the T tokens. query, key, value: (T, d). trace: the :class:`FlashTrace`.
        reference: (T, d), full attention's output (SDPA). tile: the index of the tile shown (kept in range).
        checks: the final output against PyTorch.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    trace: FlashTrace
    reference: torch.Tensor
    tile: int
    checks: tuple[Check, ...]

    @property
    def current(self) -> Tile:
        return self.trace.tiles[self.tile]
