"""The kinds of settings field: what a value may be, and how a bad one is repaired with a message.

A settings field is declared by one row (:class:`Field`): its name, its kind (a whole number in a range, a real
number, a switch, text, one of a few keys, ...), its limits and what it is called in a message. The one settings
object (:mod:`attention_core.settings`) is checked by one loop over its rows: the shared fields' and each page's
own (declared beside the page, :class:`attention_core.page.Page`). A floor module (imports ``errors`` and the leaf
``inputs.text``).
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from attention_core.errors import N_, Message, quote
from attention_core.inputs.text import cut_message, cut_text

#: A random id's alphabet (``secrets.token_urlsafe``).
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


def as_float(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an int beyond float's range (10**400): as huge as a float can say
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    try:  # numpy numbers
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def as_int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None



def label(text: str) -> Message:
    """A translatable label inside another message (the UI translates both)."""
    return Message(text)


def fill(template: str, **params: Any) -> Message:
    """``Message(template, ...)`` with only the parameters ``template`` uses (a row's templates
    may use any of the parameters its kind offers)."""
    used = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    return Message(template, **{name: value for name, value in params.items() if name in used})



# ---------------------------------------------------------------- the kinds of field

#: What a row's check returns: (the repaired value, messages for the user; empty = accepted as is).
Checked = tuple[Any, list[Message]]


@dataclass(frozen=True)
class Field:
    """One row of :data:`FIELDS`: a :class:`Settings` field and what it accepts.

    Attributes:
        name: the :class:`Settings` field.
    """

    name: str

    def check(self, raw: Any, fallback: Any) -> Checked:
        """Repair ``raw``, the field's value as given (any type).

        Args:
            raw: the value to check.
            fallback: what a malformed value is replaced by (the preset's default for the field).

        Returns:
            (the repaired value, messages; no message when ``raw`` was accepted).
        """
        raise NotImplementedError


@dataclass(frozen=True)
class IntRange(Field):
    """A whole number in [low, high]: a value outside is clamped to the nearest end; a
    malformed one ("abc", 2.5, NaN, None, True) is replaced by the fallback. ``" 7 "`` and
    ``4.0`` are read as 7 and 4.

    Attributes:
        low, high: the inclusive range.
        label: what the field is called in a message: a code term shown as is (``"d_k"``)
            or a :class:`Message` (translated with the message).
        one_based: the value is a 0-based index that the page shows counted from 1 (a row, a head, a block): its
            messages count from 1 too, and say that the page shows the nearest one it has (a page clamps it
            again to what it draws: 7 rows of a 7-token sentence).
    """

    low: int
    high: int
    label: str
    one_based: bool = False

    def check(self, raw: Any, fallback: Any) -> Checked:
        value = as_int(raw)
        shift = 1 if self.one_based else 0
        if value is None:
            return fallback, [Message(N_("{label} must be a whole number; got “{raw}”, using {value}."),
                                      label=self.label, raw=quote(raw), value=fallback + shift)]
        if not self.low <= value <= self.high:
            clamped = min(max(value, self.low), self.high)
            if self.one_based:
                return clamped, [Message(N_("{label} must be between {low} and {high}; got {value}, so the page "
                                            "shows the nearest one it has."),
                                         label=self.label, low=self.low + 1, high=self.high + 1,
                                         value=quote(value + 1))]
            return clamped, [Message(N_("{label} must be between {low} and {high}; got {value}, using {clamped}."),
                                     label=self.label, low=self.low, high=self.high, value=quote(value),
                                     clamped=clamped)]
        return value, []


@dataclass(frozen=True)
class OneBasedIndex(Field):
    """A 0-based index below ``count``, named 1-based in its message (the model's layer 1 is
    index 0). Anything else, out of range or malformed, becomes the first (0), with
    ``template`` (parameters: ``count``, and ``shown``: the value + 1, or the malformed value
    quoted).
    """

    count: int
    template: str

    def check(self, raw: Any, fallback: Any) -> Checked:
        value = as_int(raw)
        if value is not None and 0 <= value < self.count:
            return value, []
        shown = quote(value + 1) if value is not None else f"“{quote(raw)}”"
        return 0, [Message(self.template, count=self.count, shown=shown)]


@dataclass(frozen=True)
class FloatRange(Field):
    """A real number in [low, high], optionally snapped to a grid.

    A malformed value (not a number, NaN, or ±inf unless ``clamp_infinite``) is replaced by the
    fallback with ``malformed`` (parameters ``raw``, ``value``). A value outside [low, high] is
    clamped with ``out_of_range`` (parameters: the value under ``symbol``, ``clamped``, ``low``,
    ``high``), or with ``beyond``'s template when the value is at least ``beyond``'s threshold.
    Then ``snap`` (if given) moves it to the nearest allowed value, with ``off_grid``
    (parameters: the value under ``symbol``, ``snapped``) when that changes it.

    Attributes:
        low, high: the inclusive range.
        symbol: the value's name in the templates (``p`` for dropout_p, ``tau`` for τ).
        malformed, out_of_range: message templates.
        beyond: (threshold, template) or None.
        clamp_infinite: whether ±inf is clamped like any value out of range (else malformed).
        snap: the nearest allowed value of an in-range value, or None for no grid.
        off_grid: the message template of a snapped value.
    """

    low: float
    high: float
    symbol: str
    malformed: str
    out_of_range: str
    beyond: Optional[tuple[float, str]] = None
    clamp_infinite: bool = False
    snap: Optional[Callable[[float], float]] = None
    off_grid: str = ""

    def check(self, raw: Any, fallback: Any) -> Checked:
        value = as_float(raw)
        if value is None or math.isnan(value) or (math.isinf(value) and not self.clamp_infinite):
            return fallback, [fill(self.malformed, raw=quote(raw), value=fallback)]
        messages: list[Message] = []
        if not self.low <= value <= self.high:
            clamped = min(max(value, self.low), self.high)
            template = self.beyond[1] if self.beyond and value >= self.beyond[0] else self.out_of_range
            messages.append(fill(template, **{self.symbol: value}, clamped=clamped, low=self.low, high=self.high))
            value = clamped
        if self.snap is not None:
            snapped = self.snap(value)
            if not math.isclose(snapped, value, rel_tol=1e-9):
                messages.append(fill(self.off_grid, **{self.symbol: value}, snapped=snapped))
            value = snapped
        return value, messages


@dataclass(frozen=True)
class Switch(Field):
    """On or off: True / False, or 1 / 0 (read as True / False, silently). Anything else becomes
    the fallback with a message naming ``label`` -- or, when ``label`` is None, silently, any
    whole number read by its truth (presenter mode, repaired without a message as it always was).
    """

    label: Optional[str]

    def check(self, raw: Any, fallback: Any) -> Checked:
        if isinstance(raw, bool):
            return raw, []
        if self.label is None:
            return (bool(raw) if isinstance(raw, int) else fallback), []
        if isinstance(raw, (int, float)) and raw in (0, 1):
            return bool(raw), []
        template = (N_("{label} must be on or off; got “{raw}”, using on.") if fallback
                    else N_("{label} must be on or off; got “{raw}”, using off."))
        return fallback, [Message(template, label=self.label, raw=raw)]


@dataclass(frozen=True)
class Text(Field):
    """Any ``str`` (a sentence as typed), cut at a word boundary to the limits when it is longer, with a message
    that says how much was cut (:func:`attention_core.inputs.text.cut_text`); anything else becomes the fallback
    with ``template`` (no parameters).

    Attributes:
        template: the message of a value that is not text.
        max_tokens: the most word tokens kept (0: no limit).
        max_chars: the most characters kept (0: no limit).
        what: the text's name in the cut's message (``label(N_("Your sentence"))``).
    """

    template: str
    max_tokens: int = 0
    max_chars: int = 0
    what: str = ""

    def check(self, raw: Any, fallback: Any) -> Checked:
        if not isinstance(raw, str):
            return fallback, [Message(self.template)]
        cut = cut_text(raw, max_tokens=self.max_tokens, max_chars=self.max_chars)
        if cut is None:
            return raw, []
        return cut.text, [cut_message(self.what or label(N_("The text")), cut, max_tokens=self.max_tokens,
                                      max_chars=self.max_chars)]



@dataclass(frozen=True)
class Token(Field):
    """A random id as the app draws them (URL-safe base64: letters, digits, ``-`` and ``_``, 1 to ``max_chars``), or
    "" (none yet); anything else (a forged link's value) becomes "" with ``template`` (no parameters).

    Attributes:
        template: the message of a value that is not such an id.
        max_chars: the longest id accepted.
    """

    template: str
    max_chars: int = 32

    def check(self, raw: Any, fallback: Any) -> Checked:
        if raw == "" or (isinstance(raw, str) and len(raw) <= self.max_chars and _TOKEN.fullmatch(raw)):
            return raw, []
        return "", [Message(self.template)]


@dataclass(frozen=True)
class Choice(Field):
    """One of ``keys`` (strings); anything else becomes the fallback with ``template``.

    The template's parameters: the value as given, named ``raw_param``; ``value``, the fallback;
    ``title``, the fallback's title in ``titles`` (when given; translated with the message).

    Attributes:
        keys: the allowed values.
        template: the message.
        raw_param: the given value's name in the template.
        titles: key -> title, or None.
    """

    keys: tuple[str, ...]
    template: str
    raw_param: str = "raw"
    titles: Optional[Mapping[str, str]] = None

    def check(self, raw: Any, fallback: Any) -> Checked:
        if isinstance(raw, str) and raw in self.keys:
            return raw, []
        title = Message(self.titles[fallback]) if self.titles is not None else None
        return fallback, [fill(self.template, **{self.raw_param: quote(raw)}, value=fallback, title=title)]



def stage_row(name: str, stages: Mapping[str, str]) -> Choice:
    """The row of a step page's current stage: one of ``stages`` (key -> title); anything else becomes the
    page's default stage, with a message naming the title shown instead."""
    return Choice(name, tuple(stages), N_("Unknown step “{step}”; showing “{title}”."), raw_param="step",
                  titles=stages)
