"""A class, live: a student's seat in a class, what it records, the class's links and the teacher's actions on it.

A teacher starts a class from the sidebar (``ui.classroom.class_banner``): a random class code and a secret teacher key
(``ui.classroom.store``). The students' link is ``?class=CODE``; opening it gives the session an anonymous seat (a random
id, kept in the link as ``seat=``, so a student moved to another replica or reloading keeps it). The teacher's link
holds ``teacher=KEY`` instead and opens the page *Your class* (``ui/classroom/class_dashboard.py``).

What a student's session records, as events handed to the process's :class:`ui.classroom.store.writer.Writer` (a click
never waits for the database): the page opened, the step reached, each practice answer (correct, the named
mistake's key, or "wrong"; first try or not), a solution shown, a training run started and finished, an export
downloaded. Never a name, an address or anything typed. A :class:`ui.classroom.store.writer.RateLimit` per session cuts off
floods (counted for the teacher).

Where the store is (:func:`store_url`): ``$ATTENTION_EXPLORER_CLASS_STORE``, else ``[connections.class_store] url``
in ``.streamlit/secrets.toml`` (Streamlit's own place for connection settings), else SQLite in WAL mode in the app's
data folder (``$ATTENTION_EXPLORER_DATA``, default ``data/`` beside app.py): ``streamlit run app.py`` needs no set-up.
"""

from __future__ import annotations

import atexit
import os
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import streamlit as st

from attention_core import practice
from attention_core.errors import N_
from ui import state
from ui.classroom.store.store import (
    CORRECT,
    WRONG,
    ClassInfo,
    Event,
    Presence,
    Store,
    StoreError,
    new_seat,
    valid_code,
    valid_token,
)
from ui.classroom.store.writer import RateLimit, Writer
from ui.i18n import _

ROOT = Path(__file__).resolve().parents[2]
#: Environment variables: the store's SQLAlchemy URL, the data folder of the default SQLite file, the retention.
ENV_URL, ENV_DATA, ENV_RETENTION = ("ATTENTION_EXPLORER_CLASS_STORE", "ATTENTION_EXPLORER_DATA",
                                    "ATTENTION_EXPLORER_CLASS_RETENTION_DAYS")
#: Classes older than this are deleted with everything they recorded (days), unless the host sets another.
RETENTION_DAYS = 7.0
#: The sidebar's switch "Check before and after" (``ui.classroom.class_banner``): a class started with it is sent to the
#: check before at once.
START_WITH_CHECK = "class_start_check"
#: How long a class's state read from the store is shared by every session of the process (seconds).
INFO_TTL_S = 2.0

_MEMBER = "class_member"
_LIMIT = "class_rate_limit"
_LAST = "class_last"  # {"page": key, "step": (page, stage)}: what was recorded last, so a rerun records nothing new
_MESSAGES = "class_messages"


@dataclass(frozen=True)
class Member:
    """A session's place in a class: its code, its seat, and the teacher key when it is the teacher's."""

    code: str
    seat: str
    teacher_key: str = ""

    @property
    def teacher(self) -> bool:
        return bool(self.teacher_key)

    @property
    def role(self) -> str:
        return "teacher" if self.teacher else "student"

    def link(self) -> dict[str, str]:
        """The link parameters that keep this membership (the teacher key only in the teacher's own link)."""
        return {"class": self.code, "teacher": self.teacher_key} if self.teacher else {"class": self.code,
                                                                                       "seat": self.seat}


# ---------------------------------------------------------------- the store of this process

def retention_days() -> float:
    """How long classes are kept: ``$ATTENTION_EXPLORER_CLASS_RETENTION_DAYS`` (0.01 to 3650), default 7."""
    try:
        days = float(os.environ.get(ENV_RETENTION, RETENTION_DAYS))
    except ValueError:
        return RETENTION_DAYS
    return min(max(days, 0.01), 3650.0) if days == days else RETENTION_DAYS


def store_url() -> str:
    """The class store's SQLAlchemy URL (see the module's docstring)."""
    url = os.environ.get(ENV_URL, "").strip()
    if not url and st.secrets.load_if_toml_exists():
        url = str(st.secrets.get("connections", {}).get("class_store", {}).get("url", "")).strip()
    if url:
        return url
    folder = Path(os.environ.get(ENV_DATA) or ROOT / "data")
    return f"sqlite:///{folder / 'classes.sqlite'}"


