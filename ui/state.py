"""The one home for session state: the settings object and the user's matrix edits.

Per session we keep only a frozen :class:`Settings` (a few numbers and the
sentence) and the cells the user edited (a small dict per preset). Widgets are
bound to settings fields through callbacks, so a change on one page shows on
every page, and widget keys are re-seeded from the settings whenever a page
renders a widget again (Streamlit deletes the state of widgets it did not
render on the last run).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import streamlit as st
from streamlit.errors import StreamlitWidgetAlreadyInstantiatedError

from attention_core.classroom import share
from attention_core.fields import FloatRange, IntRange
from attention_core.settings import EDITABLE, PRESET_FIELDS, ROWS, Settings
from ui.i18n import _
from ui.session import store, stored

_PATHS = frozenset(Settings.paths())  # every settings field: a shared one ("d_k") or a page's ("alibi.num_heads")
_MESSAGES = "settings_messages"
_EDITS = "edits"  # {preset: {matrix name: {(row, col): value}}}
_VERSIONS = "editor_versions"  # {matrix name: int}, bumped to give an editor a fresh widget


def settings() -> Settings:
    """The current settings (created with the defaults on first use)."""
    current = stored()
    if current is None:  # not setdefault: it would build a default Settings (every page's group) on every call
        current = Settings()
        store(current)
    return current


def widget_key(field: str, variant: str = "") -> str:
    """The session-state key of the widget bound to a settings field (its path: ``d_k``, ``alibi.num_heads``).

    ``variant`` gives one field several widgets (e.g. a column picker whose labels
    are tokens on one step and dimensions on another: a fresh widget per label set,
    so the browser never shows the old labels).
    """
    return f"setting_{field}__{variant}" if variant else f"setting_{field}"


def update(*, own_position: bool = False, **changes: Any) -> None:
    """Validate and store changed settings; keep bound widgets in step.

    Call from widget callbacks, or in a page before the bound widgets of the
    changed fields are created (their keys may only be written before then); a
    change to a field whose widget this run already drew reruns the script, so
    that no widget shows a value the page does not compute with.
    Changes to the settings a teacher's link fixed (:func:`locked`) are dropped: their widgets are disabled,
    and a click elsewhere (a heatmap cell, Next) must not move them either.

    A change of the position shown (a step page's stage, the explained entry, the head) moves the step-through
    element to it (:func:`position_token`), unless ``own_position``: the element's own report of where it is, which
    also leaves the page's messages as they were (the element asks for entries right after a setting changed: the
    message of that change, "your sentence now runs as ...", must stay).
    """
    fixed = locked()
    if ENTRY_FIELDS & changes.keys():
        st.session_state[_ENTRY_CHOSEN] = True
    old = settings()
    new, messages = old.replace(**{k: v for k, v in changes.items() if k not in fixed})
    if not own_position and any(_is_position(f) and old.get(f) != new.get(f) for f in changes):
        _move_position()
    store(new)
    if messages or not own_position:  # the element's report of where it is keeps the message a setting gave
        st.session_state[_MESSAGES] = messages
    if not router_ran() and any(old.get(f) != new.get(f) for f in ROUTER_FIELDS):
        st.session_state[_ROUTER_STALE] = True  # the page's body reruns the whole app instead (ui/page_body.py)
    shown_stale = False
    # the keys bind() seeded (not a walk over all of session state, which reads every widget's value)
    for key in list(st.session_state.get(_BOUND_KEYS, ())):
        if key not in st.session_state:  # its widget was not drawn on the last run: Streamlit dropped its state
            st.session_state[_BOUND_KEYS].discard(key)
            continue
        field = key.removeprefix("setting_").split("__")[0]
        if field in _PATHS and st.session_state[key] != new.get(field):
            try:
                st.session_state[key] = new.get(field)
            except StreamlitWidgetAlreadyInstantiatedError:  # its widget is already on the page: it shows the old value
                shown_stale = True
    if shown_stale:
        st.rerun()  # draw the page again, every widget showing the new settings (bind seeds them)


#: The settings the router (app.py) draws or styles the app with. A page's body reruns alone when a widget inside it
#: changes (ui/page_body.py); a change of one of these reruns the whole app instead.
ROUTER_FIELDS = frozenset({"preset", "language", "presenter", "palette", "tables", "locked"})
_ROUTER_RAN = "router_ran"  # True from the router's start until its page has run, on a whole-app run


_ROUTER_STALE = "router_stale"  # a run without the router changed one of ROUTER_FIELDS


def router_started() -> None:
    """Called by the router (app.py) at the start of every whole-app run."""
    st.session_state[_ROUTER_RAN] = True
    st.session_state.pop(_ROUTER_STALE, None)


def router_stale() -> bool:
    """Whether a widget's callback or a run without the router changed what the router draws (one of
    :data:`ROUTER_FIELDS`) since the router last ran; asking clears it."""
    return bool(st.session_state.pop(_ROUTER_STALE, False))


def router_done() -> None:
    """Called by the router when its page has run or stopped: later runs of a page's body alone are fragment runs."""
    st.session_state[_ROUTER_RAN] = False


