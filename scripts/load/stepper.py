"""What the step-through element is sent, page by page: its size and the time to build it (issue 61).

    .venv/bin/python scripts/benchmark_load.py stepper [--pages self_attention,causal] [--repeat 3]
    .venv/bin/python scripts/benchmark_load.py stepper --pages self_attention --example default --repeat 1  # smallest

For every step page of the registry, at the page's defaults and at the largest example a learner can make (a
12-token sentence of "Your own sentence", d_k and d_model at their largest), in one process: the walk-through's
build, then what ``ui.stepper`` sends for it, each timed cold (the shared caches cleared) and the best of
``--repeat``:

- *stages*: every stage's formula, matrices (numbers, colours, labels) and texts, without the explained entries:
  what the element receives on a change of settings;
- *one entry*: the explained entry of the stage the page opens on, sent with it;
- *entries*: every explained entry of every stage (sympy -> LaTeX), which the element asks for stage by stage on the
  stage's first visit; the largest stage's share is printed too.

Sizes are the JSON the element is sent (bytes) and gzip's size of it (what the websocket's compression leaves,
roughly). The texts are English; the numbers read the same in both languages.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
logging.disable(logging.WARNING)  # "no runtime found": the builders run here without a Streamlit server

from attention_core import registry  # noqa: E402
from attention_core.settings import Settings  # noqa: E402
from attention_core.shared_settings import MAX_DIM  # noqa: E402
from ui import stepper_data  # noqa: E402

LARGEST_SENTENCE = "the quick brown fox jumps over the lazy dog and then sleeps"  # 12 tokens


def largest() -> Settings:
    settings, _messages = Settings().replace(preset="custom", sentence=LARGEST_SENTENCE, d_k=MAX_DIM,
                                             d_model=MAX_DIM)
    return settings


def best(repeat: int, make):
    """(best time in s, the last value) of ``make()`` run ``repeat`` times, the shared caches cleared each time."""
    times, value = [], None
    for _ in range(repeat):
        stepper_data._PARTS.clear()
        start = time.perf_counter()
        value = make()
        times.append(time.perf_counter() - start)
    return min(times), value


def size(value) -> tuple[int, int]:
    raw = json.dumps(value, ensure_ascii=False).encode()
    return len(raw), len(gzip.compress(raw))


def measure(page, settings: Settings, repeat: int) -> dict:
    walk_s, walk = best(repeat, lambda: page.walkthrough(settings))
    explain = defaultdict(str)
    stages_s, stages = best(repeat, lambda: {k: stepper_data.stage_data(page.step_through(walk, k), explain)
                                             for k in page.stages})
    first = page.step_through(walk, page.default_stage or next(iter(page.stages)))  # "": the first stage
    one_s, one = best(repeat, lambda: first.stage.entry(0, 0, 0, lambda text: text)
                      if first.stage.entry is not None else "")
    per_stage = {}
    for key in page.stages:
        per_stage[key] = best(repeat, lambda key=key: stepper_data.entries(page.step_through(walk, key)))
    entries_s = sum(t for t, _ in per_stage.values())
    heaviest = max(per_stage, key=lambda k: per_stage[k][0])
    row_s, _row = best(repeat, lambda: stepper_data.entries(page.step_through(walk, heaviest), (0,)))
    return {"row": row_s, "walk": walk_s, "stages": (stages_s, *size(stages)), "one": (one_s, *size(one)),
            "entries": (entries_s, *size({k: v for k, (_t, v) in per_stage.items()})),
            "heaviest": (heaviest, per_stage[heaviest][0], size(per_stage[heaviest][1])[0],
                         len(per_stage[heaviest][1]))}


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="", help="comma-separated page keys (default: every step page)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--example", action="append", choices=("default", "largest"), default=[],
                        help="only this example (repeatable; default: both)")
    args = parser.parse_args(argv)
    wanted = set(filter(None, args.pages.split(",")))
    pages = [p for p in registry.PAGES if p.step_through is not None and (not wanted or p.key in wanted)]
    print(f"{'page':<22} {'example':<8} {'walk':>7} {'stages':>8} {'size':>14} {'entry':>7} {'entries':>9} "
          f"{'size':>14}  heaviest stage")
    for page in pages:
        for label, settings in (("default", Settings()), ("largest", largest())):
            if args.example and label not in args.example:
                continue
            try:
                m = measure(page, settings, args.repeat)
            except Exception as error:  # noqa: BLE001 - a page that cannot build this example says so and goes on
                print(f"{page.key:<22} {label:<8} {type(error).__name__}: {error}"[:150])
                continue
            kb = lambda raw, z: f"{raw / 1024:.0f}/{z / 1024:.0f} kB"  # noqa: E731
            name, t, raw, count = m["heaviest"]
            by_row = f"; sent a row at a time: {1000 * m['row']:.0f} ms" if count > stepper_data.ENTRIES_AT_ONCE else ""
            print(f"{page.key:<22} {label:<8} {1000 * m['walk']:>5.0f}ms {1000 * m['stages'][0]:>6.0f}ms "
                  f"{kb(*m['stages'][1:]):>14} {1000 * m['one'][0]:>5.0f}ms {1000 * m['entries'][0]:>7.0f}ms "
                  f"{kb(*m['entries'][1:]):>14}  {name}: {count} entries, {1000 * t:.0f} ms, {raw / 1024:.0f} kB{by_row}")
    print("\nsize: JSON / gzip. entries: every explained entry of every stage (the element asks for a stage's on "
          "its first visit); entry: the one the page opens on, sent with the stages.")
    return 0

