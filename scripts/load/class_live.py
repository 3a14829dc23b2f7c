"""The ``class-live`` scenario of scripts/benchmark_load.py: what being in a class costs a student's click, and what
the teacher's live page costs (issue 38).

    .venv/bin/python scripts/benchmark_load.py class-live                  # 30 students, 60 s per configuration
    .venv/bin/python scripts/benchmark_load.py class-live --students 30 --duration 60 --interval 3 --rounds 2
    .venv/bin/python scripts/benchmark_load.py class-live --class-store postgresql   # a PostgreSQL started here

One server (``streamlit run app.py`` on loopback, its class store a temporary SQLite file, or with
``--class-store postgresql`` a PostgreSQL 15 cluster started on loopback by ``ui.classroom.store.cluster``), two
configurations measured back to back in the same run, with the same students on the same schedule:

- *alone*: ``--students`` students open ``/self-attention`` with practice mode on (the link
  ``?practice=1&self_attention.stage=S``, S spread over the six stages with a typed answer) and, every ~``--interval``
  s (uniformly 0.5x-1.5x) for ``--duration`` s, type a (wrong) number into the answer box and submit the form
  (*Check*): the text input's value and the submit button's trigger in one rerun, as the browser sends a form.
- *in a class*: the same, in a class that a teacher started through the app's own sidebar button (``class_start``)
  at the beginning of the run: the students open the same link with ``class=CODE``, so each answer is recorded
  (``ui/classroom/class_live.py`` -> the writer's queue -> the store), and their banner fragment (``run_every`` 10 s) is
  rerun on its timer as the browser does; the teacher opens ``/your-class?class=CODE&teacher=KEY`` and its
  dashboard fragment (``run_every`` 2 s: the GROUP BYs of ``Store.dashboard``, the metrics, two charts and a
  table) is rerun on its timer for the whole time.

``--rounds 2`` measures alone, in a class, in a class, alone (ABBA: a slow drift of the machine's other load falls
on both alike); each configuration's numbers are pooled over its rounds. Before the first round, one warm-up student
opens each stage and answers once in a warm-up class (caches, imports), and a warm-up teacher opens the class page:
neither is measured. The one-widget floor (``scripts/load_floor_app.py``) is measured on its own server first.

Reported: the students' Check p50 / p95 / max alone and in a class and the ratio of the p95s (budget: <=
``--ratio-budget``, 1.1), the banner reruns, the teacher's dashboard refresh p50 / p95 / max (budget: p95 <
``--teacher-budget-ms``, 200), the answers the students sent (the page answered with its verdict) against the
answers the store holds at the end (read directly: ``Store(url).dashboard(code)``; budget: all of them), the
teacher's own "Answers" number at its last refresh, exceptions, failed sessions and server tracebacks (budget: 0).
To tell the class's cost from the machine's noise, also: each round's p50 / p95, the server process's CPU per Check
in each configuration (everything it did included), and the Checks answered while a banner or dashboard rerun was
under way (spans on the client's clock) against the others.
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
from typing import Optional

from load.client import Student
from load.report import fmt_ms, pct, report_tracebacks
from load.server import APP, Server, class_store, cpu_seconds, rss_mb
from load.single import floor_times

#: The page the students practise on, and the stages of it that ask for a typed answer (the softmax stage asks for
#: a prediction first: a click on a pill, not a number).
PAGE = "self-attention"
STAGES = ("query", "key", "value", "scores", "scaled_scores", "output")
START = "class_start"  # the sidebar's "Start a class" (ui/classroom/class_live.py)
ENV_URL, ENV_DATA = "ATTENTION_EXPLORER_CLASS_STORE", "ATTENTION_EXPLORER_DATA"
FLOOR_CLICKS = 30  # the one-widget app's timed changes
SETTLE_S = 15.0  # how long the store may take to hold every answer after the last one (the writer: every 0.5 s)
CONFIGS = ("alone", "class")


@dataclasses.dataclass
class Side:
    """One configuration's numbers, pooled over its rounds (seconds)."""

    name: str
    first: list[float] = dataclasses.field(default_factory=list)  # the students' first render
    answers: list[float] = dataclasses.field(default_factory=list)  # Check -> the verdict drawn
    by_round: dict[int, list[float]] = dataclasses.field(default_factory=dict)  # the same, per round
    answer_spans: list[tuple[float, float]] = dataclasses.field(default_factory=list)  # (sent, answered), monotonic
    other_spans: list[tuple[float, float]] = dataclasses.field(default_factory=list)  # the banner and teacher reruns
    sent: int = 0  # answers the page answered
    graded: int = 0  # ... with a graded wrong answer's "Show the solution" under it
    ticks: list[float] = dataclasses.field(default_factory=list)  # the students' banner reruns (run_every 10 s)
    teacher_first: list[float] = dataclasses.field(default_factory=list)
    refresh: list[float] = dataclasses.field(default_factory=list)  # the teacher's dashboard reruns (2 s)
    teacher_answers: list[str] = dataclasses.field(default_factory=list)  # "Answers" at the teacher's last refresh
    cpu_s: float = 0.0  # the server process's CPU time (user + system) during this configuration
    seconds: float = 0.0  # ... and the wall-clock time it lasted
    exceptions: list[str] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)


