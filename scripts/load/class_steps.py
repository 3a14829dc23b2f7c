"""``class-steps``: a class stepping through the step pages on one server, and what it costs the server (issue 61).

    .venv/bin/python scripts/benchmark_load.py class-steps --students 100 --duration 60 --against f642324

``--students`` students open a step page each (spread over :data:`PAGES`, each through the link a teacher shares, so
that they open within the same second), wait for the page, then take a step every ~``--interval`` s (uniformly 0.5x-1.5x)
for ``--duration`` s: Next, and from the last step back to the first. ``--in-class``: the teacher starts a class first
and the students join it by the link (the step reached is reported for the teacher's page).

How a step reaches the server depends on the version:

- the server's step-through (the code before issue 61): a step is a change of the step picker (a selectbox inside the
  step-through's fragment), one script run each;
- the step-through element: a step is the browser's; the server hears of it only as the element (frontend/stepper/
  stepper.js) tells it: a stage whose entries were not sent is asked for after the paint (the "need" of that stage
  and its neighbours, once per stage: askFor / stagesToAsk), and in a class the step reached, at most once every
  ``REPORT_MS`` (the "reached" of the class's reporter, in a fragment of its own). This module does what the element
  does, over Streamlit's protocol.

Measured, per version: the server process's CPU seconds over the stepping window, per minute; the script runs the
steps caused and their latency (send -> script_finished); exceptions. With ``--against REF`` both versions run in one
process of this benchmark, back to back (alternating per round); the budget is this checkout's CPU per minute <= 1/3
of REF's (``--ratio-budget``, default 1/3 here).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from load.client import STEPPER, Student
from load.report import pct
from load.server import ROOT, Server, cpu_seconds

#: The step pages the students spread over (URL paths present before and after the element).
PAGES = ("self-attention", "causal", "dropout", "multi-head", "cross-attention", "backward", "rope", "gqa")
#: The small element that sends the step reached from a fragment of its own (how often: the element's report_ms).
REPORTER = "attention_explorer.reporter"


@dataclass
class Side:
    """One version's numbers over its rounds."""

    label: str
    cpu_per_min: list[float] = field(default_factory=list)  # the server's CPU seconds per minute, per round
    runs: int = 0  # script runs the steps caused (requests sent)
    steps: int = 0  # steps taken
    latency: list[float] = field(default_factory=list)  # each run's seconds
    opened: list[float] = field(default_factory=list)  # first renders
    exceptions: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def in_block(stage: dict, position: dict) -> bool:
    """stepper.js inBlock: whether ``position`` is inside the block of the stage's explained panel the element was sent
    (a large matrix of a model page is sent a block at a time; any other panel holds every cell)."""
    panel = next((p for p in stage.get("panels") or []
                  if p.get("explained") and (p.get("head") is None or p.get("head") == position.get("head"))), None)
    if not panel or not panel.get("offset"):
        return True
    r0, c0 = panel["offset"]
    return r0 <= position["row"] < r0 + len(panel["rows"]) and c0 <= position["col"] < c0 + len(panel["cols"])


def ask_for(stage: dict, position: dict) -> Optional[str]:
    """stepper.js askFor: what the element asks the server for at ``position`` of ``stage`` (None: nothing)."""
    if not stage.get("has_entry") or (stage.get("entries") is not None and not stage.get("partial")):
        return None
    if not stage.get("by_row"):
        return position["stage"]
    if not in_block(stage, position):
        return f"{position['stage']}:{position['row']}:{position['col']}"
    if position["row"] in (stage.get("rows_loaded") or []):
        return None
    return f"{position['stage']}:{position['row']}"


def stages_to_ask(data: dict, position: dict, asked: set[str]) -> list[str]:
    """stepper.js stagesToAsk: the shown stage and its neighbours (in a class every stage, the nearest first), when
    their entries are missing, not asked before."""
    order = data["order"]
    index = order.index(position["stage"])
    around = (sorted(range(len(order)), key=lambda k: (abs(k - index), -k)) if data.get("report")
              else [index, index + 1, index - 1])
    keys = [order[k] for k in around if 0 <= k < len(order)]
    wanted = []
    for key in keys:
        ask = ask_for(data["stages"][key], {**position, "stage": key})
        if ask is not None and ask not in asked:
            wanted.append(key)
    return wanted


