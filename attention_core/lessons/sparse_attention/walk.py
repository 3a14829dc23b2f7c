"""What the *DeepSeek sparse attention* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

from attention_core.errors import Message
from attention_core.inputs.stage import Inputs
from attention_core.modern.sparse import SparseTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class SparseWalkthrough:
    """Every number of the *DeepSeek sparse attention* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X). tokens: the T tokens.
        trace: the :class:`~attention_core.modern.sparse.SparseTrace` (the indexer, MLA dense and sparse).
        head: MLA's head shown (0-based, kept below h).
        checks: see :mod:`attention_core.lessons.sparse_attention.page`. warnings: a latent or the indexer's width
            changed to fit, or k ≥ T (every key kept: dense attention).
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    trace: SparseTrace
    head: int
    checks: tuple[Check, ...]
    warnings: tuple[Message, ...] = ()
