"""Linear attention and the (gated) delta rule: the parallel and recurrent forms agree, each step written out equals the
trace, and the gated delta rule equals a Python loop and transformers' Qwen3-Next kernels
(``torch_recurrent_gated_delta_rule``, ``torch_chunk_gated_delta_rule``). Every comparison is float32 with
rtol = atol = 1e-5 (TOL): the measured differences are ~1e-7, the chunked kernel's (a triangular solve) ~2e-7."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import APP, element_step, errors, shown_checks, shown_warnings
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest
from test_stepthrough import step_through_every_stage
from transformers.models.qwen3_next.modeling_qwen3_next import (
    torch_chunk_gated_delta_rule,
    torch_recurrent_gated_delta_rule,
)

from attention_core.errors import InputError, Message
from attention_core.lessons.linear_attention.page import (
    LINEAR_ATTENTION,
    explain_linear,
    linear_attention_step_through,
)
from attention_core.modern.linear_attention import (
    feature_map,
    gated_delta_rule,
    l2_normalise,
    linear_attention,
    loop_gated_delta_rule,
    loop_linear_attention,
    memory_numbers,
    recurrent_linear_attention,
)
from attention_core.settings import Settings, validate_settings

#: float32 tolerance of every comparison here (rtol = atol).
TOL = 1e-5


def _qkv(t: int, d: int, seed: int, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    return tuple(scale * torch.randn(t, d, generator=g) for _ in range(3))


def _hf(kernel, q, k, v, beta, alpha, **kwargs):
    """transformers' kernel as Qwen3-Next calls it: (batch, seq, heads, dim), g = log α and β (batch, seq, heads)."""
    out, state = kernel(q[None, :, None], k[None, :, None], v[None, :, None], g=alpha.log()[None, :, None],
                        beta=beta[None, :, None], output_final_state=True, use_qk_l2norm_in_kernel=True, **kwargs)
    return out[0, :, 0], state[0, 0]


def test_phi_is_elu_plus_one_and_positive():
    x = torch.tensor([-10.0, -1.0, 0.0, 0.5, 3.0])
    # absolute 6e-8 at most: (e^x − 1) + 1 loses the low bits of e^x for x < 0
    assert torch.allclose(feature_map(x), torch.tensor([math.exp(-10.0), math.exp(-1.0), 1.0, 1.5, 4.0]), rtol=1e-6,
                          atol=1e-7)
    assert (feature_map(x) > 0).all()
    assert feature_map(torch.tensor([-30.0])).item() == 0.0  # (e^−30 − 1) + 1 rounds to 0 in float32


def test_a_row_whose_phi_products_all_round_to_0_gets_a_message():
    q, k, v = torch.full((2, 2), -40.0), torch.ones(2, 2), torch.ones(2, 2)
    for form in (linear_attention, recurrent_linear_attention):
        with pytest.raises(InputError, match="For token 1 every φ") as raised:
            form(q, k, v)
        assert raised.value.field == "x"


@settings(max_examples=30, deadline=None)
@given(t=st.integers(1, 12), d=st.integers(1, 8), seed=st.integers(0, 999))
def test_the_parallel_and_the_recurrent_form_are_equal_and_equal_a_python_loop(t, d, seed):
    q, k, v = _qkv(t, d, seed)
    parallel, recurrent = linear_attention(q, k, v), recurrent_linear_attention(q, k, v)
    torch.testing.assert_close(recurrent.output, parallel.output, rtol=TOL, atol=TOL)
    torch.testing.assert_close(parallel.output, torch.tensor(loop_linear_attention(q.tolist(), k.tolist(), v.tolist())),
                               rtol=TOL, atol=TOL)
    torch.testing.assert_close(parallel.weights.sum(-1), torch.ones(t), rtol=TOL, atol=TOL)
    assert (parallel.weights.triu(1) == 0).all()
    # S_t is the sum of φ(k_j) v_jᵀ over j ≤ t, and z_t of φ(k_j): the recurrence unrolled
    phi_k = feature_map(k)
    for step in range(t):
        torch.testing.assert_close(recurrent.states[step], phi_k[: step + 1].T @ v[: step + 1], rtol=TOL, atol=TOL)
        torch.testing.assert_close(recurrent.sums[step], phi_k[: step + 1].sum(0), rtol=TOL, atol=TOL)


