"""The ``class-check`` scenario of scripts/benchmark_load.py: a class takes the check before and after at once (issue
64).

    .venv/bin/python scripts/benchmark_load.py class-check --students 30 --interval 20   # the issue's measurement
    .venv/bin/python scripts/benchmark_load.py class-check --class-store postgresql      # PostgreSQL started here

(At the default ``--interval`` of 3 s, 30 students hand in 24 answers within 0.6-3 s of opening the check, which no
class does: a stress test of the server, over the budget.)

One server (``streamlit run app.py`` on loopback; its class store a temporary SQLite file, or with ``--class-store
postgresql`` a PostgreSQL 15 cluster started on loopback). A teacher starts a class from the sidebar with *Check
before and after* on (``class_start_check``: the class is sent to the check before as it starts) and keeps *Your class*
open: its live part (the dashboard and the class's gain) reruns on its 2 s timer for the whole run. Then
``--students`` students open the students' link within the same second and follow the banner to the check before
(``/check?class=CODE&check.phase=before&check.concept=all``: the check is drawn for their seat, 24 items), and
0.2-1 x ``--interval`` s later each hands it in: every answer of the form in one rerun with *Hand in*'s trigger, as the browser
submits a form (computed items typed as numbers, chosen items as the option's label; a student gets about half right
and the rest as named mistakes or wrong). The teacher then sends the check after (*Check now*), and each student
opens its link and hands that in the same way.

Reported, beside the one-widget floor measured on its own server first: the students' opening of the check (drawing
it) and their hand-ins (grading, recording, the verdicts and worked solutions drawn) p50 / p95 / max; the teacher's
refreshes; the answers recorded in the store against the answers handed in; exceptions, failed sessions, server
tracebacks. In this process too: drawing one student's whole check (``attention_core.check.make_check``) and grading
one answer (``grade_item``), median and max. Budgets (the issue's): a hand-in's p95 <= 3 x the floor's median,
drawing <= 50 ms, grading <= 20 ms, every answer handed in recorded, 0 exceptions and failed sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import random
import shutil
import statistics
import tempfile
import time
import urllib.parse
from pathlib import Path

from load.class_live import ENV_DATA, ENV_URL, tick_until, your_class_path
from load.client import Student
from load.report import fmt_ms, pct, report_tracebacks
from load.server import APP, Server, class_store, rss_mb
from load.single import floor_times

START, WITH_CHECK = "class_start", "class_start_check"  # the sidebar's switch and button (ui/classroom/class_banner.py)
NOW = "class_check_after"  # Your class: "Check now (after the lesson)"
FOLLOW = "class_follow"  # the student's banner: Follow
PAGE = "check"
RUN_S = 120.0  # the longest a student waits for the teacher's check after
FLOOR_CLICKS = 30
SETTLE_S = 15.0  # how long the store may take to hold every answer after the last one (the writer: every 0.5 s)
DRAWS = 50  # seats whose whole check is drawn in this process, for the drawing's time


@dataclasses.dataclass
class Result:
    opened: list[float] = dataclasses.field(default_factory=list)  # the check's first render (drawn for the seat)
    handed: list[float] = dataclasses.field(default_factory=list)  # Hand in -> the verdicts drawn
    refresh: list[float] = dataclasses.field(default_factory=list)  # the teacher's live part (2 s)
    answers: int = 0  # answers handed in
    exceptions: list[str] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)


def hand_in(student: Student, seat: str, phase: str, rng: random.Random):
    """The WidgetStates of a student's hand-in of the check on the page (``seat``'s, in ``phase``), as the browser submits the form
    (every answer and *Hand in*'s trigger) and its fragment id; how many answers it holds. About half are right;
    the rest a named mistake's number, a wrong number or a wrong choice."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    from attention_core import check

    states, fragment = [], ""
    for item in check.make_check(seat, phase):
        key = f"check_answer_{phase}_all_{item.template}"
        etype, proto, fragment = student.widgets[key]
        right = rng.random() < 0.5
        if item.kind == check.PROCEDURAL:
            mistakes = item.exercise.mistakes
            value = (item.exercise.answer if right or not mistakes else rng.choice(mistakes).value)
            states.append(WidgetState(id=proto.id, string_value=f"{value:.4f}"))
        else:
            choice = item.right if right else (item.right + 1 + rng.randrange(len(item.choices) - 1)) % len(
                item.choices)
            states.append(WidgetState(id=proto.id, string_value=proto.options[choice]))  # a radio sends its label
    button = next(proto for etype, proto, _f in student.widgets.values()
                  if etype == "button" and proto.form_id == f"check_form_{phase}_all")
    return states + [WidgetState(id=button.id, trigger_value=True)], fragment, len(states)


async def _click(student: Student, key: str) -> None:
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    etype, proto, fragment_id = student.widgets[key]
    value = WidgetState(id=proto.id, bool_value=True) if etype == "checkbox" else WidgetState(id=proto.id,
                                                                                             trigger_value=True)
    await student.change(value, fragment_id)


async def _start(url: str) -> tuple[str, str]:
    """A teacher opens the app, turns *Check before and after* on and starts a class: (code, teacher key)."""
    teacher = Student(url, "starter")
    try:
        await teacher.connect()
        await teacher.open_page("", "preset=seed000")
        await _click(teacher, WITH_CHECK)
        await _click(teacher, START)
        params = dict(urllib.parse.parse_qsl(teacher.query))
        if teacher.exceptions or "class" not in params or "teacher" not in params:
            raise RuntimeError(f"Start a class gave no class link: {teacher.query!r} {teacher.exceptions}")
        return params["class"], params["teacher"]
    finally:
        await teacher.close()


async def _student(url: str, index: int, code: str, args: argparse.Namespace, result: Result,
                   handed_before: list[int]) -> None:
    rng = random.Random(args.seed * 1000 + index)
    name = f"s{index:03d}"
    student = Student(url, name)
    deadline = time.monotonic() + RUN_S
    await asyncio.sleep(rng.uniform(0, 1.0))  # the link shared by the teacher: everyone opens it within a second
    try:
        await student.connect()
        await student.open_page("", urllib.parse.urlencode({"class": code}))
        seat = dict(urllib.parse.parse_qsl(student.query))["seat"]  # the seat the app gave, kept in the link
        for phase in ("before", "after"):
            # the banner's Follow (at once for the check before, sent as the class started; on the banner's 10 s
            # timer for the check after)
            while FOLLOW not in student.widgets:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no Follow to the check {phase} in the banner")
                await tick_until(student, time.monotonic() + 0.5, [])
            began = time.perf_counter()
            await _click(student, FOLLOW)  # the page switches to the check, drawn for the seat
            result.opened.append(time.perf_counter() - began)
            student.page = PAGE
            await asyncio.sleep(rng.uniform(0.2, 1.0) * args.interval)  # reads, computes, chooses
            states, fragment, n = hand_in(student, seat, phase, rng)
            result.handed.append(await student.change(states, fragment))
            if not any(key.startswith("check_again") for key in student.widgets):
                raise RuntimeError(f"the hand-in of the check {phase} showed no verdicts")
            result.answers += n
            if phase == "before":
                handed_before.append(index)
    except Exception as error:  # noqa: BLE001 - a failed session is a result, not a crash of the benchmark
        result.failed.append(f"{name}: {type(error).__name__}: {error}")
    finally:
        result.exceptions.extend(f"{name}: {e}" for e in student.exceptions)
        await student.close()


async def _teacher(url: str, code: str, key: str, args: argparse.Namespace, result: Result,
                   handed_before: list[int], done: asyncio.Event) -> None:
    """*Your class* open for the whole run, its live part rerun on its timer; once every student handed in the
    check before, *Check now* (concept: every one)."""
    teacher = Student(url, "teacher")
    try:
        await teacher.connect()
        await teacher.open_page(your_class_path(), urllib.parse.urlencode({"class": code, "teacher": key}))
        while len(handed_before) < args.students and not done.is_set():
            await tick_until(teacher, time.monotonic() + 0.5, result.refresh)
        await _click(teacher, NOW)
        while not done.is_set():
            await tick_until(teacher, time.monotonic() + 0.5, result.refresh)
    except Exception as error:  # noqa: BLE001
        result.failed.append(f"teacher: {type(error).__name__}: {error}")
    finally:
        result.exceptions.extend(f"teacher: {e}" for e in teacher.exceptions)
        await teacher.close()


async def _class(url: str, args: argparse.Namespace, result: Result) -> str:
    code, key = await _start(url)
    done, handed_before = asyncio.Event(), []
    teacher = asyncio.create_task(_teacher(url, code, key, args, result, handed_before, done))
    students = [_student(url, i, code, args, result, handed_before) for i in range(args.students)]
    await asyncio.gather(*students)
    done.set()
    await teacher
    return code


def in_process() -> tuple[list[float], list[float]]:
    """Drawing a whole check for :data:`DRAWS` seats and grading each of their answers, in this process (seconds)."""
    from attention_core import check

    check.make_check("warm-up", "before")
    draws, grades = [], []
    for n in range(DRAWS):
        start = time.perf_counter()
        items = check.make_check(f"seat-{n}", "after")
        draws.append(time.perf_counter() - start)
        for item in items:
            given = repr(item.exercise.answer) if item.kind == check.PROCEDURAL else item.right
            start = time.perf_counter()
            check.grade_item(item, given)
            grades.append(time.perf_counter() - start)
    return draws, grades


def recorded(url: str, code: str, expected: int) -> int:
    """The check's answers the store holds for ``code``, once it holds ``expected`` (or after :data:`SETTLE_S`)."""
    from ui.classroom.store.store import Store

    store = Store(url)
    try:
        deadline = time.monotonic() + SETTLE_S
        while True:
            results = store.check_results(code)
            held = sum(c.before_answers + c.after_answers for c in results.concepts)
            if held >= expected or time.monotonic() > deadline:
                return held
            time.sleep(0.5)  # polling the store: the writer's next batch
    finally:
        store.dispose()


def run_class_check(args: argparse.Namespace) -> bool:
    print(f"== class-check: {args.students} students take the check (24 items) before and after, each handing it in "
          f"within {0.2 * args.interval:g}-{args.interval:g} s of opening it; the teacher's page refreshing every 2 s\n")
    draws, grades = in_process()
    folder = Path(tempfile.mkdtemp(prefix="benchmark-class-check-"))
    cluster, server = None, None
    try:
        url, cluster = class_store(folder, args.class_store)
        floor = floor_times(FLOOR_CLICKS)
        server = Server(APP, env={ENV_URL: url, ENV_DATA: str(folder)})
        result = Result()
        code = asyncio.run(_class(server.url, args, result))
        held = recorded(url, code, result.answers)
        tracebacks_ok = report_tracebacks(server)
        rss = rss_mb([server.process.pid])
    finally:
        if server:
            server.stop()
        if cluster is not None:
            cluster.remove()
        shutil.rmtree(folder, ignore_errors=True)
    floor_ms = 1000 * statistics.median(floor)
    print(f"{'':<36} {'n':>5} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}")
    for label, values in (("floor: one-widget change", floor), ("a student opens the check (drawn)", result.opened),
                          ("a student hands it in", result.handed), ("the teacher's refresh (2 s)", result.refresh),
                          ("in process: drawing a check of 24", draws), ("in process: grading an answer", grades)):
        print(f"{label:<36} {len(values):>5} {fmt_ms(values)}")
    print(f"\nanswers handed in: {result.answers}; in the store: {held}; server RSS at the end {rss:.0f} MB; load "
          f"average {os.getloadavg()} on {os.cpu_count()} cores")
    problems = result.exceptions + result.failed
    print(f"exceptions: {len(result.exceptions)}   failed sessions: {len(result.failed)}")
    for line in problems[:10]:
        print("   ", line[:300])
    hand_p95 = 1000 * pct(result.handed, .95)
    checks = {
        f"a hand-in's p95 {hand_p95:.0f} ms <= {args.check_factor:g} x the floor = {args.check_factor * floor_ms:.0f} ms":
            hand_p95 <= args.check_factor * floor_ms,
        f"drawing a check <= 50 ms (median {1000 * statistics.median(draws):.1f})": statistics.median(draws) <= 0.050,
        f"grading an answer <= 20 ms (max {1000 * max(grades):.2f})": max(grades) <= 0.020,
        "every answer handed in is in the store": result.answers > 0 and held == result.answers,
        "0 exceptions, 0 failed sessions, no server traceback": not problems and tracebacks_ok,
    }
    print()
    for label, ok in checks.items():
        print(f"budget: {label}: {'ok' if ok else 'OVER BUDGET'}")
    return all(checks.values())
