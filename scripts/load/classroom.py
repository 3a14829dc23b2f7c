"""The ``class`` scenario: a class opens its pages in the same second, then clicks for ``--duration`` s.

Also what the training scenario and ``--against`` build on: the teacher's warm-up (:func:`warm_up`) and a scenario
run against ``--url`` or a server started here (:func:`on_server`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import time
from typing import Any, Callable, Optional

from load.client import PAGES, PageLoad, SessionClosed, Student
from load.report import fmt_ms, pct, report_memory_and_errors, report_tracebacks
from load.server import ROOT, RssSampler, Server, pids_from_files


@dataclasses.dataclass
class ClassResult:
    first: list[float] = dataclasses.field(default_factory=list)
    clicks: list[float] = dataclasses.field(default_factory=list)
    click_times: list[float] = dataclasses.field(default_factory=list)  # seconds since the start, per click
    per_page: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    exceptions: list[str] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)
    moved: list[str] = dataclasses.field(default_factory=list)  # reconnected after their replica went away
    dropped: int = 0  # closed mid-run on purpose, came back as new sessions
    fragment_clicks: int = 0  # interactions that reran only an st.fragment (the step-through)
    replicas: dict[str, str] = dataclasses.field(default_factory=dict)  # student -> sticky cookie at the start


async def _student_in_class(url: str, index: int, args: argparse.Namespace, result: ClassResult,
                            rng: random.Random, t_start: float, t_end: float, drop_at: Optional[float]) -> None:
    pages = args_pages(args)
    page = pages[index % len(pages)]
    name = f"s{index:03d}"
    student = Student(url, name)
    await asyncio.sleep(rng.uniform(0, 1.0))  # a burst: everyone opens the link within the same second
    try:
        await student.connect()
        result.replicas[name] = student.cookie
        result.first.append(await student.open_page(page.path))
        while time.monotonic() < t_end:
            await asyncio.sleep(rng.uniform(0.5, 1.5) * args.interval)  # the student reads, then clicks
            if time.monotonic() >= t_end:
                break
            if drop_at is not None and time.monotonic() >= drop_at:
                drop_at = None
                await student.interact(page.widgets, drop=True)  # the tab closes in the middle of a run
                result.dropped += 1
                student = Student(url, name)  # ...and the student opens the link again
                await student.connect()
                result.first.append(await student.open_page(page.path))
                continue
            try:
                elapsed = await student.interact(page.widgets)
            except SessionClosed:
                if not args.url:
                    raise
                # The replica went away: the browser reconnects through the proxy, which moves the
                # student to another replica; there the old session is unknown and a fresh one starts.
                result.moved.append(name)
                await student.close()
                student.cookie = ""
                await student.connect(reconnect=True)
                result.first.append(await student.open_page(page.path))
                continue
            result.clicks.append(elapsed)
            result.fragment_clicks += student.last_fragment
            result.click_times.append(time.monotonic() - t_start)
            result.per_page.setdefault(page.path, []).append(elapsed)
    except Exception as error:  # noqa: BLE001 - a failed session is a result, not a crash of the benchmark
        result.failed.append(f"{name} ({page.path}): {type(error).__name__}: {error}")
    finally:
        result.exceptions.extend(f"{name} ({page.path}): {e}" for e in student.exceptions)
        await student.close()


async def _run_fault(command: str, at: float) -> None:
    await asyncio.sleep(at)
    print(f"   [{at:.0f} s] fault: {command}")
    process = await asyncio.create_subprocess_shell(command, cwd=ROOT)
    await process.wait()


async def warm_up(url: str, replicas: int, pages: tuple[PageLoad, ...] = PAGES) -> float:
    """The teacher opens every page once before class (imports, the trained model, caches); seconds.

    Behind the lecture-hall proxy, one teacher tab per replica: each connects while the earlier
    ones stay open, so the proxy (balance leastconn) puts each on a different replica.
    """
    start = time.perf_counter()
    teachers = []
    try:
        for i in range(replicas):
            teacher = Student(url, f"teacher{i}")
            await teacher.connect()
            teachers.append(teacher)

        async def visit(teacher: Student) -> None:
            for page in pages:
                await teacher.open_page(page.path)

        await asyncio.gather(*(visit(t) for t in teachers))
    finally:
        for teacher in teachers:
            await teacher.close()
    return time.perf_counter() - start


async def class_round(url: str, args: argparse.Namespace, pids: Callable[[], list[int]]) -> tuple[ClassResult, RssSampler]:
    result = ClassResult()
    if args.warm:
        replicas = max(1, len(args.pid_file))
        print(f"the teacher opened every page once before class ({replicas} tab(s)): "
              f"{await warm_up(url, replicas, args_pages(args)):.1f} s")
    sampler = RssSampler(pids)
    sampler.start()
    rng = random.Random(args.seed)
    t_start = time.monotonic()
    t_end = t_start + 1.0 + args.duration
    droppers = set(rng.sample(range(args.students), min(args.drop, args.students)))
    tasks = [_student_in_class(url, i, args, result, random.Random(rng.random()), t_start, t_end,
                               time.monotonic() + rng.uniform(0.3, 0.7) * args.duration if i in droppers else None)
             for i in range(args.students)]
    if args.fault_cmd:
        tasks.append(_run_fault(args.fault_cmd, args.fault_at))
    await asyncio.gather(*tasks)
    await sampler.stop()
    return result, sampler


def on_server(args: argparse.Namespace, scenario: Callable) -> tuple[Optional[Server], Any, RssSampler, bool]:
    """Run ``scenario(url, args, pids)`` against ``--url``, or a server started here and stopped after.

    Returns (the server started here or None, the scenario's result, its RSS sampler, no server tracebacks)."""
    root = getattr(args, "app_root", ROOT)
    server = None if args.url else Server(root / "app.py", root=root)
    url = args.url or server.url
    pids = pids_from_files(args.pid_file) if args.url else (lambda: [server.process.pid])
    try:
        result, sampler = asyncio.run(scenario(url, args, pids))
        tracebacks_ok = report_tracebacks(server) if server else True
    finally:
        if server:
            server.stop()
    return server, result, sampler, tracebacks_ok


def args_pages(args: argparse.Namespace) -> tuple[PageLoad, ...]:
    """The pages a scenario spreads its students over: ``args.pages`` (another checkout's, when measured against this
    one) or this app's, from its registry; with ``--only``, those of them only."""
    pages = getattr(args, "pages", None) or PAGES
    only = getattr(args, "only", None)
    return tuple(page for page in pages if page.path in only) if only else pages


def run_class(args: argparse.Namespace) -> bool:
    args = argparse.Namespace(**{**vars(args), "duration": 60.0 if args.duration is None else args.duration,
                                 "p95_budget_ms": 150.0 if args.p95_budget_ms is None else args.p95_budget_ms,
                                 "rss_budget_mb": 1400.0 if args.rss_budget_mb is None else args.rss_budget_mb})
    print(f"== class: {args.students} students, one change every ~{args.interval:g} s each for "
          f"{args.duration:g} s, over {len(args_pages(args))} pages"
          + (f", through {args.url}" if args.url else "") + "\n")
    server, result, sampler, tracebacks_ok = on_server(args, class_round)
    print(f"{'':<14} {'n':>5} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}")
    print(f"{'first render':<14} {len(result.first):>5} {fmt_ms(result.first)}")
    print(f"{'interaction':<14} {len(result.clicks):>5} {fmt_ms(result.clicks)}")
    for label, low, high in (("  first 15 s", 0, 15), ("  after 15 s", 15, 1e9)):
        part = [c for c, t in zip(result.clicks, result.click_times) if low <= t < high]
        print(f"{label:<14} {len(part):>5} {fmt_ms(part)}")
    print("\nper page (interaction):  " + ", ".join(
        f"{p} {1000 * pct(v, .5):.0f}/{1000 * pct(v, .95):.0f}" for p, v in sorted(result.per_page.items()))
        + "  (p50/p95 ms)")
    if args.url:
        replicas = sorted(set(result.replicas.values()))
        print(f"sticky cookies at the start: {', '.join(f'{c} x{list(result.replicas.values()).count(c)}' for c in replicas)}")
        moved = set(result.moved)
        stayed = [n for n, c in result.replicas.items() if n not in moved]
        print(f"moved to another replica: {len(moved)} students; stayed: {len(stayed)}")
    print(f"of the interactions, {result.fragment_clicks} reran only the step-through (st.fragment), "
          f"{len(result.clicks) - result.fragment_clicks} the whole page")
    print(f"dropped mid-run and came back: {result.dropped}")
    memory_ok = report_memory_and_errors(args, server, sampler, result)
    p95 = 1000 * pct(result.clicks, .95)
    ok = (p95 < args.p95_budget_ms and not result.exceptions and not result.failed and tracebacks_ok
          and memory_ok
          and bool(result.clicks))
    print(f"\nbudget: p95 < {args.p95_budget_ms:g} ms, 0 exceptions, 0 failed, peak RSS < {args.rss_budget_mb:g} MB "
          "per server process"
          f" -> {'ok' if ok else 'OVER BUDGET'}")
    return ok
