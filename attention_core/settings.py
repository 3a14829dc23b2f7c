"""The one settings object every page shares, and its validation.

Every value a user can choose lives in :class:`Settings`: the fields the pages share (:class:`SharedSettings`:
the sentence, d_k, the seed, the causal switch, the classroom's; declared in the leaf :mod:`attention_core.shared_settings`) and one group per page that declares its own
(``settings.alibi.num_heads``: a frozen dataclass declared beside its page, ``Page.settings``). The matrices the
user edits live beside it as :data:`Edits` (cell overrides on the seeded matrices). What each field accepts is
declared once, one row per field (:mod:`attention_core.fields`: its kind, its limits, what it is called in a
message): :data:`FIELDS` for the shared fields, each page's ``Page.fields`` for its own (with a stage row made
from its stages); :func:`validate_settings` checks every field with one loop over :data:`ROWS`. The pages come
from :mod:`attention_core.registry`, so a new page's settings join without an edit here. The checks that need
the tokens (the sentence) are in the pages' walk-through modules.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import weakref
from dataclasses import dataclass
from typing import Any, Collection, Optional

from attention_core import reads, registry
from attention_core.errors import N_, Message, quote_list
from attention_core.fields import (
    Checked,
    Choice,
    Field,
    FloatRange,
    IntRange,
    OneBasedIndex,
    Switch,
    Text,
    label,
    stage_row,
)
from attention_core.inputs.edits import EDITABLE, Edits
from attention_core.inputs.presets import DEFAULT_PRESET, OWN_SENTENCE_PRESET, PRESETS, Preset
from attention_core.inputs.text import MAX_SENTENCE_CHARS, MAX_TOKENS, tokenize
from attention_core.shared_settings import (
    LANGUAGES,
    MAX_DIM,
    MAX_SEED,
    MIN_DIM,
    PALETTES,
    PRESET_FIELDS,
    SharedSettings,
)

__all__ = [
    # the settings object and its validation
    "Settings", "SharedSettings", "GROUPS", "ROWS", "validate_settings", "Edits", "EDITABLE", "LANGUAGES", "PALETTES", "PRESET_FIELDS",
    # the declared table of fields and its row kinds
    "FIELDS", "Field", "IntRange", "OneBasedIndex", "FloatRange", "Switch", "Text", "Choice", "FieldNames",
]


class _SettingsMethods:
    """What the composed :data:`Settings` does besides holding values (a base of it, beside :class:`SharedSettings`)."""

    @classmethod
    def for_preset(cls, key: str, **overrides: Any) -> "Settings":
        """The defaults of preset ``key`` with ``overrides``, validated (repairs are not reported).

        Args:
            key: a key of ``PRESETS``; an unknown key gives the default preset's settings.
            **overrides: values by field path (``d_k``, ``alibi.num_heads``), of any type (repaired like any other
                value).

        Raises:
            TypeError: an override that is not a field of :class:`Settings`.
        """
        p = PRESETS.get(key, PRESETS[DEFAULT_PRESET])
        return validate_settings(cls(**_preset_values(p)).set(**overrides))[0]

    def replace(self, **changes: Any) -> tuple["Settings", list[str]]:
        """A validated copy with ``changes`` by field path (``d_k=4``, ``**{"alibi.num_heads": 3}``).

        Returns:
            (settings, messages): see :func:`validate_settings`.

        Raises:
            TypeError: a change that is not a field of :class:`Settings`.
        """
        changed = self.set(**changes)
        if _VALIDATED.get(id(self)) is self:  # self came out of validate_settings: only the changes need checking
            return validate_settings(changed, changes.keys())
        return validate_settings(changed)

    def get(self, path: str) -> Any:
        """The value of a field path: a shared field (``"d_k"``) or a page's own (``"alibi.num_heads"``).

        Raises:
            AttributeError: no such field.
        """
        return _getter(path)(self)

    def set(self, **values: Any) -> "Settings":
        """A copy with ``values`` by field path, as given (not validated: see :meth:`replace`).

        Raises:
            TypeError: a path that is not a field of :class:`Settings`.
        """
        shared = {path: value for path, value in values.items() if "." not in path}
        groups: dict[str, dict[str, Any]] = {}
        for path, value in values.items():
            if "." in path:
                group, name = path.split(".", 1)
                groups.setdefault(group, {})[name] = value
        for group, changes in groups.items():
            if group not in GROUPS:
                raise TypeError(f"Settings has no page {group!r}")
            shared[group] = dataclasses.replace(getattr(self, group), **changes)
        return dataclasses.replace(self, **shared)

    @classmethod
    def paths(cls) -> tuple[str, ...]:
        """Every field path, in order: the shared fields, then each page's own (``"alibi.num_heads"``)."""
        return _paths()

    @classmethod
    def readers(cls) -> tuple[tuple[str, operator.attrgetter], ...]:
        """Every field path (:meth:`paths`) with its reader, ``reader(settings)`` = ``settings.get(path)``: for a
        caller that reads every field of a settings object (the link compares ~130 on every click)."""
        return _readers()


