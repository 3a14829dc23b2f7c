"""What the self-attention page's builder returns: its walk-through, every number the page shows.

Declared here, below the builder and its step-through (``walkthrough.py``) and the export recipe (``recipe.py``) that
read it, so that the recipe imports the walk-through it is handed and the module that declares the page with its
recipe imports the recipe: no circle between them.

Shape legend: T tokens, D = d_model, d_k = d_v; float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import torch

from attention_core.inputs.presets import Preset
from attention_core.inputs.tokens import Vocabulary
from attention_core.self_attention.functional import AttentionTrace, SelfAttentionTrace
from attention_core.shared_settings import SharedSettings


@dataclass(frozen=True)
class Walkthrough:
    """Every number the self-attention pages show, for one settings + edits.

    Attributes:
        settings: the settings it was built from.
        preset: their preset.
        tokens: the tokens as words of the vocabulary, length T.
        token_ids: their ids, length T.
        vocabulary: word -> id.
        base: the seeded (unedited) matrices by name: "x" (T, D), "w_query",
            "w_key", "w_value" (D, d_k); float32.
        trace: self-attention on the edited matrices.
        weightless: seed 004's attention without trainable weights on the edited X.
        torch_max_abs_diff: max |trace.output - F.scaled_dot_product_attention(Q, K, V)|.
        torch_matches: whether they agree to rtol = atol = 1e-5.
        weightless_torch_diff, weightless_torch_matches: the same for ``weightless``
            against ``F.scaled_dot_product_attention(X, X, X, scale=1.0)``.
        notes: remarks for the user (e.g. the softmax saturates).
    """

    settings: SharedSettings
    preset: Preset
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    vocabulary: Vocabulary
    base: Mapping[str, torch.Tensor]
    trace: SelfAttentionTrace
    weightless: AttentionTrace
    torch_max_abs_diff: float
    torch_matches: bool
    weightless_torch_diff: float
    weightless_torch_matches: bool
    notes: tuple[str, ...]