@st.cache_resource(show_spinner=False)
def _open(url: str) -> tuple[Store, Writer]:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    store = Store(url)
    writer = Writer(store, retention_s=retention_days() * 86400.0).start()
    atexit.register(writer.stop)  # a replica stopped with SIGTERM writes what is waiting
    return store, writer


def live() -> tuple[Optional[Store], Optional[Writer], str]:
    """(store, writer, "") of this process, or (None, None, why) when the URL cannot be used at all."""
    url = store_url()
    try:
        store, writer = _open(url)
    except (OSError, ValueError, ImportError) as error:
        return None, None, str(error)[:200]
    except Exception as error:  # SQLAlchemy's ArgumentError for a malformed URL, a missing driver
        return None, None, f"{type(error).__name__}: {str(error)[:200]}"
    return store, writer, ""


@st.cache_data(ttl=INFO_TTL_S, show_spinner=False, max_entries=1024)
def _info(url: str, code: str) -> Optional[ClassInfo]:
    store, _writer, _why = live()
    if store is None:
        raise StoreError(_why)
    return store.info(code)


def class_info(code: str) -> Optional[ClassInfo]:
    """The class's state, read at most once per :data:`INFO_TTL_S` per process. Raises StoreError."""
    return _info(store_url(), code)


# ---------------------------------------------------------------- membership

def member() -> Optional[Member]:
    return st.session_state.get(_MEMBER)


def messages() -> list[str]:
    """What the class part of the link could not do (shown once, above the page)."""
    return st.session_state.pop(_MESSAGES, [])


def say(text: str) -> None:
    st.session_state.setdefault(_MESSAGES, []).append(text)


def _become(new: Optional[Member]) -> None:
    st.session_state[_MEMBER] = new
    state.set_class_link(new.link() if new else {})
    st.session_state[_LAST] = {}


def join_from_link(params: dict[str, Any]) -> None:
    """Take ``class``, ``seat`` and ``teacher`` out of a link's parameters (on the session's first run) and join.

    A malformed or unknown code, a forged teacher key, an ended or deleted class: a message, and the session is not
    in the class; the pages work as always. An unreachable store: a student joins anyway (the events wait in the
    queue; the store keeps only those of real classes); a teacher's key cannot be checked, so the message says so.
    """
    code, seat, key = params.pop("class", None), params.pop("seat", None), params.pop("teacher", None)
    if code is None:
        return
    if not valid_code(code):
        say(_("This link's class code is not valid (a class code is 8 letters and digits): you are not in a class."))
        return
    store, _writer, why = live()
    if store is None:
        say(_("The class store cannot be used ({why}): you are not in a class.", why=why))
        return
    try:
        info = class_info(code)
    except StoreError:  # joined anyway; the writer stores the events once the store answers (if the class is real)
        info = ClassInfo(code, 0.0, None, None, None, 0, 0)
    if info is None:
        say(_("No class has the code {code} (it may have been deleted): you are not in a class.", code=code))
        return
    if info.ended:
        say(_("Class {code} has ended: the pages work as always, and nothing is recorded.", code=code))
        return
    if key is not None:
        try:
            ok = store.is_teacher(code, str(key))
        except StoreError:
            ok = None
        if ok is None:
            say(_("The class store is unreachable, so your teacher key cannot be checked now: open your link again "
                   "in a minute."))
        elif not ok:
            say(_("This link's teacher key does not open class {code}: the class's page stays closed.", code=code))
        else:
            _become(Member(code, new_seat(), str(key)))
        return
    _become(Member(code, seat if valid_token(seat) else new_seat()))


def leave() -> None:
    """Leave the class: nothing more is recorded; the link loses its class."""
    _become(None)


def start_class() -> None:
    """Start a class with this session as its teacher (a button's callback)."""
    store, _writer, why = live()
    if store is None:
        say(_("The class store cannot be used ({why}): no class was started.", why=why))
        return
    try:
        code, key = store.create_class()
    except StoreError as error:
        say(_("The class store is unreachable ({why}): no class was started. Try again in a moment.", why=str(error)))
        return
    _become(Member(code, new_seat(), key))


# ---------------------------------------------------------------- recording

def rate_limit() -> RateLimit:
    return st.session_state.setdefault(_LIMIT, RateLimit())


def record(kind: str, page: str = "", stage: str = "", entry: str = "", outcome: str = "",
           first_try: bool = False) -> None:
    """Hand a student's event to the writer (nothing for a teacher or a session outside a class)."""
    seat = member()
    if seat is None or seat.teacher:
        return
    _send(seat, rate_limit(), Event(seat.code, seat.seat, kind, time.time(), page, stage, entry, outcome, first_try))


