"""What the multi-head and cross-attention pages' builders return: their walk-through, every number the pages
show.

Declared here, below the builders and their steps (``walkthrough.py``, the cross-attention page's ``page.py``) and the
export recipes (``recipe.py``) that read it, so that a recipe imports the walk-through it is handed and the module
that declares the page with its recipe imports the recipe: no circle between them.

Shape legend: T tokens, D = d_model, h heads, d_out = h · head_dim; float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional

import torch

from attention_core.inputs.stage import Inputs
from attention_core.masking.user_mask import MaskParts
from attention_core.multi_head.heads import MultiHeadTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class MultiHeadWalkthrough:
    """Every number of the multi-head and cross-attention pages.

    Attributes:
        settings: the settings it was built from.
        inputs: the input stage that supplies the (decoder) tokens and X.
        tokens: the m query tokens (the sentence; the decoder's in cross-attention).
        kv_tokens: the n key/value tokens (the same as ``tokens`` in self-attention;
            the encoder sentence's in cross-attention).
        x_query: (m, D). x_kv: (n, D).
        weights: "w_query", "w_key", "w_value" (D, d_out), "w_out" (d_out, d_out),
            "b_out" (d_out,): ``MultiHeadAttention``'s, see :func:`module_weights`.
        mask: the :class:`MaskParts` (self-attention), or None (cross-attention: no mask).
        trace: the unbatched :class:`MultiHeadTrace`: per head (h, m, n) scores and
            weights, concat (m, d_out), output (m, d_out).
        columns: head r owns columns ``columns[r]`` of Q, K, V and the concatenation.
        shapes: the reshape chain with b = 1: (b, m, d_out), (b, m, h, head_dim), (b, h, m, head_dim).
        blocked_rows, checks, warnings, notes: as in :class:`CausalWalkthrough`.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    kv_tokens: tuple[str, ...]
    x_query: torch.Tensor
    x_kv: torch.Tensor
    weights: Mapping[str, torch.Tensor]
    mask: Optional[MaskParts]
    trace: MultiHeadTrace
    columns: tuple[range, ...]
    shapes: tuple[tuple[int, ...], ...]
    blocked_rows: tuple[int, ...]
    checks: tuple[Check, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def is_cross(self) -> bool:
        return self.mask is None

    @property
    def scale(self) -> float:
        """1 / √head_dim, the factor every head's scores are multiplied by."""
        return self.trace.scale

    @property
    def wrong_scale(self) -> float:
        """1 / √d_out: the factor of a common published bug (every head's softmax too flat)."""
        return 1.0 / math.sqrt(self.trace.concat.shape[-1])
