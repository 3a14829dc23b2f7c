"""The teacher's dashboard on a big class: ``Store.dashboard(code)`` over 400,000 events, on SQLite and PostgreSQL.

    .venv/bin/python scripts/benchmark_load.py class-store                      # both databases, full size
    .venv/bin/python scripts/benchmark_load.py class-store --database sqlite --seats 30 --minutes 5   # a quick look
    .venv/bin/python scripts/benchmark_load.py class-store --explain            # + each statement's plan

A store is filled with one class of ``--seats`` (300) students over ``--minutes`` (60) minutes, ``--events``
(400,000) events in all, and a second class of the same size (so that every query has to find its class's rows
among the others': the indexes matter). The mix is a lesson's: half of the events are practice answers (about
45 % right, 20 % wrong without a named mistake, 35 % one of the stage's named mistakes; about a third first tries), a
third steps, then solutions shown, pages opened, training runs and exports, over every step page and its stages;
a stage's answers name :data:`STAGE_MISTAKES` mistakes, drawn once per stage from the app's named mistakes (a stage's
exercises name a few; any of the 56 at every stage made ~18,000 groups of page, stage, mistake and first try, as no
lesson does);
every seat is present in the last minute. The events go in through ``Store.write`` in batches of the writer's size
(5,000), minute after minute, both classes interleaved, as a live class writes them; the fill's rate is printed.

Then ``Store.dashboard(code)`` is timed (after ``--warm-up`` calls, ``--repeat`` calls: median and max) with each of
its statements' share (SQLAlchemy's cursor events), on:

- SQLite: a WAL file in a temporary folder (the app's default store).
- PostgreSQL 15: a server started here on loopback (``ui.classroom.store.cluster``), in five states. Right after the fill
  (autovacuum kept off the table until then: the state before autovacuum gets there); after ``ANALYZE`` (the
  planner's statistics only); after ``VACUUM ANALYZE`` (the visibility map set: an index-only scan reads no table
  page). Autovacuum does that by itself: it vacuums a table once the inserts since its last vacuum pass
  ``autovacuum_vacuum_insert_threshold`` + ``autovacuum_vacuum_insert_scale_factor`` x its rows, looking every
  ``autovacuum_naptime`` (1 min), and analyzes it after 50 + 10 % changed rows. So a live class always has its
  newest events unvacuumed: the last two states are the vacuumed store plus the most that autovacuum leaves
  unvacuumed, with the store's setting (``ui.classroom.store.schema.events``: every 10,000 inserts) and with PostgreSQL's
  default (1000 + 20 % of the table: on a store holding a week of classes, the whole lesson).

``--check``: every seat of both classes also takes the check before and after the lesson (``attention_core.check``:
24 answers each time, about 45 % right before and 75 % after, most wrong answers a named mistake), and the call
timed is the teacher's whole refresh, ``Store.dashboard`` then ``Store.check_results`` (300 students: 14,400 check
answers a class).

``--explain`` prints each statement's plan (PostgreSQL: ``EXPLAIN (ANALYZE, BUFFERS)``; SQLite: ``EXPLAIN QUERY
PLAN``). Budget: median < ``--budget-ms`` (300), printed for every state; exits 1 when a state is over it. Everything
runs on this machine (SQLite's file and PostgreSQL's folder are temporary and removed at the end).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

from sqlalchemy import event, text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from attention_core import check, practice, registry  # noqa: E402
from load.server import class_store  # noqa: E402
from ui.classroom.store.schema import VACUUM_EVERY_INSERTS  # noqa: E402
from ui.classroom.store.store import (  # noqa: E402
    CHECK_AFTER,
    CHECK_BEFORE,
    CORRECT,
    WRONG,
    Event,
    Presence,
    Store,
    new_seat,
)
from ui.classroom.store.writer import BATCH  # noqa: E402

#: The mix of a lesson's events: kind -> weight.
KINDS = {"answer": 50, "step": 33, "reveal": 7, "page": 6, "training_start": 1.5, "training_end": 1.5, "export": 1}
#: An answer's outcome: right, wrong without a named mistake, one of the named mistakes (weights).
OUTCOMES = {CORRECT: 45, WRONG: 20, "named": 35}
FIRST_TRY = 0.35
#: How many named mistakes a stage's answers name (each stage its own, drawn once from practice.MISTAKES).
STAGE_MISTAKES = 4


def _pages() -> list[tuple[str, tuple[str, ...]]]:
    return [(page.key, tuple(page.stages)) for page in registry.PAGES if page.stages]


def lesson(code: str, seats: list[str], minute: int, count: int, start: float, rng: random.Random) -> list[Event]:
    """``count`` events of class ``code`` in minute ``minute`` of a lesson that began at ``start``."""
    pages = _pages()
    named = {(page, stage): random.Random(f"{page}/{stage}").sample(sorted(practice.MISTAKES), STAGE_MISTAKES)
             for page, stages in pages for stage in stages}
    kinds, kind_weights = list(KINDS), list(KINDS.values())
    outcomes, outcome_weights = list(OUTCOMES), list(OUTCOMES.values())
    events = []
    for kind in rng.choices(kinds, kind_weights, k=count):
        at = start + 60 * minute + rng.uniform(0, 60)
        seat = rng.choice(seats)
        page, stages = rng.choice(pages)
        if kind == "page":
            events.append(Event(code, seat, kind, at, page))
        elif kind.startswith("training"):
            events.append(Event(code, seat, kind, at, "training"))
        elif kind == "export":
            events.append(Event(code, seat, kind, at, page, entry="csv"))
        else:
            stage = rng.choice(stages)
            entry = f"{rng.randrange(6)},{rng.randrange(6)},{rng.randrange(2)}"
            outcome, first = "", False
            if kind == "answer":
                outcome = rng.choices(outcomes, outcome_weights)[0]
                outcome = rng.choice(named[(page, stage)]) if outcome == "named" else outcome
                first = rng.random() < FIRST_TRY
            events.append(Event(code, seat, kind, at, page, stage, entry, outcome, first))
    events.sort(key=lambda e: e.at)
    return events


def fill(store: Store, args: argparse.Namespace, rng: random.Random) -> tuple[str, float, dict[str, list[str]]]:
    """Two classes of ``args.events`` events each, written as a live class writes them (with ``--check``, each seat's
    check before and after too); (the measured class's code, seconds the fill took, each class's seats)."""
    start = time.time() - 60 * args.minutes
    classes = [store.create_class(now=start)[0] for _ in range(2)]
    seats = {code: [new_seat() for _ in range(args.seats)] for code in classes}
    began = time.perf_counter()
    if args.check:
        write_checks(store, seats, start, check.BEFORE, 0.45, rng)
    write_lesson(store, seats, args.events, args.minutes, start, rng)
    if args.check:
        write_checks(store, seats, start + 60 * args.minutes - 120, check.AFTER, 0.75, rng)
    seconds = time.perf_counter() - began
    present(store, seats, rng)
    return classes[0], seconds, seats


def _kinds_and_mistakes() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each check template's kind and named mistakes (as drawn for one seat: the same for every seat)."""
    found = {}
    for key, template in check.TEMPLATES.items():
        item = template(0)
        found[key] = (item.kind, tuple(m.key for m in item.exercise.mistakes) if item.exercise is not None
                      else tuple(m for m in item.choice_mistakes if m and m != WRONG))
    return found


