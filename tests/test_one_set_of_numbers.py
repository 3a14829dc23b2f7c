"""One set of numbers across pages (issue 60): the pages that say they continue the self-attention page's numbers
project X with exactly its W_q, W_k, W_v (seeded by the example, with the learner's edits), so the same settings
give the same queries, keys and scaled scores on each; the one page that must draw its own says so and why."""

from __future__ import annotations

import pytest
import torch
from conftest import open_app

from attention_core.lessons.alibi.page import ALIBI_PAGE
from attention_core.lessons.causal.page import CAUSAL_PAGE
from attention_core.lessons.dropout.page import DROPOUT_PAGE
from attention_core.lessons.flash_attention.page import FLASH_ATTENTION
from attention_core.lessons.linear_attention.page import LINEAR_ATTENTION
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.lessons.sinks.page import SINKS
from attention_core.lessons.sliding_window.page import SLIDING_WINDOW
from attention_core.settings import Settings

EDITS = {"w_query": {(0, 1): 0.75}, "w_key": {(1, 0): -0.5}, "x": {(2, 2): 1.25}}


def queries(page, walk) -> torch.Tensor:
    """Q = X W_q of a page's walk-through, (T, d_k)."""
    if page in (CAUSAL_PAGE, DROPOUT_PAGE):
        return walk.trace.attention.query
    if page is SLIDING_WINDOW:
        return walk.trace.query
    return walk.query


@pytest.mark.parametrize("preset", ["seed000", "custom", "hello", "journey_v2"])
@pytest.mark.parametrize("page", [CAUSAL_PAGE, DROPOUT_PAGE, ALIBI_PAGE, SLIDING_WINDOW, FLASH_ATTENTION,
                                  LINEAR_ATTENTION, SINKS], ids=lambda page: page.key)
def test_the_pages_that_continue_self_attention_use_its_weights_and_edits(page, preset):
    s = Settings.for_preset(preset, seed=12, d_k=3)
    sa = SELF_ATTENTION_PAGE.walkthrough(s, EDITS)
    walk = page.walkthrough(s, EDITS)
    for name in ("w_query", "w_key", "w_value"):
        assert torch.equal(walk.inputs.projections[name], getattr(sa.trace, name)), name
    assert torch.equal(queries(page, walk), sa.trace.attention.query)  # the same Q, the edits included


def test_the_causal_pages_scaled_scores_are_the_self_attention_pages():
    """The issue's example: the same sentence, seed 12 and d_k 3 gave α₁,₁ = 0.7181 on one page and 0.0329 on the
    other; now the scores the mask is added to are equal, and so is the last row (which sees every key)."""
    s = Settings.for_preset("custom", seed=12, d_k=3)
    sa, causal = SELF_ATTENTION_PAGE.walkthrough(s), CAUSAL_PAGE.walkthrough(s)
    assert torch.equal(causal.trace.attention.scaled_scores, sa.trace.attention.scaled_scores)
    torch.testing.assert_close(causal.trace.attention.weights[-1], sa.trace.attention.weights[-1], rtol=0, atol=1e-7)
    assert "are the Self-attention page's (seed 12, with your edits)" in causal.weights_note


def test_the_example_whose_chapter_draws_causal_attentions_own_weights_says_so():
    """"Your journey", SelfAttention_v1: the chapter's CausalAttention draws nn.Linear after the same seed (its printed
    context vectors are asserted in tests/masking); the page says why its W differ from the Self-attention page's."""
    s = Settings.for_preset("journey_v1")
    causal = CAUSAL_PAGE.walkthrough(s)
    assert not torch.equal(causal.weights["w_query"], SELF_ATTENTION_PAGE.walkthrough(s).trace.w_query)
    assert "SelfAttention_v1 draws torch.rand instead" in causal.weights_note
    at = open_app("app_pages/causal.py", "journey_v1")
    assert any("SelfAttention_v1 draws torch.rand instead" in c.value for c in at.caption)