def router_ran() -> bool:
    """Whether this is a whole-app run (False: a fragment's run alone, or a widget's callback before any run)."""
    return st.session_state.get(_ROUTER_RAN, False)


_POSITION_TOKEN = "position_token"  # how many times the server moved the position shown (ui/stepper.py)


def _is_position(field: str) -> bool:
    """Whether a settings path is part of the position a step page shows: its stage, the entry (a page's own too:
    ``trained_model.entry_row``), the head."""
    return field.endswith(".stage") or field.rpartition(".")[2] in ENTRY_FIELDS or field == "head"


def _move_position() -> None:
    st.session_state[_POSITION_TOKEN] = st.session_state.get(_POSITION_TOKEN, 0) + 1


def position_token() -> int:
    """A number that changes whenever the server moves the position a step page shows (a link, the teacher, a page's
    opening entry, a reset, the old renderer's clicks): the step-through element then shows the server's position;
    otherwise it keeps the one the learner stepped to in the browser (``ui/stepper.py``)."""
    return st.session_state.get(_POSITION_TOKEN, 0)


#: The explained entry's shared fields; once one changes by a pick or a click, or a link sets the settings, the
#: session has chosen its entry and no page moves it to its own opening entry. A page's opening entry is no choice:
#: the next page opens on its own (the attention-sinks page's last row, kept, put the backward pages on a row whose
#: gradients are all 0).
ENTRY_FIELDS = frozenset({"entry_row", "entry_col"})
_ENTRY_CHOSEN = "entry_chosen"


def entry_chosen() -> bool:
    """Whether this session's explained entry was chosen (by the learner or a link; not by a page's opening entry)."""
    return st.session_state.get(_ENTRY_CHOSEN, False)


def open_at_entry(changes: dict[str, int]) -> None:
    """Move the explained entry to a page's opening entry (``Page.opening_entry``) unless the session chose one;
    the move is no choice (:func:`entry_chosen` stays false)."""
    if not entry_chosen():
        update(**changes)
        st.session_state[_ENTRY_CHOSEN] = False


def choose_preset(key: str) -> None:
    """Switch to a preset's sentences, dims, heads and seed, keeping the walk-through position.

    The user's edits are stored per preset, so switching back restores them.
    """
    defaults = Settings.for_preset(key)
    update(**{f: defaults.get(f) for f in PRESET_FIELDS})


#: The settings that are a learner's way of working, not the numbers: :func:`reset_all` keeps them.
_PREFERENCES = ("language", "presenter", "palette", "tables", "locked")


def reset_example() -> None:
    """Back to the current example's own settings (its sentence, widths and seed), its edits forgotten; the other
    examples' edits and every other setting are kept."""
    choose_preset(settings().preset)
    st.session_state.setdefault(_EDITS, {}).pop(settings().preset, None)
    _fresh_editors()


def reset_all() -> None:
    """Every setting back to the app's defaults and every edit forgotten, but the learner's preferences
    (:data:`_PREFERENCES`: the language, presenter mode, the colours, the tables switch) and a teacher's locks."""
    current, defaults = settings(), Settings()
    update(**{path: defaults.get(path) for path in Settings.paths()
              if path not in _PREFERENCES and current.get(path) != defaults.get(path)})
    st.session_state[_EDITS] = {}
    _fresh_editors()


def _fresh_editors() -> None:
    """Give every matrix editor a fresh widget (it shows the edits as they are now)."""
    versions = st.session_state.setdefault(_VERSIONS, {})
    for name in list(versions) + list(EDITABLE):
        versions[name] = versions.get(name, 0) + 1


