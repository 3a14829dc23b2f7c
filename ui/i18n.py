"""Interface language: English (the source text) or 简体中文, from gettext catalogs.

Every label, explanation and caption is written in English inside ``_()``
(``from ui.i18n import _``) and translated from the Chinese catalogs in
``locales/zh_CN/LC_MESSAGES/*.po`` (standard gettext PO files, one per part of
the app, read with Babel). Messages from ``attention_core`` are
:class:`attention_core.errors.Message` objects: their template is translated
and their parameters filled in again.

A text with no translation falls back to English and is recorded in the
session (``missing()``); the tests render every page in Chinese and fail on
any missing text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st
from babel.messages.pofile import read_po

from attention_core.errors import Message
from ui import session

LOCALES = Path(__file__).resolve().parent.parent / "locales"
_MISSING = "i18n_missing"

#: Settings language code -> catalog folder.
CATALOG_OF = {"zh": "zh_CN"}


@st.cache_resource(show_spinner=False)
def catalog(language: str) -> dict[str, str]:
    """msgid -> translation for a language, from all its PO files (read once per server, read-only)."""
    folder = CATALOG_OF.get(language)
    table: dict[str, str] = {}
    if folder is None:
        return table
    for path in sorted((LOCALES / folder / "LC_MESSAGES").glob("*.po")):
        with path.open("rb") as f:
            for message in read_po(f, locale=folder):
                if message.id and isinstance(message.id, str) and message.string and not message.fuzzy:
                    table[message.id] = message.string
    return table


def language() -> str:
    """The current interface language code ("en" or "zh")."""
    return getattr(session.stored(), "language", "en")


def translate(lang: str, text: str, **params: Any) -> str:
    """``text`` in language ``lang``, with ``{placeholders}`` filled from ``params``.

    ``text`` may be a :class:`Message` from attention_core: its template is
    translated and its own parameters are used.
    """
    if isinstance(text, Message):
        template, params = text.template, {**text.params, **params}
    else:
        template = text
    if lang != "en":
        translated = catalog(lang).get(template)
        if translated is None:
            st.session_state.setdefault(_MISSING, set()).add(template)
        else:
            template = translated
    # a parameter that is itself a core Message (e.g. a label inside a sentence) is translated too
    params = {k: translate(lang, v) if isinstance(v, Message) else v for k, v in params.items()}
    return template.format(**params) if params else template


def _(text: str, **params: Any) -> str:
    """``text`` in the current language (see :func:`translate`)."""
    return translate(language(), text, **params)


def app_text(text: str) -> str:
    """A title or label from attention_core: app text (a Message) translated, math and tokens as they are."""
    return _(text) if isinstance(text, Message) else text


@dataclass(frozen=True)
class Translator:
    """The ``tr`` callback for attention_core's formulas, bound to one language.

    Equal for equal languages (hashable), so attention_core may cache formulas on it.
    """

    language: str

    def __call__(self, text: str, **params: Any) -> str:
        return translate(self.language, text, **params)


def translator() -> Translator:
    """The current language's :class:`Translator`."""
    return Translator(language())


def missing() -> set[str]:
    """Texts shown this session that have no translation (for the tests)."""
    return set(st.session_state.get(_MISSING, set()))