@settings(max_examples=25, deadline=None)
@given(t=st.integers(1, 12), d=st.integers(1, 8), seed=st.integers(0, 999), beta=st.floats(0.0, 1.0),
       alpha=st.floats(0.01, 1.0))
def test_the_gated_delta_rule_equals_transformers_recurrent_and_chunked_kernels_and_a_loop(t, d, seed, beta, alpha):
    q, k, v = _qkv(t, d, seed)
    b, a = torch.full((t,), beta), torch.full((t,), alpha)
    ours = gated_delta_rule(q, k, v, b, a)
    for kernel, kwargs in ((torch_recurrent_gated_delta_rule, {}), (torch_chunk_gated_delta_rule, {}),
                           (torch_chunk_gated_delta_rule, {"chunk_size": 4})):  # 4: several chunks, the state passed on
        out, state = _hf(kernel, q, k, v, b, a, **kwargs)
        torch.testing.assert_close(ours.output, out, rtol=TOL, atol=TOL)
        torch.testing.assert_close(ours.states[-1], state, rtol=TOL, atol=TOL)
    loop_out, loop_state = loop_gated_delta_rule(q.tolist(), k.tolist(), v.tolist(), b.tolist(), a.tolist())
    torch.testing.assert_close(ours.output, torch.tensor(loop_out), rtol=TOL, atol=TOL)
    torch.testing.assert_close(ours.states[-1], torch.tensor(loop_state), rtol=TOL, atol=TOL)


def test_per_token_gates_follow_transformers_too():
    q, k, v = _qkv(9, 4, 7)
    g = torch.Generator().manual_seed(1)
    b, a = torch.rand(9, generator=g), 0.05 + 0.95 * torch.rand(9, generator=g)
    ours = gated_delta_rule(q, k, v, b, a)
    out, state = _hf(torch_chunk_gated_delta_rule, q, k, v, b, a, chunk_size=2)
    torch.testing.assert_close(ours.output, out, rtol=TOL, atol=TOL)
    torch.testing.assert_close(ours.states[-1], state, rtol=TOL, atol=TOL)


def test_gated_with_alpha_1_is_the_delta_rule_and_each_step_written_out_is_the_trace():
    q, k, v = _qkv(8, 3, 3)
    beta = torch.full((8,), 0.6)
    ungated = gated_delta_rule(q, k, v, beta, torch.ones(8))
    gated_1 = gated_delta_rule(q, k, v, beta, torch.ones(8))
    torch.testing.assert_close(gated_1.states, ungated.states, rtol=0, atol=0)
    alpha = 0.7
    gated = gated_delta_rule(q, k, v, beta, torch.full((8,), alpha))
    k_hat = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    q_hat = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) / math.sqrt(3)
    torch.testing.assert_close(gated.key, k_hat, rtol=TOL, atol=TOL)
    for rule, a in ((ungated, 1.0), (gated, alpha)):
        state = torch.zeros(3, 3)
        for t in range(8):
            torch.testing.assert_close(rule.previous[t], state, rtol=TOL, atol=TOL)
            prediction = (a * state).T @ k_hat[t]  # the state's prediction for this key
            error = v[t] - prediction  # the prediction error
            torch.testing.assert_close(rule.predictions[t], prediction, rtol=TOL, atol=TOL)
            torch.testing.assert_close(rule.errors[t], error, rtol=TOL, atol=TOL)
            # the papers' form: S_t = α (I − β k kᵀ) S_{t−1} + β k vᵀ (transposed, as here)
            state = a * (torch.eye(3) - 0.6 * torch.outer(k_hat[t], k_hat[t])) @ state + 0.6 * torch.outer(k_hat[t], v[t])
            torch.testing.assert_close(rule.states[t], state, rtol=TOL, atol=TOL)
            torch.testing.assert_close(rule.output[t], state.T @ q_hat[t], rtol=TOL, atol=TOL)


def test_the_delta_rule_writes_a_value_it_already_holds_once():
    """β = 1 with the same key twice: the second write finds no error (the state already recalls v), unlike linear
    attention, which adds the value again."""
    k = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[2.0, -1.0], [2.0, -1.0]])
    rule = gated_delta_rule(k, k, v, torch.ones(2), torch.ones(2))
    torch.testing.assert_close(rule.errors[1], torch.zeros(2), rtol=0, atol=1e-5)
    torch.testing.assert_close(rule.states[1], rule.states[0], rtol=0, atol=1e-5)
    assert torch.allclose(l2_normalise(k), k, atol=1e-6)


