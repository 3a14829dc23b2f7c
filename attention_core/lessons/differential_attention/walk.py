"""What the *differential attention* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

from attention_core.inputs.stage import Inputs
from attention_core.modern.differential import CommonNoise, DifferentialTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class DifferentialWalkthrough:
    """Every number of the *Differential attention* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X). tokens: the T tokens.
        trace: the :class:`~attention_core.modern.differential.DifferentialTrace`. head: the head shown (0-based,
            kept below h). noise: the same noise in both maps' scores (:class:`~attention_core.modern.differential.
            CommonNoise`). checks: see :mod:`attention_core.lessons.differential_attention.page`.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    trace: DifferentialTrace
    head: int
    noise: CommonNoise
    checks: tuple[Check, ...]
