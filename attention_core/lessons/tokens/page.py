"""The *tokens* page's declaration (the self-attention walk-through's input stage, below it:
``attention_core.self_attention.walkthrough``)."""

from __future__ import annotations

from attention_core.errors import N_
from attention_core.page import Page

TOKENS = Page(
    key="tokens", title=N_("Tokens & embeddings"), icon=":material/abc:", section="self_attention",
    summary=N_("Tokens & embeddings: from a sentence to the matrix X"),
)
