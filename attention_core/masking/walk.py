"""What the causal and dropout pages' builder returns: their walk-through, every number the pages show.

Declared here, below the builder and its step-through (``walkthrough.py``) and the export recipes (``recipe.py``) that
read it, so that a recipe imports the walk-through it is handed and the module that declares the pages with their
recipes imports the recipes: no circle between them.

Shape legend: T tokens, D = d_model, d_k = d_v; float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import torch

from attention_core.errors import Message
from attention_core.inputs.stage import Inputs
from attention_core.masking.user_mask import MaskParts
from attention_core.masks import MaskAfterSoftmaxTrace
from attention_core.self_attention.functional import SelfAttentionTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class CausalWalkthrough:
    """Every number of the causal-attention and dropout pages.

    Attributes:
        settings: the settings it was built from.
        inputs: the input stage that supplies the tokens and X (with the user's X edits).
        tokens: the T tokens.
        weights: "w_query", "w_key", "w_value", (D, d_k): the self-attention page's, or the example's
            ``CausalAttention``'s (see ``attention_core.masking.walkthrough.causal_weights``).
        weights_note: where the weights come from, a sentence for the page.
        mask: the :class:`MaskParts`.
        trace: the traced attention with the mask (and, on the dropout page in
            training, dropout): scores, weights, dropout_mask ... (T, T); output (T, d_k).
        other_route: the "softmax, zero the blocked, renormalise" route on the same scaled scores.
        route_max_abs_diff: max |other_route.weights - trace.weights| (0 up to rounding).
        dropout_p: the p applied (0 in eval mode or off the dropout page).
        keep: bool (T, T), the dropout mask (True = kept; all True when no dropout).
        row_sums: (T,), the row sums of the weights after dropout.
        blocked_rows: the rows (0-based) with every key blocked.
        checks: the comparisons with PyTorch.
        warnings: one explanation per fully blocked row (plain text; may contain the user's tokens).
        notes: other remarks for the user (plain text; may contain the user's tokens).
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    weights: Mapping[str, torch.Tensor]
    weights_note: Message
    mask: MaskParts
    trace: SelfAttentionTrace
    other_route: MaskAfterSoftmaxTrace
    route_max_abs_diff: float
    dropout_p: float
    keep: torch.Tensor
    row_sums: torch.Tensor
    blocked_rows: tuple[int, ...]
    checks: tuple[Check, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def scale(self) -> float:
        """1 / (1 - p), the factor kept weights are multiplied by."""
        return 1.0 / (1.0 - self.dropout_p)
