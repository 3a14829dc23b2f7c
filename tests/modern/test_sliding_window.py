"""Sliding-window attention against torch's scaled_dot_product_attention, and its receptive field."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import APP, errors, shown_checks
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest
from test_stepthrough import step_through_every_stage

from attention_core.errors import InputError, Message
from attention_core.lessons.sliding_window.page import SLIDING_WINDOW, explain_sliding, sliding_window_step_through
from attention_core.modern.sliding import receptive_field, window_mask
from attention_core.self_attention.functional import scaled_dot_product_attention
from attention_core.settings import Settings


def test_the_window_of_3_on_5_tokens():
    assert window_mask(5, 3).int().tolist() == [
        [1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1]]
    assert window_mask(4, 2, causal=False).int().tolist() == [
        [1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    with pytest.raises(InputError, match="at least 1 token"):
        window_mask(4, 0)


@settings(max_examples=40, deadline=None)
@given(t=st.integers(1, 12), w=st.integers(1, 12), causal=st.booleans(), layers=st.integers(1, 4))
def test_the_receptive_field_grows_by_w_minus_1_per_layer(t, w, causal, layers):
    reach = receptive_field(window_mask(t, w, causal), layers)
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    for n in range(layers):
        span = (n + 1) * (w - 1)
        expected = ((i - j >= 0) & (i - j <= span)) if causal else ((i - j).abs() <= span)
        assert torch.equal(reach[n], expected), (n, t, w, causal)


@settings(max_examples=30, deadline=None)
@given(t=st.integers(1, 10), w=st.integers(1, 10), d=st.integers(1, 6), causal=st.booleans(),
       seed=st.integers(0, 999))
def test_equals_sdpa_with_the_window_mask(t, w, d, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(t, d, generator=g) for _ in range(3))
    mask = window_mask(t, w, causal)
    ours = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(ours.output, F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                               rtol=1e-5, atol=1e-5)
    assert int((ours.weights > 0).sum(-1).max()) <= (w if causal else 2 * w - 1)


def test_every_stage_and_entry():
    for causal in (True, False):
        walk = SLIDING_WINDOW.walkthrough(Settings().set(**{"causal_mask": causal}).set(**{"sliding_window.window": 2, "sliding_window.layers": 3}))
        assert all(c.matches for c in walk.checks)
        for stage in SLIDING_WINDOW.stages:
            steps = sliding_window_step_through(walk, stage)
            target = steps.stage.target
            for row in range(target.matrix.shape[0]):
                for col in range(target.matrix.shape[1]):
                    explain_sliding(walk, stage, row, col)
            assert steps.stage.formula(Message)
    walk = SLIDING_WINDOW.walkthrough(Settings().set(**{"sliding_window.window": 2, "sliding_window.layers": 3}))
    assert r"\le\; L (w - 1) = 3 \cdot 1 = 3" in explain_sliding(walk, "receptive", 4, 1)
    assert "R^{(3)}_{5,1} = 0" in explain_sliding(walk, "receptive", 4, 0)
    assert "depends on 4 input tokens" in sliding_window_step_through(walk, "receptive").stage.remark


def test_window_0_is_clamped_with_a_message_and_the_page_keeps_working():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/sliding_window.py").run()
    at.number_input(key="setting_sliding_window.layers").set_value(2).run()
    at.number_input(key="setting_sliding_window.window").set_value(0).run()
    assert not at.exception and not at.error, errors(at)
    assert at.session_state["settings"].sliding_window.window == 1
    assert any("window" in w.value.lower() for w in at.warning), [w.value for w in at.warning]
    assert at.session_state["settings"].sliding_window.layers == 2


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stage_of_the_sliding_window_page(language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/sliding_window.py").run()
    for causal in (True, False):
        at.toggle(key="setting_causal_mask").set_value(causal).run()
        assert step_through_every_stage(at, "sliding_window", f"sliding, {language}, causal {causal}") == list(
            SLIDING_WINDOW.stages)
        assert any("attn_mask=window_mask" in s for s in shown_checks(at))
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"


@settings(max_examples=40, deadline=None)
@given(t=st.integers(1, 12), w=st.integers(1, 12), causal=st.booleans())
def test_a_row_keeps_at_most_w_keys_causal_and_2w_minus_1_both_sided_as_the_page_says(t, w, causal):
    per_row = window_mask(t, w, causal).sum(-1)
    most = min(t, w) if causal else min(t, 2 * w - 1)
    assert int(per_row.max()) == most
    if not causal and t >= 2 * w - 1:
        assert int(per_row[w - 1]) == 2 * w - 1  # a row in the middle: w − 1 on each side and itself


def test_the_weights_formula_sums_over_the_window_it_computes():
    from attention_core.lessons.sliding_window.page import sliding_formula

    causal, both = sliding_formula("weights", True)[0], sliding_formula("weights", False)[0]
    assert "l=\\max\\left(1, i - w + 1\\right)}^{i}" in causal.replace(" ", " ")
    assert "\\min\\left(T, i + w - 1\\right)" in both and "^{i}" not in both
