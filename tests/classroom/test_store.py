"""The class store on real databases: SQLite (a WAL file) and a PostgreSQL server started by the tests
(``postgres_cluster`` in tests/conftest.py). No mocks: every test writes and reads through SQLAlchemy."""

from __future__ import annotations

import collections
import threading
import time

import pytest
from sqlalchemy import select, text

from ui.classroom.store import schema
from ui.classroom.store.store import (
    CODE_ALPHABET,
    CORRECT,
    WRONG,
    Event,
    Presence,
    Store,
    StoreError,
    new_code,
    new_seat,
    valid_code,
    valid_token,
)
from ui.classroom.store.writer import RateLimit, Writer


@pytest.fixture
def store(store_url):
    store = Store(store_url)
    yield store
    store.dispose()


def answer(code, seat, outcome, first_try=True, page="backward", stage="dv", at=None):
    return Event(code, seat, "answer", time.time() if at is None else at, page, stage, "1,2,0", outcome, first_try)


def test_codes_and_keys_are_random_and_only_the_keys_hash_is_stored(store):
    codes = {new_code() for _ in range(2000)}
    assert len(codes) == 2000 and all(valid_code(c) and set(c) <= set(CODE_ALPHABET) for c in codes)
    assert not {"0", "O", "1", "I", "L"} & set("".join(codes))  # nothing to misread on a projector
    code, key = store.create_class()
    other, other_key = store.create_class()
    assert code != other and key != other_key and len(key) == 32  # 24 random bytes = 192 bits
    with store.engine.connect() as conn:
        stored = conn.execute(select(schema.classes.c.teacher_key_sha256).where(schema.classes.c.code == code)).scalar()
    assert key not in stored and len(stored) == 64
    assert store.is_teacher(code, key)
    assert not store.is_teacher(code, other_key)  # another class's key
    assert not store.is_teacher(code, key[:-1] + ("A" if key[-1] != "A" else "B"))
    assert not store.is_teacher("ZZZZZZZZ", key)  # no such class
    assert not store.is_teacher(code, "' OR '1'='1")  # not even sent: not a key's alphabet
    assert not store.is_teacher("'; DROP TABLE classes; --", key)
    assert store.info(code) is not None and store.version() == schema.SCHEMA_VERSION


def test_the_teacher_key_is_compared_in_constant_time(store, monkeypatch):
    import ui.classroom.store.store as module

    code, key = store.create_class()
    calls = []
    real = module.hmac.compare_digest
    monkeypatch.setattr(module.hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b))
    assert store.is_teacher(code, key) and not store.is_teacher(code, "x" * 32) and not store.is_teacher("ABCDEFGH", key)
    assert len(calls) == 3 and all(len(a) == len(b) == 64 for a, b in calls)  # digests, also for an unknown class


def test_seat_ids_and_tokens():
    seats = {new_seat() for _ in range(1000)}
    assert len(seats) == 1000 and all(valid_token(s) and len(s) == 16 for s in seats)
    for bad in ("", "a b", "<script>", "x" * 33, None, 12, "é"):
        assert not valid_token(bad)
    for bad in ("abcdefgh", "ABCDEFG", "ABCDEFGHJ", "ABCDEFG0", None):
        assert not valid_code(bad)