def messages() -> list[str]:
    """Messages from the last settings validation (e.g. a value that was out of range)."""
    return st.session_state.get(_MESSAGES, [])


def locked() -> frozenset[str]:
    """The settings fixed by a teacher's link (``Settings.locked``), as field names."""
    text = settings().locked
    return frozenset(text.split(",")) if text else frozenset()


_BOUND_KEYS = "bound_widget_keys"  # every widget key bind() seeded in this session (update() keeps them in step)
_BOUND = "bound_fields"  # {field: widget label} of this page, for the teacher's panel (ui/classroom/teacher.py)


def bound_fields() -> dict[str, str]:
    """The settings fields this page bound to widgets since :func:`start_run`, with their labels."""
    return st.session_state.setdefault(_BOUND, {})


def start_run() -> None:
    """Forget the bound fields of the last page (called once per whole-page run, before the page)."""
    st.session_state[_BOUND] = {}


def bind(widget: Callable[..., Any], label: str, field: str, *, variant: str = "",
         also: Optional[Callable[[Any], dict[str, Any]]] = None, **kwargs: Any) -> Any:
    """Create ``widget`` bound to settings ``field``: it shows the setting and writes changes back.

    ``also(new value)`` -> other settings by path that change with it, in the same update (a task's own defaults).

    A field a teacher's link fixed gets a disabled widget that says so (in its help).
    """
    bound_fields()[field] = label
    if field in locked():
        kwargs["disabled"] = True
        kwargs["help"] = _("Fixed by your teacher's link.") + (f" {kwargs['help']}" if kwargs.get("help") else "")
    key = widget_key(field, variant)
    st.session_state.setdefault(_BOUND_KEYS, set()).add(key)
    # Always seed the widget from the settings, not only when its key is new: another page may have left an entry
    # under the same key from a widget of another label or kind (another identity), which Streamlit would not
    # carry over, so the new widget would start at its own default while the page computes with the setting.
    st.session_state[key] = settings().get(field)
    return widget(label, key=key, on_change=_commit, args=(field, key, also), **kwargs)


#: field path -> (low, high), for every field whose row is a number range (IntRange, FloatRange).
_RANGES: dict[str, tuple[Any, Any]] = {path: (row.low, row.high) for path, row in ROWS
                                       if isinstance(row, (IntRange, FloatRange))}


def field_range(field: str) -> tuple[Any, Any]:
    """(low, high) of a settings field (its path: ``d_k``, ``alibi.num_heads``), from its row: the range validation
    repairs a value into.

    Raises:
        KeyError: ``field`` is not a field whose row is a number range.
    """
    try:
        return _RANGES[field]
    except KeyError:
        raise KeyError(f"settings field {field!r} has no number range (an IntRange or FloatRange row)") from None


def range_help(field: str, text: str, **params: Any) -> str:
    """A widget's help text that states ``field``'s range: ``text`` (English, marked with ``N_`` where it is written)
    translated, with ``{low}`` and ``{high}`` filled from the field's row (:func:`field_range`) and the other
    placeholders from ``params``; so the numbers shown are the ones validation keeps to.

    The widget itself gets no ``min_value`` / ``max_value`` from the row: a number out of range is taken as typed and
    repaired by validation with a message on the page, where Streamlit's bounds would refuse or clamp it silently.

    Raises:
        KeyError: ``field`` has no number range.
    """
    low, high = field_range(field)
    return _(text, low=low, high=high, **params)


def _commit(field: str, key: str, also: Optional[Callable[[Any], dict[str, Any]]] = None) -> None:
    value = st.session_state[key]
    if field == "preset":
        choose_preset(value)
    else:
        update(**{field: value}, **(also(value) if also else {}))


def edits() -> dict[str, dict[tuple[int, int], Optional[float]]]:
    """The current preset's cell edits: matrix name -> {(row, col): value}."""
    return st.session_state.setdefault(_EDITS, {}).setdefault(settings().preset, {})


def set_cells(name: str, cells: dict[tuple[int, int], Optional[float]]) -> None:
    """Merge cell edits into a matrix's stored edits."""
    edits().setdefault(name, {}).update(cells)


def reset_matrix(name: str) -> None:
    """Forget a matrix's edits and give its editor a fresh widget."""
    edits().pop(name, None)
    versions = st.session_state.setdefault(_VERSIONS, {})
    versions[name] = versions.get(name, 0) + 1