class Stepper:
    """One student's step-through, either the element's (steps in the browser, asks the server as the element does)
    or the server's (each step a change of the step picker)."""

    def __init__(self, student: Student) -> None:
        self.student = student
        self.element = STEPPER in student.elements
        self.asked: set[str] = set()
        self.last_report = 0.0
        self.report_due: Optional[float] = None
        self.reported = ""  # the stage the server last heard of
        if self.element:
            self.report_s = student.element_data().get("report_ms", 4000) / 1000
            self.data = student.element_data()
            self.position = dict(self.data["position"])
            self.token = self.data["token"]
        else:  # the step picker (a selectbox of the step-through's fragment); Next: its next option
            self.picker = next(key for key, (etype, _p, _f) in student.widgets.items()
                               if etype == "selectbox" and key.startswith("setting_") and key.endswith(".stage"))
            self.index = 0

    async def _send(self, event: str, value: dict, side: Side, name: str = STEPPER) -> None:
        """What the element ``name`` sends (a trigger: one script run), and the new data of that run, as the element
        takes it (the server's position only when it moved it on purpose: a new token)."""
        state, fragment = self.student.element_send(event, value, name)
        side.latency.append(await self.student.change(state, fragment))
        side.runs += 1
        self.data = self.student.element_data() if STEPPER in self.student.elements else self.data
        self.asked = set()  # new data: asked again only what is still missing
        if self.data["token"] != self.token:
            self.position, self.token = dict(self.data["position"]), self.data["token"]

    async def after_paint(self, side: Side) -> None:
        """The element's request after a paint: the entries of the stage shown and its neighbours (once each)."""
        wanted = stages_to_ask(self.data, self.position, self.asked)
        if wanted:
            for key in wanted:
                self.asked.add(ask_for(self.data["stages"][key], {**self.position, "stage": key}))
            self.reported = self.position["stage"]
            await self._send("need", {**self._where(), "stages": wanted}, side)

    def _where(self) -> dict:
        return {k: self.position[k] for k in ("stage", "row", "col", "head")}

    async def step(self, side: Side, in_class: bool) -> None:
        """Next (from the last step, the first)."""
        side.steps += 1
        if not self.element:
            options = list(self.student.widgets[self.picker][1].options)
            self.index = (self.index + 1) % len(options)
            side.latency.append(await self.student.change(*self.student.choose(self.picker, self.index)))
            side.runs += 1
            return
        order = self.data["order"]
        self.position["stage"] = order[(order.index(self.position["stage"]) + 1) % len(order)]
        await self.after_paint(side)
        if in_class and self.report_due is None:
            self.report_due = max(time.monotonic(), self.last_report + self.report_s)

    async def report(self, side: Side) -> None:
        """In a class: the step reached, when its timer fires."""
        self.report_due = None
        if self.position["stage"] == self.reported:  # the server heard of it (a request for entries brought it)
            return
        self.last_report, self.reported = time.monotonic(), self.position["stage"]
        await self._send("reached", self._where(), side, REPORTER if REPORTER in self.student.elements else STEPPER)


async def _student(url: str, index: int, query: str, args: argparse.Namespace, side: Side, start: float,
                   t_end: float, rng: random.Random) -> None:
    page = PAGES[index % len(PAGES)]
    student = Student(url, f"{side.label}-{index:03d}")
    await asyncio.sleep(rng.uniform(0, 1.0))
    try:
        await student.connect()
        side.opened.append(await student.open_page(page, query))
        stepper = Stepper(student)
        if stepper.element:
            await stepper.after_paint(side)  # the first paint's request (the stages around)
        await asyncio.sleep(max(0.0, start - time.monotonic()))  # everyone steps from the window's start
        next_step = time.monotonic() + rng.uniform(0.5, 1.5) * args.interval
        while True:
            due = min(next_step, stepper.report_due or next_step)
            if due >= t_end:
                break
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            if stepper.report_due is not None and stepper.report_due <= next_step:
                await stepper.report(side)
                continue
            await stepper.step(side, args.in_class)
            next_step = time.monotonic() + rng.uniform(0.5, 1.5) * args.interval
    except Exception as error:  # noqa: BLE001 - a failed session is a result
        side.failed.append(f"{student.name} ({page}): {type(error).__name__}: {error}")
    finally:
        side.exceptions.extend(f"{student.name} ({page}): {e}" for e in student.exceptions)
        await student.close()


