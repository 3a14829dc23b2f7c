"""Every page under streamlit.testing.v1.AppTest: renders on every preset, reacts to widgets,
and answers bad input with a message while keeping the user's state."""

from __future__ import annotations

import math

import pytest
from conftest import (  # noqa: F401
    APP,
    element,
    element_checks,
    element_entry,
    element_latex,
    element_step,
    errors,
    latex,
    open_app,
    picker,
    settings,
    shows_number,
    warnings,
)

from attention_core.inputs.presets import PRESETS

PAGES = ["app_pages/overview.py", "app_pages/tokens.py", "app_pages/no_weights.py", "app_pages/self_attention.py"]


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_on_every_preset(page, preset):
    at = open_app(page, preset)
    assert settings(at).preset == preset
    assert not at.exception
    assert not at.error, errors(at)
    assert at.title, "every page has a title"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_overviews_pipeline_is_a_list_of_its_steps_in_order(language):
    """The pipeline is the page's own HTML, an ordered list of its seven steps: Streamlit's graphviz chart warned in
    the browser's console on every load (its graph library looks for a web worker script Streamlit does not ship)."""
    import re

    at = open_app()
    if language == "zh":
        at.radio(key="setting_language").set_value("zh").run()
    assert not at.get("graphviz_chart")
    (pipeline,) = [m.value for m in at.markdown if m.value.startswith("<ol")]
    steps = re.findall(r'<li style="[^"]*">([^<]*)</li>', pipeline)
    assert len(steps) == 7 and steps[2] == "Q = X W_q,  K = X W_k,  V = X W_v", steps
    assert steps[0] == {"en": "tokens", "zh": "词元"}[language] and pipeline.count("↓") == 6


@pytest.mark.parametrize("preset", [p for p in PRESETS if p != "hello"])
def test_self_attention_states_a_passing_torch_check(preset):
    at = open_app("app_pages/self_attention.py", preset)
    (check,) = element_checks(at)
    assert "torch.nn.functional.scaled_dot_product_attention" in check
    diff = float(check.split("= ")[-1].split(" ")[0])
    assert diff < 1e-5


def test_preset_switch_loads_the_seed_example():
    at = open_app("app_pages/tokens.py", "journey_v1")
    s = settings(at)
    assert (s.sentence, s.d_model, s.d_k, s.seed) == ("Your journey starts with one step", 3, 2, 123)
    table = at.dataframe[0].value
    assert list(table.loc["token"]) == ["Your", "journey", "starts", "with", "one", "step"]


def test_seed000_tokens_page_shows_the_seed_ids():
    at = open_app("app_pages/tokens.py")
    table = at.dataframe[0].value
    assert [int(v) for v in table.loc["id"]] == [1, 2, 5, 6, 4, 14, 6]  # seed 000 prints this tensor


def test_changing_the_sentence_changes_the_tokens_and_is_shared():
    at = open_app("app_pages/tokens.py", "custom")
    at.text_input(key="setting_sentence").set_value("a dog saw a cat").run()
    assert list(at.dataframe[0].value.loc["token"]) == ["a", "dog", "saw", "a", "cat"]
    assert [int(v) for v in at.dataframe[0].value.loc["id"]] == [0, 1, 2, 0, 3]
    at.switch_page("app_pages/self_attention.py").run()
    assert at.text_input(key="setting_sentence").value == "a dog saw a cat"  # its own box, on the step page


def test_stepping_through_the_stages_shows_each_formula():
    """The element's stages in order, each with its formula and, once shown, its explained entries (its Next and
    Previous are the browser's: tests/app/test_browser_stepper.py, frontend/stepper/stepper.test.js)."""
    at = open_app("app_pages/self_attention.py")
    assert element(at)["order"] == ["inputs", "query", "key", "value", "scores", "scaled_scores", "weights", "output"]
    for stage in element(at)["order"]:
        element_step(at, **{"self_attention.stage": stage})
        assert not at.exception
        assert len(element_latex(at).splitlines()) >= 4  # title formula, matrix form, element form, the entry
    element_step(at, **{"self_attention.stage": "weights"})
    assert r"\operatorname{softmax}" in element_latex(at)


