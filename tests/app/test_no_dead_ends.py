"""No dead ends for a new user (issue 60): a bad cell never locks the pages, your own sentence is one step from
anywhere, a long text is cut visibly, and a page that cannot build says why and offers the way back.

The cell typed into the editor's grid is a browser test (tests/app/test_browser.py); here what the app does with it.
"""

from __future__ import annotations

import pytest
from conftest import element, errors, open_app, open_link, settings, warnings

from attention_core.inputs.edits import EMPTY, NOT_A_NUMBER, OUT_OF_RANGE, read_cell, refused_cell
from attention_core.inputs.text import MAX_SENTENCE_CHARS, MAX_TOKENS, cut_text, tokenize
from attention_core.settings import Settings

LONG = " ".join(f"word{i}" for i in range(2000))  # a 2,000-word paste


# ---------------------------------------------------------------- a cell's edit, checked where it comes in


@pytest.mark.parametrize("typed, value, problem", [
    ("0.5", 0.5, ""), ("0,25", 0.25, ""), ("−1.5", -1.5, ""), ("１.２５", 1.25, ""), (2, 2.0, ""), (-1e6, -1e6, ""),
    (None, None, EMPTY), ("", None, EMPTY), ("  ", None, EMPTY),
    ("abc", None, NOT_A_NUMBER), ("nan", None, NOT_A_NUMBER), (float("nan"), None, NOT_A_NUMBER),
    (True, None, NOT_A_NUMBER), ("1,2,3", None, NOT_A_NUMBER),
    ("inf", None, OUT_OF_RANGE), (float("-inf"), None, OUT_OF_RANGE), ("1e7", None, OUT_OF_RANGE),
    (1e6 + 1, None, OUT_OF_RANGE),
])
def test_a_cell_is_read_as_every_number_box_reads_and_a_bad_one_is_named(typed, value, problem):
    assert read_cell(typed) == (value, problem)


def test_a_refused_cell_says_what_was_typed_what_it_keeps_and_what_is_allowed():
    message = refused_cell(NOT_A_NUMBER, "X", 0, 2, "abc", kept=0.33741)
    assert message == ("X row 1, column 3: “abc” is not a number, so the cell keeps 0.3374. "
                       "Type a number between −1,000,000 and 1,000,000.")
    assert "was left empty, so it keeps its value from the example" in refused_cell(EMPTY, "X", 0, 0, None)
    assert "1e+07 is outside −1,000,000 … 1,000,000" in refused_cell(OUT_OF_RANGE, "W_q", 1, 1, 1e7, kept=0.1)


# ---------------------------------------------------------------- a bad edit in a link


def test_a_links_bad_cells_are_dropped_one_by_one_and_the_page_builds():
    at = open_link("app_pages/self_attention.py", edit_x="0,0,;1,1,0.5;2,2,abc;3,3,1e99")
    assert not at.error, errors(at)  # the page builds: no "is empty" lock
    cells = at.session_state["edits"]["seed000"]["x"]
    assert cells == {(1, 1): 0.5}  # the good edit is kept
    text = warnings(at)
    assert "X row 1, column 1 was left empty, so it keeps its value from the example" in text
    assert "X row 3, column 3: “abc” is not a number" in text
    assert "X row 4, column 4: 1e99 is outside" in text
    assert "edit_x=1,1,0.5" in "&".join(f"{k}={v}" for k, v in at.query_params.items()) or (
        at.query_params["edit_x"] == ["1,1,0.5"] or at.query_params["edit_x"] == "1,1,0.5")


def test_an_old_sessions_bad_cell_says_why_and_offers_the_way_back_on_the_page():
    """A session whose edits hold a bad cell (from before cells were checked where they come in) gets the message
    and, right under it, the matrix's reset and the example's and every setting's."""
    at = open_app("app_pages/self_attention.py")
    at.session_state["edits"] = {"seed000": {"x": {(0, 1): None, (2, 2): 0.5}}}
    at.run()
    assert "X row 1, column 2" in errors(at)
    buttons = {b.key for b in at.button}
    assert {"way_back_reset_x", "way_back_example", "way_back_all"} <= buttons
    at.button(key="way_back_reset_x").click().run()
    assert not at.error, errors(at)
    assert not at.session_state["edits"]["seed000"].get("x")


def test_the_way_back_to_the_examples_settings_keeps_the_language():
    at = open_app("app_pages/causal.py")
    at.radio(key="setting_language").set_value("zh").run()
    at.session_state["edits"] = {"seed000": {"x": {(0, 0): None}}}
    at.run()
    assert at.error
    at.button(key="way_back_example").click().run()
    assert not at.error, errors(at)
    assert settings(at).language == "zh" and settings(at).preset == "seed000"


def test_a_page_without_a_sentence_box_offers_one_where_it_stopped():
    at = open_app("app_pages/causal.py")
    at.switch_page("app_pages/tokens.py").run()
    at.text_input(key="setting_sentence").set_value("Learning").run()  # one token: no page can build
    at.switch_page("app_pages/causal.py").run()
    assert "one token" in errors(at)
    box = at.text_input(key="setting_sentence__way_back")
    assert box.value == "Learning"
    box.set_value("Deep Learning And Data").run()
    assert not at.error, errors(at)
    assert settings(at).sentence == "Deep Learning And Data"


