"""RoPE against Hugging Face transformers' Llama rotary embedding, and its relative-position property."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import APP, element, element_step, errors, shown_checks
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest
from test_stepthrough import step_through_every_stage

from attention_core.errors import InputError, Message
from attention_core.lessons.rope.page import ROPE_PAGE, explain_rope, llama_rotation, rope_step_through
from attention_core.modern.rope import frequencies, rope_scores, rotate
from attention_core.settings import Settings


@settings(max_examples=30, deadline=None)
@given(half=st.integers(1, 8), t=st.integers(1, 10), base=st.sampled_from([2.0, 100.0, 10000.0, 500000.0]),
       seed=st.integers(0, 1000))
def test_rotation_equals_transformers_llama_rope(half, t, base, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(t, 2 * half, generator=g), torch.randn(t, 2 * half, generator=g)
    trace = rope_scores(q, k, base)
    q_ref, k_ref = llama_rotation(q, k, base)
    torch.testing.assert_close(trace.query_rotated, q_ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(trace.key_rotated, k_ref, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(half=st.integers(1, 8), t=st.integers(1, 10), shift=st.integers(0, 1000), seed=st.integers(0, 1000))
def test_scores_depend_only_on_the_offset(half, t, shift, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(t, 2 * half, generator=g), torch.randn(t, 2 * half, generator=g)
    trace = rope_scores(q, k, shift=shift)
    torch.testing.assert_close(trace.shifted_scores, trace.scores, rtol=1e-4, atol=1e-4)


def test_rotation_keeps_lengths_and_position_0_is_not_rotated():
    x = torch.randn(6, 8)
    angles = torch.arange(6.0)[:, None] * frequencies(8)
    rotated = rotate(x, angles)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotated[0], x[0])


def test_frequencies_follow_roformer():
    assert frequencies(4).tolist() == pytest.approx([1.0, 0.01])  # 10000^0, 10000^(-2/4)
    with pytest.raises(InputError, match="must be even"):
        frequencies(5)


def test_every_stage_and_entry():
    walk = ROPE_PAGE.walkthrough(Settings().set(**{"rope.head_dim": 6, "rope.shift": 7}))
    assert all(c.matches for c in walk.checks)
    for stage in ROPE_PAGE.stages:
        steps = rope_step_through(walk, stage)
        target = steps.stage.target
        for row in range(target.matrix.shape[0]):
            for col in range(target.matrix.shape[1]):
                explain_rope(walk, stage, row, col)
        assert steps.stage.formula(Message)
    assert "7" in rope_step_through(walk, "relative").stage.remark
    # the rotation entry states the number it explains
    q = float(walk.trace.query_rotated[2, 4])
    text = explain_rope(walk, "rotate_query", 2, 4)
    assert f"{q:.4g}"[:5] in text and r"\sin\varphi" in text
    phi = 2 * 10000 ** (-2 * 1 / 6)
    assert f"{phi:.4g}"[:5] in explain_rope(walk, "angles", 2, 1)
    assert math.isclose(float(walk.trace.angles[2, 1]), phi, rel_tol=1e-6)


def test_the_sinusoidal_stage_uses_the_same_angles_and_the_pair_drawing_is_the_rotation():
    from attention_core.lessons.rope.page import pair_vectors

    walk = ROPE_PAGE.walkthrough(Settings().set(**{"rope.head_dim": 4, "rope.base": 100.0}))
    pe = rope_step_through(walk, "sinusoidal").stage.panels[0].matrix
    torch.testing.assert_close(pe[:, 0::2], torch.sin(walk.trace.angles))  # PE's even columns: sin(m θᵢ)
    torch.testing.assert_close(pe[:, 1::2], torch.cos(walk.trace.angles))
    before, after, angle = pair_vectors(walk, "rotate_key", 3, 3)  # dimension 4 belongs to pair i = 1
    c, s = math.cos(angle), math.sin(angle)
    assert after == pytest.approx((c * before[0] - s * before[1], s * before[0] + c * before[1]), abs=1e-5)
    assert angle == pytest.approx(3 * 100 ** (-2 / 4), rel=1e-6)


def test_odd_head_dim_gets_a_message_and_keeps_the_other_settings():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/rope.py").run()
    assert not at.exception and not at.error, errors(at)
    at.number_input(key="setting_rope.shift").set_value(9).run()
    at.number_input(key="setting_rope.head_dim").set_value(5).run()
    assert not at.exception
    assert any("must be even" in e.value for e in at.error), errors(at)
    assert at.session_state["settings"].rope.shift == 9
    at.number_input(key="setting_rope.head_dim").set_value(6).run()
    assert not at.error


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stage_of_the_rope_page(language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/rope.py").run()
    assert step_through_every_stage(at, "rope", f"rope, {language}") == list(ROPE_PAGE.stages)
    assert any("apply_rotary_pos_emb" in line for line in shown_checks(at))
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"


@pytest.mark.parametrize("stage", ["rotate_query", "rotate_key"])
def test_the_pair_chart_comes_with_its_entry_and_shows_the_rotation_torch_computes(stage):
    """The rotation steps draw the explained entry's pair before and after its rotation; the step-through element
    moves the entry itself, so each entry sent comes with its chart (the Vega-Lite spec, with the arrows in its data,
    and the table under it): the pair is q (or k) and its rotation by m θᵢ computed here with torch. (The chart
    following a clicked cell: tests/app/test_browser_stepper.py.)"""
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/rope.py").run()
    element_step(at, **{"rope.stage": stage, "entry_row": 3, "entry_col": 1})
    walk = ROPE_PAGE.walkthrough(at.session_state["settings"])
    t = walk.trace
    vectors = t.query if stage == "rotate_query" else t.key
    half = t.head_dim // 2
    charts = element(at)["stages"][stage]["charts"]
    assert list(charts) == ["3,1,0"]  # the entry shown, with the page; the others when the element asks
    for key, chart in charts.items():
        row, col, _head = map(int, key.split(","))
        i = col % half
        before = vectors[row, [i, i + half]].double()
        phi = row * 10000.0 ** (-2 * i / t.head_dim)
        rotation = torch.tensor([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]], dtype=torch.float64)
        after = rotation @ before
        tips = [value for p in chart["spec"]["data"]["values"] if p["order"] == 1 for value in (p["x"], p["y"])]
        assert tips == pytest.approx(before.tolist() + after.tolist(), abs=1e-5)
        assert f"φ = {phi:.3f} rad" in chart["title_html"]
        assert chart["table"]["rows"] == ["q before" if stage == "rotate_query" else "k before",
                                          "q' after" if stage == "rotate_query" else "k' after"]
        assert chart["spec"]["description"].startswith("Two arrows from the origin")
