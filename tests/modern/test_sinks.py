"""Attention sinks on small numbers (attention_core.modern.sinks and the page's walk-through): softmax's rows sum to
1, a query that matches nothing spends its 1 evenly, gpt-oss's learned sink equals transformers' ``GptOssAttention``
and ``eager_attention_forward`` (float32, rtol = atol = 1e-5: measured differences ~1e-7), every entry written out
ends with its panel's number; then the page under AppTest: bad input gets a message and keeps what was typed, a
measurement on a short pasted text is shown and shared, and a host can turn the model part off.

The step-through of every stage in both languages on every example is the registry's test
(tests/test_stepthrough.py); its exercises and mistakes tests/test_practice.py; the SmolLM2 parts
tests/modern_lm/test_streaming_sinks.py."""

from __future__ import annotations

import json
import math

import pytest
import torch
from conftest import element, errors, open_link, warnings
from streamlit.testing.v1 import AppTest
from test_stepthrough import result_of

from attention_core.errors import InputError, Message
from attention_core.lessons.sinks.page import SINKS, explain_sinks, sinks_step_through
from attention_core.modern.sinks import check_sink_logit, gpt_oss_reference, sink_softmax, uniform_query
from attention_core.settings import Settings

#: float32 tolerance of every comparison with transformers (rtol = atol).
TOL = 1e-5
PAGE = "app_pages/sinks.py"


def _causal(scores: torch.Tensor) -> torch.Tensor:
    t = scores.shape[0]
    return scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))


@pytest.mark.parametrize(("t", "d", "seed", "b"), [(5, 4, 0, 1.0), (7, 3, 1, -20.0), (1, 2, 2, 0.0),
                                                  (12, 5, 3, 20.0), (6, 16, 4, -2.5)])