def _send(seat: Member, limit: RateLimit, event: Event) -> None:
    _store, writer, _why = live()
    if writer is None:
        return
    if limit.allow():
        writer.put(event)
    else:
        writer.rate_limited(seat.code)


def recorded(fn: Callable[[], Any], kind: str, page: str, entry: str = "") -> Callable[[], Any]:
    """``fn`` (a deferred download's data), recording ``kind`` when it is called: the download may run outside the
    session's script thread, so the seat and its limit are taken now."""
    seat = member()
    if seat is None or seat.teacher:
        return fn
    limit = rate_limit()

    def call() -> Any:
        _send(seat, limit, Event(seat.code, seat.seat, kind, time.time(), page, "", entry))
        return fn()

    return call


def answered(key: tuple, verdict: practice.Grade, attempts: int) -> None:
    """A practice answer (``ui.classroom.practice`` entry key: page, stage, row, col, head, answer)."""
    page, stage, row, col, head = key[:5]
    outcome = CORRECT if verdict.correct else (verdict.mistakes[0].key if verdict.mistakes else WRONG)
    record("answer", page, stage, f"{row},{col},{head}", outcome, first_try=attempts == 1)


def present(current: str) -> None:
    """Tell the teacher this student's seat is here, on page ``current`` (at the step recorded last on it)."""
    seat = member()
    if seat is None or seat.teacher:
        return
    step = st.session_state.get(_LAST, {}).get("step", ("", ""))
    _seen(seat, current, step[1] if step[0] == current else "")


def _seen(seat: Member, page: str, stage: str) -> None:
    _store, writer, _why = live()
    if writer is not None:
        writer.seen(Presence(seat.code, seat.seat, seat.role, page, stage, time.time()))


def opened(page: str) -> None:
    """After a whole-page run: the page opened (recorded when it changed) and where the seat is."""
    seat = member()
    if seat is None:
        return
    last = st.session_state.setdefault(_LAST, {})
    stage = last.get("step", ("", ""))[1] if last.get("step", ("",))[0] == page else ""
    if last.get("page") != page:
        last["page"] = page
        record("page", page)
    _seen(seat, page, stage)


def at_step(page: str, stage: str) -> None:
    """A step page drew ``stage``: recorded when it changed, and where the seat is."""
    seat = member()
    if seat is None:
        return
    last = st.session_state.setdefault(_LAST, {})
    if last.get("step") != (page, stage):
        last["step"] = (page, stage)
        record("step", page, stage)
    _seen(seat, page, stage)


# ---------------------------------------------------------------- the links

def _base_url() -> str:
    url = st.context.url or ""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/" if parts.scheme else "/"


def students_link(code: str) -> str:
    return _base_url() + "?" + urllib.parse.urlencode({"class": code})


def teachers_link(seat: Member) -> str:
    return _base_url() + "?" + urllib.parse.urlencode({"class": seat.code, "teacher": seat.teacher_key})


def refresh_info() -> None:
    """Read the class's state from the store again on the next look (after the teacher changed it)."""
    _info.clear()


def as_teacher(action: Callable[[Store, str], None], failed: str) -> Optional[Member]:
    """Run ``action(store, code)`` for this session's class if it is its teacher (end, delete, push a link); the seat,
    or None when it is not the teacher or the store refused (``failed``: the message, with ``{why}``, marked for
    translation where it is written; a link too long for the store is refused with a ValueError).
    """
    seat = member()
    store, _writer, _why = live()
    if seat is None or not seat.teacher or store is None:
        return None
    try:
        action(store, seat.code)
    except (StoreError, ValueError) as error:
        say(_(failed, why=str(error)))
        return None
    finally:
        _info.clear()
    return seat


def end_class() -> None:
    """The teacher ends the class (a button's callback); the teacher keeps the page and its numbers."""
    as_teacher(Store.end_class, N_("The class store is unreachable ({why}): the class was not ended. Try again in a "
                                    "moment."))


def delete_class() -> None:
    """The teacher deletes the class at once (a button's callback) and leaves it."""
    seat = as_teacher(Store.delete_class, N_("The class store is unreachable ({why}): the class was not deleted. Try "
                                              "again in a moment."))
    if seat is not None:
        leave()
        say(_("Class {code} and everything it recorded were deleted.", code=seat.code))
