"""Both interface languages: every marked text has a Chinese translation, and every page renders in
Chinese with no text left untranslated."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from conftest import page_paths
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SOURCES = ["app_pages", "ui", "attention_core"]
KEYWORDS = {"_": None, "N_": None}


def extracted() -> dict[str, str]:
    """msgid -> where it is written, for every text marked with _() or N_() in the sources."""
    found: dict[str, str] = {}
    for folder in SOURCES:
        for filename, lineno, message, _comments, _context in extract_from_dir(
            ROOT / folder, method_map=[("**.py", "python")], keywords=KEYWORDS
        ):
            if isinstance(message, str):
                found.setdefault(message, f"{folder}/{filename}:{lineno}")
    with (ROOT / "app.py").open("rb") as f:
        from babel.messages.extract import extract_python

        for lineno, _funcname, message, _comments in extract_python(f, KEYWORDS.keys(), [], {}):
            if isinstance(message, str):
                found.setdefault(message, f"app.py:{lineno}")
    return found


def chinese_catalog() -> dict[str, str]:
    table: dict[str, str] = {}
    for path in sorted((ROOT / "locales" / "zh_CN" / "LC_MESSAGES").glob("*.po")):
        with path.open("rb") as f:
            for message in read_po(f, locale="zh_CN"):
                if message.id and message.string and not message.fuzzy:
                    table[message.id] = message.string
    return table


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_every_marked_text_has_a_chinese_translation():
    catalog = chinese_catalog()
    missing = {msgid: where for msgid, where in extracted().items() if msgid not in catalog}
    assert not missing, "no translation for:\n" + "\n".join(f"{w}: {m!r}" for m, w in sorted(missing.items()))


def test_translations_keep_every_placeholder():
    wrong = {
        msgid: text for msgid, text in chinese_catalog().items()
        if fields(msgid) != fields(text)
    }
    assert not wrong, "placeholders differ:\n" + "\n".join(f"{m!r} -> {t!r}" for m, t in wrong.items())


CJK = re.compile(r"[\u3400-\u9fff]")
ENGLISH = re.compile(r"\b[A-Za-z]{3,}\b[\s,;:]+\b[A-Za-z]{3,}\b")
NOT_PROSE = re.compile(r"\$\$.*?\$\$|\$.*?\$|`[^`]*`|\*\*|https?://\S+", re.S)


def untranslated(at: AppTest) -> list[str]:
    """Visible texts with English prose and no Chinese (user sentences and tokens are not prose)."""
    s = at.session_state["settings"]
    user_text = [s.get(name) for name in ("sentence", "encoder_sentence", "trained_model.sentence")
                 if isinstance(s.get(name), str)]
    texts = [e.value for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning",
                                  "error", "success") for e in getattr(at, kind)]
    texts += [w.label for kind in ("button", "selectbox", "number_input", "text_input", "text_area", "toggle",
                                   "radio", "slider", "select_slider", "checkbox", "multiselect")
              for w in getattr(at, kind)]
    texts += [e.label for e in at.expander] + [t.label for t in at.tabs]
    bad = []
    for text in texts:
        if not isinstance(text, str) or CJK.search(text):
            continue
        prose = NOT_PROSE.sub(" ", text)
        for sentence in user_text:
            prose = prose.replace(sentence, " ")
        if ENGLISH.search(prose):
            bad.append(text)
    return bad


@pytest.mark.parametrize("page", page_paths())
def test_every_page_renders_in_chinese_with_nothing_left_in_english(page):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = "zh"
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert at.session_state["settings"].language == "zh"
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"{page}: shown without a translation: {sorted(missing)}"
    assert not untranslated(at), f"{page}: English text not marked for translation: {untranslated(at)}"


@pytest.mark.parametrize("page", page_paths())
def test_every_page_renders_in_english(page):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert not CJK.search(" ".join(t.value for t in at.title))