@functools.lru_cache(maxsize=None)
def _getter(path: str) -> operator.attrgetter:
    """``path``'s reader (``attrgetter("alibi.num_heads")``: one C call per read, on the hot path of every click)."""
    return operator.attrgetter(path)


@functools.lru_cache(maxsize=None)
def _readers() -> tuple[tuple[str, operator.attrgetter], ...]:
    return tuple((path, _getter(path)) for path in _paths())


@functools.lru_cache(maxsize=None)
def _paths() -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(SharedSettings)) + tuple(
        f"{key}.{f.name}" for key, group in GROUPS.items() for f in dataclasses.fields(group))


def _group(page) -> type:
    """A page's settings group: its own dataclass (if it declares one) and, for a step page, its ``stage`` (the
    stage it opens on by default), so that no page declares the stage field itself."""
    if not page.stages:
        return page.settings
    base = page.settings
    name = base.__name__ if base else "".join(word.title() for word in page.key.split("_")) + "Settings"
    group = dataclasses.make_dataclass(name, [("stage", str, dataclasses.field(default=page.first_stage))],
                                       bases=(base,) if base else (), frozen=True)
    group.__module__ = __name__  # pickling finds it here, under its name (below)
    group.__doc__ = (base.__doc__ if base else f"The {page.key} page's own settings.") + (
        f"\n\n    stage: the step shown (a key of the page's stages; {page.first_stage!r} at first).")
    globals()[name] = group
    return group


#: Each page's own settings group, by page key (the pages that declare one or have stages, in the registry's order).
GROUPS: dict[str, type] = {page.key: _group(page) for page in registry.PAGES
                           if page.settings is not None or page.stages}

#: The one typed settings object: the shared fields and, for each page that has its own, a group named by the
#: page's key (``settings.alibi.num_heads``), declared beside the page (:class:`attention_core.page.Page`).
#: Frozen and hashable; built with the defaults by ``Settings()``; repaired by :func:`validate_settings`.
Settings = dataclasses.make_dataclass(
    "Settings", [(key, group, dataclasses.field(default_factory=group)) for key, group in GROUPS.items()],
    bases=(SharedSettings, _SettingsMethods), frozen=True)
Settings.__module__ = __name__  # pickling finds it here (make_dataclass's module= needs Python 3.12)
Settings.__doc__ = (SharedSettings.__doc__ or "") + "".join(
    f"\n    {key}: the {key} page's own settings ({group.__name__})." for key, group in GROUPS.items())

# Reads of every field are recorded while a build runs (attention_core/reads.py): a cached build is keyed by them.
reads.install(Settings, "", frozenset(f.name for f in dataclasses.fields(SharedSettings)))
for _key, _group_class in GROUPS.items():
    reads.install(_group_class, f"{_key}.", frozenset(f.name for f in dataclasses.fields(_group_class)))


def _preset_values(preset: Preset) -> dict[str, Any]:
    """The values of :data:`PRESET_FIELDS` that ``preset`` sets."""
    return {field: preset.key if field == "preset" else getattr(preset, field) for field in PRESET_FIELDS}


#: Fields a teacher's link cannot lock: the lock list itself and the interface language (each student's own).
UNLOCKABLE = ("locked", "language")


@dataclass(frozen=True)
class FieldNames(Field):
    """Field paths of :class:`Settings`, comma-separated (``"d_k,alibi.num_heads"``): the settings a teacher's
    link fixes. A name from before the pages had their own settings (``alibi_num_heads``) is read as today's path;
    unknown names and those in :data:`UNLOCKABLE` are dropped with a message; the rest are kept once each, in the
    order of :meth:`Settings.paths`."""

    def check(self, raw: Any, fallback: Any) -> Checked:
        if not isinstance(raw, str):
            return fallback, [Message(N_("The list of fixed settings must be text; none is fixed."))]
        names = [LEGACY.get(name.strip(), name.strip()) for name in raw.split(",") if name.strip()]
        lockable = [path for path in Settings.paths() if path not in UNLOCKABLE]
        unknown = [name for name in names if name not in lockable]
        kept = ",".join(name for name in lockable if name in names)
        if unknown:
            return kept, [Message(N_("The link fixes settings this app does not have or cannot fix: {names}. "
                                     "They are left free."), names=quote_list(unknown))]
        return kept, []



