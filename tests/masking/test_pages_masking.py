"""The masking & heads pages under AppTest: they render on every preset, step through every stage, react to
their widgets, state a passing PyTorch check, and answer bad input with a message while keeping the state."""

from __future__ import annotations

import re

import pytest
from conftest import (
    element,
    element_step,
    errors,
    has_element,
    open_app,
    settings,
    shown_checks,
    shown_latex,
    shown_markdown,
    shown_notes,
    shows_number,
    warnings,
)
from streamlit.testing.v1 import AppTest

from attention_core import registry
from attention_core.inputs.presets import PRESETS
from attention_core.inputs.text import MAX_TOKENS
from attention_core.masking.walkthrough import MAX_DROPOUT

CAUSAL, DROPOUT = "app_pages/causal.py", "app_pages/dropout.py"
MHA, CROSS = "app_pages/multi_head.py", "app_pages/cross_attention.py"
PAGES = {path: (registry.BY_KEY[key].stage_field, registry.BY_KEY[key].stages)
         for path, key in ((CAUSAL, "causal"), (DROPOUT, "dropout"), (MHA, "multi_head"), (CROSS, "cross_attention"))}


def infos(at: AppTest) -> str:
    return plain(" ".join(shown_notes(at)))


def plain(markdown: str) -> str:
    """Markdown with the escapes of widgets.md_escape removed (the text a reader sees)."""
    return markdown.replace("\\", "")


def checks(at: AppTest) -> list[str]:
    return [s for s in shown_checks(at) if s.startswith("Checked against PyTorch")]


def assert_checks_pass(at: AppTest) -> None:
    found = checks(at)
    assert found, "the page states its check against PyTorch"
    for text in found:
        diff = float(text.split("| = ")[-1].split(" ")[0])
        assert diff < 1e-5 and "✓" in text, text


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("page", list(PAGES))
def test_every_new_page_renders_on_every_preset(page, preset):
    at = open_app(page, preset)
    assert settings(at).preset == preset
    assert not at.exception and not at.error, errors(at)
    assert at.title
    assert_checks_pass(at)


@pytest.mark.parametrize("page", list(PAGES))
def test_stepping_through_every_stage(page):
    field, stages = PAGES[page]
    at = open_app(page, "journey_v1")
    element_step(at, **{field: next(iter(stages))})
    # every stage is in the element's data; its Next is the browser's (tests/app/test_browser_stepper.py)
    assert element(at)["order"] == list(stages)
    for key in stages:
        element_step(at, **{field: key})
        assert not at.exception and not at.error, (key, errors(at))
        data = element(at)
        assert data["position"]["stage"] == key and data["stages"][key]["formula"]
        assert "nan" not in shown_latex(at).lower()


# ---------------------------------------------------------------- causal page


def test_causal_page_reproduces_the_printed_context_vectors_and_the_other_route():
    at = open_app(CAUSAL, "journey_v1")
    element_step(at, **{"causal.stage": "output"})
    element_step(at, entry_row=1)
    element_step(at, entry_col=0)
    assert r"z_{2,1}" in shown_latex(at) and shows_number(shown_latex(at), -0.5874, before="= ")  # CausalAttention(3, 2, 6, 0.0), seed 123
    assert any("is_causal=True" in c for c in checks(at))
    element_step(at, **{"causal.stage": "other_route"})
    (same,) = [s for s in shown_checks(at) if s.startswith("Both routes")]
    assert float(same.split("= ")[-1].rstrip(".")) < 1e-6


def test_causal_switch_and_padding_change_the_mask():
    at = open_app(CAUSAL, "hello")
    element_step(at, **{"causal.stage": "masked_scores"})
    element_step(at, entry_row=0)
    element_step(at, entry_col=2)
    assert r"-\infty" in shown_latex(at)
    at.toggle(key="setting_causal_mask").set_value(False).run()
    assert r"a'_{1,3} = a_{1,3} + 0" in shown_latex(at)
    assert not any("is_causal=True" in c for c in checks(at))  # the mask is no longer the causal one
    at.number_input(key="setting_padding").set_value(1).run()
    assert r"-\infty" in shown_latex(at)  # key 3 is padding now
    element_step(at, **{"causal.stage": "mask"})
    assert "key 3 is padding" in shown_latex(at)
    assert_checks_pass(at)


