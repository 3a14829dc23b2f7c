"""The ``training`` scenario: a class trains its own seeds on *Watch attention learn*; half watch their run's progress
(its fragment rerun on its timer, as the browser does), half click elsewhere and look back."""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import random
import re
import time
from typing import Callable

from load.classroom import on_server, warm_up
from load.client import PAGES, Student
from load.report import fmt_ms, pct, report_memory_and_errors
from load.server import RssSampler

TRAINING = "training"  # "Watch attention learn" (app_pages/training.py)
TRAINING_SEED = "setting_training.seed"
TRAIN_BUTTON = "Train"
# The finished run's own widgets (the layer of the heads shown, the weight whose update is explained): a learner whose
# run has finished clicks these.
TRAINING_RESULT_KEYS = ("setting_training.layer", "setting_training.which", "setting_training.row",
                        "setting_training.col")
# ui/page_parts/training.py's status(): "Starting your run…" (nobody ahead), "Waiting for the server: 1 run is ahead of yours",
# "... k runs are ahead of yours"; the place is group 1, or 0 when it is the first sentence.
_QUEUE_PLACE = re.compile(r"Starting your run|(\d+) runs? (?:is|are) ahead")
_STEP = re.compile(r"step (\d+) of (\d+)")  # ... or "Training: step n of N."


@dataclasses.dataclass
class Learner:
    """What one student of the training scenario saw of their run."""

    watcher: bool  # stays on the training page (its progress fragment reruns every second) instead of wandering off
    page: str  # the other page a wanderer clicks on
    submitted: bool = False  # the Train click was answered with the run's progress (its queue place or its step)
    queue_places: list[int] = dataclasses.field(default_factory=list)  # every queue place shown, in order
    steps: list[int] = dataclasses.field(default_factory=list)  # every "step n" shown, in order
    progress_texts: int = 0  # distinct progress messages seen
    ticks: int = 0  # the progress fragment's timer reruns this student made
    finished_live: bool = False  # a timer rerun of the progress brought the results (the run finished meanwhile)
    final: str = ""  # what the last look at the training page showed (see _training_state)
    order_errors: list[str] = dataclasses.field(default_factory=list)  # a queue place that went up, a step back


@dataclasses.dataclass
class TrainingResult:
    first: list[float] = dataclasses.field(default_factory=list)  # opening the training page
    seed: list[float] = dataclasses.field(default_factory=list)  # typing one's own seed
    train: list[float] = dataclasses.field(default_factory=list)  # the Train click
    clicks: list[float] = dataclasses.field(default_factory=list)  # every widget change, the two above included
    click_times: list[float] = dataclasses.field(default_factory=list)
    per_page: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    switches: list[float] = dataclasses.field(default_factory=list)  # a wanderer going to /training or back
    ticks: list[float] = dataclasses.field(default_factory=list)  # the progress fragment's timer reruns
    final: list[float] = dataclasses.field(default_factory=list)  # the last look at /training, after --duration
    exceptions: list[str] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)
    learners: dict[str, Learner] = dataclasses.field(default_factory=dict)


def _training_state(student: Student) -> str:
    """What the training page shows the student now: "results" (the finished run), "queued", "training", "no run"
    (the Train button) or "other" (an error, e.g. a failed run)."""
    if student.last_progress is not None:
        return "queued" if _QUEUE_PLACE.search(student.last_progress) else "training"
    if TRAINING_RESULT_KEYS[0] in student.widgets:
        return "results"
    with contextlib.suppress(LookupError):
        student.button(TRAIN_BUTTON)
        return "no run"
    return "other"


def _read_progress(learner: Learner, texts: list[str]) -> None:
    """The queue places and steps in the progress messages a learner was sent; checks their order (a queue place
    never goes up, and comes before the first step; the steps never go back)."""
    for text in texts:
        place, step = _QUEUE_PLACE.search(text), _STEP.search(text)
        if place:
            ahead = int(place[1] or 0)
            if learner.steps:
                learner.order_errors.append(f"queue place {ahead} after step {learner.steps[-1]}")
            elif learner.queue_places and ahead > learner.queue_places[-1]:
                learner.order_errors.append(f"queue place {learner.queue_places[-1]} -> {ahead}")
            learner.queue_places.append(ahead)
        elif step:
            if learner.steps and int(step[1]) < learner.steps[-1]:
                learner.order_errors.append(f"step {learner.steps[-1]} -> {step[1]}")
            learner.steps.append(int(step[1]))
        else:
            learner.order_errors.append(f"unrecognised progress {text[:80]!r}")
    learner.progress_texts = len(set(texts))