# ---------------------------------------------------------------- the table

#: Every :class:`Settings` field, once, with what it accepts; :func:`validate_settings` checks
#: them in this order (so its messages come in this order). The preset comes first: every
#: later field's fallback is the chosen preset's own default.
FIELDS: tuple[Field, ...] = (
    Choice("preset", tuple(PRESETS), N_("Unknown example “{key}”; showing “{title}”."), raw_param="key",
           titles={key: preset.title for key, preset in PRESETS.items()}),
    Text("sentence", N_("The sentence must be text; restored the example's sentence."), max_tokens=MAX_TOKENS,
         max_chars=MAX_SENTENCE_CHARS, what=label(N_("Your sentence"))),
    Text("encoder_sentence", N_("The encoder sentence must be text; restored the example's encoder sentence."),
         max_tokens=MAX_TOKENS, max_chars=MAX_SENTENCE_CHARS, what=label(N_("The encoder sentence"))),
    # the walk-through pages
    IntRange("d_model", MIN_DIM, MAX_DIM, "d_model"),
    IntRange("d_k", MIN_DIM, MAX_DIM, "d_k"),
    IntRange("seed", 0, MAX_SEED, label(N_("The seed"))),
    IntRange("entry_row", 0, MAX_TOKENS - 1, label(N_("The entry's row")), one_based=True),
    IntRange("entry_col", 0, max(MAX_TOKENS, MAX_DIM) - 1, label(N_("The entry's column")), one_based=True),
    # the masking & heads pages
    IntRange("context_length", 1, MAX_TOKENS, label(N_("The context length"))),
    IntRange("padding", 0, MAX_TOKENS, label(N_("The number of padding tokens"))),
    IntRange("d_out", MIN_DIM, MAX_DIM, "d_out"),
    IntRange("num_heads", 1, MAX_DIM, label(N_("The number of heads"))),
    IntRange("head", 0, MAX_DIM - 1, label(N_("The head")), one_based=True),
    # the trained model's page
    # the experiment pages
    IntRange("experiment_seed", 0, MAX_SEED, label(N_("The seed"))),
    # the switches
    Switch("causal_mask", label(N_("The causal switch"))),
    # the classroom
    Choice("language", tuple(LANGUAGES), N_("Unknown language “{language}”; using English."), raw_param="language"),
    Switch("presenter", None),
    Switch("practice", label(N_("The practice switch"))),
    Choice("palette", tuple(PALETTES), N_("Unknown colours “{palette}”; using red–blue."), raw_param="palette"),
    Switch("tables", label(N_("The tables switch"))),
    FieldNames("locked"),
)


#: Each page's own rows, by page key: its declared fields, then its stage (a step page).
PAGE_ROWS: dict[str, tuple[Field, ...]] = {
    page.key: tuple(page.fields) + ((stage_row("stage", page.stages),) if page.stages else ())
    for page in registry.PAGES if page.key in GROUPS
}

#: Every row with its field path, in the order :func:`validate_settings` checks them: the shared fields, then each
#: page's own (``"alibi.num_heads"``).
ROWS: tuple[tuple[str, Field], ...] = tuple((row.name, row) for row in FIELDS) + tuple(
    (f"{key}.{row.name}", row) for key, rows in PAGE_ROWS.items() for row in rows)

#: Link parameter names from before the pages had their own settings -> today's field paths.
LEGACY: dict[str, str] = {
    "causal": "causal_mask",  # the causal mask's switch, before "causal" named the causal attention page's settings
    **{old: f"{page.key}.{name}" for page in registry.PAGES for old, name in page.legacy.items()},
}


@functools.lru_cache(maxsize=None)
def preset_defaults(preset: str | None) -> Settings:
    """The default settings, with ``preset``'s own values (``None``: the defaults as they are). One object per preset,
    shared: settings are frozen."""
    return Settings() if preset is None else Settings(**_preset_values(PRESETS[preset]))


