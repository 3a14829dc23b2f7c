"""What the *multi-head latent attention* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.errors import Message
from attention_core.inputs.stage import Inputs
from attention_core.modern.mla import CoupledTrace, MLATrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check


@dataclass(frozen=True)
class MLAWalkthrough:
    """Every number of the *Multi-head latent attention* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X). tokens: the T tokens.
        trace: the :class:`~attention_core.modern.mla.MLATrace`. head: the head shown (0-based, kept below h).
        absorbed_query: (h, T, d_c) q^C W_UKᵀ. absorbed: (h, T, T) the scaled scores from c_KV and k^R alone.
        coupled: RoPE inside the content keys (:class:`~attention_core.modern.mla.CoupledTrace`).
        gqa_kv_heads: the toy GQA row's key/value heads. cache: (4,) numbers per token and layer (MHA, GQA, MQA,
            MLA) at the page's sizes. cache_v3: (4, 2) at DeepSeek-V3's: per layer, and KiB per token over its 61
            layers in 16-bit numbers. checks: see the module's docstring.
        warnings: a message for each latent wider than d_model (narrowed to d_model).
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    trace: MLATrace
    head: int
    absorbed_query: torch.Tensor
    absorbed: torch.Tensor
    coupled: CoupledTrace
    gqa_kv_heads: int
    cache: torch.Tensor
    cache_v3: torch.Tensor
    checks: tuple[Check, ...]
    warnings: tuple[Message, ...] = ()
