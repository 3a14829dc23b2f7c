"""The encoder block against torch's Transformer layers, and its page: every stage in both orders and languages."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import APP, element, element_entry, element_step, errors, shown_checks
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from attention_core.errors import InputError, Message
from attention_core.lessons.encoder_block.page import ENCODER_BLOCK, encoder_step_through, explain_encoder
from attention_core.lessons.encoder_block.walk import ENCODER_POST_LN, ENCODER_PRE_LN
from attention_core.settings import Settings
from attention_core.transformer.encoder import (
    block_weights,
    encoder_block,
    encoder_stack,
    layer_norm,
    torch_layer,
)

X = torch.tensor([[0.43, 0.15, 0.89, 0.10], [0.55, 0.87, 0.66, -0.20], [0.57, 0.85, 0.64, 0.30],
                  [0.22, 0.58, 0.33, 0.90], [0.77, 0.25, 0.10, -0.50]])  # (5, 4)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_one_block_equals_torch_transformer_encoder_layer(norm_first, num_heads):
    w = block_weights(4, 16, seed=7)
    ours = encoder_block(X, w, num_heads, norm_first)
    with torch.no_grad():
        reference = torch_layer(w, num_heads, norm_first)(X[None])[0]
    torch.testing.assert_close(ours.output, reference, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(ours.output, X)  # the block changed something


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_stack_equals_torch_transformer_encoder_with_the_same_layers(norm_first):
    weights = tuple(block_weights(4, 8, seed=s) for s in (3, 4, 5))
    traces = encoder_stack(X, weights, 2, norm_first)
    layers = [torch_layer(w, 2, norm_first) for w in weights]
    encoder = torch.nn.TransformerEncoder(layers[0], num_layers=3, enable_nested_tensor=False).eval()
    for mine, layer in zip(encoder.layers, layers):
        mine.load_state_dict(layer.state_dict())
    with torch.no_grad():
        reference = encoder(X[None])[0]
    torch.testing.assert_close(traces[-1].output, reference, rtol=1e-5, atol=1e-5)
    for before, after in zip(traces, traces[1:]):
        assert torch.equal(before.output, after.x)


def test_post_ln_rows_are_normalised_and_pre_ln_rows_are_not():
    w = block_weights(4, 8, seed=1)
    post, pre = encoder_block(X, w, 2, False), encoder_block(X, w, 2, True)
    # post-LN: the output is LayerNorm₂'s: (y - β) / γ has mean 0 and variance 1 per row
    standardised = (post.output - w.beta_2) / w.gamma_2
    torch.testing.assert_close(standardised.mean(-1), torch.zeros(5), atol=1e-5, rtol=0)
    torch.testing.assert_close(standardised.var(-1, unbiased=False), torch.ones(5), atol=1e-3, rtol=0)
    # pre-LN: the output is the residual sum itself, x + sublayers
    torch.testing.assert_close(pre.output, pre.hidden + pre.ffn_output)
    torch.testing.assert_close(pre.hidden, X + pre.attention.output)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=12, max_size=12),
       st.floats(0.5, 1.5), st.floats(-1, 1))
def test_layer_norm_equals_torch_on_any_rows(values, g, b):
    x = torch.tensor(values).reshape(3, 4)
    gamma, beta = torch.full((4,), g), torch.full((4,), b)
    ours = layer_norm(x, gamma, beta)
    torch.testing.assert_close(ours.output, F.layer_norm(x, (4,), gamma, beta, 1e-5), rtol=1e-4, atol=1e-4)


def test_the_weights_are_drawn_from_a_local_generator():
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    a, b = block_weights(3, 6, seed=5), block_weights(3, 6, seed=5)
    assert torch.equal(torch.rand(1), before)  # the global generator was not touched
    assert torch.equal(a.w_1, b.w_1) and torch.equal(a.gamma_2, b.gamma_2)
    assert a.w_1.shape == (3, 6) and a.w_2.shape == (6, 3)


def test_a_head_count_that_does_not_divide_d_model_names_the_ones_that_do():
    settings = Settings.for_preset("journey_v1", **{"encoder_block.num_heads": 2})  # d_model = 3
    with pytest.raises(InputError) as error:
        ENCODER_BLOCK.walkthrough(settings)
    assert error.value.field == "encoder_block.num_heads"
    assert "1, 3" in str(error.value.message)


@pytest.mark.parametrize("norm_first", [False, True])
def test_every_stage_explains_its_panels_number_and_the_checks_hold(norm_first):
    settings = Settings.for_preset("seed000", **{"encoder_block.num_heads": 2, "encoder_block.num_layers": 3, "encoder_block.block": 1, "encoder_block.norm_first": norm_first})
    walk = ENCODER_BLOCK.walkthrough(settings)
    assert walk.block == 1 and len(walk.blocks) == 3
    assert all(check.matches for check in walk.checks), walk.checks
    assert len(walk.checks) == 3
    for key in walk.order:
        stage = encoder_step_through(walk, key).stage
        assert [p.explained for p in stage.panels].count(True) == 1, key
        rows, cols = stage.target.matrix.shape
        value = float(stage.target.matrix[rows - 1, cols - 1])
        text = stage.entry(rows - 1, cols - 1, 0, Message)
        result = text.replace(r"\end{aligned}", "").split(r"\qquad")[0].rsplit("=", 1)[-1].strip()
        assert float(result) == pytest.approx(value, rel=1e-3, abs=1e-4), (key, text)
        assert stage.formula(Message), key
        with pytest.raises(IndexError):
            explain_encoder(walk, key, rows, 0)


def test_the_two_orders_have_the_same_stages():
    assert set(ENCODER_PRE_LN) == set(ENCODER_POST_LN)
    assert list(ENCODER_PRE_LN)[1] == "norm_1" and list(ENCODER_POST_LN)[1] == "attention"


# ---------------------------------------------------------------- the page

def step_through(at: AppTest, order: dict[str, str], context: str) -> list[str]:
    """Every stage of the element, in its order, moved to as a link does: its formula there, the page's two checks."""
    seen = []
    for key in element(at)["order"]:
        element_step(at, **{"encoder_block.stage": key})
        seen.append(at.session_state["settings"].encoder_block.stage)
        assert not at.exception, (context, seen[-1], at.exception)
        assert not at.error, (context, seen[-1], errors(at))
        assert element(at)["stages"][key]["formula"] and element_entry(at), (context, seen[-1])
        assert sum("TransformerEncoderLayer" in c for c in shown_checks(at)) == 2, context  # the block, the stack
    return seen


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_step_of_the_encoder_block_post_ln_and_pre_ln(language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/encoder_block.py").run()
    assert not at.exception and not at.error, errors(at)
    for norm_first, order in ((False, ENCODER_POST_LN), (True, ENCODER_PRE_LN)):
        at.toggle(key="setting_encoder_block.norm_first").set_value(norm_first).run()
        assert step_through(at, order, f"{language}, norm_first={norm_first}") == list(order)
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"


def test_bad_head_count_shows_a_message_and_keeps_the_other_settings():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/encoder_block.py").run()
    at.number_input(key="setting_encoder_block.dim_feedforward").set_value(12).run()
    at.number_input(key="setting_encoder_block.num_heads").set_value(3).run()  # the default example has d_model = 4
    assert not at.exception
    assert any("cannot be split into 3" in e.value for e in at.error), errors(at)
    assert at.session_state["settings"].encoder_block.dim_feedforward == 12
    at.number_input(key="setting_encoder_block.num_heads").set_value(2).run()
    assert not at.error and at.session_state["settings"].encoder_block.num_heads == 2


def test_fewer_blocks_moves_the_shown_block_back_into_range():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/encoder_block.py").run()
    at.number_input(key="setting_encoder_block.num_layers").set_value(4).run()
    at.selectbox(key="setting_encoder_block.block").set_value(3).run()
    at.number_input(key="setting_encoder_block.num_layers").set_value(2).run()
    assert not at.exception and not at.error, errors(at)
    assert at.session_state["settings"].encoder_block.block == 1