def editor_version(name: str) -> int:
    return st.session_state.get(_VERSIONS, {}).get(name, 0)


def flip_cell(name: str, row: int, col: int, allowed_now: bool) -> None:
    """Store the opposite of a mask cell's current state (1.0 = allowed, 0.0 = blocked).

    Bumps the matrix's version so that the clickable grid comes back without a
    stale selection (clicking the same cell again then flips it back).
    """
    set_cells(name, {(row, col): 0.0 if allowed_now else 1.0})
    bump_version(name)


def bump_version(name: str) -> None:
    """Give a matrix's editor (or clickable grid) a fresh widget, e.g. after its cells were changed."""
    versions = st.session_state.setdefault(_VERSIONS, {})
    versions[name] = versions.get(name, 0) + 1


# ---------------------------------------------------------------- shareable links

_LINK_LOADED = "link_loaded"
_LINK_MESSAGES = "link_messages"


def load_link(take_class: Optional[Callable[[dict], None]] = None) -> None:
    """On a session's first run, take the settings and edits from the URL's query parameters.

    ``take_class(params)`` first takes the class's parameters out of them (``ui.classroom.class_live.join_from_link``).
    A tampered or invalid parameter is ignored with a message (see ``attention_core.classroom.share``).
    """
    if st.session_state.get(_LINK_LOADED):
        return
    st.session_state[_LINK_LOADED] = True
    params = st.query_params.to_dict()
    if take_class is not None:
        take_class(params)
    if params:
        apply_link(params)


def apply_link(params: dict[str, str]) -> None:
    """Take a link's settings and edits (its query parameters, without the class's) into this session."""
    st.session_state[_ENTRY_CHOSEN] = True  # a link opens the numbers it was made with, its entry included
    linked, linked_edits, link_messages = share.decode(params)
    _move_position()  # the link's step and entry, not the element's
    store(linked)
    kept = st.session_state.setdefault(_EDITS, {}).setdefault(linked.preset, {})
    for name, cells in linked_edits.items():
        kept[name] = dict(cells)
    st.session_state[_LINK_MESSAGES] = link_messages
    versions = st.session_state.setdefault(_VERSIONS, {})
    for name in linked_edits:  # the editors show the link's cells, not the ones they held
        versions[name] = versions.get(name, 0) + 1


Snapshot = tuple[Settings, dict]


def snapshot() -> Snapshot:
    """This session's settings and every example's edits, to :func:`restore` later (small: a few dicts)."""
    every = st.session_state.get(_EDITS, {})
    return settings(), {preset: {name: dict(cells) for name, cells in matrices.items()}
                        for preset, matrices in every.items()}


def restore(saved: Snapshot) -> None:
    """Put back what :func:`snapshot` saved: the settings and the edits, the editors showing them."""
    store(saved[0])
    st.session_state[_EDITS] = saved[1]
    versions = st.session_state.setdefault(_VERSIONS, {})
    for name in {name for matrices in saved[1].values() for name in matrices} | set(versions):
        versions[name] = versions.get(name, 0) + 1


_CLASS_LINK = "class_link"  # the class's link parameters ({"class": ..., "seat": ...}), kept by ui.classroom.class_live


def set_class_link(params: dict[str, str]) -> None:
    """The class parameters every link of this session carries (``ui.classroom.class_live``); {} outside a class."""
    st.session_state[_CLASS_LINK] = dict(params)


def link_messages() -> list[str]:
    """What could not be read from the link this session was opened with."""
    return st.session_state.get(_LINK_MESSAGES, [])


_LINK = "link_written"  # (settings, edits' cells, the parameters and whether they were complete) last written


def write_link() -> bool:
    """Put the current settings and edits in the URL; False when the edits were too large to include.

    A run writes the link more than once (the page's body, its step-through); the parameters are computed again only
    when the settings (a new object on every change: they are frozen) or the edits changed.
    """
    current, cells = settings(), edits()
    fingerprint = tuple(sorted((name, tuple(sorted(values.items()))) for name, values in cells.items()))
    last = st.session_state.get(_LINK)
    if last is not None and last[0] is current and last[1] == fingerprint:
        params, complete = dict(last[2]), last[3]
    else:
        params, complete = share.encode(current, cells)
        st.session_state[_LINK] = (current, fingerprint, dict(params), complete)
    params.update(st.session_state.get(_CLASS_LINK, {}))
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    return complete