def _link(stage: str, code: str = "") -> str:
    """The query string of a student's link: practice mode on at ``stage`` (and the class ``code``)."""
    params = {"practice": "1", "self_attention.stage": stage}
    return urllib.parse.urlencode({**params, "class": code} if code else params)


async def tick_until(student: Student, deadline: float, times: list[float],
                      spans: Optional[list[tuple[float, float]]] = None) -> None:
    """Until ``deadline`` (time.monotonic()), rerun the student's ``run_every`` fragments whenever their timers fire,
    as the browser does (none on a page without one); each rerun's seconds go to ``times``, its (start, end) to
    ``spans``."""
    while True:
        tick = student.next_tick()
        now = time.monotonic()
        if tick is None or tick[0] >= deadline:
            await asyncio.sleep(max(0.0, deadline - now))
            return
        await asyncio.sleep(max(0.0, tick[0] - now))
        began = time.monotonic()
        times.append(await student.tick(tick[1]))
        if spans is not None:
            spans.append((began, time.monotonic()))


def answer(student: Student, text: str):
    """The step-through element's Check with ``text`` typed, at the entry it shows (its WidgetState and fragment id:
    the element sends the answer to the server, which grades it and records it for the class)."""
    position = student.element_data()["position"]
    return student.element_send("answer", {**position, "text": text})


def graded(student: Student) -> bool:
    """Whether the element was sent a graded wrong answer at the entry it shows (a named mistake, or how far off:
    *Show the solution* under it)."""
    data = student.element_data()
    position = data["position"]
    exercise = (data["stages"][position["stage"]].get("exercises") or {}).get(
        f"{position['row']},{position['col']},{position['head']}")
    return bool(exercise and data["practice"]["status"].get(exercise["id"], {}).get("hints"))


def answer_text(index: int, n: int) -> str:
    """A student's n-th typed answer: a number far from any entry of the page's example (so always wrong, and
    graded: the hint and *Show the solution* follow), different each time."""
    return f"{900 + index + n / 100:.2f}"