def test_explain_entry_uses_the_chosen_cell_and_its_real_numbers():
    at = open_app("app_pages/self_attention.py", "journey_v1")
    element_step(at, **{"self_attention.stage": "output", "entry_row": 1, "entry_col": 1})
    # rasbt ch03 / seed 004: SelfAttention_v1 with seed 123, context vector of "journey" = [0.3061, 0.8210]
    assert "{z}_{2,2}" in element_entry(at)
    assert shows_number(element_entry(at), 0.8210, before="= ")


def test_changing_d_k_changes_the_numbers_shown():
    at = open_app("app_pages/self_attention.py")
    before = element_latex(at)
    at.number_input(key="setting_d_k").set_value(2).run()
    assert settings(at).d_k == 2
    assert element_latex(at) != before
    assert not at.error


def test_weightless_page_reproduces_seed_004_for_shiny():
    at = open_app("app_pages/no_weights.py", "hello")
    at.selectbox(key="setting_no_weights.query_index").set_value(1).run()
    text = latex(at)
    assert r"{\omega}_{2,1}" in text and shows_number(text, 0.7842, before="= ")  # Hello · shiny = 0.34·0.53 + …
    assert all(shows_number(text, v) for v in (0.3990, 0.3854, 0.8610))  # exact context vector of "shiny"
    assert any("0.3992, 0.3858, 0.8610" in c.value for c in at.caption)  # the seed's rounded print, explained


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "sentence, message",
    [
        ("", "empty"),
        ("   !!  ", "empty"),
        ("Learning", "one token"),
    ],
)
@pytest.mark.parametrize("page", ["app_pages/tokens.py", "app_pages/no_weights.py", "app_pages/self_attention.py"])
def test_bad_sentence_gets_a_message_and_is_kept(page, sentence, message):
    at = open_app(page)
    at.switch_page("app_pages/tokens.py").run()
    at.text_input(key="setting_sentence").set_value(sentence).run()
    at.switch_page(page).run()
    assert not at.exception
    assert message in errors(at)
    assert settings(at).sentence == sentence  # what the user typed is not lost
    at.switch_page("app_pages/tokens.py").run()
    assert at.text_input(key="setting_sentence").value == sentence


def test_every_dictionary_word_including_the_last_one_works():
    at = open_app("app_pages/tokens.py")
    at.text_input(key="setting_sentence").set_value("Neural Knowledge Automation Innovation").run()
    assert not at.error, errors(at)
    assert [int(v) for v in at.dataframe[0].value.loc["id"]] == [20, 21, 22, 23]


@pytest.mark.parametrize("field, value, shown", [("d_k", 99, 16), ("d_k", 0, 1), ("d_model", 40, 16)])
def test_dims_out_of_range_are_clamped_with_a_message(field, value, shown):
    page = "app_pages/self_attention.py" if field == "d_k" else "app_pages/tokens.py"
    at = open_app(page, "custom")
    at.number_input(key=f"setting_{field}").set_value(value).run()
    assert f"between 1 and 16; got {value}" in warnings(at)
    assert settings(at).get(field) == shown
    assert at.number_input(key=f"setting_{field}").value == shown
    assert not at.exception and not at.error


def test_fixed_embeddings_keep_d_model():
    at = open_app("app_pages/tokens.py", "hello")
    assert at.number_input(key="setting_d_model").disabled


@pytest.mark.parametrize("value, message", [(None, "is empty"), (float("nan"), "is empty"), (1e7, "between")])
def test_bad_cell_gets_a_message_and_the_edit_is_kept(value, message):
    at = open_app("app_pages/self_attention.py")
    at.session_state["edits"] = {"seed000": {"x": {(0, 1): value, (2, 2): 0.5}}}
    at.run()
    assert "X row 1, column 2" in errors(at) and message in errors(at)
    at.switch_page("app_pages/tokens.py").run()
    assert "X row 1, column 2" in errors(at)
    cells = at.session_state["edits"]["seed000"]["x"]
    assert cells[(2, 2)] == 0.5 and (0, 1) in cells


def test_huge_values_keep_the_softmax_finite():
    at = open_app("app_pages/self_attention.py")
    at.session_state["edits"] = {"seed000": {"x": {(0, 0): 1e6, (0, 1): -1e6}}}
    at.run()
    element_step(at, **{"self_attention.stage": "weights"})
    assert not at.error, errors(at)
    assert "one-hot" in " ".join(element(at)["notes_html"])
    (check,) = element_checks(at)
    assert "scaled_dot_product_attention" in check
    assert "nan" not in element_latex(at).lower() and "infty" not in element_latex(at)