def test_the_dashboard_counts_what_the_class_did_with_sql(store):
    code, _key = store.create_class()
    other, _ = store.create_class()
    now = time.time()
    batch = [
        Event(code, "s1", "page", now, "backward"), Event(code, "s2", "page", now, "backward"),
        Event(code, "s2", "page", now, "self_attention"), Event(code, "s1", "step", now, "backward", "dv"),
        answer(code, "s1", "p_not_transposed", True, at=now), answer(code, "s1", CORRECT, False, at=now),
        answer(code, "s2", "p_not_transposed", True, at=now), answer(code, "s3", CORRECT, True, at=now - 120),
        answer(code, "s3", WRONG, True, stage="dq", at=now), Event(code, "s2", "reveal", now, "backward", "dv"),
        answer(other, "x", "p_not_transposed", True, at=now),  # another class: never in this one's numbers
    ]
    presence = [Presence(code, "s1", "student", "backward", "dv", now), Presence(code, "s2", "student", "backward",
                "dv", now - 10), Presence(code, "s3", "student", "backward", "dq", now - 3600),  # gone
                Presence(code, "t", "teacher", "your_class", "", now)]
    assert store.write(batch, presence) == len(batch)
    dash = store.dashboard(code, now=now)
    assert dash.connected == 2 and dash.teachers == 1 and dash.here == [("backward", "dv", 2)]
    assert dash.reached == [("backward", 2), ("self_attention", 1)]
    assert dash.practice == [("backward", "dv", 4, 3, 1), ("backward", "dq", 1, 1, 0)]
    assert dash.mistakes == [("backward", "dv", "p_not_transposed", 2), ("backward", "dq", WRONG, 1)]
    minute = int(now // 60)
    assert sorted(dash.over_time) == sorted([(minute, CORRECT, 1), (minute, WRONG, 3),
                                             (int((now - 120) // 60), CORRECT, 1)])
    assert dash.reveals == [("backward", "dv", 1)] and store.event_count(code) == 10 and dash.seats == 4
    assert dash.students == 3  # the teacher's seat is not a student's, connected or not
    # a seat moves on: its presence row is replaced, not added
    store.write([], [Presence(code, "s1", "student", "causal", "weights", now + 1)])
    assert sorted(store.dashboard(code, now=now + 1).here) == [("backward", "dv", 1), ("causal", "weights", 1)]


def test_the_dashboard_shows_the_50_most_frequent_mistakes_most_first_ties_by_place(store):
    code, _key = store.create_class()
    now = time.time()
    batch = [answer(code, f"s{i}", f"m{i:02d}", first_try=i % 2 == 0, stage=f"st{i % 3}", at=now)
             for i in range(60) for _ in range(1 + i % 4)]  # 60 different outcomes, 1-4 answers each
    batch += [answer(code, "s", CORRECT, first_try=True, stage="st0", at=now)] * 5
    store.write(batch)
    dash = store.dashboard(code, now=now)
    expected = sorted((("backward", f"st{i % 3}", f"m{i:02d}", 1 + i % 4) for i in range(60)),
                      key=lambda row: (-row[3], row[1], row[2]))
    assert dash.mistakes == expected[:50]
    # (answers, first tries, first tries right): 50 wrong answers per stage, 20 of them first tries (even i), and
    # st0's 5 right first tries; st0 first by its answers, then st1 and st2 by their stage
    assert dash.practice == [("backward", "st0", 55, 25, 5), ("backward", "st1", 50, 20, 0),
                             ("backward", "st2", 50, 20, 0)]
    assert dash.over_time == [(int(now // 60), CORRECT, 5), (int(now // 60), WRONG, 150)]


def test_postgresql_vacuums_the_events_table_every_10000_inserts(postgres_cluster):
    """The dashboard's index-only scans need the visibility map set: autovacuum gets to the events table after a
    fixed number of inserts, not after a fifth of the table (schema.events)."""
    store = Store(postgres_cluster.url)
    try:
        store.ensure_schema()
        with store.engine.connect() as conn:
            options = conn.execute(text("SELECT reloptions FROM pg_class WHERE relname = 'events'")).scalar()
    finally:
        store.dispose()
    assert sorted(options) == ["autovacuum_vacuum_insert_scale_factor=0",
                               f"autovacuum_vacuum_insert_threshold={schema.VACUUM_EVERY_INSERTS}"]


def test_an_ended_class_stores_nothing_more_and_a_deleted_one_is_gone(store):
    code, _key = store.create_class()
    store.write([answer(code, "s1", CORRECT)])
    store.push_link(code, "page=backward&preset=seed000")
    info = store.info(code)
    assert info.follow_link == "page=backward&preset=seed000" and info.follow_at and not info.ended
    store.end_class(code)
    assert store.info(code).ended
    assert store.write([answer(code, "s1", CORRECT)], [Presence(code, "s1", "student", "x", "", time.time())]) == 0
    assert store.event_count(code) == 1
    store.delete_class(code)
    assert store.info(code) is None and store.event_count(code) == 0
    with store.engine.connect() as conn:
        assert conn.execute(select(schema.events).where(schema.events.c.class_code == code)).first() is None


def test_classes_older_than_the_retention_are_purged(store):
    now = time.time()
    old, _ = store.create_class(now=now - 8 * 86400)
    new, _ = store.create_class(now=now - 6 * 86400)
    store.write([answer(old, "s", CORRECT), answer(new, "s", CORRECT)])
    assert store.purge(7 * 86400, now=now) >= 1
    assert store.info(old) is None and store.info(new) is not None and store.event_count(new) == 1


def test_events_of_unknown_classes_are_not_stored(store):
    assert store.write([answer("ZZZZZZZZ", "s", CORRECT)]) == 0


def test_a_store_of_a_newer_schema_is_refused(store_url):
    first = Store(store_url)
    first.ensure_schema()
    with first.engine.begin() as conn:
        conn.execute(schema.schema_version.insert(), {"version": schema.SCHEMA_VERSION + 1})
    second = Store(store_url)
    with pytest.raises(StoreError, match="newer than this app"):
        second.create_class()
    with first.engine.begin() as conn:
        conn.execute(schema.schema_version.delete().where(schema.schema_version.c.version > schema.SCHEMA_VERSION))
    first.dispose()
    second.dispose()


def test_sqlite_runs_in_wal_mode(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    store.create_class()
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    assert (tmp_path / "c.sqlite-wal").exists()
    with pytest.raises(ValueError, match="needs a file"):
        Store("sqlite:///:memory:")


def test_a_full_sqlite_disk_is_a_store_error_and_the_writer_keeps_the_events(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    code, _ = store.create_class()
    full = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")

    @__import__("sqlalchemy").event.listens_for(full.engine, "connect")
    def no_room(dbapi_connection, _record):  # SQLite's own limit on the file's pages: "database or disk is full"
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    writer = Writer(full, bound=5000)
    for i in range(3000):
        writer.put(answer(code, f"s{i}", CORRECT))
    assert not writer.write_now()
    status = writer.status()
    assert status.unreachable_since is not None and "full" in status.reason and status.waiting == 3000
    writer.store = store  # room again (the same file, without the limit)
    assert writer.write_now() and writer.status().unreachable_since is None
    assert store.event_count(code) == 3000


def test_flush_waits_for_counts_noted_after_the_last_events_were_written(store):
    """A flush after the events are written still writes the counts noted since (a class page's flood of answers:
    3 events written on the writer's own pass, then 5 cut off; the flush returned before counting them)."""
    code, _ = store.create_class()
    writer = Writer(store, interval_s=3600).start()  # the writer's own passes: only when woken
    writer.put(answer(code, "s1", CORRECT))
    assert writer.flush() and store.info(code).rate_limited == 0
    for _ in range(5):
        writer.rate_limited(code)
    assert writer.flush()
    assert store.info(code).rate_limited == 5
    writer.stop()


def test_the_writer_batches_bounds_and_counts(store):
    code, _ = store.create_class()
    writer = Writer(store, bound=100, interval_s=0.05).start()
    for i in range(150):
        writer.put(answer(code, f"s{i % 7}", CORRECT))
    writer.seen(Presence(code, "s1", "student", "backward", "dv", time.time()))
    writer.rate_limited(code)
    assert writer.flush()
    writer.stop()
    assert writer.status().dropped == 50 and writer.status().written == 100
    info = store.info(code)
    assert (info.dropped, info.rate_limited) == (50, 1)
    dash = store.dashboard(code)
    assert store.event_count(code) == 100 and dash.connected == 1


def test_the_writer_waits_out_a_postgresql_server_that_went_away(postgres_cluster):
    store = Store(postgres_cluster.url, connect_timeout_s=1)
    code, _ = store.create_class()
    writer = Writer(store, bound=1000)
    postgres_cluster.stop()
    try:
        for _ in range(1200):
            writer.put(answer(code, "s", CORRECT))
        assert not writer.write_now()
        status = writer.status()
        assert status.unreachable_since is not None and status.reason and status.waiting == 1000
        assert status.dropped == 200
        with pytest.raises(StoreError):
            store.dashboard(code)
    finally:
        postgres_cluster.start()
    assert writer.write_now()
    assert writer.status().unreachable_since is None
    info = store.info(code)
    assert store.event_count(code) == 1000 and info.dropped == 200
    store.dispose()


def test_several_threads_write_at_once(store):
    code, _ = store.create_class()
    writers = [Writer(store) for _ in range(3)]

    def work(writer, n):
        for i in range(n):
            writer.put(answer(code, f"{id(writer)}-{i}", CORRECT))
            if i % 50 == 0:
                writer.write_now()
        writer.write_now()

    threads = [threading.Thread(target=work, args=(w, 400)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.event_count(code) == 1200


def test_the_rate_limit_cuts_a_flood_and_lets_a_student_through():
    now = [0.0]
    limit = RateLimit(burst=20, per_s=2, clock=lambda: now[0])
    assert sum(limit.allow() for _ in range(100)) == 20  # a flood: the burst, then nothing
    now[0] += 10
    assert sum(limit.allow() for _ in range(100)) == 20  # refilled to the burst, not beyond
    verdicts = collections.Counter()
    for _ in range(60):  # a student answering every 2 s for two minutes
        now[0] += 2
        verdicts[limit.allow()] += 1
    assert verdicts[True] == 60


def _check(code, seat, phase, concept, outcomes, at=1000.0):
    kind = {"before": "check_before", "after": "check_after"}[phase]
    return [Event(code, seat, kind, at + n, concept, f"{concept}.t{n}", "procedural", outcome)
            for n, outcome in enumerate(outcomes)]


def test_the_checks_results_per_concept_over_the_students_who_took_both_with_sql(store):
    code, _ = store.create_class()
    other, _ = store.create_class()
    batch = (_check(code, "A", "before", "softmax", [CORRECT, CORRECT, WRONG, "sum_before_exp"])
             + _check(code, "A", "after", "softmax", [CORRECT] * 4)
             + _check(code, "B", "before", "softmax", [CORRECT, "shift_changes_weights", WRONG, WRONG])
             + _check(code, "B", "after", "softmax", [CORRECT, CORRECT, CORRECT, "shift_changes_weights"])
             + _check(code, "C", "before", "softmax", [WRONG] * 4)  # left before the end: not in the shares
             + _check(code, "D", "after", "softmax", [CORRECT] * 4)  # joined late: not in the shares
             + _check(code, "A", "before", "causal_mask", [CORRECT, WRONG])
             + _check(code, "A", "after", "causal_mask", [CORRECT, "mask_transposed"])
             + _check(other, "A", "before", "softmax", [WRONG] * 4)  # another class
             + [answer(code, "A", WRONG, page="softmax")])  # practice, not the check
    assert store.write(batch) == len(batch)
    results = store.check_results(code)
    by = {c.concept: c for c in results.concepts}
    softmax = by["softmax"]
    assert (softmax.students, softmax.before_only, softmax.after_only) == (2, 1, 1)
    assert (softmax.before_right, softmax.before_answers, softmax.after_right, softmax.after_answers) == (3, 8, 7, 8)
    assert (softmax.before, softmax.after) == (3 / 8, 7 / 8)
    causal = by["causal_mask"]
    assert (causal.students, causal.before, causal.after) == (1, 0.5, 0.5)
    # the misconceptions that survived first (most made after, then before), then those the lesson removed
    assert results.mistakes == [("softmax", "shift_changes_weights", 1, 1), ("causal_mask", "mask_transposed", 0, 1),
                                ("softmax", "sum_before_exp", 1, 0)]
    assert store.check_results(new_code()) == type(results)([], [])


def test_a_store_created_before_the_checks_index_gets_it(store_url):
    from sqlalchemy import inspect

    first = Store(store_url)
    first.ensure_schema()
    with first.engine.begin() as conn:
        conn.execute(text("DROP INDEX events_by_check"))
    assert "events_by_check" not in {i["name"] for i in inspect(first.engine).get_indexes("events")}
    first.dispose()
    again = Store(store_url)
    again.ensure_schema()
    assert "events_by_check" in {i["name"] for i in inspect(again.engine).get_indexes("events")}
    again.dispose()