def test_a_mask_that_blocks_a_whole_row_is_explained_and_kept():
    at = open_app(CAUSAL)
    at.session_state["edits"] = {"seed000": {"mask": {(0, 0): 0.0}}}  # "I" could only look at itself
    at.run()
    assert not at.exception and not at.error, errors(at)
    assert "Row 1 (query “I”) has every key blocked" in plain(warnings(at))
    element_step(at, **{"causal.stage": "weights"})
    element_step(at, entry_row=0)
    assert r"\frac{0}{0}" in shown_latex(at) and "nan" not in shown_latex(at).lower()
    assert_checks_pass(at)
    for page in (DROPOUT, MHA):  # the same mask there
        at.switch_page(page).run()
        assert "Row 1 (query “I”)" in plain(warnings(at)) and not at.error
    assert at.session_state["edits"]["seed000"]["mask"] == {(0, 0): 0.0}
    at.switch_page(CAUSAL).run()
    element_step(at, **{"causal.stage": "mask"})
    data = element(at)
    assert data["stages"]["mask"]["mask"]["edited"] == 1  # its "Reset the mask" (a browser test clicks it) is on
    assert "1 cell(s) flipped by you." in data["stages"]["mask"]["mask"]["text"]


def test_all_padding_warns_instead_of_failing():
    at = open_app(CAUSAL, "hello")
    at.number_input(key="setting_padding").set_value(5).run()
    assert "All 3 tokens are padding" in plain(warnings(at)) and not at.error
    assert_checks_pass(at)


def test_context_length_shorter_than_the_sentence_gets_a_message_and_keeps_the_widgets():
    at = open_app(CAUSAL, "journey_v1")
    at.number_input(key="setting_context_length").set_value(4).run()
    assert "6 tokens but the context length is 4" in errors(at)
    assert at.number_input(key="setting_context_length").value == 4 and settings(at).context_length == 4
    at.number_input(key="setting_context_length").set_value(6).run()
    assert not at.error


# ---------------------------------------------------------------- dropout page


def test_dropout_train_and_eval():
    at = open_app(DROPOUT, "journey_v2")
    at.number_input(key="setting_dropout.dropout_p").set_value(0.5).run()
    element_step(at, **{"dropout.stage": "dropped_weights"})
    text = shown_markdown(at)
    sums = re.split(r"Row sums of the weights used:(?:\*\*)? ", text, maxsplit=1)[1].split()[:6]  # ch03's dropout()
    assert all(shows_number(shown, printed, digits=3) for shown, printed in zip(sums, (2, 0, 2, 0.985, 0.774, 1.31)))
    assert any("bernoulli_(1 - p" in c for c in checks(at))
    assert_checks_pass(at)
    at.toggle(key="setting_dropout.training").set_value(False).run()
    text = shown_markdown(at)
    assert "1, 1, 1, 1, 1, 1" in text and "eval mode: every row sums to 1" in text
    assert any("is_causal=True" in c for c in checks(at))
    element_step(at, **{"dropout.stage": "dropout_mask"})
    assert "eval mode" in shown_latex(at)


def test_dropout_mask_writes_its_ones_and_zeros_whole():
    """The mask D is 0 or 1: its table writes "1" and "0", not "1.00" beside "0" (ui.heatmaps.cell_number_format,
    whose decimals ui.heatmaps.cell_labels takes, as the heatmaps did)."""
    at = open_app(DROPOUT, "journey_v2")
    element_step(at, **{"dropout.stage": "dropout_mask"})
    (panel,) = element(at)["stages"]["dropout_mask"]["panels"]
    assert {text for row in panel["text"] for text in row} == {"0", "1"}, panel["text"]


def test_dropout_seed_changes_the_mask():
    at = open_app(DROPOUT, "seed000")
    before = [m.value for m in at.metric]
    at.number_input(key="setting_dropout.seed").set_value(7).run()
    assert [m.value for m in at.metric] != before
    assert_checks_pass(at)


@pytest.mark.parametrize("raw, shown", [(1.5, MAX_DROPOUT), (1.0, MAX_DROPOUT), (-0.3, 0.0)])
def test_dropout_p_outside_the_unit_interval_is_clamped_with_a_message(raw, shown):
    at = open_app(DROPOUT, "custom")
    at.number_input(key="setting_dropout.dropout_p").set_value(raw).run()
    assert "dropout_p must be in [0, 1)" in warnings(at) and f"got {raw:g}" in warnings(at)
    assert settings(at).dropout.dropout_p == shown
    assert at.number_input(key="setting_dropout.dropout_p").value == shown
    assert not at.exception and not at.error
    assert_checks_pass(at)


# ---------------------------------------------------------------- multi-head page


def test_multi_head_page_reproduces_the_printed_output_and_states_the_scale():
    at = open_app(MHA, "journey_v1")
    element_step(at, **{"multi_head.stage": "output"})
    element_step(at, entry_col=1)
    assert shows_number(shown_latex(at), 0.4858, before="= ")  # MultiHeadAttention(3, 2, 6, 0.0, num_heads=2), seed 123, row 1
    text = " ".join(m.value for m in at.markdown)
    assert "1/√head_dim = 1/√1 = **1**" in text and "not by 1/√d_out = 1/√2" in text
    assert "(1, 6, 2) →" in text and "(1, 2, 6, 1)" in text


