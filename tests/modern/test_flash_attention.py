"""FlashAttention's tiled online softmax against torch's scaled_dot_product_attention."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import APP, errors, shown, shown_checks
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest
from test_stepthrough import step_through_every_stage

from attention_core.errors import InputError, Message
from attention_core.lessons.flash_attention.page import FLASH_ATTENTION, explain_flash, flash_attention_step_through
from attention_core.modern.online_softmax import flash_attention
from attention_core.settings import Settings


@settings(max_examples=40, deadline=None)
@given(t=st.integers(1, 12), data=st.data(), d=st.integers(1, 6), causal=st.booleans(), seed=st.integers(0, 999),
       spread=st.sampled_from([1.0, 10.0, 100.0]))
def test_tiled_output_equals_full_attention(t, data, d, causal, seed, spread):
    """Any block sizes, causal or not, scores up to ~1e4 (the running max keeps every exponent ≤ 0)."""
    bq, bk = data.draw(st.integers(1, t)), data.draw(st.integers(1, t))
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(t, d, generator=g) * spread, torch.randn(t, d, generator=g), torch.randn(t, 3, generator=g)
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    trace = flash_attention(q, k, v, bq, bk, mask)
    reference = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]
    # float32 rounds a score s by about |s| · 6e-8; with scores ~100× larger (spread 100, |s| up to ~1e3) the two
    # summation orders differ by up to ~1.4e-5 (t=8, d=4, seed=8, spread=100): the tolerance grows with the spread.
    tolerance = 1e-5 * max(1.0, spread / 10)
    torch.testing.assert_close(trace.output, reference, rtol=tolerance, atol=tolerance)
    assert len(trace.tiles) == -(-t // bq) * -(-t // bk)
    for tile in trace.tiles:
        assert float(tile.exp_scores.max()) <= 1.0  # exponents never positive
        assert bool((tile.max_after >= tile.max_before).all())


def test_the_running_sum_ends_as_the_softmax_denominator():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(6, 2, generator=g) for _ in range(3))
    trace = flash_attention(q, k, v, 2, 4)
    scores = q @ k.T / 2 ** 0.5
    torch.testing.assert_close(trace.maximum, scores.max(-1).values)
    torch.testing.assert_close(trace.total, torch.exp(scores - scores.max(-1, keepdim=True).values).sum(-1))


def test_block_sizes_outside_1_to_t_are_refused():
    q = torch.randn(4, 2)
    with pytest.raises(InputError, match="block_q = 5 must be between 1 and the number of tokens, 4"):
        flash_attention(q, q, q, 5, 2)
    with pytest.raises(InputError, match="block_k = 0"):
        flash_attention(q, q, q, 2, 0)


def test_every_stage_entry_of_every_tile():
    settings_ = Settings().set(**{"flash_attention.block_q": 3, "flash_attention.block_k": 2})
    walk = FLASH_ATTENTION.walkthrough(settings_)
    assert all(c.matches for c in walk.checks)
    for tile in range(len(walk.trace.tiles)):
        walk = FLASH_ATTENTION.walkthrough(settings_.set(**{"flash_attention.tile": tile}))
        for stage in FLASH_ATTENTION.stages:
            steps = flash_attention_step_through(walk, stage)
            target = steps.stage.target
            for row in range(target.matrix.shape[0]):
                for col in range(target.matrix.shape[1]):
                    explain_flash(walk, stage, row, col)
            assert steps.stage.formula(Message)
    assert "Max |tiled − full|" in flash_attention_step_through(walk, "final").stage.remark


def test_a_block_larger_than_the_sentence_gets_a_message_and_keeps_the_settings():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/flash_attention.py").run()
    at.number_input(key="setting_flash_attention.block_k").set_value(2).run()
    at.number_input(key="setting_flash_attention.block_q").set_value(12).run()  # the default sentence has 7 tokens
    assert not at.exception
    assert any("block_q = 12 must be between 1 and the number of tokens, 7" in shown(e.value) for e in at.error), \
        errors(at)
    assert at.session_state["settings"].flash_attention.block_k == 2
    at.number_input(key="setting_flash_attention.block_q").set_value(3).run()
    assert not at.error


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stage_of_the_flash_page_on_two_tiles(language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/flash_attention.py").run()
    for tile in (0, 5):
        at.selectbox(key="setting_flash_attention.tile").set_value(tile).run()
        assert step_through_every_stage(at, "flash_attention", f"flash, {language}, tile {tile}") == list(FLASH_ATTENTION.stages)
        assert any("scaled_dot_product_attention" in s for s in shown_checks(at))
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"