# ---------------------------------------------------------------- your own sentence


def test_your_own_sentence_on_the_default_example_runs_keeping_d_k_and_the_seed():
    at = open_app("app_pages/self_attention.py")
    at.number_input(key="setting_d_k").set_value(4).run()
    at.number_input(key="setting_seed").set_value(5).run()
    at.text_input(key="setting_sentence").set_value("the cat sat on the mat").run()  # typed where the learner is
    s = settings(at)
    assert (s.preset, s.sentence, s.d_k, s.seed, s.d_model) == ("custom", "the cat sat on the mat", 4, 5, 4)
    assert not at.error, errors(at)
    assert "So your sentence now runs as “Your own sentence”" in warnings(at)
    assert "“the”, “cat”, “sat”, “on”, “mat”" in warnings(at)
    at.switch_page("app_pages/tokens.py").run()
    assert at.selectbox(key="setting_preset").value == "custom"
    assert at.text_input(key="setting_sentence").value == "the cat sat on the mat"
    assert list(at.dataframe[0].value.loc["token"]) == ["the", "cat", "sat", "on", "the", "mat"]  # not "The"


def test_a_link_with_words_outside_the_dictionary_opens_as_your_own_sentence():
    at = open_link("app_pages/self_attention.py", sentence="Attention is all you need", d_k="2", seed="7")
    s = settings(at)
    assert (s.preset, s.sentence, s.d_k, s.seed) == ("custom", "Attention is all you need", 2, 7)
    assert not at.error, errors(at)


def test_the_dictionarys_own_words_stay_on_the_worked_example():
    s, messages = Settings().replace(sentence="Deep Learning And Machine Learning")
    assert s.preset == "seed000" and messages == []


# ---------------------------------------------------------------- long text


def test_a_long_paste_is_cut_at_a_word_boundary_and_the_page_says_how_much():
    at = open_app("app_pages/tokens.py")
    at.text_input(key="setting_sentence").set_value(LONG).run()
    kept = " ".join(f"word{i}" for i in range(MAX_TOKENS))
    assert settings(at).sentence == kept
    assert at.text_input(key="setting_sentence").value == kept  # the box shows what is kept
    text = warnings(at)
    assert f"only its first {MAX_TOKENS} words are kept" in text and "1,988 more words" in text
    assert f"at most {MAX_TOKENS} tokens and {MAX_SENTENCE_CHARS} characters" in text
    assert not at.error, errors(at)


@pytest.mark.parametrize("page", ["app_pages/self_attention.py", "app_pages/cross_attention.py"])
def test_a_link_with_a_2000_word_sentence_is_cut_before_anything_is_drawn(page):
    at = open_link(page, sentence=LONG, encoder_sentence=LONG)
    assert len(tokenize(settings(at).sentence)) == MAX_TOKENS
    assert len(tokenize(settings(at).encoder_sentence)) == MAX_TOKENS
    shown = [e.value for e in (*at.markdown, *at.caption, *at.warning, *at.error, *at.info)
             if not str(e.value).startswith("<style>")]  # the app's style sheet is no text
    assert not any("word1999" in str(text) or len(str(text)) > 2000 for text in shown)  # no wall of text
    assert "1,988 more words" in warnings(at)


def test_a_word_longer_than_the_limit_is_cut_inside_it():
    cut = cut_text("x" * 1000, max_chars=40)
    assert cut.text == "x" * 40 and cut.cut_chars == 960
    assert cut_text("short enough", max_tokens=12, max_chars=400) is None
    # punctuation is no token: "!" after the 12th word stays with it
    assert cut_text("a b c d e f g h i j k l ! m n", max_tokens=12).text == "a b c d e f g h i j k l !"


@pytest.mark.parametrize("path, limit", [("modern_lm.prompt", 4000), ("sinks.prompt", 4000), ("sinks.text", 8000),
                                         ("trained_model.sentence", 5000), ("generation.source", 40)])
def test_every_text_box_is_cut_visibly_at_its_limit(path, limit):
    s, messages = Settings().replace(**{path: "lorem ipsum " * 2000})
    kept = s.get(path)
    assert len(kept) <= limit and kept.endswith(("lorem", "ipsum"))
    assert len(messages) == 1 and f"at most {limit:,} characters are read" in messages[0]


def test_a_links_entry_out_of_range_is_counted_from_1_as_the_page_counts():
    """The entry's row 99 (0-based, in the link) was reported as "between 0 and 11; got 99, using 11" while the page
    counted rows from 1 and explained row 7 of its 7 × 7 matrix."""
    at = open_link("app_pages/self_attention.py", entry_row="99", stage="weights")
    assert ("The entry's row must be between 1 and 12; got 100, so the page shows the nearest one it has."
            in warnings(at))
    assert element(at)["position"]["row"] == 6  # the 7th (last) row of the 7 tokens' matrix