async def _answerer(url: str, index: int, code: str, args: argparse.Namespace, side: Side, rng: random.Random,
                    t_end: float, round_: int = 0) -> None:
    """One student: opens the practice link (in the class when ``code``), then answers every ~--interval s until
    ``t_end``, rerunning its banner fragment on its timer in between."""
    stage = STAGES[index % len(STAGES)]
    name = f"{side.name}-s{index:03d}"
    student = Student(url, name)
    await asyncio.sleep(rng.uniform(0, 1.0))  # the link shared by the teacher: everyone opens it within a second
    try:
        await student.connect()
        side.first.append(await student.open_page(PAGE, _link(stage, code)))
        n = 0
        while True:
            next_answer = time.monotonic() + rng.uniform(0.5, 1.5) * args.interval  # reads, computes, types
            await tick_until(student, min(next_answer, t_end), side.ticks, side.other_spans)
            if time.monotonic() >= t_end:
                break
            n += 1
            began = time.monotonic()
            elapsed = await student.change(*answer(student, answer_text(index, n)))
            side.answer_spans.append((began, time.monotonic()))
            side.answers.append(elapsed)
            side.by_round.setdefault(round_, []).append(elapsed)
            side.sent += 1
            side.graded += graded(student)
    except Exception as error:  # noqa: BLE001 - a failed session is a result, not a crash of the benchmark
        side.failed.append(f"{name} ({stage}): {type(error).__name__}: {error}")
    finally:
        side.exceptions.extend(f"{name} ({stage}): {e}" for e in student.exceptions)
        await student.close()


async def _teacher(url: str, code: str, key: str, side: Side, t_end: float) -> None:
    """The teacher's window on the class page (its link), its dashboard fragment rerun on its timer until
    ``t_end``."""
    teacher = Student(url, f"{side.name}-teacher")
    try:
        await teacher.connect()
        side.teacher_first.append(await teacher.open_page(your_class_path(),
                                                          urllib.parse.urlencode({"class": code, "teacher": key})))
        if not teacher.auto_reruns:
            raise RuntimeError("the class page armed no refresh timer (not the teacher's page?)")
        await tick_until(teacher, t_end, side.refresh, side.other_spans)
        side.teacher_answers.append(teacher.metrics.get("Answers", "?"))
    except Exception as error:  # noqa: BLE001
        side.failed.append(f"{teacher.name}: {type(error).__name__}: {error}")
    finally:
        side.exceptions.extend(f"{teacher.name}: {e}" for e in teacher.exceptions)
        await teacher.close()


def your_class_path() -> str:
    from attention_core import registry

    return registry.YOUR_CLASS.url_path


async def start_class_in_the_sidebar(url: str) -> tuple[str, str]:
    """A teacher opens the app and clicks *Start a class* in the sidebar: (class code, teacher key), read from the
    link the app then writes (``?class=CODE&teacher=KEY``) as the browser's address bar shows it."""
    teacher = Student(url, "starter")
    try:
        await teacher.connect()
        await teacher.open_page("", "preset=seed000")  # a link: the Student follows the link the app writes
        _etype, proto, fragment_id = teacher.widgets[START]
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        await teacher.change(WidgetState(id=proto.id, trigger_value=True), fragment_id)
        params = dict(urllib.parse.parse_qsl(teacher.query))
        if teacher.exceptions or "class" not in params or "teacher" not in params:
            raise RuntimeError(f"Start a class gave no class link: {teacher.query!r} {teacher.exceptions}")
        return params["class"], params["teacher"]
    finally:
        await teacher.close()


async def warm_up(url: str) -> float:
    """Before anything is measured: a class started from the sidebar; one student answers once at each stage in it
    (imports, the page's caches, the writer), its teacher's page refreshes once. Seconds."""
    start = time.perf_counter()
    code, key = await start_class_in_the_sidebar(url)
    student = Student(url, "warm-up")
    await student.connect()
    try:
        for stage in STAGES:
            await student.open_page(PAGE, _link(stage, code))
            await student.change(*answer(student, answer_text(0, 0)))
    finally:
        await student.close()
    teacher = Student(url, "warm-up-teacher")
    await teacher.connect()
    try:
        await teacher.open_page(your_class_path(), urllib.parse.urlencode({"class": code, "teacher": key}))
        _due, fragment_id = teacher.next_tick()
        await teacher.tick(fragment_id)
    finally:
        await teacher.close()
    if student.exceptions or teacher.exceptions:
        raise RuntimeError(f"the warm-up showed exceptions: {student.exceptions + teacher.exceptions}")
    return time.perf_counter() - start


