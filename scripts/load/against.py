"""Two versions of the app measured in one run, back to back, on the same machine: ``benchmark_load.py single
--against REF`` and ``benchmark_load.py class --against REF`` (the client and scenarios of scripts/load/).

A shared machine's speed moves from run to run (the one-widget app's click was 22 ms one day and 63 ms another), so
only measurements taken side by side compare. REF (a commit, e.g. ``7d7d826``, the code before the learning pages) is
written out with ``git archive`` into a folder of its own (kept under the temp dir, reused by later runs) and run by
this venv's Python with its own ``.streamlit/config.toml``; the pages each version offers are read from its own
navigation (the ``navigation`` message its server sends), so a version without the registry is measured too.

Each round measures the framework's floor (``scripts/load_floor_app.py``: one number input), then REF, then this
checkout; the next round runs them the other way round (REF, this; this, REF; ...) so that a drift of the machine
during the run falls on both. The table pools the rounds.

- ``single``: one student per page (``--clicks`` changes after a warm-up change): per page the median and p95 of both
  versions, each as a multiple of the floor, and what this checkout's server sent and spent per change (messages,
  kB, CPU ms) beside REF's.
- ``class``: ``--students`` students for ``--duration`` s on each version (each version's own pages, or with
  ``--common-pages`` only the pages both have): click p50 / p95 overall and per page, and the clicks served (the
  throughput when the class saturates the process: ``--students 100``).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Callable

from load.classroom import ClassResult, class_round, on_server
from load.client import PageLoad, Student
from load.report import median_ratio_interval, pct
from load.server import ROOT, Server
from load.single import PageClicks, measure_floor, one_student


def checkout(ref: str) -> Path:
    """The tree of commit ``ref`` of this repository, written out once into the temp dir; its folder."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    folder = Path(tempfile.gettempdir()) / "attention-explorer-checkouts" / sha[:12]
    if not (folder / "app.py").exists():
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", sha],
                                 capture_output=True, check=True).stdout
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
    return folder


