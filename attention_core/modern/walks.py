"""What the modern attention pages' builders return: each page's walk-through, every number it shows.

Declared here, below the builders and steps (``<page>_walkthrough.py``) and the export recipes (``recipes.py``) that
read them, so that a recipe imports the walk-through it is handed and the walk-through's module, which declares the
page with its recipe, imports the recipe: no circle between them. Plain frozen records: nothing is computed here but
the GQA page's KV-cache table.

Shape legend: T tokens, D = d_model, h query heads, kv key/value heads, d = head_dim; float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.errors import Message
from attention_core.inputs.stage import Inputs
from attention_core.modern.alibi import AlibiTrace
from attention_core.modern.gqa import GroupedQueryTrace
from attention_core.modern.linear_attention import DeltaTrace, LinearTrace, RecurrentTrace
from attention_core.modern.mla import CoupledTrace, MLATrace
from attention_core.modern.online_softmax import FlashTrace, Tile
from attention_core.modern.rope import RopeTrace
from attention_core.modern.sinks import SinkSoftmax
from attention_core.self_attention.functional import AttentionTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check
from attention_core.transformer.generation import FLOAT32_BYTES, kv_cache_bytes

#: The variants the GQA page's KV-cache stage compares, by their number of key/value heads (a function of h).
VARIANTS = (("MHA", lambda h, kv: h), ("GQA", lambda h, kv: kv), ("MQA", lambda h, kv: 1))



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


@dataclass(frozen=True)
class GQAWalkthrough:
    """Every number of the *Grouped-query attention* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X).
        tokens: the T tokens. trace: the :class:`GroupedQueryTrace`.
        checks: our numbers against ``torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)`` (and
            against multi-head attention when num_kv_heads = h).
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    trace: GroupedQueryTrace
    checks: tuple[Check, ...]

    @property
    def cache_rows(self) -> tuple[tuple[str, int, int], ...]:
        """(variant, key/value heads, bytes per token of one layer's K and V cache in float32) for MHA, GQA, MQA."""
        h, kv, hd = self.trace.num_heads, self.trace.num_kv_heads, self.trace.head_dim
        return tuple((name, heads(h, kv), kv_cache_bytes(1, heads(h, kv), hd, 1, FLOAT32_BYTES))
                     for name, heads in VARIANTS)


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


@dataclass(frozen=True)
class RopeWalkthrough:
    """Every number of the *RoPE* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X).
        tokens: the T tokens. w_query: (D, d), W_q (Q = X W_q). trace: the :class:`RopeTrace`.
        checks: the rotation against transformers' Llama RoPE (the shift invariance is the "relative" stage's
            remark).
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    w_query: torch.Tensor
    trace: RopeTrace
    checks: tuple[Check, ...]


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


@dataclass(frozen=True)
class SinksWalkthrough:
    """Every number of the *Attention sinks* page's step-through.

    Attributes:
        settings: the settings it was built from. inputs: the input stage. tokens: the T tokens.
        query, key, value: (T, d) X W_q, X W_k, X W_v.
        scores: (T, T) q_i · k_j / √d, −∞ above the diagonal. weights: (T, T) their softmax. output: (T, d) weights V.
        uniform_weights, uniform_output: (T, T), (T, d) a query matching nothing (every score 0), no sink.
        uniform_sink_weights, uniform_sink_output: the same with the sink logit b.
        sink: the weights with the sink (:class:`SinkSoftmax`). sink_output: (T, d) sink.weights V.
        checks: see the module's docstring.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    scores: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor
    uniform_weights: torch.Tensor
    uniform_output: torch.Tensor
    uniform_sink_weights: torch.Tensor
    uniform_sink_output: torch.Tensor
    sink: SinkSoftmax
    sink_output: torch.Tensor
    checks: tuple[Check, ...]

    @property
    def sink_logit(self) -> float:
        return self.settings.sinks.sink_logit