async def _watch_until(student: Student, deadline: float, result: TrainingResult, learner: Learner) -> None:
    """Until ``deadline`` (time.monotonic()), the student reads; on the training page, the browser reruns the
    progress fragment whenever its ``run_every`` timer fires (Streamlit's frontend sends those reruns itself)."""
    while True:
        tick = student.next_tick() if student.page == TRAINING else None
        now = time.monotonic()
        if tick is None or tick[0] >= deadline:
            await asyncio.sleep(max(0.0, deadline - now))
            return
        await asyncio.sleep(max(0.0, tick[0] - now))
        before = _training_state(student)
        result.ticks.append(await student.tick(tick[1]))
        learner.ticks += 1
        if before in ("queued", "training") and _training_state(student) == "results":
            learner.finished_live = True


def _is_watcher(index: int, share: float) -> bool:
    """Spread ``share`` of the students evenly over the class (0.5: every other one)."""
    return int((index + 1) * share) > int(index * share)


async def _learner(url: str, index: int, args: argparse.Namespace, result: TrainingResult, rng: random.Random,
                   t_start: float, t_end: float) -> None:
    """One student: opens the training page, types their own seed (their index), clicks Train, then for the rest of
    the lesson either watches the run (a watcher: the progress reruns every second; once the results are there,
    clicks their widgets every ~--interval s) or wanders (clicks on another page every ~--interval s and comes back
    to the training page every 4th time, for one interval); at the end, everyone looks at the training page once."""
    name = f"s{index:03d}"
    others = [p for p in PAGES if p.path != TRAINING]
    learner = Learner(watcher=_is_watcher(index, args.watch_share), page=others[index % len(others)].path)
    result.learners[name] = learner
    student = Student(url, name)

    def clicked(elapsed: float, page: str) -> None:
        result.clicks.append(elapsed)
        result.click_times.append(time.monotonic() - t_start)
        result.per_page.setdefault(page, []).append(elapsed)

    await asyncio.sleep(rng.uniform(0, 1.0))  # a burst: everyone opens the link within the same second
    try:
        await student.connect()
        result.first.append(await student.open_page(TRAINING))
        await asyncio.sleep(rng.uniform(0.5, 1.5))  # reads the page, types their seed
        elapsed = await student.change(*student.number(TRAINING_SEED, index))
        result.seed.append(elapsed)
        clicked(elapsed, TRAINING)
        await asyncio.sleep(rng.uniform(0.3, 1.0))
        elapsed = await student.change(*student.button(TRAIN_BUTTON))
        result.train.append(elapsed)
        clicked(elapsed, TRAINING)
        learner.submitted = _training_state(student) in ("queued", "training", "results")
        actions = 0
        while True:
            next_action = time.monotonic() + rng.uniform(0.5, 1.5) * args.interval  # the student reads, then clicks
            await _watch_until(student, min(next_action, t_end), result, learner)
            if time.monotonic() >= t_end:
                break
            actions += 1
            if student.page == TRAINING and learner.watcher:
                if _training_state(student) == "results":  # the run is there: look at its heads, an update
                    clicked(await student.interact(TRAINING_RESULT_KEYS), TRAINING)
                # else: watches the progress bar, clicks nothing
            elif student.page == TRAINING:  # a wanderer had a look; back to their page
                result.switches.append(await student.open_page(learner.page))
            elif actions % 4 == 0:  # a wanderer comes back to see how their run is doing
                result.switches.append(await student.open_page(TRAINING))
            else:
                clicked(await student.interact(()), student.page)
        result.final.append(await student.open_page(TRAINING))  # the last look (a full run of the page)
        learner.final = _training_state(student)
    except Exception as error:  # noqa: BLE001 - a failed session is a result, not a crash of the benchmark
        result.failed.append(f"{name} ({student.page or TRAINING}): {type(error).__name__}: {error}")
    finally:
        _read_progress(learner, student.progress)
        result.exceptions.extend(f"{name} ({student.page}): {e}" for e in student.exceptions)
        await student.close()


async def _training(url: str, args: argparse.Namespace,
                    pids: Callable[[], list[int]]) -> tuple[TrainingResult, RssSampler]:
    result = TrainingResult()
    if args.warm:
        print(f"the teacher opened every page once before class: {await warm_up(url, 1):.1f} s")
    sampler = RssSampler(pids)
    sampler.start()
    rng = random.Random(args.seed)
    t_start = time.monotonic()
    t_end = t_start + 1.0 + args.duration
    await asyncio.gather(*(_learner(url, i, args, result, random.Random(rng.random()), t_start, t_end)
                           for i in range(args.students)))
    await sampler.stop()
    return result, sampler


