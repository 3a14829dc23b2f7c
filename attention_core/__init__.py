"""attention_core: the attention math of Attention Explorer, step by step.

Pure Python on torch and sympy; never imports streamlit. Every function
returns a frozen trace of its intermediates so that pages can show each
number. See ``functional`` (the math), ``modules`` (the seed articles'
nn.Modules), ``formulas`` (sympy), ``tokens``, ``presets``, ``settings`` and
``walkthrough`` (settings -> every number on the pages).
"""

from attention_core.errors import InputError
from attention_core.self_attention.functional import (
    AttentionTrace,
    SelfAttentionTrace,
    attention_without_weights,
    scaled_dot_product_attention,
    self_attention,
)
from attention_core.self_attention.walkthrough import Walkthrough, build_walkthrough
from attention_core.settings import Settings, validate_settings

__all__ = [
    "AttentionTrace",
    "InputError",
    "SelfAttentionTrace",
    "Settings",
    "Walkthrough",
    "attention_without_weights",
    "build_walkthrough",
    "scaled_dot_product_attention",
    "self_attention",
    "validate_settings",
]
