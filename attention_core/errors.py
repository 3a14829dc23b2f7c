"""The one error type the app shows to users.

Every check on user input in ``attention_core`` raises :class:`InputError`
with a message written for a learner (what is wrong and how to fix it).
Pages catch it and show the message; they never show a traceback.
"""

from __future__ import annotations


class InputError(ValueError):
    """A problem with what the user typed, edited or chose.

    Attributes:
        message: the text shown on the page, one or two plain sentences.
        field: which setting or matrix the problem is in (``"sentence"``,
            ``"x"``, ``"d_k"``, ...), so a page can show it next to that input.
    """

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