async def _configuration(url: str, args: argparse.Namespace, side: Side, code: str, key: str, round_: int = 0) -> None:
    """One configuration for --duration s: every student (and in a class, the teacher)."""
    t_end = time.monotonic() + 1.0 + args.duration
    tasks = [_answerer(url, i, code, args, side, random.Random(args.seed * 1000 + i), t_end, round_)
             for i in range(args.students)]  # the same seed per student in both configurations: the same schedule
    if code:
        tasks.append(_teacher(url, code, key, side, t_end))
    await asyncio.gather(*tasks)


def recorded_answers(url: str, code: str, expected: int, settle_s: float = SETTLE_S):
    """The class's dashboard read straight from the store, once it holds ``expected`` answers (or after
    ``settle_s``: the writer writes every 0.5 s). Returns (answers recorded, the Dashboard, the ClassInfo, the events
    the class holds)."""
    from ui.classroom.store.store import Store

    store = Store(url)
    try:
        deadline = time.monotonic() + settle_s
        while True:
            dash = store.dashboard(code)
            answers = sum(row[2] for row in dash.practice)
            if answers >= expected or time.monotonic() > deadline:
                return answers, dash, store.info(code), store.event_count(code)
            time.sleep(0.5)  # polling the store: the writer's next batch
    finally:
        store.dispose()


def overlapping(spans: list[tuple[float, float]], others: list[tuple[float, float]]) -> list[bool]:
    """For each span, whether any of ``others`` overlaps it (the server was running another rerun meanwhile)."""
    return [any(a < ended and b > began for a, b in others) for began, ended in spans]


def _row(label: str, values: list[float]) -> str:
    return f"{label:<34} {len(values):>5} {fmt_ms(values)}"


