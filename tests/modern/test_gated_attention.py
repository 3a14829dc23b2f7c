"""Gated attention: the page's numbers equal transformers' ``Qwen3NextAttention`` (q_norm and k_norm replaced by the
identity, RoPE off with cos = 1 and sin = 0, the page's weights and shift copied in), PyTorch's SDPA times
``torch.sigmoid`` and a float64 loop; the head-wise gate is the element-wise one with repeated columns; a shut gate
silences the heads while softmax still sums to 1 (the sink demonstration); each named mistake fires on its own
wrong value only; bad input gets messages. Every comparison is float32 with rtol = atol = 1e-5 (TOL): the measured
differences are ~1e-7."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import APP, errors, shown_checks, shown_warnings
from streamlit.testing.v1 import AppTest
from test_practice import _check_stage

from attention_core.errors import InputError
from attention_core.lessons.gated_attention.page import GATED_ATTENTION, gated_attention_step_through
from attention_core.modern.gated import (
    gated_attention,
    gated_loop,
    gated_weights,
    null_query_output,
    transformers_gated,
)
from attention_core.settings import Settings, validate_settings

TOL = 1e-5


def _trace(t=6, d_model=8, h=2, d_h=4, headwise=False, shift=0.0, seed=0):
    x = torch.randn(t, d_model, generator=torch.Generator().manual_seed(seed + 100))
    w = gated_weights(d_model, h, d_h, headwise, seed)
    return gated_attention(x, w, num_heads=h, head_dim=d_h, headwise=headwise, shift=shift)


@pytest.mark.parametrize("sizes", [dict(), dict(h=1, d_h=1), dict(h=3, d_h=3, headwise=True),
                                   dict(t=1, shift=-2.5), dict(t=12, d_model=16, h=8, d_h=2, shift=3.0, seed=7),
                                   dict(h=4, d_h=5, headwise=True, shift=-20.0, seed=3)])
def test_the_page_equals_qwen3_next_attention_sdpa_and_a_float64_loop(sizes):
    trace = _trace(**sizes)
    output, weights = transformers_gated(trace)
    torch.testing.assert_close(trace.output, output, rtol=TOL, atol=TOL)
    torch.testing.assert_close(trace.attention.weights, weights, rtol=TOL, atol=TOL)
    torch.testing.assert_close(trace.gated, gated_loop(trace), rtol=TOL, atol=TOL)
    t = trace.x.shape[0]
    sdpa = torch.nn.functional.scaled_dot_product_attention(
        trace.query, trace.key, trace.value, is_causal=True)
    torch.testing.assert_close(trace.gated, sdpa * torch.sigmoid(trace.gate_logits), rtol=TOL, atol=TOL)
    assert trace.gate_logits.shape == (trace.num_heads, t, 1 if trace.headwise else trace.head_dim)


def test_the_reference_really_differs_with_its_qk_norms_so_the_identity_is_needed():
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRMSNorm

    trace = _trace()
    norm = Qwen3NextRMSNorm(trace.head_dim)
    assert (norm(trace.query) - trace.query).abs().max() > 0.1  # the norm would change Q visibly


def test_the_headwise_gate_is_the_elementwise_gate_with_each_heads_column_repeated():
    headwise = _trace(headwise=True, shift=0.7, seed=4)
    w = dict(headwise.weights)
    w["w_gate"] = w["w_gate"].repeat_interleave(headwise.head_dim, dim=1)
    elementwise = gated_attention(headwise.x, w, num_heads=headwise.num_heads, head_dim=headwise.head_dim, shift=0.7)
    torch.testing.assert_close(elementwise.output, headwise.output, rtol=TOL, atol=TOL)
    assert torch.equal(headwise.gate.expand_as(elementwise.gate), elementwise.gate)


def test_a_shut_gate_silences_every_head_while_softmax_still_sums_to_one():
    shut, open_, plain = _trace(shift=-20.0), _trace(shift=20.0), _trace()
    torch.testing.assert_close(shut.attention.weights.sum(-1), torch.ones(2, 6), rtol=TOL, atol=TOL)
    assert float(shut.gated.abs().max()) < 1e-7 and float(shut.output.abs().max()) < 1e-7
    torch.testing.assert_close(open_.output, open_.ungated_output, rtol=TOL, atol=TOL)  # σ(20 + g) ≈ 1
    torch.testing.assert_close(plain.ungated_output, open_.ungated_output)  # b changes the gate only
    assert float((plain.output - plain.ungated_output).abs().max()) > 0.05  # at b = 0 the gate matters


def test_a_query_that_matches_nothing_outputs_the_mean_without_a_gate_and_the_gated_mean_with_it():
    trace = _trace(t=5, shift=-1.0)
    weights, mean, gated = null_query_output(trace)
    expected = torch.tril(torch.ones(5, 5)) / torch.arange(1, 6)[:, None]
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(mean, trace.value.cumsum(1) / torch.arange(1, 6)[None, :, None], rtol=TOL, atol=TOL)
    torch.testing.assert_close(gated, mean * trace.gate, rtol=TOL, atol=TOL)
    walk = GATED_ATTENTION.walkthrough(Settings().set(**{"gated_attention.gate_shift": -20.0}))
    assert float(walk.null_gated.abs().max()) < 1e-7 and float(walk.null_mean.abs().max()) > 0.1
    remark = str(gated_attention_step_through(walk, "sink").stage.remark)
    assert "to 0.000 (0%)" in remark


def test_the_page_checks_pass_and_extreme_shifts_say_what_they_do():
    walk = GATED_ATTENTION.walkthrough(Settings())
    assert [c.against for c in walk.checks] == ["transformers", "transformers", "pytorch", "float_loop"]
    assert all(c.matches for c in walk.checks), [(c.reference, c.max_abs_diff) for c in walk.checks]
    assert max(c.max_abs_diff for c in walk.checks) < 1e-6
    assert walk.warnings == ()
    shut = GATED_ATTENTION.walkthrough(Settings().set(**{"gated_attention.gate_shift": -20.0}))
    assert len(shut.warnings) == 1 and "every gate is shut" in str(shut.warnings[0])
    wide = GATED_ATTENTION.walkthrough(Settings().set(**{"gated_attention.gate_shift": 20.0}))
    assert len(wide.warnings) == 1 and "wide open" in str(wide.warnings[0])




@pytest.mark.parametrize("changes", [{}, {"gated_attention.gate_shift": 1.5, "gated_attention.headwise": True},
                                     {"gated_attention.gate_shift": -3.0, "gated_attention.head": 1}])
def test_each_named_mistake_fires_on_its_own_wrong_value_only(changes):
    walk = GATED_ATTENTION.walkthrough(Settings().set(**changes))
    seen: dict[str, int] = {}
    for stage in GATED_ATTENTION.stages:  # answer, rounding, each mistake named by its own value only (test_practice's check)
        _check_stage(f"gated/{stage}", gated_attention_step_through(walk, stage), seen)
    page_mistakes = {"gate_no_sigmoid", "gate_not_applied", "gate_added", "nothing_sum_not_mean"}
    assert page_mistakes <= set(seen)
    assert ("gate_shift_forgotten" in seen) == bool(changes.get("gated_attention.gate_shift"))


def test_the_mistakes_values_are_what_the_mistakes_compute():
    walk = GATED_ATTENTION.walkthrough(Settings().set(**{"gated_attention.gate_shift": 0.5}))
    t, r = walk.trace, walk.head
    gate_ex = gated_attention_step_through(walk, "gate").stage.exercise(2, 1, 0)
    logit = float(t.gate_logits[r, 2, 1])
    values = {m.key: m.value for m in gate_ex.mistakes}
    assert values["gate_no_sigmoid"] == pytest.approx(logit)
    assert values["gate_sigmoid_sign"] == pytest.approx(1 / (1 + math.exp(logit)), abs=1e-6)
    gated_ex = gated_attention_step_through(walk, "gated").stage.exercise(2, 1, 0)
    y, gate = float(t.attention.output[r, 2, 1]), float(t.gate[r, 2, 1])
    values = {m.key: m.value for m in gated_ex.mistakes}
    assert gated_ex.answer == pytest.approx(y * gate, abs=1e-6)
    assert values["gate_not_applied"] == pytest.approx(y) and values["gate_added"] == pytest.approx(y + gate)
    projection = gated_attention_step_through(walk, "projections").stage.exercise(2, 1, 0)
    assert {m.key: m.value for m in projection.mistakes}["gate_shift_forgotten"] == pytest.approx(logit - 0.5)


def test_bad_settings_are_repaired_with_messages():
    fixed, messages = validate_settings(Settings().set(**{"gated_attention.num_heads": 99,
                                                         "gated_attention.gate_shift": "abc",
                                                         "gated_attention.head_dim": 0,
                                                         "gated_attention.headwise": "maybe"}))
    assert (fixed.gated_attention.num_heads, fixed.gated_attention.gate_shift, fixed.gated_attention.head_dim,
            fixed.gated_attention.headwise) == (8, 0.0, 1, False)
    assert len(messages) == 4
    fixed, messages = validate_settings(Settings().set(**{"gated_attention.gate_shift": float("nan")}))
    assert fixed.gated_attention.gate_shift == 0.0 and len(messages) == 1
    fixed, messages = validate_settings(Settings().set(**{"gated_attention.gate_shift": -1e9}))
    assert fixed.gated_attention.gate_shift == -20.0 and "between -20 and 20" in str(messages[0])
    with pytest.raises(InputError, match="between"):
        _trace(shift=float("nan"))
    assert GATED_ATTENTION.walkthrough(Settings().set(**{"gated_attention.head": 7,
                                                         "gated_attention.num_heads": 2})).head == 1


def test_bad_input_on_the_page_shows_a_message_and_keeps_running():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/gated_attention.py").run()
    assert not at.exception and not at.error, errors(at)
    assert any("Qwen3NextAttention" in s for s in shown_checks(at))
    at.number_input(key="setting_gated_attention.gate_shift").set_value(-20.0).run()
    assert not at.exception and not at.error, errors(at)
    assert any("every gate is shut" in w for w in shown_warnings(at)), shown_warnings(at)
    at.number_input(key="setting_gated_attention.gate_shift").set_value(55.0).run()
    assert not at.exception
    assert at.session_state["settings"].gated_attention.gate_shift == 20.0
    at.number_input(key="setting_gated_attention.num_heads").set_value(1).run()
    at.toggle(key="setting_gated_attention.headwise").set_value(True).run()
    assert not at.exception and not at.error, errors(at)
    assert at.session_state["settings"].gated_attention.headwise is True
