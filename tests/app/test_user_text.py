"""What the user typed is shown as typed: never as bold, links or KaTeX, wherever it appears (issue 24).

Streamlit renders Markdown (and $…$ as KaTeX) in st.markdown, captions, alerts, widget labels and help, expander and
tab labels, button labels and the options of st.pills and st.radio. Every page is opened on a sentence of Markdown
and LaTeX payloads, and links carry them in names and values; no rendered source may hold a payload unescaped.
"""

from __future__ import annotations

import pytest
from conftest import APP, element, open_app, page_paths, settings, shown
from streamlit.testing.v1 import AppTest

PAGES = page_paths()
# Each survives tokenisation (punctuation is stripped only at a word's ends) and would render if not escaped.
PAYLOAD_SENTENCE = "a**x**a x$y^2$x b*z*b"
MARKERS = ("**x**", "$y^2$", "*z*")


def rendered_sources(at: AppTest) -> list[str]:
    """Every text the app gave Streamlit to render as Markdown, as the source it sent."""
    texts = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success", "title", "header",
                                  "subheader") for e in getattr(at, kind)]
    for kind in ("button", "number_input", "toggle", "selectbox", "text_input", "text_area", "radio", "checkbox",
                 "select_slider", "slider", "multiselect", "expander", "tabs", "button_group"):
        for widget in getattr(at, kind):
            texts += [str(getattr(widget, "label", "") or ""), str(getattr(widget, "help", "") or "")]
            if kind in ("radio", "button_group"):
                texts += [str(option) for option in widget.options]
    return texts


def unescaped(at: AppTest) -> list[str]:
    return [text[:160] for text in rendered_sources(at) if any(marker in text for marker in MARKERS)]


def open_with(params: dict[str, str], page: str) -> AppTest:
    """The app opened by a link with ``params`` (its first run reads them), then ``page``."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(params)
    at.run()  # AppTest's first run is the default page whatever switch_page said
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert at.title and at.title[0].value != "Attention Explorer" or page.endswith("overview.py"), "on the page"
    return at


@pytest.mark.parametrize("page", PAGES)
def test_every_page_shows_a_sentence_of_markdown_and_latex_as_typed(page):
    at = open_with({"preset": "custom", "sentence": PAYLOAD_SENTENCE, "encoder_sentence": PAYLOAD_SENTENCE,
                    "trained_model.sentence": PAYLOAD_SENTENCE}, page)
    assert settings(at).sentence == PAYLOAD_SENTENCE
    assert not unescaped(at), unescaped(at)


@pytest.mark.parametrize("sentence, preset, says", [
    ("a**x**a", "custom", "one token"),  # the one-token message quotes the token
])
def test_the_messages_about_the_sentence_quote_it_as_typed(sentence, preset, says):
    at = open_with({"preset": preset, "sentence": sentence}, "app_pages/tokens.py")
    assert any(says in e.value for e in at.error), [e.value for e in at.error]
    assert not unescaped(at), unescaped(at)
    at.switch_page("app_pages/self_attention.py").run()
    assert at.error and not unescaped(at), unescaped(at)


def test_the_message_that_your_sentence_runs_as_your_own_quotes_its_words_as_typed():
    at = open_with({"preset": "seed000", "sentence": "I x$y^2$x Like b*z*b"}, "app_pages/tokens.py")
    assert any("“x$y^2$x”, “b*z*b”" in shown(w.value) for w in at.warning), [w.value for w in at.warning]
    assert not unescaped(at), unescaped(at)


@pytest.mark.parametrize("params", [
    {"**x**": "1", "$y^2$": "2", "*z*": "3"},  # unknown names
    {"preset": "**x**"},
    {"language": "$y^2$"},
    {"stage": "*z*", "causal_stage": "**x**"},
    {"locked": "**x**,$y^2$"},
    {"d_k": "$y^2$", "seed": "**x**", "dropout_p": "*z*"},  # values that are not numbers
    {"edit_x": "**x**"},
])
def test_a_link_s_names_and_values_are_quoted_as_typed(params):
    at = open_with(params, "app_pages/self_attention.py")
    assert at.warning, "the link's problems are reported"
    assert not unescaped(at), unescaped(at)


def test_a_link_s_warnings_quote_a_short_prefix_and_group_unknown_names():
    # 998 parameters: Streamlit itself ignores a query string of more than 1000.
    at = open_with({"d_k": "9" * 100_000, "seed": "9" * 3000, "preset": "p" * 100_000,
                    **{f"made_up_{i}": "1" for i in range(995)}},
                   "app_pages/tokens.py")
    warnings = [w.value for w in at.warning]
    assert max(map(len, warnings)) < 400, max(map(len, warnings))
    unknown = [w for w in warnings if "unknown settings" in w]
    assert len(unknown) == 1 and "995 unknown settings" in unknown[0] and "…" in unknown[0]
    assert len(warnings) <= 5, warnings


def test_the_predict_pills_show_the_tokens_as_typed():
    at = open_with({"preset": "custom", "sentence": PAYLOAD_SENTENCE, "practice": "1", "stage": "weights"},
                   "app_pages/self_attention.py")
    data = element(at)
    position = data["position"]
    exercise = data["stages"]["weights"]["exercises"][f"{position['row']},{position['col']},{position['head']}"]
    options = exercise["predict"]["options"]  # the element writes them as text (escaped: tests/app/test_frontend)
    assert any("**x**" in option for option in options), options
    question = exercise["predict"]["question_html"]  # "Predict first" and the row's token in bold, nothing else
    assert question.count("<strong>") == 2 and "<em>" not in question, question
    assert not unescaped(at), unescaped(at)


def test_a_pasted_matrix_s_error_quotes_the_word_as_typed():
    at = open_app("app_pages/tokens.py", "hello")
    at.text_area(key="paste_x").set_value("a**x**a 0 0\n0 0 0\n0 0 0").run()
    at.button(key="paste_apply_x").click().run()
    assert any("is not a number" in e.value for e in at.error)
    assert not unescaped(at), unescaped(at)


def test_a_message_escapes_its_text_outside_code_spans_and_keeps_it_inside():
    from attention_core.errors import Message
    from ui.widgets import message_markdown

    message = Message("“{name}” is too large; run `pip install {package}` (see {reason}).", name="a**x**a.png",
                      package="p`*q*`", reason=Message("the {what}", what="$y^2$"))
    assert message_markdown(message) == r"“a\*\*x\*\*a\.png” is too large; run `pip install pˋ*q*ˋ` (see the \$y^2\$)."