async def _start_class(url: str) -> str:
    from load.class_live import start_class_in_the_sidebar

    code, _key = await start_class_in_the_sidebar(url)
    return code


async def _lesson(url: str, pid: int, args: argparse.Namespace, side: Side, seed: int) -> None:
    query = urllib.parse.urlencode({"class": await _start_class(url)}) if args.in_class else ""
    rng = random.Random(seed)
    opening = 5.0 + args.students * 0.15  # the first renders of a burst of students, before the window
    start = time.monotonic() + opening
    t_end = start + args.duration
    tasks = [asyncio.create_task(_student(url, i, query, args, side, start, t_end, random.Random(rng.random())))
             for i in range(args.students)]
    await asyncio.sleep(max(0.0, start - time.monotonic()))
    cpu0 = cpu_seconds(pid)
    await asyncio.sleep(max(0.0, t_end - time.monotonic()))
    cpu1 = cpu_seconds(pid)
    await asyncio.gather(*tasks)
    side.cpu_per_min.append((cpu1 - cpu0) * 60.0 / args.duration)


def _one(root: Path, args: argparse.Namespace, side: Side, seed: int) -> None:
    server = Server(root / "app.py", root=root)
    try:
        asyncio.run(_warm(server.url))
        asyncio.run(_lesson(server.url, server.process.pid, args, side, seed))
        side.exceptions.extend(server.tracebacks())
    finally:
        server.stop()


async def _warm(url: str) -> None:
    """Each page once (its walk-through built, the shared parts of the element made) before the class comes."""
    for page in PAGES:
        student = Student(url, "warm")
        await student.connect()
        try:
            await student.open_page(page)
        finally:
            await student.close()


def run_class_steps(args: argparse.Namespace) -> bool:
    from load.against import checkout, round_order

    args.duration = 60.0 if args.duration is None else args.duration
    both = [(args.against, checkout(args.against)), ("this", ROOT)] if args.against else [("this", ROOT)]
    sides = {label: Side(label) for label, _root in both}
    print(f"== class-steps: {args.students} students step through {len(PAGES)} step pages, a step every "
          f"~{args.interval:g} s each for {args.duration:g} s{' in a class' if args.in_class else ''}, "
          f"{args.rounds} round(s)" + (f", against {args.against}" if args.against else "") + "\n")
    for index in range(args.rounds):
        for label, root in round_order(both, index):
            _one(root, args, sides[label], seed=args.seed + index)
            print(f"   round {index + 1} {label}: {sides[label].cpu_per_min[-1]:.1f} CPU s / min")
    print(f"\n{'version':<10} {'CPU s/min':>10} {'steps':>7} {'runs':>6} {'runs/step':>9} {'run p50/p95 ms':>15} "
          f"{'first p50 ms':>12} {'failed':>6} {'exc':>4}")
    for side in sides.values():
        cpu = statistics.median(side.cpu_per_min)
        lat = f"{1000 * pct(side.latency, .5):.0f} / {1000 * pct(side.latency, .95):.0f}" if side.latency else "—"
        print(f"{side.label:<10} {cpu:>10.1f} {side.steps:>7} {side.runs:>6} "
              f"{side.runs / max(side.steps, 1):>9.2f} {lat:>15} {1000 * pct(side.opened, .5):>12.0f} "
              f"{len(side.failed):>6} {len(side.exceptions):>4}")
        for line in (side.failed + side.exceptions)[:5]:
            print(f"   {side.label}: {line[:200]}")
    ok = all(not s.failed and not s.exceptions for s in sides.values())
    if args.against:
        ratio = statistics.median(sides["this"].cpu_per_min) / max(statistics.median(sides[args.against].cpu_per_min),
                                                                   1e-9)
        budget = 1 / 3
        print(f"\nthis / {args.against}: {ratio:.2f} of the server's CPU per minute (budget <= {budget:.2f})")
        ok &= ratio <= budget
    return ok