def write_checks(store: Store, seats: dict[str, list[str]], at: float, phase: str, right: float,
                 rng: random.Random) -> None:
    """Every seat's check of ``phase`` (every template), a share ``right`` of the answers right, most wrong ones a
    named mistake, written in the writer's batches."""
    kind = CHECK_BEFORE if phase == check.BEFORE else CHECK_AFTER
    drawn = _kinds_and_mistakes()
    rows = []
    for code, members in seats.items():
        for seat in members:
            for key in check.TEMPLATES:
                concept, (item_kind, named) = key.split(".", 1)[0], drawn[key]
                if rng.random() < right:
                    outcome = CORRECT
                elif named and rng.random() < 0.7:
                    outcome = rng.choice(named)
                else:
                    outcome = WRONG
                rows.append(Event(code, seat, kind, at + rng.uniform(0, 60), concept, key, item_kind, outcome))
    for n in range(0, len(rows), BATCH):
        store.write(rows[n:n + BATCH])


def write_lesson(store: Store, seats: dict[str, list[str]], events: int, minutes: int, start: float,
                 rng: random.Random) -> None:
    """``events`` events of each class over ``minutes`` minutes from ``start``, minute after minute, both classes
    interleaved, in batches of the writer's size."""
    per_minute = events // minutes
    pending: list[Event] = []
    for minute in range(minutes):
        count = per_minute if minute < minutes - 1 else events - per_minute * (minutes - 1)
        pending += sorted((e for code, members in seats.items() for e in lesson(code, members, minute, count, start,
                                                                                  rng)), key=lambda e: e.at)
        while len(pending) >= BATCH:
            store.write(pending[:BATCH])
            del pending[:BATCH]
    store.write(pending)


