"""Differential attention: the page's numbers equal transformers' ``DiffLlamaAttention`` (the page's head r as its
heads r and h + r, λ's vectors copied in, RoPE off with cos = 1 and sin = 0), PyTorch's SDPA for both maps and a
float64 loop; λ_init is the paper's; rows of the difference sum to 1 − λ; noise shared by both maps moves the
difference less than either map; each named mistake fires on its own wrong value only; bad input gets messages.
Every comparison is float32 with rtol = atol = 1e-5 (TOL): the measured differences are ~1e-7."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import APP, errors, shown_checks
from streamlit.testing.v1 import AppTest
from test_practice import _check_stage

from attention_core.errors import InputError
from attention_core.lessons.differential_attention.page import (
    DIFFERENTIAL_ATTENTION,
    differential_attention_step_through,
)
from attention_core.modern.differential import (
    common_noise,
    differential_attention,
    differential_loop,
    differential_weights,
    lambda_init,
    transformers_differential,
)
from attention_core.settings import Settings, validate_settings

TOL = 1e-5


def _trace(t=6, d_model=8, h=2, d=2, layer=12, seed=0):
    x = torch.randn(t, d_model, generator=torch.Generator().manual_seed(seed + 100))
    return differential_attention(x, differential_weights(d_model, h, d, seed), num_heads=h, head_dim=d, layer=layer)


@pytest.mark.parametrize("sizes", [dict(), dict(h=1, d=1, layer=1), dict(h=3, d=3, layer=2), dict(t=1),
                                   dict(t=12, d_model=16, h=4, d=4, layer=32, seed=7)])
def test_the_page_equals_diffllama_attention_sdpa_and_a_float64_loop(sizes):
    trace = _trace(**sizes)
    output, weights = transformers_differential(trace)
    torch.testing.assert_close(trace.output, output, rtol=TOL, atol=TOL)
    torch.testing.assert_close(torch.cat([trace.first.weights, trace.second.weights]), weights, rtol=TOL, atol=TOL)
    torch.testing.assert_close(trace.head_output, differential_loop(trace), rtol=TOL, atol=TOL)
    mask = torch.ones(trace.x.shape[0], trace.x.shape[0], dtype=torch.bool).tril()
    for q, k, attention in ((trace.query1, trace.key1, trace.first), (trace.query2, trace.key2, trace.second)):
        torch.testing.assert_close(attention.output, torch.nn.functional.scaled_dot_product_attention(
            q, k, trace.value, attn_mask=mask), rtol=TOL, atol=TOL)
    # the difference's rows sum to 1 − λ, and it has the sizes the paper names
    torch.testing.assert_close(trace.difference.sum(-1), torch.full_like(trace.difference.sum(-1), 1 - trace.lam),
                               rtol=TOL, atol=TOL)
    assert trace.value.shape[-1] == 2 * trace.head_dim == 2 * trace.query1.shape[-1]


def test_lambda_init_is_the_papers_and_the_reference_uses_the_same():
    assert lambda_init(1) == pytest.approx(0.2)
    assert lambda_init(12) == pytest.approx(0.8 - 0.6 * math.exp(-3.3))
    from transformers.models.diffllama.modeling_diffllama import lambda_init_fn
    assert all(lambda_init(layer) == pytest.approx(lambda_init_fn(layer - 1)) for layer in range(1, 33))
    with pytest.raises(InputError):
        lambda_init(0)


def test_noise_both_maps_share_moves_the_difference_less_than_a_map_and_more_so_deeper():
    shallow, deep = _trace(layer=1), _trace(layer=24)
    for trace in (shallow, deep):
        noisy = common_noise(trace, 2.0, 0)
        assert bool((noisy.difference_change < noisy.first_change).all())
        torch.testing.assert_close(noisy.difference, noisy.first - trace.lam * noisy.second)

    def gain(trace):
        noisy = common_noise(trace, 2.0, 0)
        return float((noisy.first_change / noisy.difference_change).mean())

    assert gain(deep) > 2 * gain(shallow)
    none = common_noise(deep, 0.0, 0)
    assert float(none.first_change.max()) < 1e-6 and float(none.difference_change.max()) < 1e-6
    with pytest.raises(InputError):
        common_noise(deep, float("nan"), 0)


def test_the_page_checks_pass_and_its_remarks_say_what_the_numbers_do():
    walk = DIFFERENTIAL_ATTENTION.walkthrough(Settings())
    assert [c.against for c in walk.checks] == ["transformers", "transformers", "pytorch", "float_loop"]
    assert all(c.matches for c in walk.checks), [(c.reference, c.max_abs_diff) for c in walk.checks]
    remark = str(differential_attention_step_through(walk, "difference").stage.remark)
    assert f"1 − λ = {1 - walk.trace.lam:.3f}" in remark
    cancel = str(differential_attention_step_through(walk, "cancel").stage.remark)
    assert "× less" in cancel




@pytest.mark.parametrize("changes", [{}, {"differential_attention.layer": 1, "differential_attention.head": 1}])
def test_each_named_mistake_fires_on_its_own_wrong_value_only(changes):
    walk = DIFFERENTIAL_ATTENTION.walkthrough(Settings().set(**changes))
    seen: dict[str, int] = {}
    for stage in DIFFERENTIAL_ATTENTION.stages:  # answer, rounding, each mistake named by its own value only (test_practice's check)
        _check_stage(f"differential/{stage}", differential_attention_step_through(walk, stage), seen)
    assert {"lambda_init_forgotten", "difference_no_lambda", "difference_added",
            "difference_single_map", "norm_scale_forgotten", "norm_forgotten"} <= set(seen)


def test_the_mistakes_values_are_what_the_mistakes_compute():
    walk = DIFFERENTIAL_ATTENTION.walkthrough(Settings())
    t, r = walk.trace, walk.head
    ex = differential_attention_step_through(walk, "difference").stage.exercise(3, 1, 0)
    a1, a2 = float(t.first.weights[r, 3, 1]), float(t.second.weights[r, 3, 1])
    values = {m.key: m.value for m in ex.mistakes}
    assert ex.answer == pytest.approx(a1 - t.lam * a2, abs=1e-6)
    assert values["difference_no_lambda"] == pytest.approx(a1 - a2) and values["difference_added"] == pytest.approx(
        a1 + t.lam * a2)
    lam = differential_attention_step_through(walk, "lambda").stage.exercise(5, 0, 0)
    a, b, ea, eb = (float(v) for v in t.lambda_parts)
    assert lam.answer == pytest.approx(t.lam, abs=1e-6)
    assert {m.key: m.value for m in lam.mistakes}["lambda_init_forgotten"] == pytest.approx(ea - eb)
    norm = differential_attention_step_through(walk, "norm").stage.exercise(2, 0, 0)
    m = t.mixed[r, 2].tolist()
    rms = math.sqrt(sum(v * v for v in m) / len(m) + 1e-5)
    assert norm.answer == pytest.approx((1 - t.lambda_init) * m[0] / rms, abs=1e-5)
    assert {k.key: k.value for k in norm.mistakes}["norm_scale_forgotten"] == pytest.approx(m[0] / rms)


def test_bad_settings_are_repaired_with_messages_and_the_page_keeps_running():
    fixed, messages = validate_settings(Settings().set(**{"differential_attention.num_heads": 99,
                                                         "differential_attention.layer": 0,
                                                         "differential_attention.noise": "loud",
                                                         "differential_attention.head_dim": -3}))
    assert (fixed.differential_attention.num_heads, fixed.differential_attention.layer,
            fixed.differential_attention.noise, fixed.differential_attention.head_dim) == (4, 1, 1.0, 1)
    assert len(messages) == 4
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/differential_attention.py").run()
    assert not at.exception and not at.error, errors(at)
    assert any("DiffLlamaAttention" in s for s in shown_checks(at))
    at.number_input(key="setting_differential_attention.layer").set_value(99).run()
    assert not at.exception
    assert at.session_state["settings"].differential_attention.layer == 32
    at.number_input(key="setting_differential_attention.noise").set_value(0.0).run()
    at.number_input(key="setting_differential_attention.num_heads").set_value(1).run()
    assert not at.exception and not at.error, errors(at)