def test_changing_heads_changes_the_split_and_the_checks():
    at = open_app(MHA, "seed000")
    element_step(at, **{"multi_head.stage": "scaled_scores"})
    assert r"\sqrt{2}" in shown_latex(at)
    assert any("nn.MultiheadAttention(4, num_heads=2" in c for c in checks(at))
    at.number_input(key="setting_num_heads").set_value(1).run()
    assert r"\sqrt{4}" in shown_latex(at)
    assert any("nn.MultiheadAttention(4, num_heads=1" in c for c in checks(at))
    at.number_input(key="setting_num_heads").set_value(4).run()
    element_step(at, head=3)
    assert r"a^{(4)}" in shown_latex(at) and r"\sqrt{1}" in shown_latex(at)
    assert_checks_pass(at)


@pytest.mark.parametrize("page", [MHA, CROSS])
def test_heads_that_do_not_divide_d_out_get_a_message_and_keep_the_settings(page):
    at = open_app(page, "seed000")
    at.number_input(key="setting_num_heads").set_value(3).run()
    assert "d_out = 4 cannot be split into 3 equal heads" in errors(at) and "1, 2, 4 heads" in errors(at)
    assert not at.exception
    assert settings(at).num_heads == 3 and at.number_input(key="setting_num_heads").value == 3
    assert at.number_input(key="setting_d_out").value == 4  # the settings are still on the page
    at.number_input(key="setting_d_out").set_value(6).run()
    assert not at.error
    assert_checks_pass(at)


# ---------------------------------------------------------------- cross-attention page


def test_cross_attention_with_sequences_of_different_lengths():
    at = open_app(CROSS, "custom")
    assert "m = 6 decoder tokens attend to n = 7 encoder tokens" in infos(at)
    at.text_input(key="setting_encoder_sentence").set_value("un chat").run()
    assert not at.error
    assert "m = 6 decoder tokens attend to n = 2 encoder tokens" in infos(at)
    element_step(at, **{"cross_attention.stage": "key"})
    assert "x^{enc}" in shown_latex(at)
    assert_checks_pass(at)


@pytest.mark.parametrize("field, message", [("encoder_sentence", "The encoder sentence was too long"),
                                            ("sentence", "Your sentence was too long")])
def test_a_too_long_sentence_is_cut_with_a_message(field, message):
    at = open_app(CROSS, "custom")
    long = " ".join(f"w{i}" for i in range(MAX_TOKENS + 2))
    at.text_input(key=f"setting_{field}").set_value(long).run()
    assert message in warnings(at) and f"at most {MAX_TOKENS} tokens" in warnings(at) and "2 more words" in warnings(at)
    assert not at.exception and not at.error, errors(at)
    kept = " ".join(f"w{i}" for i in range(MAX_TOKENS))
    assert settings(at).get(field) == kept and at.text_input(key=f"setting_{field}").value == kept


def test_a_sentence_longer_than_the_context_length_gets_a_message():
    at = open_app(CROSS, "custom")
    at.number_input(key="setting_context_length").set_value(6).run()
    assert "The encoder sentence has 7 tokens but the context length is 6" in errors(at)
    at.text_input(key="setting_encoder_sentence").set_value("le chat").run()
    assert not at.error


def test_encoder_words_outside_a_fixed_vocabulary_run_as_your_own_sentence():
    at = open_app(CROSS, "journey_v1")
    at.text_input(key="setting_encoder_sentence").set_value("one giant step").run()
    assert "“giant”. So your sentence now runs as “Your own sentence”" in warnings(at)
    assert settings(at).preset == "custom" and settings(at).encoder_sentence == "one giant step"
    assert settings(at).d_model == 3 and not at.error, errors(at)


def test_user_tokens_are_escaped_on_the_new_pages():
    at = open_app(CROSS, "custom")
    at.text_input(key="setting_sentence").set_value("a*b c_d").run()
    at.text_input(key="setting_encoder_sentence").set_value("x$y z").run()
    assert not at.exception and not at.error, errors(at)
    if has_element(at):  # the tokens go to the browser as text (the element escapes them: stepper.test.js)
        data = element(at)
        assert any("a*b" in label for panel in data["stages"][data["position"]["stage"]]["panels"]
                   for label in panel["rows"]), data["stages"][data["position"]["stage"]]["panels"][0]["rows"]
    else:
        assert any(r"a\*b" in c.value for c in at.caption)
    at.switch_page(CAUSAL).run()
    at.session_state["edits"] = {"custom": {"mask": {(0, 0): 0.0}}}
    at.run()
    said = " ".join(element(at)["warnings_html"])  # the element's warning: Markdown made HTML, the * kept as text
    assert "“a*b”" in said and "<em>" not in said, said