#: The settings objects :func:`validate_settings` returned (by id, held weakly): :meth:`Settings.replace` on one of them
#: checks only the fields it changes (a click changes one of ~130; each row checks its own value only).
_VALIDATED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def validate_settings(settings: Settings, changed: Optional[Collection[str]] = None) -> tuple[Settings, list[str]]:
    """Check and repair every field; the one place settings are validated.

    Each field is checked by its row of :data:`FIELDS`, in one loop: a value out of range is
    moved to the nearest allowed one, a malformed value (wrong type, NaN, unknown key) is
    replaced by the preset's default, and each repair is reported. A text (``sentence``, ``encoder_sentence``, a
    model's prompt) longer than its row's limits is cut at a word boundary, with a message; otherwise it is
    never altered, only replaced when it is not text. Then the rules across fields: a sentence with words
    outside the preset's fixed vocabulary runs as "Your own sentence" (:func:`_own_sentence`), and a preset with
    fixed embeddings fixes d_model.

    Args:
        settings: any :class:`Settings`, each field of any type (e.g. straight from a link).
        changed: the field paths in which ``settings`` differs from settings this function returned (what
            :meth:`Settings.replace` changes), or None (check every field). Only those rows are checked (and the
            rule across fields), since every row checks its own value against its own limits; a change of the
            preset checks every field.

    Returns:
        (valid settings, messages for the user: :class:`Message` s, English text that the UI
        translates; empty when nothing was changed). Valid settings come back equal and
        without messages (validation is idempotent).

    Each page's own settings are checked by the rows its declaration gives (``Page.fields``, and its stage),
    after the shared ones.

    No bad value raises: it is repaired.
    """
    messages: list[str] = []
    fixed: dict[str, Any] = {}
    if changed is not None and "preset" not in changed:
        shared = {path for path in changed if "." not in path}
        groups = {path.split(".", 1)[0] for path in changed if "." in path}
        default = preset_defaults(settings.preset)  # valid: it did not change
    else:
        shared, groups = None, None
        default = preset_defaults(None)  # the fallbacks until the preset is checked: the default preset's
    for field in FIELDS:
        if shared is not None and field.name not in shared:
            continue
        value, problems = field.check(getattr(settings, field.name), getattr(default, field.name))
        fixed[field.name] = value
        messages += problems
        if field.name == "preset":
            # Fallbacks for malformed values: the chosen preset's own defaults.
            default = preset_defaults(value)

    for key, rows in PAGE_ROWS.items():
        if groups is not None and key not in groups:
            continue
        group, defaults = getattr(settings, key), getattr(default, key)
        changes: dict[str, Any] = {}
        for row in rows:
            changes[row.name], problems = row.check(getattr(group, row.name), getattr(defaults, row.name))
            messages += problems
        fixed[key] = dataclasses.replace(group, **changes)

    if changed is None or not _OWN_SENTENCE_FIELDS.isdisjoint(changed):
        fixed["preset"], problems = _own_sentence(PRESETS[fixed.get("preset", settings.preset)],
                                                  fixed.get("sentence", settings.sentence),
                                                  fixed.get("encoder_sentence", settings.encoder_sentence))
        messages += problems
    fixed["d_model"], problems = _embedding_width(PRESETS[fixed.get("preset", settings.preset)],
                                                  fixed.get("d_model", settings.d_model))
    messages += problems
    valid = dataclasses.replace(settings, **fixed)
    _VALIDATED[id(valid)] = valid
    return valid, messages


#: The fields :func:`_own_sentence` reads.
_OWN_SENTENCE_FIELDS = frozenset({"preset", "sentence", "encoder_sentence"})


def _own_sentence(preset: Preset, sentence: str, encoder_sentence: str) -> tuple[str, list[Message]]:
    """The example a sentence runs on: ``preset``, or "Your own sentence" (its vocabulary built from the sentence)
    when the sentence or the encoder sentence has words outside ``preset``'s fixed vocabulary (seed 000's 23-word
    dictionary, the articles' word vectors). Every other setting is kept as it is: a learner who typed their own
    sentence keeps the d_k, seed and widths they chose. Returns (the preset's key, messages)."""
    vocabulary = preset.fixed_vocabulary
    if vocabulary is None:
        return preset.key, []
    unknown = vocabulary.unknown(tokenize(sentence) + tokenize(encoder_sentence))
    if not unknown:
        return preset.key, []
    return OWN_SENTENCE_PRESET, [Message(
        N_("Not among the words of the example “{example}”: {words}. So your sentence now runs as “{own}”, whose "
           "vocabulary is built from your words; d_k, the seed and your other settings are kept. Choose the example "
           "in the sidebar to go back to it."),
        example=label(preset.title), words=quote_list(unknown, marks=True), own=label(PRESETS[OWN_SENTENCE_PRESET].title))]


def _embedding_width(preset: Preset, d_model: int) -> tuple[int, list[Message]]:
    """d_model for ``preset``: a preset with fixed embeddings (the article's 3-d vectors) has
    exactly their width; any other keeps ``d_model``. Returns (d_model, messages)."""
    if not preset.fixed_embeddings:
        return d_model, []
    width = len(next(iter(preset.table.values())))
    if d_model == width:
        return d_model, []
    return width, [Message(
        N_("This example's embeddings are the tutorial's fixed {width}-d vectors, so d_model is {width}. "
           "Pick “Your own sentence” to choose d_model."),
        width=width,
    )]
