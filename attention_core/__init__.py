"""attention_core: the attention math of Attention Explorer, step by step.

Pure Python on torch and sympy; never imports streamlit. Every function
returns a frozen trace of its intermediates so that pages can show each
number. See ``self_attention.functional`` (the math), ``inputs`` (the input stage every page starts from),
``settings`` (the one settings object) and ``registry`` (every page).

Importing a module of the package (``attention_core.errors``) loads that module and what it imports, not every
page: the names below are looked up on first use (PEP 562), so only ``from attention_core import Settings``
composes the settings (and so imports the registry's pages).
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it.
_EXPORTS = {
    "AttentionTrace": "attention_core.self_attention.functional",
    "SelfAttentionTrace": "attention_core.self_attention.functional",
    "attention_without_weights": "attention_core.self_attention.functional",
    "scaled_dot_product_attention": "attention_core.self_attention.functional",
    "self_attention": "attention_core.self_attention.functional",
    "InputError": "attention_core.errors",
    "Walkthrough": "attention_core.self_attention.walkthrough",
    "build_walkthrough": "attention_core.self_attention.walkthrough",
    "Settings": "attention_core.settings",
    "validate_settings": "attention_core.settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use.

    Raises:
        AttributeError: not a public name of the package.
    """
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attention_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
