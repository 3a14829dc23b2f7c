"""What the *linear attention and the delta rule* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.inputs.stage import Inputs
from attention_core.modern.linear_attention import DeltaTrace, LinearTrace, RecurrentTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class LinearWalkthrough:
    """Every number of the *Linear attention and the delta rule* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X). tokens: the T tokens.
        query, key, value: (T, d) X W_q, X W_k, X W_v.
        parallel: causal linear attention, all at once. recurrent: the same, token by token (every S_t, z_t).
        softmax: (T, T) causal softmax attention's weights on the same Q, K (for comparison).
        delta: the delta rule (α = 1). gated: the gated delta rule (the page's α). Both with the page's β.
        memory: (T, 3) numbers kept after t = 1..T tokens: KV cache, S and z, S. memory_at_scale: (4, 3) the same
            for one head of d = 128 at MODEL_CONTEXTS tokens.
        step: the step t shown (0-based, kept below T). checks: see the module's docstring.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    parallel: LinearTrace
    recurrent: RecurrentTrace
    softmax: torch.Tensor
    delta: DeltaTrace
    gated: DeltaTrace
    memory: torch.Tensor
    memory_at_scale: torch.Tensor
    step: int
    checks: tuple[Check, ...]

    @property
    def beta(self) -> float:
        return self.settings.linear_attention.beta

    @property
    def alpha(self) -> float:
        return self.settings.linear_attention.alpha
