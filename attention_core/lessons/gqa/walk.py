"""What the *grouped-query attention* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

from attention_core.inputs.stage import Inputs
from attention_core.modern.gqa import GroupedQueryTrace
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check
from attention_core.transformer.generation import FLOAT32_BYTES, kv_cache_bytes

#: The variants the GQA page's KV-cache stage compares, by their number of key/value heads (a function of h).
VARIANTS = (("MHA", lambda h, kv: h), ("GQA", lambda h, kv: kv), ("MQA", lambda h, kv: 1))


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