def test_the_learned_sink_equals_transformers_gpt_oss_attention(t, d, seed, b):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(t, 6, generator=g)
    w_q, w_k, w_v = (torch.randn(6, d, generator=g) for _ in range(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    ours = sink_softmax(_causal(q @ k.T / math.sqrt(d)), b)
    theirs = gpt_oss_reference(x, w_q, w_k, w_v, b)
    torch.testing.assert_close(ours.weights, theirs.module_weights, rtol=TOL, atol=TOL)
    torch.testing.assert_close(ours.weights, theirs.eager_weights, rtol=TOL, atol=TOL)
    torch.testing.assert_close(ours.weights @ v, theirs.eager_output, rtol=TOL, atol=TOL)
    torch.testing.assert_close(ours.weights.sum(-1) + ours.share, torch.ones(t), rtol=TOL, atol=TOL)
    assert (ours.weights.triu(1) == 0).all()


def test_a_sink_of_minus_20_is_plain_softmax_and_the_written_out_form_is_the_same():
    scores = _causal(torch.tensor([[0.3, 0, 0], [1.0, -0.5, 0], [0.2, 0.4, -1.0]]))
    plain = torch.softmax(scores, dim=-1)
    torch.testing.assert_close(sink_softmax(scores, -20.0).weights, plain, rtol=0, atol=1e-8)
    b = 1.5
    by_hand = scores.exp() / (scores.exp().sum(-1, keepdim=True) + math.exp(b))  # e^s / (Σ e^s + e^b)
    torch.testing.assert_close(sink_softmax(scores, b).weights, by_hand, rtol=TOL, atol=TOL)
    assert sink_softmax(scores, 20.0).weights.max() < 1e-7  # e^20 takes everything


def test_a_query_that_matches_nothing_averages_the_values_and_a_sink_shrinks_them():
    v = torch.tensor([[1.0, 2.0], [3.0, -2.0], [5.0, 0.0]])
    weights, output = uniform_query(v)
    torch.testing.assert_close(weights[2], torch.full((3,), 1 / 3))
    torch.testing.assert_close(output, torch.tensor([[1.0, 2.0], [2.0, 0.0], [3.0, 0.0]]))
    _, shrunk = uniform_query(v, 0.0)  # e^0 = 1: row i keeps i / (i + 1)
    torch.testing.assert_close(shrunk, output * torch.tensor([[1 / 2], [2 / 3], [3 / 4]]))


@pytest.mark.parametrize("b", [20.5, -21.0, math.inf, math.nan])
def test_a_sink_logit_out_of_range_gets_a_message(b):
    with pytest.raises(InputError, match="between -20.0 and 20.0") as raised:
        check_sink_logit(b)
    assert raised.value.field == "sinks.sink_logit"
    with pytest.raises(InputError):
        SINKS.walkthrough(Settings().set(**{"sinks.sink_logit": b}))  # unvalidated settings


@pytest.mark.parametrize("changes", [{}, {"d_k": 7, "sinks.sink_logit": -4.0}, {"sinks.sink_logit": 20.0}])
def test_the_page_matches_every_reference_and_every_entry_ends_with_its_panels_number(changes):
    walk = SINKS.walkthrough(Settings().set(**changes))
    assert len(walk.checks) == 4 and all(c.matches for c in walk.checks), walk.checks
    assert max(c.max_abs_diff for c in walk.checks) < 1e-6
    for stage in SINKS.stages:
        steps = sinks_step_through(walk, stage)
        assert steps.stage.formula(Message) and steps.stage.remark
        target = steps.stage.target
        for row in range(target.matrix.shape[0]):
            for col in range(target.matrix.shape[1]):
                value = float(target.matrix[row, col])
                text = explain_sinks(walk, stage, row, col, Message)
                assert result_of(text) == pytest.approx(value, rel=1e-3, abs=1e-4), (stage, row, col, text)
    with pytest.raises(KeyError):
        sinks_step_through(walk, "nope")


# ---------------------------------------------------------------- the page (AppTest)


def _open(language: str = "en", **params) -> AppTest:
    return open_link(PAGE, language, **params)


def test_bad_input_gets_a_message_and_the_page_keeps_running_with_what_was_typed():
    at = _open(**{"sinks.sink_logit": "99", "sinks.window": "3", "sinks.sinks": "4"})
    assert "between -20 and 20" in warnings(at)
    assert at.session_state["settings"].sinks.sink_logit == 20.0
    assert "must hold at least as many tokens as the sinks (s = 4)" in errors(at)
    assert at.latex and any("tokens" in m.value for m in at.markdown)  # the steps and the heads are still there
    at.toggle(key="setting_sinks.own_text").set_value(True).run()
    at.number_input(key="setting_sinks.window").set_value(16).run()
    assert "Paste a text" in errors(at) and not at.exception
    at.text_area(key="setting_sinks.prompt").set_value("   ").run()
    assert "Type a prompt" in errors(at) and not at.exception
    assert at.text_area(key="setting_sinks.prompt").value == "   "  # nothing typed is lost


def test_an_over_long_prompt_is_cut_with_a_message():
    at = _open(**{"sinks.prompt": "word " * 700})
    assert "only its start was read" in warnings(at) and not at.error, errors(at)
    assert any(m.value.startswith("**512 tokens**") for m in at.markdown)
    assert at.text_area(key="setting_sinks.prompt").value == "word " * 700


def test_a_pasted_text_is_measured_once_and_shared(monkeypatch):
    from ui.page_parts import sink_data

    text = "The cat sat on the mat. " * 12  # 85 tokens
    at = _open(**{"sinks.own_text": "1", "sinks.window": "16", "sinks.sinks": "4"})
    at.text_area(key="setting_sinks.text").set_value(text).run()
    assert not at.error, errors(at)
    at.button(key="sinks_measure").click().run()
    assert not at.exception and not at.error, errors(at)
    table = next(df.value for df in at.dataframe if "perplexity e^loss" in df.value.columns)
    assert list(table.iloc[:, 0]) == ["all (up to 85)", "16", "16 + 4"]
    run = sink_data.measured(text, 16, 4)
    assert run is not None and run.tokens == 85
    assert table.iloc[0, 2] == f"{run.perplexity('full'):.2f}"
    assert any("Measured once on this server in" in c.value for c in at.caption)
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    assert any(spec.get("description", "").startswith("Line chart: loss, mean of the last 32") for spec in specs)
    monkeypatch.setattr(sink_data.sinks, "streaming_losses", None)  # another session: shown, not measured again
    other = _open("zh", **{"sinks.own_text": "1", "sinks.window": "16", "sinks.sinks": "4", "sinks.text": text})
    assert not other.exception and not other.error and not [b for b in other.button if b.key == "sinks_measure"]


def test_a_host_turns_the_model_part_off(monkeypatch):
    from ui.page_parts import modern_lm_data

    monkeypatch.setenv(modern_lm_data.SWITCH, "off")
    at = _open()
    assert any("turned off" in i.value for i in at.info)
    assert element(at)["stages"] and not at.error and not at.dataframe  # the step-through is there, the model's part not
