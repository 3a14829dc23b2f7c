"""The one error type the app shows to users, and translatable messages.

Every check on user input in ``attention_core`` raises :class:`InputError`
with a message written for a learner (what is wrong and how to fix it).
Pages catch it and show the message; they never show a traceback.

Messages are written as templates marked with :func:`N_` and filled with
``str.format`` parameters, e.g. ``InputError(N_("The sentence has {n} tokens."), n=13)``.
The English text is the template filled in; the UI translates the template
(``ui.i18n``) and fills in the same parameters, so core stays free of any
UI or language code.
"""

from __future__ import annotations

from typing import Any


def N_(template: str) -> str:
    """Mark a message template for translation (extracted by Babel); returns it unchanged."""
    return template


class UserText(str):
    """A message parameter that holds what the user typed: the UI escapes it before Markdown shows it."""


#: How many characters of a user's text (a link's value, a typed word, a file name) a message quotes.
QUOTE_CHARS = 40


def quote(text: Any, limit: int = QUOTE_CHARS) -> UserText:
    """The start of what the user gave, for a message: ``str(text)`` cut to ``limit`` characters, "…" when cut.

    A link's value may be 100,000 characters long; a message quotes enough to recognise it.
    """
    text = str(text)
    return UserText(text if len(text) <= limit else text[:limit - 1] + "…")


def quote_list(texts: list[Any], shown: int = 5, *, marks: bool = False) -> UserText:
    """Up to ``shown`` of the user's texts, each :func:`quote` d (in quotation marks “…” with ``marks``),
    comma-separated; "…" when there are more."""
    quoted = [f"“{quote(t)}”" if marks else quote(t) for t in texts[:shown]]
    return UserText(", ".join(quoted + (["…"] if len(texts) > shown else [])))


class Message(str):
    """A message in English that remembers its template and parameters (for translation).

    It is a ``str`` (the English text), so it can be shown, compared and joined as one.

    Attributes:
        template: the ``str.format`` template, marked with :func:`N_` where it is written.
        params: the values filled in.
    """

    template: str
    params: dict[str, Any]

    def __new__(cls, template: str, **params: Any) -> "Message":
        text = template.format(**params) if params else template
        obj = super().__new__(cls, text)
        obj.template = template
        obj.params = params
        return obj


class InputError(ValueError):
    """A problem with what the user typed, edited or chose.

    Args:
        message: a template marked with :func:`N_` (or plain English text).
        field: which setting or matrix the problem is in.
        **params: values for the template's ``{placeholders}``.

    Attributes:
        message: a :class:`Message` (the English text, with its template and params).
        field: which setting or matrix the problem is in (``"sentence"``,
            ``"x"``, ``"d_k"``, ...), so a page can show it next to that input.
    """

    def __init__(self, message: str, *, field: str = "", **params: Any) -> None:
        self.message = message if isinstance(message, Message) else Message(message, **params)
        super().__init__(str(self.message))
        self.field = field