def test_memory_grows_with_t_for_the_kv_cache_only():
    table = memory_numbers(range(1, 6), 3, 3)
    assert table[:, 0].tolist() == [6.0, 12.0, 18.0, 24.0, 30.0]
    assert table[:, 1].tolist() == [12.0] * 5 and table[:, 2].tolist() == [9.0] * 5
    assert memory_numbers([1_000_000], 128, 128).tolist() == [[256_000_000.0, 16_512.0, 16_384.0]]


def test_the_page_matches_every_reference_and_explains_every_entry():
    walk = LINEAR_ATTENTION.walkthrough(Settings())
    assert len(walk.checks) == 6 and all(c.matches for c in walk.checks), walk.checks
    assert any("torch_chunk_gated_delta_rule" in c.reference for c in walk.checks)
    assert any("torch_recurrent_gated_delta_rule" in c.reference for c in walk.checks)
    for stage in LINEAR_ATTENTION.stages:
        steps = linear_attention_step_through(walk, stage)
        assert steps.stage.formula(Message)
        target = steps.stage.target
        for row in range(target.matrix.shape[0]):
            for col in range(target.matrix.shape[1]):
                assert explain_linear(walk, stage, row, col)
    t = walk.step
    entry = explain_linear(walk, "delta", 0, 1)
    assert f"e_{{2}} &= v_{{{t + 1},2}}" in entry  # the prediction error written out
    assert "0.5 \\cdot" in entry  # β


def test_beta_and_alpha_out_of_range_are_repaired_with_a_message_and_the_builder_refuses_them():
    fixed, messages = validate_settings(Settings().set(**{"linear_attention.beta": 1.5, "linear_attention.alpha": 0}))
    assert fixed.linear_attention.beta == 1.0 and fixed.linear_attention.alpha == 0.01
    assert any("β must be between 0 and 1" in m for m in messages)
    assert any("α = 0 would erase the state" in m for m in messages)
    with pytest.raises(InputError, match="β must be between 0 and 1") as raised:
        LINEAR_ATTENTION.walkthrough(Settings().set(**{"linear_attention.beta": 1.5}))
    assert raised.value.field == "linear_attention.beta"
    with pytest.raises(InputError, match="decay α must be above 0"):
        LINEAR_ATTENTION.walkthrough(Settings().set(**{"linear_attention.alpha": 0.0}))


def test_the_step_is_kept_inside_the_sentence():
    walk = LINEAR_ATTENTION.walkthrough(Settings().set(**{"linear_attention.step": 11}))
    assert walk.step == len(walk.tokens) - 1


def test_changing_beta_and_the_step_changes_the_numbers_and_bad_values_keep_the_page_running():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/linear_attention.py").run()
    assert not at.exception and not at.error, errors(at)
    element_step(at, **{"linear_attention.stage": "delta"})

    def shown():
        return [s for s in shown_checks(at) if "the state predicted" in s]

    before = shown()
    assert before, [s for s in shown_checks(at)]
    at.number_input(key="setting_linear_attention.beta").set_value(0.9).run()
    assert not at.exception and not at.error, errors(at)
    after_beta = shown()
    assert after_beta != before and "β = 0.9" in after_beta[0]
    at.selectbox(key="setting_linear_attention.step").set_value(1).run()
    assert not at.exception and not at.error, errors(at)
    assert shown() != after_beta and "At t = 2" in shown()[0]
    # bad input: a message on the page, the page keeps working, the other settings are kept
    at.number_input(key="setting_linear_attention.beta").set_value(1.5).run()
    at.number_input(key="setting_linear_attention.alpha").set_value(0.0).run()
    assert not at.exception and not at.error, errors(at)
    own = at.session_state["settings"].linear_attention
    assert (own.beta, own.alpha, own.step) == (1.0, 0.01, 1)
    assert any("α = 0 would erase the state" in w for w in shown_warnings(at)), shown_warnings(at)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stage_of_the_linear_attention_page(language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/linear_attention.py").run()
    assert step_through_every_stage(at, "linear_attention", f"linear, {language}") == list(LINEAR_ATTENTION.stages)
    assert any("torch_chunk_gated_delta_rule" in s for s in shown_checks(at))
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"
