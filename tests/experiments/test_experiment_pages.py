"""The experiment pages under AppTest: they render on every example, react to their widgets,
and answer bad input (out-of-range numbers, a bad sentence, bad uploads) with a message."""

from __future__ import annotations

import io
import math

import pytest
from conftest import errors, latex, open_app, settings, shows_number, warnings
from PIL import Image

from attention_core.inputs.presets import PRESETS
from attention_core.lessons.image_attention import page as image_core

EXPERIMENT_PAGES = [
    "app_pages/why_sqrt_dk.py",
    "app_pages/temperature.py",
    "app_pages/positional_encoding.py",
    "app_pages/additive.py",
    "app_pages/image_attention.py",
]


def successes(at) -> str:
    return " ".join(s.value for s in at.success)


def markdown(at) -> str:
    """The page's Markdown and captions, with md_escape's backslashes removed."""
    text = " ".join(m.value for m in at.markdown) + " " + " ".join(c.value for c in at.caption)
    return text.replace("\\", "")


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("page", EXPERIMENT_PAGES)
def test_every_experiment_page_renders_on_every_preset(page, preset):
    at = open_app(page, preset)
    assert not at.exception
    assert not at.error, errors(at)
    assert at.title
    assert "they disagree" not in errors(at)
    assert "✓" in successes(at), "every experiment states a passing check"


# ---------------------------------------------------------------- why √d_k


def _variance_column(at) -> list[str]:
    table = next(df.value for df in at.dataframe if "Var(q·k)" in df.value.columns)
    return list(table["Var(q·k)"])


def test_sqrt_page_shows_the_derivation_and_the_check():
    at = open_app("app_pages/why_sqrt_dk.py")
    text = latex(at)
    assert r"\operatorname{Var}\left[s\right]" in text and "= d_{k}" in text
    assert r"\mathbb{E}[q k] = 0" in text
    assert "scaled_dot_product_attention(q, K, I_n)" in successes(at)
    assert len(_variance_column(at)) == 11  # d_k = 1, 2, 4, ..., 1024


@pytest.mark.parametrize(("key", "value"), [
    ("setting_why_sqrt_dk.samples", 500), ("setting_experiment_seed", 3), ("setting_why_sqrt_dk.distribution", "rademacher"),
])
def test_sqrt_page_resamples_when_a_widget_changes(key, value):
    at = open_app("app_pages/why_sqrt_dk.py")
    before = _variance_column(at)
    widget = at.selectbox(key=key) if key.endswith("distribution") else at.number_input(key=key)
    widget.set_value(value).run()
    assert not at.exception
    assert _variance_column(at) != before


def test_sqrt_page_clamps_too_many_samples_with_a_message():
    at = open_app("app_pages/why_sqrt_dk.py")
    at.number_input(key="setting_why_sqrt_dk.samples").set_value(10**7).run()
    assert not at.exception
    assert settings(at).why_sqrt_dk.samples == 5000
    assert "between 100 and 5000" in warnings(at)
    at.number_input(key="setting_why_sqrt_dk.keys").set_value(0).run()
    assert settings(at).why_sqrt_dk.keys == 2 and "number of keys" in warnings(at)


# ---------------------------------------------------------------- temperature


def _limit_rows(at):
    return next(df.value for df in at.dataframe if any("argmax" in str(i) for i in df.value.index))


def test_temperature_slider_and_buttons_move_tau():
    at = open_app("app_pages/temperature.py")
    assert settings(at).temperature.tau == 1.0
    at.select_slider(key="setting_temperature.tau").set_value(0.01).run()
    assert not at.exception and settings(at).temperature.tau == 0.01
    cold = _limit_rows(at)
    row = cold.loc["τ = 0.01"]
    assert float(row.max()) > 0.49  # nearly one-hot (seed 000's query 1 splits between two "Learning"s)
    at.button(key="temp_hot").click().run()
    assert settings(at).temperature.tau == 100.0
    hot = _limit_rows(at)
    hot = hot.data if hasattr(hot, "data") else hot
    assert float(hot.loc["τ = 100"].max() - hot.loc["τ = 100"].min()) < 0.05  # nearly uniform
    assert shows_number(successes(at), 1 / (100 * math.sqrt(3)), before="scale=")  # 1 / (100 √3)


def test_temperature_row_picker_writes_that_row_out():
    at = open_app("app_pages/temperature.py")
    at.selectbox(key="setting_temperature.row").set_value(3).run()
    assert not at.exception
    assert "H_{4}" in latex(at) and "a_{4,j}" in latex(at)