def versions(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """(label, folder) of REF and of this checkout."""
    return [(args.against, checkout(args.against)), ("this", ROOT)]


def round_order(items: list, index: int) -> list:
    """The order of round ``index``: as given, then reversed, then as given..."""
    return list(items) if index % 2 == 0 else list(reversed(items))


async def _navigation(url: str) -> tuple[str, ...]:
    """The URL paths of the pages an app's navigation offers (the default page's is "")."""
    student = Student(url, "navigation")
    await student.connect()
    try:
        await student.open_page("")
    finally:
        await student.close()
    return student.app_pages


#: The default page's URL path is "" in the navigation; it is opened by its name.
OVERVIEW = "overview"


def pages_of(root: Path) -> tuple[PageLoad, ...]:
    """The pages of the app in ``root``, as its own navigation lists them (a server started for it)."""
    server = Server(root / "app.py", root=root)
    try:
        return tuple(PageLoad(path or OVERVIEW) for path in asyncio.run(_navigation(server.url)))
    finally:
        server.stop()


def only(pages: tuple[PageLoad, ...], paths: list[str]) -> tuple[PageLoad, ...]:
    """``pages`` limited to ``paths`` (none given: all of them)."""
    return tuple(p for p in pages if p.path in paths) if paths else pages


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b and a == a and b == b else "—"


# ---------------------------------------------------------------------------------------- one student per page

def _single_on(root: Path, pages: tuple[PageLoad, ...], clicks: int) -> dict[str, PageClicks]:
    server = Server(root / "app.py", root=root)
    results = {}
    try:
        for page in pages:
            try:
                results[page.path] = asyncio.run(one_student(server.url, page, clicks, server.process.pid))
            except Exception as error:  # noqa: BLE001 - report the page, go on
                print(f"   {root.name}: {page.path} FAILED: {type(error).__name__}: {error}")
        if server.tracebacks():
            print(f"   {root.name}: the server logged {len(server.tracebacks())} traceback(s)")
    finally:
        server.stop()
    return results


def run_single_against(args: argparse.Namespace) -> bool:
    rounds = args.rounds
    both = versions(args)
    pages = {label: only(pages_of(root), args.only) for label, root in both}
    print(f"== single against {args.against}: one student per page, {args.clicks} changes after a warm-up change, "
          f"{rounds} round(s); {args.against}: {len(pages[args.against])} pages, this checkout: "
          f"{len(pages['this'])}\n")
    floors: list[float] = []
    pooled: dict[str, dict[str, list[PageClicks]]] = {label: {} for label, _ in both}
    for index in range(rounds):
        floors.append(measure_floor(args.clicks))
        for label, root in round_order(both, index):
            for path, result in _single_on(root, pages[label], args.clicks).items():
                pooled[label].setdefault(path, []).append(result)
        print(f"   round {index + 1}: floor {1000 * floors[-1]:.0f} ms")
    floor = statistics.median(floors)
    limit = args.floor_factor * floor
    print(f"\nthe floor (one-widget app), median of the rounds: {1000 * floor:.0f} ms "
          f"(rounds: {', '.join(f'{1000 * f:.0f}' for f in floors)}); budget: median <= {args.floor_factor:g} x floor "
          f"and no page slower than on {args.against} beyond the noise (the ratio's interval, 95% for the {len(pages['this'])} "
          f"pages together, above 1)\n")
    old, new = args.against[:9], "this"
    print(f"{'page':<20} {old + ' p50/p95':>16} {new + ' p50/p95':>14} {'x floor':>11} {'this/old':>8} "
          f"{'95% of it':>10} {'msgs':>9} {'kB':>11} {'CPU ms':>9}  verdict")
    ok = True
    order = [p.path for p in pages["this"]] + [p.path for p in pages[args.against]
                                               if p.path not in {q.path for q in pages["this"]}]
    for path in order:
        cells, medians = [], {}
        for label in (args.against, "this"):
            results = pooled[label].get(path)
            if not results:
                cells.append(None)
                continue
            times = [t for r in results for t in r.times]
            medians[label] = statistics.median(times)
            cells.append((times, statistics.median(r.messages for r in results),
                          statistics.median(r.kilobytes for r in results), statistics.median(r.cpu_ms for r in results),
                          [e for r in results for e in r.exceptions]))

        def ms(cell) -> str:
            return "—" if cell is None else f"{1000 * pct(cell[0], .5):.0f} / {1000 * pct(cell[0], .95):.0f}"

        def pair(i: int, fmt: str, cells=cells) -> str:
            return " → ".join("—" if c is None else format(c[i], fmt) for c in cells)

        x_floor = " / ".join(_ratio(medians[label], floor) if label in medians else "—"
                             for label in (args.against, "this"))
        verdict = "only in " + args.against if cells[1] is None else "ok"
        interval = "—"
        if cells[1] is not None:
            over = medians["this"] > limit
            slower = False
            if cells[0] is not None:
                low, high = median_ratio_interval(cells[1][0], cells[0][0], comparisons=len(order))
                interval, slower = f"{low:.2f}–{high:.2f}", low > 1
            verdict = ("EXCEPTION " + "; ".join(cells[1][4])[:120] if cells[1][4] else
                       "OVER BUDGET" if over else "slower than " + args.against if slower else "ok")
            ok &= verdict == "ok"
        print(f"{path:<20} {ms(cells[0]):>16} {ms(cells[1]):>14} {x_floor:>11} "
              f"{_ratio(medians.get('this', float('nan')), medians.get(args.against, float('nan'))):>8} "
              f"{interval:>10} {pair(1, '.0f'):>9} {pair(2, '.1f'):>11} {pair(3, '.0f'):>9}  {verdict}")
    print(f"\nms: one change of a page's own widget, click -> script_finished (p50 / p95 of every round's changes); "
          f"x floor: the medians of {args.against} / this over the floor's; this/old: the ratio of the medians, and "
          f"95% of it: its bootstrap interval, 95% for all pages together (slower only when it is wholly above 1); msgs, kB, CPU ms: "
          f"what the server sent and spent per change, {args.against} → this")
    return ok


# ---------------------------------------------------------------------------------------- a class

def run_class_against(args: argparse.Namespace) -> bool:
    args = argparse.Namespace(**{**vars(args), "duration": 60.0 if args.duration is None else args.duration,
                                 "p95_budget_ms": 150.0 if args.p95_budget_ms is None else args.p95_budget_ms,
                                 "rss_budget_mb": 1400.0 if args.rss_budget_mb is None else args.rss_budget_mb})
    if args.url:
        raise SystemExit("--against starts its own servers: no --url")
    both = versions(args)
    pages = {label: pages_of(root) for label, root in both}
    if args.common_pages:
        common = {p.path for p in pages["this"]} & {p.path for p in pages[args.against]}
        pages = {label: tuple(p for p in listed if p.path in common) for label, listed in pages.items()}
    print(f"== class against {args.against}: {args.students} students, a change every ~{args.interval:g} s each for "
          f"{args.duration:g} s, {args.rounds} round(s); pages: {args.against} {len(pages[args.against])}, this "
          f"{len(pages['this'])}" + (" (the pages both have)" if args.common_pages else "") + "\n")
    floors: list[float] = []
    pooled: dict[str, list[ClassResult]] = {label: [] for label, _ in both}
    peaks: dict[str, list[float]] = {label: [] for label, _ in both}
    for index in range(args.rounds):
        floors.append(measure_floor(args.clicks))
        for label, root in round_order(both, index):
            run_args = argparse.Namespace(**{**vars(args), "app_root": root, "pages": pages[label]})
            _server, result, sampler, tracebacks_ok = on_server(run_args, class_round)
            pooled[label].append(result)
            peaks[label].append(sampler.peak_per_process)
            print(f"   round {index + 1}, {label}: {len(result.clicks)} clicks, p50 / p95 "
                  f"{1000 * pct(result.clicks, .5):.0f} / {1000 * pct(result.clicks, .95):.0f} ms, "
                  f"{len(result.exceptions)} exceptions, {len(result.failed)} failed, peak RSS "
                  f"{sampler.peak_per_process:.0f} MB" + ("" if tracebacks_ok else ", server tracebacks"))
        print(f"   round {index + 1}: floor {1000 * floors[-1]:.0f} ms")
    floor = statistics.median(floors)

    def merged(label: str, pick: Callable[[ClassResult], list]) -> list:
        return [v for result in pooled[label] for v in pick(result)]

    old = args.against
    print(f"\nthe floor (one-widget app), median of the rounds: {1000 * floor:.0f} ms\n")
    print(f"{'':<22} {old[:9]:>20} {'this':>20} {'this/' + old[:9]:>15}")
    clicks = {label: merged(label, lambda r: r.clicks) for label in (old, "this")}
    for name, q in (("click p50 ms", .5), ("click p95 ms", .95)):
        a, b = (1000 * pct(clicks[label], q) for label in (old, "this"))
        print(f"{name:<22} {a:>20.0f} {b:>20.0f} {_ratio(b, a):>15}")
    a, b = (f"{pct(clicks[v], .5) / floor:.2f} / {pct(clicks[v], .95) / floor:.2f}" for v in (old, "this"))
    print(f"{'p50 / p95 x floor':<22} {a:>20} {b:>20}")
    served = {label: len(clicks[label]) / args.rounds / args.duration * 60 for label in (old, "this")}
    print(f"{'clicks served / min':<22} {served[old]:>20.0f} {served['this']:>20.0f} "
          f"{_ratio(served['this'], served[old]):>15}")
    first = {label: merged(label, lambda r: r.first) for label in (old, "this")}
    a, b = (f"{1000 * pct(first[v], .5):.0f} / {1000 * pct(first[v], .95):.0f}" for v in (old, "this"))
    print(f"{'first render p50/p95':<22} {a:>20} {b:>20}")
    print(f"{'peak RSS MB':<22} {max(peaks[old]):>20.0f} {max(peaks['this']):>20.0f}")
    failures = {label: len(merged(label, lambda r: r.exceptions)) + len(merged(label, lambda r: r.failed))
                for label in (old, "this")}
    print(f"{'exceptions + failed':<22} {failures[old]:>20} {failures['this']:>20}")

    print(f"\nper page, click p50 / p95 ms ({old} → this):")
    per_page: dict[str, dict[str, list[float]]] = {}
    for label in (old, "this"):
        for result in pooled[label]:
            for path, values in result.per_page.items():
                per_page.setdefault(path, {}).setdefault(label, []).extend(values)
    ok = True
    for path in [p.path for p in pages["this"]] + [p.path for p in pages[old] if p.path not in per_page]:
        seen = per_page.get(path, {})
        cells = [f"{1000 * pct(seen[v], .5):.0f} / {1000 * pct(seen[v], .95):.0f} (n={len(seen[v])})"
                 if v in seen else "—" for v in (old, "this")]
        verdict = ""
        if "this" in seen:
            p95 = pct(seen["this"], .95)
            over = p95 > 3 * floor
            slower = old in seen and p95 > pct(seen[old], .95)
            verdict = "over 3 x floor" if over else ("p95 above " + old if slower else "ok")
            ok &= verdict == "ok"
        print(f"   {path:<22} {cells[0]:>22} → {cells[1]:<22} {verdict}")
    print(f"\nbudget per page: p95 <= 3 x floor ({3000 * floor:.0f} ms) and <= {old}'s p95 in the same run; "
          f"exceptions and failed sessions 0 -> {'ok' if ok and not failures['this'] else 'NOT MET'}")
    return ok and not failures["this"]


def run_browser_against(args: argparse.Namespace) -> bool:
    """``browser --against REF``: the browser scenario (scripts/load/browser.py) on REF's server and on this
    checkout's, in the same Chromium settings (``--throttle``), each with its floor, ``--rounds`` rounds in turn;
    one table: each click's p50 on REF and on this checkout, the floor's, and the messages the page sent per click."""
    from load.browser import FLOOR, measure_browser, print_browser
    from load.server import APP

    both = versions(args)
    pooled: dict[str, dict[str, list[float]]] = {label: {} for label, _ in both}
    sent: dict[str, dict[str, list[int]]] = {label: {} for label, _ in both}
    throttle = getattr(args, "throttle", 1.0)
    print(f"== browser against {args.against}: Chromium{f', CPU throttled {throttle:g}x' if throttle > 1 else ''}, "
          f"{args.clicks} clicks of each kind, {args.rounds} round(s)\n")
    ok = True
    for index in range(args.rounds):
        for label, root in round_order(both, index):
            server = Server(root / APP.name, root=root)
            try:
                out = measure_browser(args, url=server.url)
            finally:
                server.stop()
            if out is None:
                return False
            print(f"-- {label} (round {index + 1})")
            ok &= print_browser(out, args) or label != "this"
            print()
            for name, times in out["results"].items():
                pooled[label].setdefault(name, []).extend(times)
                sent[label].setdefault(name, []).extend(out["sent"].get(name, []))
    old = args.against[:9]
    floor = statistics.median(pooled["this"][FLOOR] + pooled[args.against][FLOOR])
    print(f"{'click':<46} {old + ' p50':>10} {'this p50':>9} {'floor':>7} {old + ' sent':>11} {'this sent':>10}  "
          "verdict")
    names = list(pooled[args.against]) + [n for n in pooled["this"] if n not in pooled[args.against]]
    for name in names:
        cells = []
        for label in (args.against, "this"):
            times = pooled[label].get(name)
            cells.append(f"{1000 * statistics.median(times):.0f} ms" if times else "—")
        counts = [f"{statistics.median(sent[label][name]):.0f}" if sent[label].get(name) else "—"
                  for label in (args.against, "this")]
        # a click with a run on both (a setting): no slower than the reference (each round's own verdicts judged the
        # clicks the page answers itself)
        verdict = ""
        if name != FLOOR and pooled[args.against].get(name) and pooled["this"].get(name) and \
                sent[args.against].get(name) and statistics.median(sent["this"].get(name) or [0]) > 0:
            low, high = median_ratio_interval(pooled["this"][name], pooled[args.against][name],
                                              comparisons=len(pooled["this"]))
            slower = low > 1
            ok &= not slower
            verdict = f"{'slower' if slower else 'ok (no slower)'}, this/old {low:.2f}–{high:.2f}"
        print(f"{name:<46} {cells[0]:>10} {cells[1]:>9} {1000 * floor:>5.0f} ms {counts[0]:>11} {counts[1]:>10}  "
              f"{verdict}")
    return ok
