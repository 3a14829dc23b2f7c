"""The ``single`` scenario: one student, one page at a time, against the framework's floor (a one-widget app).

Also what other scenarios build on: :func:`measure_floor` and one student's clicks on one page (:func:`one_student`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
from typing import Optional

from load.client import FLOOR, PAGES, PageLoad, Student
from load.report import fmt_ms, report_tracebacks
from load.server import APP, FLOOR_APP, Server, cpu_seconds, rss_mb


@dataclasses.dataclass
class PageClicks:
    """One student on one page: the first render, the first change (it also fills caches), the timed changes
    (seconds), and per timed change the messages and bytes the server sent and its CPU time (all its threads)."""

    first: float
    first_change: float
    times: list[float]
    exceptions: list[str]
    messages: float = float("nan")
    kilobytes: float = float("nan")
    cpu_ms: float = float("nan")


async def one_student(url: str, page: PageLoad, clicks: int, pid: Optional[int] = None) -> PageClicks:
    """First render, first change, then ``clicks`` timed changes; ``pid``: the server's, whose CPU time to count."""
    student = Student(url, page.path or "floor")
    await student.connect()
    try:
        first = await student.open_page(page.path)
        first_change = await student.interact(page.widgets)  # the first change of a page also fills caches
        times, messages, sent = [], 0, 0
        cpu = cpu_seconds(pid) if pid else 0.0
        for _ in range(clicks):
            times.append(await student.interact(page.widgets))
            messages += student.run_messages
            sent += student.run_bytes
        cpu = cpu_seconds(pid) - cpu if pid else float("nan")
    finally:
        await student.close()
    return PageClicks(first, first_change, times, student.exceptions, messages / clicks, sent / clicks / 1000,
                      1000 * cpu / clicks)


def floor_times(clicks: int) -> list[float]:
    """The framework's floor: ``clicks`` changes of a one-widget app's number input on its own server, in seconds."""
    floor_server = Server(FLOOR_APP)
    try:
        return asyncio.run(one_student(floor_server.url, FLOOR, clicks)).times
    finally:
        floor_server.stop()


def measure_floor(clicks: int) -> float:
    """The median of :func:`floor_times`, in seconds."""
    return statistics.median(floor_times(clicks))


def run_single(args: argparse.Namespace) -> bool:
    print(f"== single: one student, {args.clicks} changes per page after one warm-up change\n")
    floor = measure_floor(args.clicks)
    limit = args.floor_factor * floor
    print(f"framework floor (scripts/load_floor_app.py, one number_input): median {1000 * floor:.0f} ms; "
          f"budget per page: median <= {args.floor_factor:g} x = {1000 * limit:.0f} ms\n")
    server = None if args.url else Server(APP)
    url = args.url or server.url
    ok = True
    print(f"{'page':<20} {'open ms':>8} {'1st change':>10} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'x floor':>7} "
          f"{'msgs':>5} {'kB':>6} {'CPU ms':>6}  verdict")
    try:
        for page in PAGES:
            if args.only and page.path not in args.only:
                continue
            try:
                clicks = asyncio.run(one_student(url, page, args.clicks, server.process.pid if server else None))
            except Exception as error:  # noqa: BLE001 - report the page, go on
                print(f"{page.path:<20} FAILED: {type(error).__name__}: {error}")
                ok = False
                continue
            median = statistics.median(clicks.times)
            over = median > limit
            verdict = ("EXCEPTION " + "; ".join(clicks.exceptions)[:200] if clicks.exceptions
                       else ("OVER BUDGET" if over else "ok"))
            ok &= not over and not clicks.exceptions
            print(f"{page.path:<20} {1000 * clicks.first:>8.0f} {1000 * clicks.first_change:>10.0f} "
                  f"{fmt_ms(clicks.times)} {median / floor:>7.2f} {clicks.messages:>5.0f} {clicks.kilobytes:>6.1f} "
                  f"{clicks.cpu_ms:>6.0f}  {verdict}")
        if server:
            print(f"\nserver RSS at the end: {rss_mb([server.process.pid]):.0f} MB")
            ok &= report_tracebacks(server)
    finally:
        if server:
            server.stop()
    print("msgs, kB: what the server sent per change (ForwardMsgs, their bytes); CPU ms: the server's CPU per change")
    return ok