def test_temperature_page_shows_a_bad_sentence_as_a_message():
    at = open_app("app_pages/temperature.py", "custom")
    at.switch_page("app_pages/tokens.py").run()
    at.text_input(key="setting_sentence").set_value("   ").run()
    at.switch_page("app_pages/temperature.py").run()
    assert not at.exception
    assert "empty" in errors(at)


# ---------------------------------------------------------------- positional encoding


def test_positional_page_shows_equivariance_and_its_breaking():
    at = open_app("app_pages/positional_encoding.py")
    text = successes(at)
    assert "max |SA(P X) − P SA(X)|" in text and "identical up to float rounding" in text
    assert "the outputs now depend on the order" in text
    assert "math.sin / math.cos" in text
    assert r"\sin" in latex(at) and r"\neq" in latex(at)


@pytest.mark.parametrize(("key", "value"), [("setting_positional_encoding.kind", "learned"), ("setting_positional_encoding.shuffle", "random"),
                                            ("setting_positional_encoding.shuffle", "rotate")])
def test_positional_page_choices_change_the_outputs(key, value):
    at = open_app("app_pages/positional_encoding.py")
    before = markdown(at) + successes(at)
    at.selectbox(key=key).set_value(value).run()
    assert not at.exception and not at.error
    assert markdown(at) + successes(at) != before
    assert "identical up to float rounding" in successes(at)


def test_positional_pattern_size_is_clamped_with_a_message():
    at = open_app("app_pages/positional_encoding.py")
    at.number_input(key="setting_positional_encoding.width").set_value(100000).run()
    assert not at.exception and settings(at).positional_encoding.width == 128
    assert "d_model of the pattern" in warnings(at)
    at.number_input(key="setting_positional_encoding.positions").set_value(1).run()
    assert settings(at).positional_encoding.positions == 2


# ---------------------------------------------------------------- additive


def test_additive_page_explains_the_chosen_pair():
    at = open_app("app_pages/additive.py")
    assert "a_{1,2}" in latex(at)
    at.selectbox(key="setting_additive.row").set_value(2).run()
    at.selectbox(key="setting_additive.col").set_value(4).run()
    assert not at.exception
    text = latex(at)
    assert "a_{3,5}" in text and r"\mathbf{q}_{3}" in text and r"\mathbf{k}_{5}" in text
    assert "{s}_{3,5}" in text  # the dot product of the same pair
    assert "plain Python loop" in successes(at)


def test_additive_hidden_size_changes_the_scorer():
    at = open_app("app_pages/additive.py")
    before = latex(at)
    at.number_input(key="setting_additive.hidden").set_value(7).run()
    assert not at.exception
    assert latex(at) != before
    assert latex(at).count(r"\tanh\left(") >= 7
    at.number_input(key="setting_additive.hidden").set_value(99).run()
    assert settings(at).additive.hidden == 16 and "hidden size h" in warnings(at)


def test_additive_pair_is_clamped_to_a_shorter_sentence():
    at = open_app("app_pages/additive.py", "custom")
    at.selectbox(key="setting_additive.col").set_value(5).run()
    at.switch_page("app_pages/tokens.py").run()
    at.text_input(key="setting_sentence").set_value("a b c").run()
    at.switch_page("app_pages/additive.py").run()
    assert not at.exception and not at.error
    assert settings(at).additive.col == 2


# ---------------------------------------------------------------- self-attention over an image


