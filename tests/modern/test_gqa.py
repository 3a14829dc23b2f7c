"""Grouped-query and multi-query attention against torch's scaled_dot_product_attention(enable_gqa=True)."""

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
from attention_core.lessons.gqa.page import GQA_PAGE, explain_gqa, gqa_step_through
from attention_core.modern.gqa import grouped_query_attention, kv_head_of
from attention_core.multi_head.heads import multi_head_attention
from attention_core.settings import Settings


@st.composite
def shapes(draw):
    h = draw(st.sampled_from([1, 2, 3, 4, 6, 8]))
    kv = draw(st.sampled_from([k for k in range(1, h + 1) if h % k == 0]))
    return h, kv, draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(1, 5))


@settings(max_examples=40, deadline=None)
@given(shape=shapes(), causal=st.booleans(), seed=st.integers(0, 1000))
def test_equals_torch_sdpa_with_enable_gqa(shape, causal, seed):
    h, kv, hd, t, d = shape
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(t, d, generator=g)
    wq, wk, wv = (torch.randn(d, n * hd, generator=g) for n in (h, kv, kv))
    mask = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    trace = grouped_query_attention(x, wq, wk, wv, None, num_heads=h, num_kv_heads=kv, attn_mask=mask)
    q = (x @ wq).view(t, h, hd).transpose(0, 1)[None]
    k = (x @ wk).view(t, kv, hd).transpose(0, 1)[None]
    v = (x @ wv).view(t, kv, hd).transpose(0, 1)[None]
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)[0]
    torch.testing.assert_close(trace.attention.output, reference, rtol=1e-5, atol=1e-5)
    # heads of one group read the very same keys
    for r in range(h):
        torch.testing.assert_close(trace.key_repeated[r], trace.key_heads[trace.groups[r]])


def test_with_as_many_kv_heads_as_query_heads_it_is_multi_head_attention():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 4, generator=g)
    w = [torch.randn(4, 6, generator=g) for _ in range(3)] + [torch.randn(6, 6, generator=g)]  # W_q, W_k, W_v, W_O
    ours = grouped_query_attention(x, *w, num_heads=3, num_kv_heads=3)
    torch.testing.assert_close(ours.output, multi_head_attention(x, x, *w, num_heads=3).output)


def test_groups_are_consecutive_query_heads():
    assert kv_head_of(8, 2) == (0, 0, 0, 0, 1, 1, 1, 1)
    assert kv_head_of(4, 1) == (0, 0, 0, 0)
    assert kv_head_of(4, 4) == (0, 1, 2, 3)
    with pytest.raises(InputError, match="you can use 1, 2, 3, 6"):
        kv_head_of(6, 4)


def test_every_stage_entry_and_the_checks():
    for kv in (1, 2, 4):
        walk = GQA_PAGE.walkthrough(Settings().set(**{"gqa.num_kv_heads": kv}))
        assert all(c.matches for c in walk.checks) and len(walk.checks) == (2 if kv == 4 else 1)
        for stage in GQA_PAGE.stages:
            steps = gqa_step_through(walk, stage)
            target = steps.stage.target
            for head in range(max(steps.num_heads, 1)):
                for row in range(target.matrix.shape[0]):
                    for col in range(target.matrix.shape[1]):
                        steps.stage.entry(row, col, head, Message)
            assert steps.stage.formula(Message)
    with pytest.raises(IndexError):
        explain_gqa(walk, "groups", 4, 0)


def test_the_kv_cache_shrinks_by_h_over_num_kv_heads():
    walk = GQA_PAGE.walkthrough(Settings().set(**{"gqa.num_heads": 8, "gqa.num_kv_heads": 2, "gqa.head_dim": 2}))
    assert walk.cache_rows == (("MHA", 8, 128), ("GQA", 2, 32), ("MQA", 1, 16))
    assert "4 × smaller" in gqa_step_through(walk, "kv_cache").stage.remark


def test_too_wide_is_refused():
    with pytest.raises(InputError, match="32 columns do not fit"):
        GQA_PAGE.walkthrough(Settings().set(**{"gqa.num_heads": 8, "gqa.head_dim": 4}))


def test_the_page_keeps_its_settings_on_a_bad_head_count():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/gqa.py").run()
    assert not at.exception and not at.error, errors(at)
    assert any("GQA:" in m.value for m in at.markdown)
    at.number_input(key="setting_gqa.head_dim").set_value(3).run()
    at.number_input(key="setting_gqa.num_kv_heads").set_value(3).run()
    assert any("cannot be shared equally by 3" in e.value for e in at.error), errors(at)
    assert at.session_state["settings"].gqa.head_dim == 3
    at.number_input(key="setting_gqa.num_kv_heads").set_value(1).run()
    assert not at.error and any("MQA:" in m.value for m in at.markdown)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stage_with_mha_gqa_and_mqa(language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/gqa.py").run()
    for kv in (4, 2, 1):
        at.number_input(key="setting_gqa.num_kv_heads").set_value(kv).run()
        assert step_through_every_stage(at, "gqa", f"gqa, {language}, kv {kv}") == list(GQA_PAGE.stages)
        assert any("enable_gqa=True" in s for s in shown_checks(at))
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"
