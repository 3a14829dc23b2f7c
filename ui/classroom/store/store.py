"""Every statement the class store runs, on SQLite (the embedded default) or PostgreSQL (the lecture hall).

All SQL goes through SQLAlchemy Core with bound parameters; nothing a user typed is ever stored or formatted into a
statement (class codes and seat ids are checked against their alphabets before they get here, page and stage keys
come from the app's registry).

Errors: every method that talks to the database raises :class:`StoreError` (with the driver's one-line reason) when
the database is unreachable, full, or refuses a statement; callers decide what the user sees.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from sqlalchemy import and_, create_engine, delete, event, func, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from ui.classroom.store import checks
from ui.classroom.store.checks import CheckConcept, CheckResults  # noqa: F401 (the store's results, named here too)
from ui.classroom.store.schema import (
    CHECK_AFTER,
    CHECK_BEFORE,
    CORRECT,
    LINK_CHARS,
    NAME_CHARS,
    SCHEMA_VERSION,
    SEAT_CHARS,
    WRONG,
    classes,
    events,
    metadata,
    schema_version,
    seats,
)

#: A class code's alphabet: capitals and digits without 0/O, 1/I/L (read aloud and typed from a projector).
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
#: A class code's length: 31^8 ≈ 8.5e11 codes (about 40 bits), drawn with :mod:`secrets`, never sequential.
CODE_LENGTH = 8
#: The teacher key's random bytes: 24 bytes = 192 bits (URL-safe base64, 32 characters).
TEACHER_KEY_BYTES = 24
#: A seat id's random bytes: 12 bytes = 96 bits (16 characters).
SEAT_BYTES = 12

_CODE = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")

#: A seat counts as connected while it was seen in the last this many seconds.
CONNECTED_S = 60.0
#: Events kinds.
KINDS = ("page", "step", "answer", "reveal", "training_start", "training_end", "export", CHECK_BEFORE, CHECK_AFTER)
#: The dashboard's most frequent mistakes, at most.
MISTAKES_SHOWN = 50


class StoreError(Exception):
    """The database could not be reached or refused a statement; ``str(error)`` is the driver's one-line reason."""


def valid_code(text: object) -> bool:
    """Whether ``text`` is written like a class code (8 characters of :data:`CODE_ALPHABET`)."""
    return isinstance(text, str) and _CODE.fullmatch(text) is not None


def valid_token(text: object, max_chars: int = SEAT_CHARS) -> bool:
    """Whether ``text`` is written like a seat id or teacher key (URL-safe base64, 1 to ``max_chars`` characters)."""
    return isinstance(text, str) and len(text) <= max_chars and _TOKEN.fullmatch(text) is not None


