"""ALiBi against torch's scaled_dot_product_attention with a float mask, a direct loop and the paper's slopes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import APP, errors, shown_checks
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest
from test_stepthrough import step_through_every_stage

from attention_core.errors import Message
from attention_core.lessons.alibi.page import ALIBI_PAGE, alibi_step_through, build_alibi_walkthrough, explain_alibi
from attention_core.modern.alibi import alibi_attention, alibi_weights_loop, slopes
from attention_core.settings import Settings


def test_slopes_are_the_papers():
    assert slopes(8) == pytest.approx([2 ** -k for k in range(1, 9)])
    assert slopes(4) == pytest.approx([2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8])
    # not a power of 2: the 4-head slopes, then every other 8-head slope (the reference code's get_slopes(6))
    assert slopes(6) == pytest.approx([2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3])
    with pytest.raises(ValueError):
        slopes(0)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 8), t=st.integers(1, 8), d=st.integers(1, 6), causal=st.booleans(), seed=st.integers(0, 999))
def test_equals_sdpa_with_the_bias_as_a_float_mask_and_a_loop(h, t, d, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(t, d, generator=g) for _ in range(3))
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    trace = alibi_attention(q, k, v, h, mask)
    float_mask = trace.bias if mask is None else trace.bias.masked_fill(~mask, float("-inf"))
    reference = F.scaled_dot_product_attention(q.expand(h, t, d), k.expand(h, t, d), v.expand(h, t, d),
                                               attn_mask=float_mask)
    torch.testing.assert_close(trace.attention.output, reference, rtol=1e-5, atol=1e-5)
    loop = torch.tensor(alibi_weights_loop((q @ k.T / d ** 0.5).tolist(), slopes(h), causal))
    torch.testing.assert_close(trace.attention.weights, loop, rtol=1e-5, atol=1e-6)


def test_a_steeper_head_looks_closer():
    """With equal scores, the weight on the token itself grows with the slope."""
    t = 6
    zeros = torch.zeros(t, 2)
    trace = alibi_attention(zeros, zeros, torch.eye(t, 2), 4)
    on_self = trace.attention.weights[:, 3, 3]
    assert on_self.tolist() == sorted(on_self.tolist(), reverse=True)  # head 1 has the steepest slope


def test_every_stage_and_entry():
    settings = Settings().set(**{"alibi.num_heads": 3})
    walk = build_alibi_walkthrough(settings, settings.alibi)
    assert all(c.matches for c in walk.checks)
    for stage in ALIBI_PAGE.stages:
        steps = alibi_step_through(walk, stage)
        target = steps.stage.target
        for head in range(max(steps.num_heads, 1)):
            for row in range(target.matrix.shape[0]):
                for col in range(target.matrix.shape[1]):
                    explain_alibi(walk, stage, row, col, head)
        assert steps.stage.formula(Message)
    bias = float(walk.trace.bias[1, 4, 1])
    assert bias == pytest.approx(-slopes(3)[1] * 3)
    assert f"{bias:.4g}"[:5] in explain_alibi(walk, "bias", 4, 1, 1)
    assert r"-\infty" in explain_alibi(walk, "biased_scores", 1, 4, 0)  # causal: key after query


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stage_of_the_alibi_page(language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/alibi.py").run()
    assert not at.exception and not at.error, errors(at)
    for heads in (4, 3):
        at.number_input(key="setting_alibi.num_heads").set_value(heads).run()
        assert step_through_every_stage(at, "alibi", f"alibi, {language}, {heads} heads") == list(ALIBI_PAGE.stages)
        assert any("alibi_weights_loop" in s for s in shown_checks(at))
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"
