"""The page *Check your understanding*: a short check before and after a lesson (``attention_core.check``).

Its settings (``settings.check``) say which check is shown: the phase (before / after the lesson) and the concepts
(one, or the six of attention). A teacher's "Check now" pushes a link that sets them; a learner alone picks them. The seat the
numbers are drawn for is the class seat, or the learner's own (``seat``, kept in the link: a reload gives the same
items back).

Sources: as ``attention_core.check``.
"""

from __future__ import annotations

from dataclasses import dataclass

from attention_core.check import AFTER, BEFORE, CONCEPTS, PHASES
from attention_core.errors import N_
from attention_core.fields import Choice, Token
from attention_core.page import Page

#: The concept setting's value for every concept.
ALL = "all"


@dataclass(frozen=True)
class CheckSettings:
    """The check page's own settings (``settings.check``).

    Attributes:
        phase: "before" or "after" the lesson.
        concept: one of ``attention_core.check.CONCEPTS``' keys, or "all".
        seat: a learner's own seat id when not in a class ("": drawn on the first visit), URL-safe base64.
    """

    phase: str = BEFORE
    concept: str = ALL
    seat: str = ""


CHECK_PAGE = Page(
    key="check", title=N_("Check your understanding"), icon=":material/quiz:", section="start",
    summary=N_("A short check before and after a lesson"),
    settings=CheckSettings,
    fields=(
        Choice("phase", PHASES, N_("Unknown phase “{raw}” of the check; showing the check {title}."),
               titles={BEFORE: N_("before the lesson"), AFTER: N_("after the lesson")}),
        Choice("concept", (ALL,) + tuple(CONCEPTS), N_("Unknown concept “{raw}”; checking every concept.")),
        Token("seat", N_("This link's seat id is not valid; you get a new one.")),
    ),
)
