"""The ``long`` scenario: the model pages opened by a link that carries a long text (cut at the page's 512 tokens),
then each kind of the page's own clicks.

The model pages' step-through is the browser's element (ui/stepper.py): a step and an entry are the browser's, and
the server hears of one only when the element asks for what it was not sent (the "need" of a stage's row, or of
another block of a 512 x 512 matrix: scripts/load/class_steps.py's Stepper does what the element does). Those
requests are what "another step" and "another entry" time; a click the element answers from what it holds sends
nothing and is not counted (the ``n`` column). Another head is a server widget (the head and layer pickers)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import time
import urllib.parse
from typing import Callable

from load.class_steps import Side, Stepper
from load.client import Student
from load.report import fmt_ms, pct, report_tracebacks
from load.server import APP, Server, rss_mb

#: The model pages and the setting that holds their text (a link parameter: ``?trained_model.sentence=...``).
LONG_PAGES = {"trained-model": "trained_model.sentence", "modern-lm": "modern_lm.prompt"}
#: The longest input either page reads, in tokens (TRAINED_MODEL_MAX_TOKENS in attention_core/minilm/model.py, MODERN_LM_MAX_TOKENS in
#: attention_core/smollm2/model.py).
LONG_TOKENS = 512
_PROSE = ("Attention lets every token of a text look at every other token and decide how much each one matters for "
          "its own meaning, so a long paragraph like this one gives each head many choices to make.").split()


#: The modern LM page's Generate button, clicked as its own kind of click (the n-th click feeds one token through the
#: model with the KV cache of the prompt and the n − 1 tokens before: the prompt's length matters little there).
GENERATE, GENERATE_LABEL = "Generate (one token)", "Generate the next token"


def long_text(words: int, first: str) -> str:
    """``words`` words of prose starting with ``first`` (a word of its own per student: a text nothing cached)."""
    return " ".join([first] + [_PROSE[i % len(_PROSE)] for i in range(words - 1)])


@dataclasses.dataclass
class LongResult:
    """One model page on a long text: first renders and each kind of click (seconds), the tokens it read."""

    page: str
    first: list[float] = dataclasses.field(default_factory=list)
    clicks: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    tokens: int = 0  # the rows of the element's matrix at the step it opens on (the weights): the tokens read
    exceptions: list[str] = dataclasses.field(default_factory=list)


async def _long_page(url: str, path: str, args: argparse.Namespace) -> LongResult:
    """``--opens`` students open ``path`` with a long text of their own; the last one clicks (see the module's doc)."""
    field = LONG_PAGES[path]
    section = field.split(".")[0]
    result = LongResult(path)
    teacher = Student(url, "teacher")  # the model loads once per server: not what a click costs
    await teacher.connect()
    try:
        await teacher.open_page(path)
    finally:
        await teacher.close()
    student = None
    for n in range(args.opens):
        if student is not None:
            await student.close()
        student = Student(url, f"s{n}")
        await student.connect()
        query = urllib.parse.urlencode({field: long_text(args.words, f"Student{n}{int(time.time())}")})
        result.first.append(await student.open_page(path, query))
    try:
        data = student.element_data()
        result.tokens = max(panel.get("shape", [len(panel.get("rows", []))])[0]
                            for panel in data["stages"][data["position"]["stage"]]["panels"])

        async def element_click(move: Callable[[int], None], i: int) -> list[float]:
            """The ``i``-th click the element answers: the position moved, then the request it sends, if any
            (seconds)."""
            side = Side(path)
            move(i)
            await stepper.after_paint(side)
            return side.latency

        def entry(i: int) -> None:
            # rows and columns in turn, spread over the whole matrix (other rows, other blocks)
            tokens = max(1, result.tokens)
            stepper.position["row" if i % 2 == 0 else "col"] = ((i // 2 + 1) * 97) % tokens

        def step(_i: int) -> None:
            order = stepper.data["order"]
            stepper.position["stage"] = order[(order.index(stepper.position["stage"]) + 1) % len(order)]

        # another head, never opened before: the head picker, then the layer picker, in turn
        result.clicks["another head"] = [
            await student.change(*student.choose(f"setting_{section}.{'head' if i % 2 == 0 else 'layer'}", i // 2 + 1))
            for i in range(args.clicks)]
        stepper = Stepper(student)  # the element as the last run drew it
        await stepper.after_paint(Side(path))  # its first paint's request (the stages around), not a click
        for kind, move in (("another entry", entry), ("another step", step)):
            result.clicks[kind] = [t for i in range(args.clicks) for t in await element_click(move, i)]
        if path == "modern-lm":  # Generate: one more token each click, up to the page's 12
            result.clicks[GENERATE] = [await student.change(*student.button(GENERATE_LABEL))
                                       for _ in range(min(args.clicks, 12))]
    finally:
        result.exceptions = list(student.exceptions)
        await student.close()
    return result


def run_long(args: argparse.Namespace) -> bool:
    budget_ms = args.p95_budget_ms if args.p95_budget_ms is not None else 300.0
    pages = args.page or list(LONG_PAGES)
    print(f"== long: {', '.join(pages)} opened by a link with {args.words} words of prose (cut at the page's "
          f"{LONG_TOKENS} tokens); {args.opens} first renders, then {args.clicks} clicks of each kind\n")
    server = None if args.url else Server(APP)
    url = args.url or server.url
    ok = True
    try:
        print(f"{'page':<14} {'what':<22} {'n':>3} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}  verdict")
        for path in pages:
            result = asyncio.run(_long_page(url, path, args))
            print(f"{path:<14} {'first render':<22} {len(result.first):>3} {fmt_ms(result.first)}  "
                  f"({result.tokens} tokens read)")
            ok &= result.tokens == LONG_TOKENS and not result.exceptions
            for kind, times in result.clicks.items():
                over = 1000 * pct(times, .95) >= budget_ms
                ok &= not over
                print(f"{path:<14} {kind:<22} {len(times):>3} {fmt_ms(times)}  {'OVER BUDGET' if over else 'ok'}")
            for line in result.exceptions[:5]:
                print("    EXCEPTION", line[:300])
        if server:
            print(f"\nserver RSS at the end: {rss_mb([server.process.pid]):.0f} MB")
            ok &= report_tracebacks(server)
    finally:
        if server:
            server.stop()
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()} on {os.cpu_count()} cores")
    print(f"\nbudget: every kind of click p95 < {budget_ms:g} ms, {LONG_TOKENS} tokens read, 0 exceptions "
          f"-> {'ok' if ok else 'OVER BUDGET'}")
    return ok