def present(store: Store, seats: dict[str, list[str]], rng: random.Random) -> None:
    """Every seat seen in the last 50 seconds, somewhere on a step page, and one teacher per class: what the writers
    keep writing during a lesson (written again before each measurement, so that "here" stays the whole class)."""
    now, pages = time.time(), _pages()
    presence = []
    for code, members in seats.items():
        for seat in members:
            page, stages = rng.choice(pages)
            presence.append(Presence(code, seat, "student", page, rng.choice(stages), now - rng.uniform(0, 50)))
        presence.append(Presence(code, f"teacher{code}", "teacher", "your_class", "", now))
    store.write([], presence)


class Statements:
    """Each statement a ``Store.dashboard`` call runs, timed by SQLAlchemy's cursor events: (SQL, parameters,
    seconds), in order."""

    def __init__(self, store: Store) -> None:
        self.engine = store.engine
        self.runs: list[tuple[str, object, float]] = []
        self._started: dict[int, float] = {}
        event.listen(self.engine, "before_cursor_execute", self._before)
        event.listen(self.engine, "after_cursor_execute", self._after)

    def _before(self, _conn, cursor, statement, parameters, _context, _many) -> None:
        self._started[id(cursor)] = time.perf_counter()

    def _after(self, _conn, cursor, statement, parameters, _context, _many) -> None:
        self.runs.append((statement, parameters, time.perf_counter() - self._started.pop(id(cursor), 0.0)))

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._before)
        event.remove(self.engine, "after_cursor_execute", self._after)


def _name(statement: str, parameters) -> str:
    """A dashboard statement by what it reads (its table, first columns, and the kind or role it selects), for the
    table of shares."""
    flat = " ".join(statement.split())
    select = flat[7:flat.index(" FROM ")] if " FROM " in flat else flat
    table = "seats" if "FROM seats" in flat else "events"
    values = parameters.values() if isinstance(parameters, dict) else parameters or ()
    kind = next((v for v in values if v in KINDS or v in ("student", "teacher")), "")
    short = ", ".join(part.split(".")[-1].split(" AS ")[0] for part in select.split(", ")[:4])
    return f"{table} [{kind or 'all'}]: {short[:60]}"