def new_code() -> str:
    """A random class code (:data:`CODE_LENGTH` characters of :data:`CODE_ALPHABET`, from :mod:`secrets`)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_seat() -> str:
    """A random seat id: 96 bits, URL-safe base64."""
    return secrets.token_urlsafe(SEAT_BYTES)


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Event:
    """One thing a seat did. Strings are the app's own keys (never user text); ``at`` in seconds since the epoch."""

    class_code: str
    seat: str
    kind: str
    at: float
    page: str = ""
    stage: str = ""
    entry: str = ""
    outcome: str = ""
    first_try: bool = False

    def row(self) -> dict:
        return {"class_code": self.class_code, "seat": self.seat, "kind": self.kind, "page": self.page[:NAME_CHARS],
                "stage": self.stage[:NAME_CHARS], "entry": self.entry[:NAME_CHARS],
                "outcome": self.outcome[:NAME_CHARS], "first_try": self.first_try, "at": self.at,
                "minute": int(self.at // 60)}


@dataclass(frozen=True)
class Presence:
    """Where a seat was on its last run: page and stage keys, ``role`` "student" or "teacher"."""

    class_code: str
    seat: str
    role: str
    page: str
    stage: str
    last_seen: float

    def row(self) -> dict:
        return {"class_code": self.class_code, "seat": self.seat, "role": self.role, "page": self.page[:NAME_CHARS],
                "stage": self.stage[:NAME_CHARS], "last_seen": self.last_seen}


@dataclass(frozen=True)
class ClassInfo:
    """A class as its students and teacher see it (no key)."""

    code: str
    created_at: float
    ended_at: Optional[float]
    follow_link: Optional[str]
    follow_at: Optional[float]
    dropped: int
    rate_limited: int

    @property
    def ended(self) -> bool:
        return self.ended_at is not None


@dataclass(frozen=True)
class Dashboard:
    """A class's aggregates at one moment, computed by GROUP BYs in the database (see :meth:`Store.dashboard`).

    Attributes:
        here: (page, stage, seats connected there), students seen in the last :data:`CONNECTED_S` s, most first.
        connected: students connected now; teachers: teacher windows open now.
        reached: (page, distinct seats that opened it), most first.
        practice: (page, stage, answers, first tries, first tries correct), most answers first.
        mistakes: (page, stage, outcome, count), the named mistakes and unnamed wrong answers, most first.
        over_time: (minute since the epoch, outcome "correct" or "wrong", answers).
        reveals: (page, stage, solutions shown).
        seats: every seat that was ever in it (student or teacher); students: the student seats among them.
        (How many events the class holds is :meth:`Store.event_count`: a count over the whole class that the
        teacher's page does not show, a sixth of a refresh on a big class.)
    """

    here: list[tuple[str, str, int]]
    connected: int
    teachers: int
    reached: list[tuple[str, int]]
    practice: list[tuple[str, str, int, int, int]]
    mistakes: list[tuple[str, str, str, int]]
    over_time: list[tuple[int, str, int]]
    reveals: list[tuple[str, str, int]]
    seats: int
    students: int
    at: float = field(default=0.0)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers (the teacher's page) never block the writer, nor it them
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL's safe setting: a power cut may lose the last commit only
    cursor.execute("PRAGMA busy_timeout=5000")  # two processes writing the same file wait instead of failing
    cursor.close()


class Store:
    """The class store on one database URL (``sqlite:///path`` or ``postgresql+psycopg://...``).

    Args:
        url: a SQLAlchemy URL.
        connect_timeout_s: how long a connection attempt may take (PostgreSQL) before :class:`StoreError`.

    Thread-safe: the writer thread and every script thread share one instance (SQLAlchemy's pool).
    """

    def __init__(self, url: str, *, connect_timeout_s: float = 3.0) -> None:
        self.url = url
        options: dict = {"pool_pre_ping": True}
        if url.startswith("sqlite"):
            options["connect_args"] = {"timeout": 5.0, "check_same_thread": False}
            if ":memory:" in url or url.rstrip("/") in ("sqlite:", "sqlite:/"):
                raise ValueError("the class store needs a file: an in-memory SQLite database is not shared")
        else:
            options["connect_args"] = {"connect_timeout": max(1, int(connect_timeout_s))}
            options.update(pool_size=4, max_overflow=4, pool_timeout=connect_timeout_s)
        self.engine: Engine = create_engine(url, **options)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._ready = False
        self._ready_lock = threading.Lock()

    @property
    def dialect(self) -> str:
        """"sqlite" or "postgresql"."""
        return self.engine.dialect.name

    def describe(self) -> str:
        """The URL without its password, for messages."""
        return self.engine.url.render_as_string(hide_password=True)

    def dispose(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ schema

    def ensure_schema(self) -> None:
        """Create the tables if they are missing and check the schema's version.

        Raises:
            StoreError: unreachable, or the store was written by a newer schema (``schema_version`` > ours).
        """
        if self._ready:
            return
        with self._ready_lock:
            if self._ready:
                return
            try:
                metadata.create_all(self.engine, checkfirst=True)
                # an index added since the store was created (create_all creates missing tables, not their indexes)
                with self.engine.begin() as conn:
                    for index in events.indexes:
                        index.create(conn, checkfirst=True)
            except SQLAlchemyError:
                # Two replicas creating the same tables at once: one wins, the other finds them on the second look.
                try:
                    metadata.create_all(self.engine, checkfirst=True)
                except SQLAlchemyError as error:
                    raise StoreError(_reason(error)) from error
            try:
                with self.engine.begin() as conn:
                    versions = conn.execute(select(schema_version.c.version)).scalars().all()
                    if not versions:
                        conn.execute(insert(schema_version), {"version": SCHEMA_VERSION})
                    elif max(versions) > SCHEMA_VERSION:
                        raise StoreError(f"the store's schema is version {max(versions)}, newer than this app's "
                                         f"{SCHEMA_VERSION}: upgrade the app")
            except SQLAlchemyError as error:
                raise StoreError(_reason(error)) from error
            self._ready = True

    def version(self) -> int:
        """The schema version recorded in the store."""
        with self._connect() as conn:
            return int(conn.execute(select(func.max(schema_version.c.version))).scalar_one())

    def _connect(self):
        self.ensure_schema()
        return _Guard(self.engine.connect)

    def _begin(self):
        self.ensure_schema()
        return _Guard(self.engine.begin)

    # ------------------------------------------------------------------ classes

    def create_class(self, now: Optional[float] = None) -> tuple[str, str]:
        """Start a class: (class code, teacher key). Only the key's SHA-256 is stored.

        Raises:
            StoreError: unreachable or full.
        """
        now = time.time() if now is None else now
        key = secrets.token_urlsafe(TEACHER_KEY_BYTES)
        for _ in range(5):  # a code already taken (one chance in ~1e11 per class) gets a new draw
            code = new_code()
            with self._begin() as conn:
                if conn.execute(select(classes.c.code).where(classes.c.code == code)).first() is None:
                    conn.execute(insert(classes), {"code": code, "teacher_key_sha256": _key_hash(key),
                                                   "created_at": now, "dropped": 0, "rate_limited": 0})
                    return code, key
        raise StoreError("no free class code after 5 draws")

    def info(self, code: str) -> Optional[ClassInfo]:
        """The class with this code, or None (unknown or deleted). Raises :class:`StoreError`."""
        if not valid_code(code):
            return None
        with self._connect() as conn:
            row = conn.execute(select(classes.c.code, classes.c.created_at, classes.c.ended_at, classes.c.follow_link,
                                      classes.c.follow_at, classes.c.dropped, classes.c.rate_limited)
                               .where(classes.c.code == code)).first()
        return None if row is None else ClassInfo(*row)

    def is_teacher(self, code: str, key: str) -> bool:
        """Whether ``key`` is this class's teacher key, compared in constant time (``hmac.compare_digest`` of the
        SHA-256 digests; an unknown class compares against a dummy so that its answer takes as long).
        Raises :class:`StoreError`."""
        if not valid_code(code) or not valid_token(key, 64):
            return False
        with self._connect() as conn:
            stored = conn.execute(select(classes.c.teacher_key_sha256).where(classes.c.code == code)).scalar()
        return hmac.compare_digest(_key_hash(key), stored or "0" * 64) and stored is not None

    def push_link(self, code: str, link: str, now: Optional[float] = None) -> None:
        """Record the link the teacher brings the class to (a query string of the app's own parameters)."""
        if len(link) > LINK_CHARS:
            raise ValueError(f"a pushed link has at most {LINK_CHARS} characters")
        with self._begin() as conn:
            conn.execute(update(classes).where(classes.c.code == code)
                         .values(follow_link=link, follow_at=time.time() if now is None else now))

    def end_class(self, code: str, now: Optional[float] = None) -> None:
        """End the class: its students see so; events arriving later are not stored."""
        with self._begin() as conn:
            conn.execute(update(classes).where(and_(classes.c.code == code, classes.c.ended_at.is_(None)))
                         .values(ended_at=time.time() if now is None else now))

    def delete_class(self, code: str) -> None:
        """Delete the class and everything recorded in it, at once."""
        with self._begin() as conn:
            for table in (events, seats):
                conn.execute(delete(table).where(table.c.class_code == code))
            conn.execute(delete(classes).where(classes.c.code == code))

    def purge(self, older_than_s: float, now: Optional[float] = None) -> int:
        """Delete the classes created more than ``older_than_s`` seconds ago; returns how many."""
        cutoff = (time.time() if now is None else now) - older_than_s
        with self._connect() as conn:
            old = conn.execute(select(classes.c.code).where(classes.c.created_at < cutoff)).scalars().all()
        for code in old:
            self.delete_class(code)
        return len(old)

    # ------------------------------------------------------------------ writing

    def write(self, batch: Sequence[Event], presence: Iterable[Presence] = (),
              uncounted: Optional[dict[str, tuple[int, int]]] = None) -> int:
        """Write a batch in one transaction: its events, the seats' presence, and per class the events a writer
        dropped or rate-limited (``{code: (dropped, rate_limited)}``). Events and presence of classes that ended or
        were deleted are left out. Returns the events written.

        Raises:
            StoreError: unreachable, full, or refused; nothing of the batch is written.
        """
        presence = list(presence)
        codes = {e.class_code for e in batch} | {p.class_code for p in presence} | set(uncounted or ())
        if not codes:
            return 0
        with self._begin() as conn:
            live = set(conn.execute(select(classes.c.code).where(and_(classes.c.code.in_(sorted(codes)),
                                                                      classes.c.ended_at.is_(None)))).scalars())
            rows = [e.row() for e in batch if e.class_code in live]
            if rows:
                conn.execute(insert(events), rows)
            here = [p.row() for p in presence if p.class_code in live]
            if here:
                conn.execute(_upsert_seats(self.dialect), here)
            for code, (dropped, limited) in (uncounted or {}).items():
                conn.execute(update(classes).where(classes.c.code == code).values(
                    dropped=classes.c.dropped + dropped, rate_limited=classes.c.rate_limited + limited))
        return len(rows)

    # ------------------------------------------------------------------ reading

    def dashboard(self, code: str, now: Optional[float] = None) -> Dashboard:
        """The class's aggregates (see :class:`Dashboard`), from GROUP BYs that read covering indexes in their order.

        The answers are read twice, not four times: practice and mistakes come from one GROUP BY (page, stage,
        outcome, first try: a few thousand groups at most), the answers over time from one GROUP BY (minute,
        outcome), folded here (on SQLite, grouping by the right / wrong expression sorted 200,000 answers in a
        temporary B-tree; scripts/benchmark_load.py class-store measures it).

        Raises :class:`StoreError`."""
        now = time.time() if now is None else now
        since = now - CONNECTED_S
        e = events.c
        with self._connect() as conn:
            here = conn.execute(
                select(seats.c.page, seats.c.stage, func.count()).where(and_(
                    seats.c.class_code == code, seats.c.role == "student", seats.c.last_seen >= since))
                .group_by(seats.c.page, seats.c.stage).order_by(func.count().desc(), seats.c.page, seats.c.stage)).all()
            teachers = conn.execute(select(func.count()).select_from(seats).where(and_(
                seats.c.class_code == code, seats.c.role == "teacher", seats.c.last_seen >= since))).scalar_one()
            reached = conn.execute(
                select(e.page, func.count(e.seat.distinct())).where(and_(e.class_code == code, e.kind == "page"))
                .group_by(e.page).order_by(func.count(e.seat.distinct()).desc(), e.page)).all()
            graded = conn.execute(
                select(e.page, e.stage, e.outcome, e.first_try, func.count())
                .where(and_(e.class_code == code, e.kind == "answer"))
                .group_by(e.page, e.stage, e.outcome, e.first_try)).all()
            timeline = conn.execute(
                select(e.minute, e.outcome, func.count()).where(and_(e.class_code == code, e.kind == "answer"))
                .group_by(e.minute, e.outcome)).all()
            reveals = conn.execute(
                select(e.page, e.stage, func.count()).where(and_(e.class_code == code, e.kind == "reveal"))
                .group_by(e.page, e.stage).order_by(func.count().desc())).all()
            seated = dict(conn.execute(select(seats.c.role, func.count()).where(seats.c.class_code == code)
                                       .group_by(seats.c.role)).all())
        practice: dict[tuple[str, str], list[int]] = {}  # (page, stage) -> [answers, first tries, first tries right]
        mistakes: dict[tuple[str, str, str], int] = {}
        for page, stage, outcome, first_try, n in graded:
            counts = practice.setdefault((page, stage), [0, 0, 0])
            counts[0] += int(n)
            if first_try:
                counts[1] += int(n)
                counts[2] += int(n) if outcome == CORRECT else 0
            if outcome != CORRECT:
                mistakes[(page, stage, outcome)] = mistakes.get((page, stage, outcome), 0) + int(n)
        over_time: dict[tuple[int, str], int] = {}
        for minute, outcome, n in timeline:
            key = (int(minute), CORRECT if outcome == CORRECT else WRONG)
            over_time[key] = over_time.get(key, 0) + int(n)
        return Dashboard(
            here=[(p, s, int(n)) for p, s, n in here], connected=sum(int(n) for *_, n in here), teachers=int(teachers),
            reached=[(p, int(n)) for p, n in reached],
            practice=sorted(((p, s, a, f, c) for (p, s), (a, f, c) in practice.items()),
                            key=lambda row: (-row[2], row[0], row[1])),
            mistakes=sorted(((p, s, o, n) for (p, s, o), n in mistakes.items()),
                            key=lambda row: (-row[3], row[0], row[1], row[2]))[:MISTAKES_SHOWN],
            over_time=[(m, v, n) for (m, v), n in sorted(over_time.items())],
            reveals=[(p, s, int(n)) for p, s, n in reveals],
            seats=sum(int(n) for n in seated.values()),
            students=int(seated.get("student", 0)), at=now)


    def event_count(self, code: str) -> int:
        """Every event the class holds (a count over the class's index entries). Raises :class:`StoreError`."""
        with self._connect() as conn:
            return int(conn.execute(select(func.count()).where(events.c.class_code == code)).scalar_one())

    def check_results(self, code: str) -> CheckResults:
        """The class's check per concept, over the students who took both phases (:func:`checks.check_results`).
        Raises :class:`StoreError`."""
        with self._connect() as conn:
            return checks.check_results(conn, code)


def _upsert_seats(dialect: str):
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    statement = dialect_insert(seats)
    return statement.on_conflict_do_update(
        index_elements=[seats.c.class_code, seats.c.seat],
        set_={name: statement.excluded[name] for name in ("role", "page", "stage", "last_seen")})


def _reason(error: BaseException) -> str:
    """The driver's first line, without SQLAlchemy's statement dump and background link."""
    original = getattr(error, "orig", None) or error
    return (str(original).strip().splitlines() or [type(original).__name__])[0][:300]


class _Guard:
    """``with store._connect() as conn``: SQLAlchemy's errors become :class:`StoreError`."""

    def __init__(self, opener) -> None:
        self._opener = opener
        self._context = None

    def __enter__(self):
        try:
            self._context = self._opener()
            return self._context.__enter__()
        except SQLAlchemyError as error:
            raise StoreError(_reason(error)) from error

    def __exit__(self, kind, value, traceback):
        try:
            suppressed = self._context.__exit__(kind, value, traceback)
        except SQLAlchemyError as error:
            raise StoreError(_reason(error)) from error
        if isinstance(value, SQLAlchemyError):
            raise StoreError(_reason(value)) from value
        return suppressed

