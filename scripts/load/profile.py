"""Where a click's time goes on the real server, page by page: ``benchmark_load.py profile`` (py-spy on the server).

One student (scripts/load/client.py's Student, Streamlit's own websocket protocol) opens each page, changes one of
its widgets once (caches fill), then ``--clicks`` more times while py-spy samples the server process (every thread,
``--rate`` samples a second, idle threads not counted). Per page it prints:

- the click: median ms, the server's CPU ms per click (every thread, from /proc), the messages and kB sent;
- where the samples fell, per click, by the library of the innermost frame: streamlit (building and queueing the
  elements' protobufs), the event loop (serialising and sending them: asyncio, tornado), ours (app.py, app_pages/,
  ui/, attention_core/), torch, sympy, altair / vega, pandas, numpy, other;
- the ``--top`` functions of ours with the most inclusive time per click (what they and everything they call cost).

``--against REF`` profiles that commit's app instead (scripts/load/against.py writes it out), for a before /
after with the same client. ``--only PATH`` (repeatable) limits the pages. Needs py-spy (requirements-dev.txt), which
reads the server's memory with ptrace: as root, or with ``kernel.yama.ptrace_scope`` 0.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from load.client import PAGES, PageLoad, Student
from load.server import ROOT, Server, cpu_seconds
from load.single import PageClicks

#: The innermost frame's file, by the part of the path that names its library, in this order (first match).
LIBRARIES = (
    ("event loop", ("asyncio/", "tornado/", "selectors.py", "websockets/")),
    ("streamlit", ("streamlit/",)),
    ("torch", ("torch/",)),
    ("sympy", ("sympy/", "mpmath/")),
    ("altair / vega", ("altair/", "jsonschema/", "referencing/", "narwhals/", "vl_convert")),
    ("pandas", ("pandas/",)),
    ("numpy", ("numpy/",)),
    ("protobuf", ("google/protobuf",)),
)
#: Frames of ours: the app's own files.
OURS = ("app.py", "app_pages/", "ui/", "attention_core/", "ui/classroom/store/")
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def _py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed: .venv/bin/pip install -r requirements-dev.txt")
    return found


def library(file: str, pages: frozenset[str] = frozenset()) -> str:
    """The library a frame's file belongs to (see :data:`LIBRARIES`), "ours" (:data:`OURS`, or one of the ``pages``'
    file names, as py-spy names a page run by ``st.navigation``), or "other"."""
    for name, marks in LIBRARIES:
        if any(mark in file for mark in marks):
            return name
    if file in pages or any(file == mark or file.startswith(mark) or f"/{mark}" in file for mark in OURS):
        return "ours"
    return "other"


def summarise(raw: str, pages: frozenset[str] = frozenset()) -> tuple[collections.Counter, collections.Counter, int]:
    """(samples by library of the innermost frame, inclusive samples by function of ours, all samples) of py-spy's
    ``--format raw`` output (one collapsed stack and its count per line)."""
    by_library: collections.Counter = collections.Counter()
    ours: collections.Counter = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [_FRAME.match(f) for f in stack.split(";")]
        frames = [f for f in frames if f]
        if not frames:
            continue
        by_library[library(frames[-1]["file"], pages)] += n
        seen = set()
        for frame in frames:
            if library(frame["file"], pages) == "ours":
                name = f"{frame['function']} ({frame['file']})"
                if name not in seen:
                    seen.add(name)
                    ours[name] += n
    return by_library, ours, total


async def _clicks(url: str, page: PageLoad, clicks: int, pid: int, rate: int, out: Path) -> PageClicks:
    student = Student(url, page.path)
    await student.connect()
    try:
        first = await student.open_page(page.path)
        first_change = await student.interact(page.widgets)
        await student.interact(page.widgets)
        spy = subprocess.Popen([_py_spy(), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
                                "--output", str(out), "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            await asyncio.sleep(1.0)  # py-spy attaches (not a synchronisation: clicks before it only go unsampled)
            cpu = cpu_seconds(pid)
            times, messages, sent = [], 0, 0
            for _ in range(clicks):
                times.append(await student.interact(page.widgets))
                messages += student.run_messages
                sent += student.run_bytes
            cpu = cpu_seconds(pid) - cpu
        finally:
            spy.send_signal(signal.SIGINT)
            _, err = spy.communicate(timeout=60)
        if not out.exists():
            raise RuntimeError(f"py-spy wrote nothing: {err.decode(errors='replace')[-400:]}")
    finally:
        await student.close()
    return PageClicks(first, first_change, times, student.exceptions, messages / clicks, sent / clicks / 1000,
                      1000 * cpu / clicks)


def run_profile(args: argparse.Namespace) -> bool:
    root = ROOT
    pages = PAGES
    if args.against:
        from load.against import checkout, pages_of

        root = checkout(args.against)
        pages = pages_of(root)
    if args.only:
        pages = tuple(p for p in pages if p.path in args.only)
    label = args.against or "this checkout"
    print(f"== profile ({label}): one student per page, {args.clicks} changes sampled by py-spy at {args.rate} Hz "
          f"(every thread of the server)\n")
    page_files = frozenset(path.name for path in (root / "app_pages").glob("*.py"))
    server = Server(root / "app.py", root=root)
    ok = True
    columns = [name for name, _ in LIBRARIES] + ["ours", "other"]
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="attention-profile-") as folder:
            for page in pages:
                out = Path(folder) / f"{page.path or 'default'}.txt"
                try:
                    clicks = asyncio.run(_clicks(server.url, page, args.clicks, server.process.pid, args.rate, out))
                except Exception as error:  # noqa: BLE001 - report the page, go on
                    print(f"{page.path}: FAILED: {type(error).__name__}: {error}")
                    ok = False
                    continue
                by_library, ours, total = summarise(out.read_text(), page_files)
                per_click = 1000 / args.rate / args.clicks  # ms of one sample, per click
                rows.append((page.path, clicks, {k: v * per_click for k, v in by_library.items()}))
                print(f"-- {page.path}: median {1000 * statistics.median(clicks.times):.0f} ms, server CPU "
                      f"{clicks.cpu_ms:.0f} ms, {clicks.messages:.0f} messages, {clicks.kilobytes:.1f} kB per click; "
                      f"sampled {total * per_click:.0f} ms per click")
                for name, samples in ours.most_common(args.top):
                    print(f"   {samples * per_click:6.1f} ms  {name}")
                ok &= not clicks.exceptions
        print(f"\nper click, ms sampled by the innermost frame's library ({label}):")
        print(f"{'page':<20} {'median':>6} {'CPU':>5} {'msgs':>5} " + " ".join(f"{c[:9]:>9}" for c in columns))
        for path, clicks, spent in rows:
            print(f"{path:<20} {1000 * statistics.median(clicks.times):>6.0f} {clicks.cpu_ms:>5.0f} "
                  f"{clicks.messages:>5.0f} " + " ".join(f"{spent.get(c, 0.0):>9.1f}" for c in columns))
        if server.tracebacks():
            print(f"\nthe server logged {len(server.tracebacks())} traceback(s)")
            ok = False
    finally:
        server.stop()
    return ok


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate", type=int, default=500, help="profile: py-spy's samples per second")
    parser.add_argument("--top", type=int, default=12, help="profile: functions of ours listed per page")
    parser.add_argument("--only", action="append", default=[], metavar="PATH",
                        help="profile, single, class: only this page (its URL path; repeatable; class: the "
                             "teacher's warm-up too)")

