"""The class store's tables, as SQLAlchemy Core metadata, and the schema's version.

Why SQLAlchemy metadata with a version table and not Alembic: the store has one version of its schema so far;
``metadata.create_all`` creates it idempotently on SQLite and PostgreSQL alike, and the ``schema_version`` row lets a
later version recognise an older store (and migrate it, with Alembic, when there is a second version to migrate
to). A store written by a newer version of the app is refused with a message, never altered.

Every timestamp is seconds since the Unix epoch (float, UTC); ``minute`` is ``int(at // 60)``, stored so that the
answers-over-time chart groups on an indexed integer.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Float, Index, Integer, MetaData, String, Table

#: The schema this code writes and reads.
SCHEMA_VERSION = 1

#: The longest class code, seat id, page key, stage key, entry and outcome stored (characters).
CODE_CHARS, SEAT_CHARS, NAME_CHARS = 16, 32, 40
#: The longest link a teacher can push to the class (characters of query string).
LINK_CHARS = 4000
#: PostgreSQL's autovacuum vacuums the events table after this many inserts (see ``events``).
VACUUM_EVERY_INSERTS = 10_000

#: An answer's outcome when it is right, and when it is wrong without a named mistake.
CORRECT, WRONG = "correct", "wrong"
#: The check's two phases as event kinds (an answer of the check before / after the lesson: page = its concept,
#: stage = its template, entry = its kind, procedural or conceptual; ``attention_core.check``).
CHECK_BEFORE, CHECK_AFTER = "check_before", "check_after"

metadata = MetaData()

schema_version = Table(
    "schema_version", metadata,
    Column("version", Integer, nullable=False),
)

#: One row per class: its code, the SHA-256 of its teacher key (the key itself is never stored), when it started and
#: ended, the link the teacher pushed last, and the events that never reached the store (dropped from a full queue,
#: or cut off by the rate limit), counted by the replicas' writers.
classes = Table(
    "classes", metadata,
    Column("code", String(CODE_CHARS), primary_key=True),
    Column("teacher_key_sha256", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("follow_link", String(LINK_CHARS)),
    Column("follow_at", Float),
    Column("dropped", BigInteger, nullable=False, default=0),
    Column("rate_limited", BigInteger, nullable=False, default=0),
)

#: One row per event. ``kind``: page, step, answer, reveal, training_start, training_end, export.
#: ``outcome`` of an answer: "correct", a key of ``attention_core.practice.MISTAKES``, or "wrong" (no named mistake).
events = Table(
    "events", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("class_code", String(CODE_CHARS), nullable=False),
    Column("seat", String(SEAT_CHARS), nullable=False),
    Column("kind", String(NAME_CHARS), nullable=False),
    Column("page", String(NAME_CHARS), nullable=False, default=""),
    Column("stage", String(NAME_CHARS), nullable=False, default=""),
    Column("entry", String(NAME_CHARS), nullable=False, default=""),
    Column("outcome", String(NAME_CHARS), nullable=False, default=""),
    Column("first_try", Boolean, nullable=False, default=False),
    Column("at", Float, nullable=False),
    Column("minute", BigInteger, nullable=False),
    # The dashboard's GROUP BYs read these covering indexes only, never the table.
    Index("events_by_stage", "class_code", "kind", "page", "stage", "outcome", "first_try"),
    Index("events_by_minute", "class_code", "kind", "minute", "outcome"),
    Index("events_by_seat", "class_code", "kind", "page", "seat"),
    # The check before / after (store/checks.py): its GROUP BYs and join read this index only.
    Index("events_by_check", "class_code", "kind", "page", "seat", "outcome"),
    # PostgreSQL: an index-only scan reads a table page too unless the visibility map marks it all-visible, and only
    # VACUUM sets that. Autovacuum vacuums an insert-only table after inserts of 20 % of its rows by default
    # (autovacuum_vacuum_insert_scale_factor 0.2): in a store holding a week of classes, never during a lesson, so
    # the dashboard read the live class's rows from the table as well (about 3 x slower on 400,000 events:
    # scripts/benchmark_load.py class-store, docs/performance.md). Here every 10,000 inserts (autovacuum
    # looks every autovacuum_naptime, 1 min): a minute or two of a lecture hall's events stay unvacuumed at most.
    # PostgreSQL 13 or later; a store created before this setting gets it with
    #   ALTER TABLE events SET (autovacuum_vacuum_insert_threshold = 10000, autovacuum_vacuum_insert_scale_factor = 0)
    postgresql_with={"autovacuum_vacuum_insert_threshold": VACUUM_EVERY_INSERTS,
                     "autovacuum_vacuum_insert_scale_factor": 0},
)

#: Where each seat is now: one row per (class, seat), written by the writers from the sessions' last runs.
#: ``role``: "student" or "teacher".
seats = Table(
    "seats", metadata,
    Column("class_code", String(CODE_CHARS), primary_key=True),
    Column("seat", String(SEAT_CHARS), primary_key=True),
    Column("role", String(8), nullable=False),
    Column("page", String(NAME_CHARS), nullable=False),
    Column("stage", String(NAME_CHARS), nullable=False),
    Column("last_seen", Float, nullable=False),
    Index("seats_by_time", "class_code", "role", "last_seen"),
)