def measure(url: str, code: str, seats: dict[str, list[str]], args: argparse.Namespace, label: str) -> dict:
    """Time ``Store(url).dashboard(code)``: ``--warm-up`` calls, then ``--repeat`` timed ones; print and return
    the numbers (and each statement's median share)."""
    store = Store(url)
    try:
        present(store, seats, random.Random(args.seed))
        def refresh():  # what the teacher's page reads every 2 s
            dash = store.dashboard(code)
            if args.check:
                store.check_results(code)
            return dash

        for _ in range(args.warm_up):
            dash = refresh()
        statements = Statements(store)
        times = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            dash = refresh()
            times.append(time.perf_counter() - began)
        statements.close()
        events = store.event_count(code)
    finally:
        store.dispose()
    per_call = len(statements.runs) // args.repeat
    shares = {}
    for i in range(per_call):
        runs = statements.runs[i::per_call]
        shares[f"{i + 1}. {_name(runs[0][0], runs[0][1])}"] = (statistics.median(t for _s, _p, t in runs), runs[0][0], runs[0][1])
    median, worst = statistics.median(times), max(times)
    answers = sum(row[2] for row in dash.practice)
    print(f"{label:<44} median {1000 * median:6.1f} ms   max {1000 * worst:6.1f} ms   "
          f"({events} events, {answers} answers, {dash.connected} here)")
    for name, (seconds, _sql, _params) in sorted(shares.items(), key=lambda kv: -kv[1][0])[:4]:
        print(f"    {1000 * seconds:6.1f} ms  {name}")
    return {"median": median, "max": worst, "shares": shares, "events": events}


def explain(url: str, shares: dict, analyze: bool) -> None:
    """Print each statement's plan (PostgreSQL with ANALYZE and BUFFERS, SQLite's query plan)."""
    store = Store(url)
    try:
        raw = store.engine.raw_connection()
        try:
            cursor = raw.cursor()
            for name, (seconds, sql, params) in sorted(shares.items(), key=lambda kv: -kv[1][0]):
                prefix = ("EXPLAIN (ANALYZE, BUFFERS) " if analyze else "EXPLAIN ") if store.dialect == "postgresql" \
                    else "EXPLAIN QUERY PLAN "
                cursor.execute(prefix + sql, params)
                plan = [" | ".join(str(c) for c in row) for row in cursor.fetchall()]
                print(f"  -- {name} ({1000 * seconds:.1f} ms)")
                for line in plan:
                    print(f"     {line}")
            cursor.close()
        finally:
            raw.close()
    finally:
        store.dispose()


def _execute(url: str, sql: str) -> None:
    """A maintenance statement outside a transaction (VACUUM cannot run in one)."""
    store = Store(url)
    try:
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(sql))
    finally:
        store.dispose()


def visibility(url: str) -> str:
    """How much of the events table the visibility map marks all-visible, and the vacuum / analyze counts."""
    store = Store(url)
    try:
        with store.engine.connect() as conn:
            pages, visible = conn.execute(text(
                "SELECT relpages, relallvisible FROM pg_class WHERE relname = 'events'")).one()
            row = conn.execute(text(
                "SELECT n_live_tup, n_ins_since_vacuum, vacuum_count + autovacuum_count, "
                "analyze_count + autoanalyze_count FROM pg_stat_user_tables WHERE relname = 'events'")).one()
    finally:
        store.dispose()
    return (f"events: {pages} pages (pg_class, as of the last vacuum/analyze), {visible} all-visible; "
            f"{row[0]} live rows, {row[1]} inserted since the last vacuum; vacuums {row[2]}, analyzes {row[3]}")