def _png(size=(40, 30), colour=(200, 30, 30), fmt="PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, fmt)
    return buffer.getvalue()


def _upload(at, name: str, data: bytes, mime: str = "image/png"):
    uploader = at.file_uploader[0]
    uploader.set_value((name, data, mime)).run()
    return at


def test_image_page_picks_pixels_and_patterns():
    at = open_app("app_pages/image_attention.py")
    assert "n = r · W + c = 4 · 12 + 4 = 52" in markdown(at)
    at.selectbox(key="setting_image_attention.row").set_value(8).run()
    at.selectbox(key="setting_image_attention.col").set_value(5).run()
    assert not at.exception and "= 101" in markdown(at)
    at.selectbox(key="setting_image_attention.source").set_value("checkerboard").run()
    assert not at.exception and settings(at).image_attention.source == "checkerboard"
    assert "144 \\times 3" in latex(at)


def test_image_page_projected_tokens():
    at = open_app("app_pages/image_attention.py")
    assert at.number_input(key="setting_image_attention.d_k").disabled
    at.radio(key="setting_image_attention.features").set_value("projected").run()
    assert not at.exception and not at.number_input(key="setting_image_attention.d_k").disabled
    at.number_input(key="setting_image_attention.d_k").set_value(6).run()
    assert not at.exception and "3 × 6" in markdown(at)
    assert "✓" in successes(at)


def test_uploading_an_image_uses_it_and_keeps_only_its_pixels():
    at = open_app("app_pages/image_attention.py")
    _upload(at, "red.png", _png((40, 30)))
    assert not at.exception and not at.error, errors(at)
    assert settings(at).image_attention.source == "upload"
    stored = at.session_state["img_upload"]
    assert len(stored["pixels"]) == 12 and len(stored["pixels"][0]) == 16  # 40 × 30 -> 16 × 12
    assert stored["pixels"][0][0] == [200, 30, 30]
    assert "red.png" in markdown(at) and "shrunk to 16 × 12" in markdown(at)
    assert "(6, 8)" in markdown(at) or "= 104" in markdown(at)  # the centre pixel: 6 · 16 + 8
    # The file itself is dropped: the uploader got a fresh key.
    assert at.file_uploader[0].key != "img_uploader_0"
    # Another page and back: the image is still there.
    at.switch_page("app_pages/temperature.py").run()
    at.switch_page("app_pages/image_attention.py").run()
    assert not at.exception and settings(at).image_attention.source == "upload"


def test_uploading_a_jpeg_works():
    at = open_app("app_pages/image_attention.py")
    _upload(at, "photo.jpg", _png((640, 480), (20, 120, 220), "JPEG"), "image/jpeg")
    assert not at.exception and not at.error, errors(at)
    assert "JPEG" in markdown(at) and "640 × 480" in markdown(at)


@pytest.mark.parametrize(("name", "data", "says"), [
    ("notes.png", b"this is text, not a picture", "not a PNG or JPEG"),
    ("broken.png", _png((200, 200))[:120], "damaged or incomplete"),
    ("huge.png", b"\x89PNG\r\n\x1a\n" + bytes(6 * 2**20), "limit is 5 MB"),
    ("empty.jpg", b"", "empty"),
])
def test_bad_uploads_get_a_message_and_the_page_keeps_working(name, data, says):
    at = open_app("app_pages/image_attention.py")
    _upload(at, name, data)
    assert not at.exception
    assert says in errors(at), errors(at)
    assert settings(at).image_attention.source == "smiley"
    assert "✓" in successes(at)  # the rest of the page still runs
    at.selectbox(key="setting_image_attention.row").set_value(2).run()
    assert not at.exception and settings(at).image_attention.row == 2


@pytest.mark.parametrize(("name", "says"), [
    ("notes.txt", "this file is “.txt”"),
    ("photo", "this file has no extension"),
    ("photo.PNG.exe", "this file is “.exe”"),
])
def test_an_upload_forged_past_the_pickers_filter_gets_the_pages_message(name, says):
    """A modified client sends a file whose name the picker's filter (.png, .jpg, .jpeg) would have refused: Streamlit
    checked its extension itself while reading the uploader's value, before the page ran, and showed its
    StreamlitAPIException ("Invalid file extension: `.txt`") instead of the page. The page's own check answers now."""
    at = open_app("app_pages/image_attention.py")
    _upload(at, name, _png((40, 30)), "text/plain")
    assert not at.exception, at.exception
    assert says in errors(at), errors(at)
    assert settings(at).image_attention.source == "smiley" and "✓" in successes(at)
    at.selectbox(key="setting_image_attention.row").set_value(2).run()
    assert not at.exception and settings(at).image_attention.row == 2
    _upload(at, "red.png", _png((40, 30)))  # a real image afterwards is taken
    assert not at.exception and not at.error, errors(at)
    assert settings(at).image_attention.source == "upload"


def test_a_link_to_an_upload_without_one_falls_back_to_a_pattern():
    at = open_app("app_pages/image_attention.py")
    at.session_state["settings"] = settings(at).replace(**{"image_attention.source": "upload"})[0]
    at.run()
    assert not at.exception and settings(at).image_attention.source == "smiley"


def test_image_limits_are_stated():
    at = open_app("app_pages/image_attention.py")
    label = at.file_uploader[0].label
    assert f"{image_core.MAX_UPLOAD_BYTES // 2**20} MB" in label and "16 × 16" in label