def run_training(args: argparse.Namespace) -> bool:
    duration = args.duration if args.duration is not None else 150.0  # 30 runs of ~3.3 s (idle), slower under load
    budget_ms = args.p95_budget_ms if args.p95_budget_ms is not None else 300.0
    # The class's RSS budget plus what a server keeps of training: at most RunQueue.max_runs (32) runs, ~3 MB of
    # snapshot checkpoints each (the induction task's 25), and 30 students' results pages.
    rss_budget = args.rss_budget_mb if args.rss_budget_mb is not None else 1400.0
    args = argparse.Namespace(**{**vars(args), "duration": duration, "rss_budget_mb": rss_budget})
    watchers = sum(_is_watcher(i, args.watch_share) for i in range(args.students))
    print(f"== training: {args.students} students each train their own seed on /training (one run each, queued on "
          f"the server's one worker), then for {duration:g} s: {watchers} watch their run (its progress reruns every "
          f"second), {args.students - watchers} click on other pages every ~{args.interval:g} s and look back every "
          "4th time" + (f", through {args.url}" if args.url else "") + "\n")
    server, result, sampler, tracebacks_ok = on_server(args, _training)
    print(f"{'':<24} {'n':>5} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}")
    rows = (("first render", result.first), ("set the seed", result.seed), ("Train", result.train),
            ("interaction (budget)", result.clicks))
    for label, values in rows:
        print(f"{label:<24} {len(values):>5} {fmt_ms(values)}")
    for label, low, high in (("  first 15 s", 0, 15), ("  after 15 s", 15, 1e9)):
        part = [c for c, t in zip(result.clicks, result.click_times) if low <= t < high]
        print(f"{label:<24} {len(part):>5} {fmt_ms(part)}")
    for label, values in (("page switch", result.switches), ("progress rerun (1 s)", result.ticks),
                          ("last look at /training", result.final)):
        print(f"{label:<24} {len(values):>5} {fmt_ms(values)}")
    print("\nper page (interaction):  " + ", ".join(
        f"{p} {1000 * pct(v, .5):.0f}/{1000 * pct(v, .95):.0f}" for p, v in sorted(result.per_page.items()))
        + "  (p50/p95 ms)")
    learners = list(result.learners.values())
    saw = [x for x in learners if x.queue_places or x.steps]
    queued = [x for x in learners if x.queue_places]
    ahead = [x for x in learners if any(p > 0 for p in x.queue_places)]
    stepped = [x for x in learners if x.steps]
    watching = [x for x in learners if x.watcher]
    moved = [x for x in watching if x.progress_texts >= 2]
    live = [x for x in learners if x.finished_live]
    live_watchers = [x for x in live if x.watcher]
    finals = collections.Counter(x.final or "failed" for x in learners)
    print(f"progress: {len(saw)} of {len(learners)} students saw their run's progress; {len(queued)} their queue "
          f"place ({len(ahead)} with runs ahead of theirs, largest {max((max(x.queue_places) for x in queued), default=0)}"
          f"), {len(stepped)} its steps; of the {len(watching)} watchers, {len(moved)} saw it move ("
          f"{sum(x.ticks for x in watching)} progress reruns) and {len(live_watchers)} saw it finish live "
          f"({len(live)} students in all, wanderers looking back included)")
    order_errors = [f"{n}: {e}" for n, x in result.learners.items() for e in x.order_errors]
    if order_errors:
        print(f"progress out of order: {len(order_errors)}: " + "; ".join(order_errors[:5]))
    submitted = sum(x.submitted for x in learners)
    print(f"runs: {submitted} submitted (one seed each), "
          f"{finals['results']} finished by the end (the last look showed the results); last look: "
          + ", ".join(f"{k} {v}" for k, v in finals.most_common()))
    memory_ok = report_memory_and_errors(args, server, sampler, result)
    p95 = 1000 * pct(result.clicks, .95)
    ok = (p95 < budget_ms and not result.exceptions and not result.failed and tracebacks_ok
          and memory_ok
          and bool(result.clicks) and len(saw) == len(learners) and not order_errors)
    print(f"\nbudget: interaction p95 < {budget_ms:g} ms, 0 exceptions, 0 failed, peak RSS < {args.rss_budget_mb:g} MB "
          "per server process, every student saw their run's progress (in order)"
          f" -> {'ok' if ok else 'OVER BUDGET'}")
    return ok