def run(database: str, args: argparse.Namespace, folder: Path) -> list[tuple[str, dict]]:
    """Fill a store on ``database`` and measure it; [(state, numbers)]."""
    url, cluster = class_store(folder, database)
    results = []
    try:
        store = Store(url)
        store.ensure_schema()
        if database == "postgresql":  # the state before autovacuum gets there, for as long as it is measured
            _execute(url, "ALTER TABLE events SET (autovacuum_enabled = false)")
        code, seconds, seats = fill(store, args, random.Random(args.seed))
        store.dispose()
        total = 2 * args.events + (2 * 2 * args.seats * len(check.TEMPLATES) if args.check else 0)
        print(f"\n== {database} ({Store(url).describe()}): filled {total:,} events of 2 classes in {seconds:.1f} s "
              f"({total / seconds:,.0f} events/s through Store.write, batches of {BATCH})")
        states: list[tuple[str, Optional[Callable[[], None]]]] = [("right after the fill", None)]
        if database == "postgresql":
            print("   " + visibility(url))
            # What autovacuum leaves unvacuumed at most: the inserts that do not yet trigger it, plus what arrives
            # until its next look (autovacuum_naptime, 1 min): with the store's setting (schema.events) and with
            # PostgreSQL's default (1000 + 20 % of the table's rows), for these two classes, per class.
            per_minute = 2 * args.events / args.minutes
            store_tail = int((VACUUM_EVERY_INSERTS + per_minute) / 2)
            default_tail = int((1000 + 0.2 * 2 * args.events + per_minute) / 2)

            def tail(count: int) -> Callable[[], None]:
                def write() -> None:
                    _execute(url, "VACUUM ANALYZE")
                    tail_store = Store(url)
                    write_lesson(tail_store, seats, count, args.minutes, time.time() - 60 * args.minutes,
                                 random.Random(count))
                    tail_store.dispose()
                return write

            states += [("after ANALYZE (statistics only)", lambda: _execute(url, "ANALYZE")),
                       ("after VACUUM ANALYZE (visibility map set)", lambda: _execute(url, "VACUUM ANALYZE")),
                       (f"vacuumed, then {store_tail:,} newer events per class (store's autovacuum)",
                        tail(store_tail)),
                       (f"vacuumed, then {default_tail:,} newer events per class (default autovacuum)",
                        tail(default_tail))]
        for label, before in states:
            if before is not None:
                began = time.perf_counter()
                before()
                print(f"   ({label.split('(')[0].removeprefix('after ').strip()}: {time.perf_counter() - began:.1f} s)")
                if database == "postgresql":
                    print("   " + visibility(url))
            numbers = measure(url, code, seats, args, f"{database}, {label}")
            results.append((f"{database}, {label}", numbers))
            if args.explain:
                explain(url, numbers["shares"], analyze=True)
        if database == "postgresql":
            _execute(url, "ALTER TABLE events RESET (autovacuum_enabled)")
    finally:
        if cluster is not None:
            cluster.remove()
    return results


def main(argv: Optional[list[str]] = None, prog: Optional[str] = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", action="append", choices=("sqlite", "postgresql"), default=[],
                        help="the database(s) to measure (default: both)")
    parser.add_argument("--seats", type=int, default=300, help="students in each class")
    parser.add_argument("--minutes", type=int, default=60, help="the lesson's length")
    parser.add_argument("--events", type=int, default=400_000, help="events of each of the two classes")
    parser.add_argument("--warm-up", type=int, default=3, help="untimed dashboard calls first")
    parser.add_argument("--repeat", type=int, default=15, help="timed dashboard calls (at least 10)")
    parser.add_argument("--budget-ms", type=float, default=300.0, help="the dashboard's median, in every state")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--explain", action="store_true", help="print each statement's plan")
    parser.add_argument("--check", action="store_true",
                        help="every seat takes the check before and after; time the dashboard and the check's results")
    args = parser.parse_args(argv)
    if not (1 <= args.seats <= 1000 and 1 <= args.minutes <= 600 and args.minutes <= args.events <= 2_000_000
            and 1 <= args.repeat <= 200 and 1 <= args.warm_up <= 50):
        parser.error("bounded: 1-1000 seats, 1-600 minutes, minutes to 2,000,000 events, 1-200 repeats, 1-50 warm-ups")
    print(f"class store benchmark: 2 classes of {args.seats} seats x {args.minutes} minutes, {args.events:,} events "
          f"each; Store.dashboard timed {args.repeat} times after {args.warm_up} warm-up calls; budget: median < "
          f"{args.budget_ms:g} ms")
    folder = Path(tempfile.mkdtemp(prefix="benchmark-class-store-"))
    folder.chmod(0o755)  # as root the PostgreSQL server runs as the postgres user: it must reach its folder inside
    results = []
    try:
        for database in args.database or ["sqlite", "postgresql"]:
            results += run(database, args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print()
    ok = True
    for label, numbers in results:
        over = 1000 * numbers["median"] >= args.budget_ms
        ok &= not over
        print(f"budget: {label}: median {1000 * numbers['median']:.0f} ms, max {1000 * numbers['max']:.0f} ms "
              f"-> {'OVER BUDGET' if over else 'ok'}")
    return 0 if ok else 1