def test_pasted_matrix_with_a_word_gets_a_message_and_keeps_the_text():
    at = open_app("app_pages/tokens.py", "hello")
    bad = "0.1 0.2 0.3\n0.4 oops 0.6\n0.7 0.8 0.9"
    at.text_area(key="paste_x").set_value(bad).run()
    at.button(key="paste_apply_x").click().run()
    assert "row 2, column 2: “oops” is not a number" in errors(at)
    assert at.text_area(key="paste_x").value == bad
    assert not at.session_state["edits"].get("hello", {}).get("x")


def test_a_paste_with_decimal_commas_and_minus_signs_reads_as_the_practice_box_does():
    """The practice box read "0,25" and "−0.5"; the paste box refused them: one way to read numbers now."""
    at = open_app("app_pages/tokens.py", "hello")
    at.text_area(key="paste_x").set_value("0,25 −0,5 1\n0 １ 0,75\n−1 0 0").run()
    at.button(key="paste_apply_x").click().run()
    assert not at.error, errors(at)
    x = at.session_state["edits"]["hello"]["x"]
    assert [x[(0, 0)], x[(0, 1)], x[(1, 1)], x[(1, 2)], x[(2, 0)]] == [0.25, -0.5, 1.0, 0.75, -1.0]
    assert "decimal comma" in " ".join(c.value for c in at.caption)


def test_pasted_matrix_flows_through_every_page_and_survives_page_switches():
    at = open_app("app_pages/tokens.py", "hello")
    at.text_area(key="paste_x").set_value("[[1, 0, 0],\n [0, 1, 0],\n [0, 0, 1]]").run()
    at.button(key="paste_apply_x").click().run()
    assert not at.error, errors(at)
    at.switch_page("app_pages/no_weights.py").run()
    at.selectbox(key="setting_no_weights.query_index").set_value(0).run()
    # X = I: scores of token 1 are (1, 0, 0), so its weights are e/(e+2), 1/(e+2), 1/(e+2)
    assert f"= {round(math.e / (math.e + 2), 4)}" in latex(at)
    at.switch_page("app_pages/overview.py").run()
    at.switch_page("app_pages/tokens.py").run()
    assert at.session_state["edits"]["hello"]["x"][(1, 1)] == 1.0
    at.button(key="reset_x").click().run()
    assert not at.session_state["edits"]["hello"].get("x")


def test_edits_are_kept_per_preset():
    at = open_app("app_pages/tokens.py", "hello")
    at.session_state["edits"] = {"hello": {"x": {(0, 0): 2.0}}}
    at.run()
    at.selectbox(key="setting_preset").set_value("seed000").run()
    at.selectbox(key="setting_preset").set_value("hello").run()
    assert at.session_state["edits"]["hello"]["x"] == {(0, 0): 2.0}


def test_user_tokens_are_escaped_in_markdown_and_latex():
    at = open_app("app_pages/no_weights.py", "custom")
    at.switch_page("app_pages/tokens.py").run()
    at.text_input(key="setting_sentence").set_value(r"a$b x\y_z c{d}").run()
    at.switch_page("app_pages/no_weights.py").run()
    assert not at.exception and not at.error
    assert r"\text{a\$b}" in latex(at) and r"\text{x\textbackslash{}y\_z}" in latex(at)


def test_weights_can_be_edited_and_the_edits_survive_hiding_and_page_switches():
    at = open_app("app_pages/self_attention.py", "journey_v1")
    element_step(at, **{"self_attention.stage": "query"})
    at.toggle(key="sa_show_weights").set_value(True).run()
    at.text_area(key="paste_w_query").set_value("1 0\n0 1\n0 0").run()
    at.button(key="paste_apply_w_query").click().run()
    assert not at.error, errors(at)
    # W_q keeps the first two dims of x: q_{1,1} = x_{1,1} = 0.43 ("Your")
    assert "{q}_{1,1}" in element_entry(at) and element_entry(at).rstrip("$\n ").endswith("= 0.43")
    at.toggle(key="sa_show_weights").set_value(False).run()
    at.switch_page("app_pages/tokens.py").run()
    at.switch_page("app_pages/self_attention.py").run()
    assert element_entry(at).rstrip("$\n ").endswith("= 0.43")
    assert at.session_state["edits"]["journey_v1"]["w_query"][(2, 1)] == 0.0