def run_class_live(args: argparse.Namespace) -> bool:
    args = argparse.Namespace(**{**vars(args), "duration": 60.0 if args.duration is None else args.duration})
    if args.url and not args.class_store_url:
        raise SystemExit("class-live with --url needs --class-store-url: the store that server writes to")
    order = [CONFIGS if r % 2 == 0 else CONFIGS[::-1] for r in range(args.rounds)]
    print(f"== class-live: {args.students} students answer a practice question on /{PAGE} every ~{args.interval:g} s "
          f"for {args.duration:g} s, alone and in a class (its teacher's page refreshing every 2 s); rounds: "
          + ", ".join(" then ".join(r) for r in order) + "\n")
    folder = Path(tempfile.mkdtemp(prefix="benchmark-class-live-"))
    cluster = None
    server = None
    try:
        if args.class_store_url:
            url = args.class_store_url
        else:
            url, cluster = class_store(folder, args.class_store)
        from ui.classroom.store.store import Store

        described = Store(url).describe()
        floor = floor_times(FLOOR_CLICKS)
        print(f"floor (scripts/load_floor_app.py, one number_input, one student): median "
              f"{1000 * statistics.median(floor):.0f} ms, p95 {1000 * pct(floor, .95):.0f} ms "
              f"over {len(floor)} changes")
        print(f"class store: {described}")
        if not args.url:
            server = Server(APP, env={ENV_URL: url, ENV_DATA: str(folder)})
        app_url = args.url or server.url
        pid = server.process.pid if server else None
        sides = {name: Side(name) for name in CONFIGS}

        async def everything() -> tuple[str, str]:
            print(f"warm-up (a class started from the sidebar, one student answering at each stage, its teacher's "
                  f"page): {await warm_up(app_url):.1f} s")
            code, key = await start_class_in_the_sidebar(app_url)
            for r, configs in enumerate(order):
                for name in configs:
                    began, cpu = time.monotonic(), cpu_seconds(pid)
                    await _configuration(app_url, args, sides[name], code if name == "class" else "", key, r)
                    sides[name].seconds += time.monotonic() - began
                    sides[name].cpu_s += cpu_seconds(pid) - cpu
                    print(f"   round {r + 1}: {name} done in {time.monotonic() - began:.0f} s")
            return code, key

        code, _key = asyncio.run(everything())
        sent = sides["class"].sent
        recorded, dash, info, held = recorded_answers(url, code, sent)
        tracebacks_ok = report_tracebacks(server) if server else True
        rss = rss_mb([server.process.pid]) if server else float("nan")
    finally:
        if server:
            server.stop()
        if cluster is not None:
            cluster.remove()
        shutil.rmtree(folder, ignore_errors=True)
    alone, in_class = sides["alone"], sides["class"]
    print(f"\n{'':<34} {'n':>5} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}")
    for label, values in (("floor: one-widget change", floor), ("students, first render: alone", alone.first),
                          ("students, first render: in class", in_class.first), ("Check: alone", alone.answers),
                          ("Check: in a class", in_class.answers), ("students' banner reruns (10 s)", in_class.ticks),
                          ("teacher, first render", in_class.teacher_first),
                          ("teacher's dashboard refresh (2 s)", in_class.refresh)):
        print(_row(label, values))
    p95_alone, p95_class = pct(alone.answers, .95), pct(in_class.answers, .95)
    p50_alone, p50_class = pct(alone.answers, .5), pct(in_class.answers, .5)
    ratio = p95_class / p95_alone if p95_alone else float("nan")
    print(f"\nCheck in a class / alone: p50 x{p50_class / p50_alone:.2f}, p95 x{ratio:.2f}")
    for r, configs in enumerate(order):
        print(f"   round {r + 1}: " + ", ".join(
            f"{name} p50 / p95 {1000 * pct(sides[name].by_round.get(r, []), .5):.0f} / "
            f"{1000 * pct(sides[name].by_round.get(r, []), .95):.0f} ms" for name in configs))
    during = overlapping(in_class.answer_spans, in_class.other_spans)
    hit = [t for t, o in zip(in_class.answers, during) if o]
    clear = [t for t, o in zip(in_class.answers, during) if not o]
    if alone.cpu_s > 0:
        print("   the server's CPU: " + "; ".join(
            f"{side.name} {side.cpu_s / side.seconds:.0%} of one core ({1000 * side.cpu_s / max(side.sent, 1):.1f} ms "
            f"per Check, everything else included)" for side in (alone, in_class)))
    print(f"   in a class, the Checks answered while a banner or dashboard rerun was under way: {len(hit)}, p50 / p95 "
          f"{1000 * pct(hit, .5):.0f} / {1000 * pct(hit, .95):.0f} ms; the others: {len(clear)}, "
          f"{1000 * pct(clear, .5):.0f} / {1000 * pct(clear, .95):.0f} ms")
    print(f"answers: alone {alone.sent} sent ({alone.graded} graded); in the class {sent} sent ({in_class.graded} "
          f"graded), {recorded} in the store (class {code}: {held} events, {dash.seats} seats, "
          f"{info.dropped if info else '?'} dropped, {info.rate_limited if info else '?'} rate-limited); the teacher's "
          f"'Answers' at its last refresh: {', '.join(in_class.teacher_answers) or '-'}")
    print(f"server RSS at the end: {rss:.0f} MB; load average (1, 5, 15 min): {os.getloadavg()} on "
          f"{os.cpu_count()} cores")
    problems = [line for side in sides.values() for line in side.exceptions + side.failed]
    print(f"exceptions: {sum(len(s.exceptions) for s in sides.values())}   failed sessions: "
          f"{sum(len(s.failed) for s in sides.values())}")
    for line in problems[:10]:
        print("   ", line[:300])
    teacher_p95 = 1000 * pct(in_class.refresh, .95)
    checks = {
        f"Check p95 in a class <= {args.ratio_budget:g} x alone": ratio <= args.ratio_budget,
        f"the teacher's refresh p95 < {args.teacher_budget_ms:g} ms": teacher_p95 < args.teacher_budget_ms,
        "every answer sent is in the store": sent > 0 and recorded == sent,
        "0 exceptions, 0 failed sessions, no server traceback": not problems and tracebacks_ok,
    }
    print()
    for label, ok in checks.items():
        print(f"budget: {label}: {'ok' if ok else 'OVER BUDGET'}")
    return all(checks.values())
