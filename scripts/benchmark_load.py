"""Classroom load over Streamlit's real protocol: what a student waits for, alone and with a class.

    .venv/bin/python scripts/benchmark_load.py                      # single, class (30 students, 60 s), browser
    .venv/bin/python scripts/benchmark_load.py single
    .venv/bin/python scripts/benchmark_load.py class --students 30 --duration 60 --interval 3
    .venv/bin/python scripts/benchmark_load.py browser
    .venv/bin/python scripts/benchmark_load.py training             # 30 students train their own seed (150 s)
    .venv/bin/python scripts/benchmark_load.py long                 # the model pages on a 512-token text
    .venv/bin/python scripts/benchmark_load.py long --page trained-model --clicks 20
    .venv/bin/python scripts/benchmark_load.py class-live --rounds 2    # a class, live: its cost (issue 38)
    .venv/bin/python scripts/benchmark_load.py class --url http://127.0.0.1:8080 --students 100 \\
        --p95-budget-ms 500 --pid-file /tmp/lecture-hall/replica-1.pid --pid-file ...   # through a proxy

Without ``--url`` it starts ``streamlit run app.py`` on a free loopback port (with the repository's
``.streamlit/config.toml``) and stops it at the end. Each simulated student is a websocket on
``/_stcore/stream`` that speaks Streamlit's own protobufs, as the browser does: a ``BackMsg`` with
``rerun_script`` (the page, the widget states) goes up; ``ForwardMsg``s (``new_session``, deltas,
``script_finished``) come down. No browser is involved, so the numbers are the server's: the time
from sending a change to receiving ``script_finished`` for it.

Scenarios:

- ``single``: one student. First a trivial one-widget app (``scripts/load_floor_app.py``, the
  framework's own floor) is measured, then every page of the app, ``--clicks`` interactions each,
  one after another. Budget: every page's median within ``--floor-factor`` (2) x the floor's median.
- ``class``: ``--students`` sessions open their pages within the same second (a burst: the same
  link shared by a teacher), spread over every page including *Inside a trained model*, then each
  changes a widget every ~``--interval`` s (uniformly 0.5x-1.5x) for ``--duration`` s. ``--drop K``
  students close their websocket in the middle of a run and come back as new sessions. Budget:
  interaction p95 < ``--p95-budget-ms`` (150), 0 exceptions, 0 failed sessions, peak server RSS
  < ``--rss-budget-mb`` (1400: the class's ~900 MB plus SmolLM2 on *Inside a modern language model*, loaded once per
  server, ~400 MB). Through a proxy (``--url``), a student whose websocket is closed by
  a replica going away reconnects, as the browser does, and is counted as *moved*; ``--fault-cmd``
  runs a shell command (e.g. kill a replica) ``--fault-at`` seconds in.
- ``browser``: Debian's Chromium (Playwright) on self-attention, causal, multi-head, positional encoding and the
  backward pass (:data:`BROWSER_PAGES`; ``--browser-page`` for fewer): click *Next* and a number input's + button, and
  time, on the page's own clock, click -> the app's script state has gone to running and back (the frontend applied
  the run's ``script_finished``) -> the step picker (the number's input) shows the new value -> two animation frames
  (the repaint). Budget: every click's median < ``--browser-budget-ms`` (200).
- ``training`` (not in the default run: it takes 2-3 minutes): ``--students`` sessions open *Watch attention
  learn* (/training) within the same second, each types its own seed (its index: as many different runs, which
  queue on the server's one training worker) and clicks *Train*. Then, for ``--duration`` s (150), half of them
  (``--watch-share``) watch their run: the page's progress fragment (``st.fragment(run_every=1.0)``) is rerun every
  second as the browser's timer does (a ``rerun_script`` with the fragment's id and ``is_auto_rerun``; the timers
  follow the server's ``auto_rerun`` / ``stop_auto_rerun`` messages and a full run's ``new_session`` clears them);
  once their run has finished they click the results' own widgets every ~``--interval`` s. The others click on
  another page every ~``--interval`` s and come back to /training every 4th time for one interval. At the end
  everyone looks at /training once. Reported: the latencies (first render, the seed, Train, every widget change,
  page switches, the progress reruns, the last look), which students saw their run's progress (its queue place,
  its steps, moving, finishing) and how many runs finished. Budget: interaction p95 < ``--p95-budget-ms`` (300),
  0 exceptions, 0 failed sessions, peak server RSS < ``--rss-budget-mb`` (1400, as the class: the runs a server keeps,
  at most 32 with ~3 MB of snapshots each, fit in its margin), every student saw their run's progress,
  and it never went backwards (a queue place up, a step back).

- ``long`` (not in the default run): the model pages (``--page``: *Inside a trained model* and *Inside a modern
  language model* unless named) opened by a link that carries a long text in the page's text setting (``?trained_model.
  sentence=...``: ``--words`` words of prose, more than the page reads, so it is cut at the page's token limit, 512).
  The server is warmed first (one visit with the page's default text: the model loads once per server). Then
  ``--opens`` students each open the link with a text of their own (a new text: nothing cached), timed to the first
  render's ``script_finished``; the last one then makes ``--clicks`` of each of the page's own clicks, as the browser
  sends them (with the link's query string, as the browser keeps it): another head never opened before (the layer and
  head pickers, in turn), another explained entry (the row and column pickers, in turn, across the whole matrix) and
  another step (the step picker, every stage in turn); on the modern LM's page also Generate (up to its 12
  tokens). Before the clicks it checks that the page reads the text's first 512 tokens (the row
  picker's options at the weights step). Budget: every kind of click's p95 < ``--p95-budget-ms`` (300).

- ``class-live`` (not in the default run; in scripts/benchmark_class_live.py, on this module's Student): 30 students
  answer a practice question every ~3 s for 60 s, without a class and then in a class started from the sidebar, whose
  teacher's page refreshes every 2.5 s; the Check's p95 in a class against alone (budget <= 1.1 x), the teacher's
  refresh (p95 < 200 ms), and every answer sent found in the class store (a temporary one: SQLite, or
  ``--class-store postgresql``).

Widgets drawn inside an ``st.fragment`` (the step-through's stepper, step picker and entry pickers)
are changed as the browser changes them: the rerun request names the fragment, and only it reruns.

Prints first-render and interaction latency (p50, p95, max), exceptions, failed sessions and the
server's RSS over time; exits 1 when a budget is broken. Traffic goes to loopback only (any other
host is refused), every loop is bounded by ``--duration`` and per-run timeouts, and the script
stops the servers it started. Measure on an otherwise idle machine: the simulated students share
the 2 cores with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import ipaddress
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Optional

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
FLOOR_APP = ROOT / "scripts" / "load_floor_app.py"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RUN_TIMEOUT_S = 90.0  # one script run; the first visit to the trained model loads it (seconds)
SERVER_START_S = 90.0
STREAMLIT_ARGS: list[str] = []  # --streamlit-arg: extra options for every server started here (comparisons)
FINISHED = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)


@dataclasses.dataclass(frozen=True)
class PageLoad:
    """A page (its URL path) and the widgets a student changes there, by widget key, in turn.

    No widgets named: the page's own (see :meth:`Student.page_widgets`), found on the page as it renders.
    """

    path: str
    widgets: tuple[str, ...] = ()


def _registered_pages() -> tuple[PageLoad, ...]:
    """Every page of the app, from the one registry of page declarations (attention_core/registry.py)."""
    sys.path.insert(0, str(ROOT))
    from attention_core import registry

    return tuple(PageLoad(page.url_path) for page in registry.PAGES)


PAGES = _registered_pages()
FLOOR = PageLoad("", ("floor_number",))


# ---------------------------------------------------------------------------------------- safety

def require_loopback(url: str) -> None:
    """Refuse any target that is not on this machine's loopback (the load goes nowhere else)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise SystemExit(f"refusing {url!r}: the load benchmark only targets loopback (127.0.0.0/8, ::1, localhost)")


# ---------------------------------------------------------------------------------------- servers

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().decode().strip() == "ok"
    except OSError:
        return False


class Server:
    """``streamlit run SCRIPT`` on a free loopback port, from ``root`` (its ``.streamlit/config.toml``: this repository,
    or another checkout measured against it); ``env``: variables set for it on top of this process's (e.g. a temporary
    class store)."""

    def __init__(self, script: Path, extra_args: tuple[str, ...] = (), env: Optional[dict[str, str]] = None,
                 root: Path = ROOT) -> None:
        extra_args = tuple(extra_args) + tuple(STREAMLIT_ARGS)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile("w+", prefix="benchmark-load-", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(self.port), *extra_args],
            cwd=root, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **env} if env else None)
        deadline = time.monotonic() + SERVER_START_S
        while not _healthy(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"streamlit did not start:\n{Path(self.log.name).read_text()[-3000:]}")
            time.sleep(0.2)  # polling the health endpoint, not synchronising on a guess

    def tracebacks(self) -> list[str]:
        """Tracebacks the server logged (an exception in a session, not shown to anyone)."""
        text = Path(self.log.name).read_text(errors="replace")
        return [block for block in re.split(r"\n(?=\S)", text) if "Traceback (most recent call last)" in block]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)


def rss_mb(pids: list[int]) -> float:
    """Resident memory of these processes, in MB (10^6 bytes), from /proc; 0 for a gone process."""
    total_kib = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
    return total_kib * 1024 / 1e6


class RssSampler:
    """RSS of the server processes twice a second, while the load runs."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.samples: list[tuple[float, float]] = []  # (seconds since start, MB of all the processes)
        self.peak_per_process = 0.0  # the largest RSS of any one process (each replica has its own budget)
        self._task: Optional[asyncio.Task] = None
        self._start = time.monotonic()

    def _sample(self) -> None:
        pids = self.pids()
        self.samples.append((time.monotonic() - self._start, rss_mb(pids)))
        self.peak_per_process = max([self.peak_per_process] + [rss_mb([pid]) for pid in pids])

    async def _run(self) -> None:
        while True:
            self._sample()
            await asyncio.sleep(0.5)  # sampling period

    def start(self) -> None:
        self._start = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._sample()

    @property
    def peak(self) -> float:
        return max((mb for _, mb in self.samples), default=0.0)

    def timeline(self, points: int = 8) -> str:
        if not self.samples:
            return "-"
        step = max(1, len(self.samples) // points)
        shown = self.samples[::step] + ([self.samples[-1]] if (len(self.samples) - 1) % step else [])
        return "  ".join(f"{t:.0f}s {mb:.0f}" for t, mb in shown)


# ---------------------------------------------------------------------------------------- a student

class SessionClosed(Exception):
    """The server (or the proxy) closed this student's websocket."""


class Student:
    """One browser tab, minus the browser: a websocket session that reruns pages and changes widgets."""

    def __init__(self, base_url: str, name: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = name
        self.ws = None
        self.cookie = ""
        self.session_id = ""
        # user key -> (element type, proto, fragment id or "") of the widgets on the page now, in their order
        self.widgets: dict[str, tuple[str, object, str]] = {}
        self.main_keys: set[str] = set()  # the keys of those in the page's main area (not the sidebar)
        self.widget_paths: dict[str, tuple[int, ...]] = {}  # user key -> its delta path when last drawn
        self.states: dict[str, object] = {}  # widget id -> WidgetState to send (what the browser holds)
        self.exceptions: list[str] = []
        self.page = ""
        self.page_hash = ""
        self.step = 0
        # widget key -> the value (number) or option index (selectbox) it showed when first seen on this page:
        # the changes walk around it, so every version of the app is sent the same values (whether or not the
        # server marks each widget's value as set by it).
        self.anchors: dict[str, float] = {}
        self.last_fragment = False  # the last change was of a widget inside an st.fragment: only it reran
        # The fragments the browser would rerun on a timer (``st.fragment(run_every=...)``): fragment id -> (interval
        # in seconds, when its timer was armed). As in the frontend (App.tsx): a full run's new_session clears them,
        # the run's auto_rerun messages arm them again (the same interval keeps its countdown), stop_auto_rerun ends one.
        self.auto_reruns: dict[str, tuple[float, float]] = {}
        self.ticked: dict[str, float] = {}  # fragment id -> when its last timer rerun was sent
        self.progress: list[str] = []  # the text of every st.progress this session was sent, in order
        self.last_progress: Optional[str] = None  # the st.progress text of the last finished run (None: none drawn)
        self.metrics: dict[str, str] = {}  # st.metric label -> value, as last drawn (the teacher's class page)
        # The URL's query string the browser sends with each rerun: a link's at first, then what the app writes there
        # (page_info_changed). Only kept when the student opened a link (open_page's ``query``); else "" as before.
        self.query = ""
        self.app_pages: tuple[str, ...] = ()  # the URL paths of the pages the app's navigation lists
        self.run_messages = 0  # ForwardMsgs of the last run (its new_session, deltas, ... script_finished)
        self.run_bytes = 0  # and their serialised bytes: what the server sent the browser for it

    def _get_cookie(self) -> None:
        """GET the page as a browser does first: a proxy's sticky-session cookie comes with it."""
        with urllib.request.urlopen(f"{self.base_url}/", timeout=30) as response:
            cookies = [c.split(";", 1)[0] for c in response.headers.get_all("Set-Cookie") or []]
        self.cookie = "; ".join(cookies)

    async def connect(self, reconnect: bool = False) -> None:
        if not self.cookie:
            await asyncio.to_thread(self._get_cookie)
        ws_url = self.base_url.replace("http", "ws", 1) + "/_stcore/stream"
        protocols = ["streamlit", "benchmark", self.session_id] if reconnect and self.session_id else ["streamlit"]
        headers = {"Cookie": self.cookie} if self.cookie else {}
        self.ws = await connect(ws_url, subprotocols=protocols, additional_headers=headers, max_size=None,
                                open_timeout=30, ping_interval=None)
        for cookie in self.ws.response.headers.get_all("Set-Cookie"):
            self.cookie = cookie.split(";", 1)[0]  # the proxy moved us to another replica

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()

    async def send_rerun(self, page: str, states: list, fragment_id: str = "", auto: bool = False) -> None:
        msg = BackMsg()
        rerun = msg.rerun_script
        rerun.query_string = self.query
        rerun.page_name = page
        rerun.page_script_hash = self.page_hash if page == self.page else ""
        rerun.widget_states.widgets.extend(states)
        if fragment_id:  # as the browser does for a widget drawn inside an st.fragment
            rerun.fragment_id = fragment_id
        rerun.is_auto_rerun = auto  # a run_every timer's rerun, not a click
        try:
            await self.ws.send(msg.SerializeToString())
        except ConnectionClosed as error:
            raise SessionClosed(str(error)) from error

    async def finish_run(self, fragment: bool = False) -> None:
        """Read ForwardMsgs until this run's ``script_finished``; keep the widgets it rendered.

        A fragment run redraws only the fragment: the page's other widgets stay, as in the browser. A fragment run can
        end in a full run (``st.rerun(scope="app")`` inside it): its new_session, which names no fragment, starts over.
        """
        widgets: dict[str, tuple[str, object, str]] = dict(self.widgets) if fragment else {}
        main = set(self.main_keys) if fragment else set()
        partial = fragment
        sent: set[str] = set()  # the widgets this run drew
        blocks: list[tuple[int, ...]] = []  # the delta paths of the blocks this run drew (a fragment's own included)
        progress: Optional[str] = None
        deadline = time.monotonic() + RUN_TIMEOUT_S
        self.run_messages = self.run_bytes = 0
        while True:
            try:
                data = await asyncio.wait_for(self.ws.recv(), timeout=max(0.1, deadline - time.monotonic()))
            except ConnectionClosed as error:
                raise SessionClosed(str(error)) from error
            self.run_messages += 1
            self.run_bytes += len(data)
            msg = ForwardMsg()
            msg.ParseFromString(data)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                partial = bool(msg.metadata.run.fragment_ids) if msg.metadata.HasField("run") else fragment
                widgets = dict(self.widgets) if partial else {}
                main = set(self.main_keys) if partial else set()
                sent, blocks = set(), []
                progress = None
                if not partial:
                    self.auto_reruns.clear()  # the frontend's handleNewSession: a full run drops every timer
                if msg.new_session.HasField("initialize"):
                    self.session_id = msg.new_session.initialize.session_id
            elif kind == "page_info_changed" and self.query:  # the app wrote its link: the browser's URL shows it
                self.query = msg.page_info_changed.query_string
            elif kind == "navigation":  # st.navigation resolved the page: the browser sends its hash from now on
                self.page_hash = msg.navigation.page_script_hash
                self.app_pages = tuple(p.url_pathname for p in msg.navigation.app_pages)
            elif kind == "delta" and msg.delta.WhichOneof("type") == "add_block":
                blocks.append(tuple(msg.metadata.delta_path))
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                etype = element.WhichOneof("type")
                if etype == "exception":
                    self.exceptions.append(f"{element.exception.type}: {element.exception.message}")
                elif etype == "progress":
                    progress = element.progress.text
                    self.progress.append(progress)
                elif etype == "metric":
                    self.metrics[element.metric.label] = element.metric.body
                elif etype in ("number_input", "selectbox", "button", "text_input", "checkbox"):
                    proto = getattr(element, etype)
                    key = proto.id.split("-", 2)[-1]
                    widgets[key] = (etype, proto, msg.delta.fragment_id)
                    self.widget_paths[key] = tuple(msg.metadata.delta_path)
                    sent.add(key)
                    if msg.metadata.delta_path and msg.metadata.delta_path[0] == 0:  # RootContainer.MAIN
                        main.add(key)
            elif kind == "auto_rerun":  # st.fragment(run_every=...) was drawn: the browser arms (or keeps) its timer
                interval, fragment_id = msg.auto_rerun.interval, msg.auto_rerun.fragment_id
                if self.auto_reruns.get(fragment_id, (None, 0.0))[0] != interval:
                    self.auto_reruns[fragment_id] = (interval, time.monotonic())
            elif kind == "stop_auto_rerun":
                for fragment_id in msg.stop_auto_rerun.fragment_ids:
                    self.auto_reruns.pop(fragment_id, None)
            elif kind == "script_finished":
                if msg.script_finished in FINISHED:
                    if partial:  # as the browser does: what the rerun fragments drew before and not now is gone
                        for key in [k for k in widgets if k not in sent]:
                            path = self.widget_paths.get(key, ())
                            if any(path[:len(block)] == block for block in blocks):
                                del widgets[key]
                                main.discard(key)
                    self.widgets, self.main_keys = widgets, main
                    self.last_progress = progress
                    return
                if msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise RuntimeError("script compile error")
            elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
                self.exceptions.append(msg.session_event.script_compilation_exception.message)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no script_finished within {RUN_TIMEOUT_S:.0f} s")

    async def open_page(self, page: str, query: str = "") -> float:
        """First render of ``page`` (seconds from the request to ``script_finished``); ``query``: the link's query
        string (``a=1&b=2``), sent as the browser sends it, and followed from then on."""
        if query:
            self.query = query
        start = time.perf_counter()
        await self.send_rerun(page, list(self.states.values()))
        await self.finish_run()
        self.page = page
        self.anchors = {}
        return time.perf_counter() - start

    def page_widgets(self) -> tuple[str, ...]:
        """The page's own widgets, as a student meets them: the number inputs and selectboxes bound to settings
        (``setting_*``) in the main area, in their order; on a page with none, its buttons (the overview's
        "Use this example")."""
        main = [key for key in self.widgets if key in self.main_keys]
        bound = [key for key in main if key.startswith("setting_") and self.widgets[key][0] in ("number_input",
                                                                                                  "selectbox")]
        return tuple(bound or [key for key in main if self.widgets[key][0] == "button"])

    def next_change(self, keys: tuple[str, ...]):
        """The WidgetState a student sends next (the next widget of ``keys`` that is on the page, moved once;
        no keys: of :meth:`page_widgets`) and the id of the fragment that widget is drawn in ("" outside any)."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        keys = keys or self.page_widgets()
        for offset in range(len(keys)):
            key = keys[(self.step + offset) % len(keys)]
            if key in self.widgets and not getattr(self.widgets[key][1], "disabled", False):
                break
        else:
            raise LookupError(f"none of {keys} on page {self.page!r} (it has {sorted(self.widgets)})")
        self.step += 1
        etype, proto, fragment_id = self.widgets[key]
        state = WidgetState(id=proto.id)
        walk = (1, 2, 3, 2, 1, 0)[self.step % 6]  # a few distinct values, back and forth
        if etype == "button":
            state.trigger_value = True
        elif etype == "selectbox":
            options = list(proto.options)
            if key not in self.anchors:
                current = proto.raw_value if proto.set_value and proto.HasField("raw_value") else None
                self.anchors[key] = (options.index(current) if current in options
                                     else (proto.default[0] if proto.default else 0))
            state.string_value = options[(int(self.anchors[key]) + 1 + walk % 2) % len(options)]
        else:  # number_input
            step = proto.step or 1
            # the value shown: a widget seeded from session state (every bound setting) carries it in ``value``, with
            # or without ``set_value`` depending on the version of the app; ``default`` is then 0, not what it shows
            start = self.anchors.setdefault(key, proto.value if proto.set_value or proto.HasField("value")
                                            else proto.default)
            value = start + (walk - 1) * step
            if proto.has_max and value > proto.max:
                value = start - step
            if proto.has_min and value < proto.min:
                value = start + step
            if proto.data_type == proto.INT:
                state.int_value = int(value)
            else:
                state.double_value = round(value, 6)
        return state, fragment_id

    async def interact(self, keys: tuple[str, ...], drop: bool = False) -> float:
        """Change one widget and wait for the rerun; seconds. ``drop``: close the socket mid-run instead."""
        state, fragment_id = self.next_change(keys)
        return await self.change(state, fragment_id, drop)

    def button(self, label: str):
        """The WidgetState of a click on the main area's button ``label`` (a keyless one, like "Train") and its
        fragment id; LookupError when the page shows no such button or it is disabled."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        for key, (etype, proto, fragment_id) in self.widgets.items():
            if etype == "button" and key in self.main_keys and proto.label == label and not proto.disabled:
                return WidgetState(id=proto.id, trigger_value=True), fragment_id
        raise LookupError(f"no enabled button {label!r} on page {self.page!r}")

    def choose(self, prefix: str, index: int):
        """The WidgetState that picks option ``index`` (modulo their count) of the main area's selectbox whose key is
        ``prefix`` or starts with ``prefix + "__"`` (a picker with a variant per label set), and its fragment id."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        for key, (etype, proto, fragment_id) in self.widgets.items():
            if etype == "selectbox" and key in self.main_keys and (key == prefix or key.startswith(prefix + "__")):
                options = list(proto.options)
                return WidgetState(id=proto.id, string_value=options[index % len(options)]), fragment_id
        raise LookupError(f"no selectbox {prefix!r} on page {self.page!r} (it has {sorted(self.widgets)})")

    def options(self, prefix: str) -> int:
        """How many options the main area's selectbox ``prefix`` (see :meth:`choose`) offers; 0 when it is absent."""
        for key, (etype, proto, _fragment) in self.widgets.items():
            if etype == "selectbox" and key in self.main_keys and (key == prefix or key.startswith(prefix + "__")):
                return len(proto.options)
        return 0

    def number(self, key: str, value: int):
        """The WidgetState that sets the number input ``key`` (an int one) to ``value``, and its fragment id."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        etype, proto, fragment_id = self.widgets[key]
        if etype != "number_input":
            raise LookupError(f"{key} is a {etype}, not a number_input")
        return WidgetState(id=proto.id, int_value=int(value)), fragment_id

    def submit(self, prefix: str, text: str):
        """The WidgetStates of typing ``text`` into the main area's text input whose key starts with ``prefix`` and
        clicking its form's submit button, and the form's fragment id. The browser holds a form's values until it is
        submitted, then sends them in one rerun with the submit button's trigger (``WidgetStateManager.submitForm``).
        LookupError when the page shows no such input in a form, or its form has no submit button."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        for key, (etype, proto, fragment_id) in self.widgets.items():
            if etype == "text_input" and key in self.main_keys and key.startswith(prefix) and proto.form_id:
                for other, (otype, button, _fragment) in self.widgets.items():
                    if otype == "button" and other in self.main_keys and button.form_id == proto.form_id:
                        return [WidgetState(id=proto.id, string_value=text),
                                WidgetState(id=button.id, trigger_value=True)], fragment_id
                raise LookupError(f"form {proto.form_id!r} has no submit button on page {self.page!r}")
        raise LookupError(f"no text input {prefix!r}... in a form on page {self.page!r} (it has {sorted(self.widgets)})")

    async def change(self, state, fragment_id: str = "", drop: bool = False) -> float:
        """Send one widget's new state (``state``, a WidgetState; or a list of them sent in the same rerun, like a
        form's submission, :meth:`submit`) and wait for the rerun; seconds."""
        new = state if isinstance(state, list) else [state]
        # What the browser sends: every widget value it holds, the new ones included; a trigger only once.
        ids = {s.id for s in new}
        sent = [s for i, s in self.states.items() if i not in ids] + new
        start = time.perf_counter()
        await self.send_rerun(self.page, sent, fragment_id)
        if drop:
            await self.close()
            return 0.0
        await self.finish_run(fragment=bool(fragment_id))
        self.last_fragment = bool(fragment_id)
        for one in new:
            if one.WhichOneof("value") != "trigger_value":
                self.states[one.id] = one
        return time.perf_counter() - start

    def next_tick(self) -> Optional[tuple[float, str]]:
        """When the browser's earliest run_every timer fires next (time.monotonic()) and its fragment id; None: none.

        The timer fires every interval from when it was armed. One that fired while this student waited for another
        run (a click, the last tick) is due at once: the browser sent it then, and the server runs it next.
        """
        ticks = []
        for fragment_id, (interval, armed) in self.auto_reruns.items():
            if interval > 0:
                last = max(armed, self.ticked.get(fragment_id, armed))
                ticks.append((armed + interval * ((last - armed + 1e-3) // interval + 1), fragment_id))
        return min(ticks, default=None)

    async def tick(self, fragment_id: str) -> float:
        """The timer of an ``st.fragment(run_every=...)`` fired: rerun that fragment as the browser does (every widget
        state it holds, the fragment's id, ``is_auto_rerun``) and wait for the run; seconds. The fragment may end in a
        full run (``st.rerun(scope="app")``): that is waited for too."""
        self.ticked[fragment_id] = time.monotonic()
        start = time.perf_counter()
        await self.send_rerun(self.page, list(self.states.values()), fragment_id, auto=True)
        await self.finish_run(fragment=True)
        return time.perf_counter() - start


# ---------------------------------------------------------------------------------------- statistics

def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank method; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))]


def fmt_ms(values: list[float]) -> str:
    ms = [1000 * v for v in values]
    return f"{pct(ms, .5):>7.0f} {pct(ms, .95):>7.0f} {max(ms, default=float('nan')):>7.0f}"


# ---------------------------------------------------------------------------------------- scenarios

def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system, every thread) process ``pid`` has used so far, in seconds; 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


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


async def _one_student(url: str, page: PageLoad, clicks: int, pid: Optional[int] = None) -> PageClicks:
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


def measure_floor(clicks: int) -> float:
    """The framework's floor: the median of ``clicks`` changes of a one-widget app's number input, in seconds."""
    floor_server = Server(FLOOR_APP)
    try:
        return statistics.median(asyncio.run(_one_student(floor_server.url, FLOOR, clicks)).times)
    finally:
        floor_server.stop()


def run_single(args: argparse.Namespace) -> bool:
    if args.against:
        from benchmark_against import run_single_against

        return run_single_against(args)
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
                clicks = asyncio.run(_one_student(url, page, args.clicks, server.process.pid if server else None))
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
            ok &= _report_tracebacks(server)
    finally:
        if server:
            server.stop()
    print("msgs, kB: what the server sent per change (ForwardMsgs, their bytes); CPU ms: the server's CPU per change")
    return ok


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


async def _warm_up(url: str, replicas: int, pages: tuple[PageLoad, ...] = PAGES) -> float:
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


async def _class(url: str, args: argparse.Namespace, pids: Callable[[], list[int]]) -> tuple[ClassResult, RssSampler]:
    result = ClassResult()
    if args.warm:
        replicas = max(1, len(args.pid_file))
        print(f"the teacher opened every page once before class ({replicas} tab(s)): "
              f"{await _warm_up(url, replicas, args_pages(args)):.1f} s")
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


def _pids_from_files(paths: list[str]) -> Callable[[], list[int]]:
    def read() -> list[int]:
        pids = []
        for path in paths:
            with contextlib.suppress(OSError, ValueError):
                pids.append(int(Path(path).read_text().split()[0]))
        return pids
    return read


def _report_memory_and_errors(args: argparse.Namespace, server: Optional[Server], sampler: RssSampler,
                              result: Any) -> bool:
    """Print the server's RSS over time (when it is measured) and the exceptions and failed sessions; True when the
    peak of one process is under ``--rss-budget-mb`` (or nothing was measured)."""
    measured = bool(args.pid_file or server)
    if measured:
        print(f"server RSS (MB, all processes) over time: {sampler.timeline()}; peak {sampler.peak:.0f} MB; "
              f"largest one process: {sampler.peak_per_process:.0f} MB")
    print(f"exceptions: {len(result.exceptions)}   failed sessions: {len(result.failed)}")
    for line in (result.exceptions + result.failed)[:10]:
        print("   ", line[:300])
    return sampler.peak_per_process < args.rss_budget_mb if measured else True


def _on_server(args: argparse.Namespace, scenario: Callable) -> tuple[Optional[Server], Any, RssSampler, bool]:
    """Run ``scenario(url, args, pids)`` against ``--url``, or a server started here and stopped after.

    Returns (the server started here or None, the scenario's result, its RSS sampler, no server tracebacks)."""
    root = getattr(args, "app_root", ROOT)
    server = None if args.url else Server(root / "app.py", root=root)
    url = args.url or server.url
    pids = _pids_from_files(args.pid_file) if args.url else (lambda: [server.process.pid])
    try:
        result, sampler = asyncio.run(scenario(url, args, pids))
        tracebacks_ok = _report_tracebacks(server) if server else True
    finally:
        if server:
            server.stop()
    return server, result, sampler, tracebacks_ok


def args_pages(args: argparse.Namespace) -> tuple[PageLoad, ...]:
    """The pages a scenario spreads its students over: ``args.pages`` (another checkout's, when measured against this
    one) or this app's, from its registry."""
    return getattr(args, "pages", None) or PAGES


def run_class(args: argparse.Namespace) -> bool:
    if args.against:
        from benchmark_against import run_class_against

        return run_class_against(args)
    args = argparse.Namespace(**{**vars(args), "duration": 60.0 if args.duration is None else args.duration,
                                 "p95_budget_ms": 150.0 if args.p95_budget_ms is None else args.p95_budget_ms,
                                 "rss_budget_mb": 1400.0 if args.rss_budget_mb is None else args.rss_budget_mb})
    print(f"== class: {args.students} students, one change every ~{args.interval:g} s each for "
          f"{args.duration:g} s, over {len(PAGES)} pages" + (f", through {args.url}" if args.url else "") + "\n")
    server, result, sampler, tracebacks_ok = _on_server(args, _class)
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
    memory_ok = _report_memory_and_errors(args, server, sampler, result)
    p95 = 1000 * pct(result.clicks, .95)
    ok = (p95 < args.p95_budget_ms and not result.exceptions and not result.failed and tracebacks_ok
          and memory_ok
          and bool(result.clicks))
    print(f"\nbudget: p95 < {args.p95_budget_ms:g} ms, 0 exceptions, 0 failed, peak RSS < {args.rss_budget_mb:g} MB "
          "per server process"
          f" -> {'ok' if ok else 'OVER BUDGET'}")
    return ok


def _report_tracebacks(server: Server) -> bool:
    tracebacks = server.tracebacks()
    if tracebacks:
        print(f"\nthe server logged {len(tracebacks)} traceback(s); the first:\n{tracebacks[0][-1500:]}")
    return not tracebacks


# ---------------------------------------------------------------------------------------- long inputs

#: The model pages and the setting that holds their text (a link parameter: ``?trained_model.sentence=...``).
LONG_PAGES = {"trained-model": "trained_model.sentence", "modern-lm": "modern_lm.prompt"}
#: The longest input either page reads, in tokens (attention_core/limits.py: MODEL_MAX_TOKENS, MODERN_LM_MAX_TOKENS).
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
    tokens: int = 0  # the row picker's options at the weights step: the tokens the page reads
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
        result.tokens = student.options(f"setting_{section}.entry_row")
        kinds: dict[str, Callable[[int], Any]] = {
            # another head, never opened before: the head picker, then the layer picker, in turn
            "another head": lambda i: student.choose(f"setting_{section}.{'head' if i % 2 == 0 else 'layer'}",
                                                     i // 2 + 1),
            # another entry: rows and columns in turn, spread over the whole matrix (other windows too)
            "another entry": lambda i: student.choose(f"setting_{section}.{'entry_row' if i % 2 == 0 else 'entry_col'}",
                                                      (i // 2 + 1) * 97),
            # another step: the step picker, every stage in turn
            "another step": lambda i: student.choose(f"setting_{section}.stage", i + 1),
        }
        for kind, change in kinds.items():
            result.clicks[kind] = [await student.change(*change(i)) for i in range(args.clicks)]
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
            ok &= _report_tracebacks(server)
    finally:
        if server:
            server.stop()
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()} on {os.cpu_count()} cores")
    print(f"\nbudget: every kind of click p95 < {budget_ms:g} ms, {LONG_TOKENS} tokens read, 0 exceptions "
          f"-> {'ok' if ok else 'OVER BUDGET'}")
    return ok


# ---------------------------------------------------------------------------------------- training

TRAINING = "training"  # "Watch attention learn" (app_pages/training.py)
TRAINING_SEED = "setting_training.seed"
TRAIN_BUTTON = "Train"
# The finished run's own widgets (the layer of the heads shown, the weight whose update is explained): a learner whose
# run has finished clicks these.
TRAINING_RESULT_KEYS = ("setting_training.layer", "setting_training.which", "setting_training.row",
                        "setting_training.col")
# ui/training.py's status(): "Starting your run…" (nobody ahead), "Waiting for the server: 1 run is ahead of yours",
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
        print(f"the teacher opened every page once before class: {await _warm_up(url, 1):.1f} s")
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
    server, result, sampler, tracebacks_ok = _on_server(args, _training)
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
    memory_ok = _report_memory_and_errors(args, server, sampler, result)
    p95 = 1000 * pct(result.clicks, .95)
    ok = (p95 < budget_ms and not result.exceptions and not result.failed and tracebacks_ok
          and memory_ok
          and bool(result.clicks) and len(saw) == len(learners) and not order_errors)
    print(f"\nbudget: interaction p95 < {budget_ms:g} ms, 0 exceptions, 0 failed, peak RSS < {args.rss_budget_mb:g} MB "
          "per server process, every student saw their run's progress (in order)"
          f" -> {'ok' if ok else 'OVER BUDGET'}")
    return ok


# Timed inside the page, on the page's clock: the click; the app's script state going to "running" and back
# to "notRunning" (the frontend has applied the run's script_finished); the watched input showing its new
# value; then two animation frames (the repaint). Timing it from Python through Playwright's websocket events added the relay of every frame of
# the run (browser -> Playwright's driver -> Python), about 150-200 ms per click that no user waits for.
_CLICK_AND_TIME = """async ([selector, watch, timeoutMs]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  const finished = new Promise((resolve) => {
    // Each change, not the attribute's value when the observer runs: a short run can go from running
    // back to notRunning before the observer is called.
    const observer = new MutationObserver((records) => {
      for (const record of records) {
        if (record.oldValue === "running") { observer.disconnect(); resolve(performance.now()); return; }
      }
    });
    observer.observe(app, {attributes: true, attributeFilter: ["data-test-script-state"], attributeOldValue: true});
  });
  const target = document.querySelector(selector);
  if (target.disabled) return null;  // a disabled button takes no click: no run would come
  const shown = () => document.querySelector(watch)?.value;
  const before = shown();
  const start = performance.now();
  target.click();
  const done = await Promise.race([finished, new Promise((r) => setTimeout(() => r(null), timeoutMs))]);
  if (done === null) return "lost";  // no run came: the click was lost
  // The run is over; wait (frame by frame, bounded) until the page shows its result: the watched input's
  // new value (the step picker, the d_k input).
  while (shown() === before && performance.now() - start < timeoutMs) {
    await new Promise((r) => requestAnimationFrame(r));
  }
  if (shown() === before) return "lost";
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return [performance.now() - start, done - start];
}"""


def _click(page, selector: str, watch: str, lost: list[str]) -> Optional[list[float]]:
    """Click and time it (``_CLICK_AND_TIME``): [total ms, run finished ms], or None when it is disabled.

    A click that no run answers within a third of ``RUN_TIMEOUT_S`` is noted in ``lost`` and made again
    (at most three times), as a student would click again; the time is the answered click's.
    """
    for _attempt in range(3):
        timed = page.evaluate(_CLICK_AND_TIME, [selector, watch, RUN_TIMEOUT_S * 1000 / 3])
        if timed != "lost":
            return timed
        lost.append(selector)
    raise RuntimeError(f"no run answered three clicks on {selector} ({RUN_TIMEOUT_S:.0f} s)")


#: The browser scenario's pages: (URL path, the field of its step picker or None, a number input's field): Next and
#: that number's + are clicked on each (the issue's five: a step page of each kind and the positional encoding).
BROWSER_PAGES = (
    ("self-attention", "self_attention.stage", "d_k"),
    ("causal", "causal.stage", "d_k"),
    ("multi-head", "multi_head.stage", "seed"),
    ("positional-encoding", None, "experiment_seed"),
    ("backward", "backward.stage", "d_k"),
)


def _key_class(field: str) -> str:
    """The CSS class Streamlit gives the element of the widget bound to ``field`` (``st-key-setting_d_k``)."""
    return ".st-key-setting_" + field.replace(".", "-")


def _browser_clicks(page, clicks: int, stage: Optional[str], number: str, results: dict, server_part: dict,
                    lost: dict, label: str) -> None:
    """Next (a step page) and ``number``'s + (every 4th click its −), ``clicks`` timed each after a warm-up."""
    from playwright.sync_api import expect

    up = f'{_key_class(number)} [data-testid="stNumberInputStepUp"]'
    down = f'{_key_class(number)} [data-testid="stNumberInputStepDown"]'
    targets = ({f"{label}: Next": (".st-key-step_next button", f"{_key_class(stage)} input")} if stage else {})
    targets[f"{label}: {number} +"] = (up, f"{_key_class(number)} input")
    for name, (selector, watch) in targets.items():
        times, to_finished = [], []
        lost[name] = []
        for i in range(clicks + 1):
            selector_now = down if selector == up and i % 4 == 3 else selector
            timed = _click(page, selector_now, watch, lost[name])
            if timed is None and selector_now.startswith(".st-key-step_next"):  # the last step: back one (untimed)
                # Previous can itself be disabled for a frame while a repaint is under way (its click is then
                # not made, and Next would stay disabled at the last step), and the step picker can show the
                # new step a frame before Next is enabled again: so each attempt waits until Previous is
                # enabled, clicks it until a run answers it, then waits for Next (up to 3 attempts).
                prev = ".st-key-step_prev button"
                for _attempt in range(3):
                    expect(page.locator(prev)).to_be_enabled(timeout=RUN_TIMEOUT_S * 1000)
                    if _click(page, prev, watch, lost[name]) is None:
                        continue  # disabled again at the click: not made, try again
                    try:
                        expect(page.locator(selector_now)).to_be_enabled(timeout=RUN_TIMEOUT_S * 1000 / 3)
                    except AssertionError:
                        continue  # still at the last step: go back again
                    timed = _click(page, selector_now, watch, lost[name])
                    if timed is not None:
                        break
            if timed is None:
                raise RuntimeError(f"{selector_now} is disabled")
            total, finished = timed
            if i:  # the first click is a warm-up
                times.append(total / 1000)
                to_finished.append(finished / 1000)
        results[name] = times
        server_part[name] = to_finished


def run_browser(args: argparse.Namespace) -> bool:
    from playwright.sync_api import sync_playwright

    pages = [entry for entry in BROWSER_PAGES if entry[0] in (getattr(args, "browser_pages", None) or
                                                             [p for p, _s, _n in BROWSER_PAGES])]
    print(f"== browser: Chromium on {', '.join('/' + p for p, _s, _n in pages)}, {args.clicks} clicks each, "
          "click -> repainted\n")
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install -y chromium (bash scripts/test.sh does)")
        return False
    server = None if args.url else Server(APP)
    url = args.url or server.url
    results: dict[str, list[float]] = {}
    server_part: dict[str, list[float]] = {}  # click -> the page learnt that the run finished
    lost: dict[str, list[str]] = {}  # clicks no run answered (made again)

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for path, stage, number in pages:
                page.goto(f"{url}/{path}")
                page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=120_000)
                page.locator(f'{_key_class(number)} [data-testid="stNumberInputStepUp"]').wait_for(timeout=60_000)
                _browser_clicks(page, args.clicks, stage, number, results, server_part, lost, path)
            browser.close()
    finally:
        if server:
            server.stop()
    ok = True
    print(f"{'click':<40} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}  verdict   (of which: until the run's "
          "end reached the page, p50 / p95 / max)")
    for name, times in results.items():
        over = 1000 * statistics.median(times) >= args.browser_budget_ms
        ok &= not over
        print(f"{name:<40} {fmt_ms(times)}  {'OVER BUDGET' if over else 'ok':<10}  {fmt_ms(server_part[name])}")
    for name, clicks in lost.items():
        if clicks:
            print(f"{name}: {len(clicks)} click(s) no run answered, made again: {', '.join(clicks)}")
    return ok


def run_class_live(args: argparse.Namespace) -> bool:
    """The ``class-live`` scenario (scripts/benchmark_class_live.py, which imports this module's client)."""
    sys.modules.setdefault("benchmark_load", sys.modules[__name__])  # run as a script: the module it imports is this
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    from benchmark_class_live import run_class_live as run

    return run(args)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenarios", nargs="*", metavar="scenario",
                        help="single, class, browser, training, long, class-live and/or profile "
                             "(default: single, class, browser)")
    parser.add_argument("--url", help="an already running app (loopback only), e.g. the lecture-hall proxy")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds of clicking in the class (default 60) and training (default 150) scenarios")
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between a student's changes (mean)")
    parser.add_argument("--clicks", type=int, default=10, help="timed changes per page (single, browser)")
    parser.add_argument("--drop", type=int, default=2, help="students who close their tab mid-run (class)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the students' timing")
    parser.add_argument("--floor-factor", type=float, default=1.5,
                        help="single: every page's median click at most this many times the one-widget floor")
    parser.add_argument("--p95-budget-ms", type=float, default=None,
                        help="interaction p95 budget (default: class 150, training 300, long 300)")
    parser.add_argument("--watch-share", type=float, default=0.5,
                        help="training: the share of the students who stay on the page and watch their run (0-1)")
    parser.add_argument("--rss-budget-mb", type=float, default=None,
                        help="per server process (each replica); default 1400 (class, training)")
    parser.add_argument("--browser-budget-ms", type=float, default=200.0,
                        help="browser: every click's median from the click to the repaint under this")
    parser.add_argument("--browser-page", dest="browser_pages", action="append", default=[],
                        choices=[path for path, _stage, _number in BROWSER_PAGES],
                        help="browser: only this page (repeatable; default: all of them)")
    parser.add_argument("--pid-file", action="append", default=[],
                        help="with --url: a file holding a server pid whose RSS to sample (repeatable)")
    parser.add_argument("--fault-cmd", help="a shell command to run --fault-at seconds into the class scenario")
    parser.add_argument("--fault-at", type=float, default=20.0)
    parser.add_argument("--cold", dest="warm", action="store_false",
                        help="class: no warm-up visit before the students arrive (a server nobody has opened yet)")
    parser.add_argument("--page", action="append", choices=sorted(LONG_PAGES), default=[],
                        help="long: the model page(s) to measure (default: both)")
    parser.add_argument("--words", type=int, default=700,
                        help="long: words of prose in the link's text (more than the page's 512 tokens)")
    parser.add_argument("--opens", type=int, default=3, help="long: first renders, each with a text of its own")
    parser.add_argument("--rounds", type=int, default=1,
                        help="class-live: rounds of both configurations (2: alone, class, class, alone); "
                             "--against: rounds of both versions (2: REF, this, this, REF)")
    parser.add_argument("--ratio-budget", type=float, default=1.1,
                        help="class-live: the Check's p95 in a class at most this times alone's")
    parser.add_argument("--teacher-budget-ms", type=float, default=200.0,
                        help="class-live: the teacher's dashboard refresh p95 under this")
    parser.add_argument("--class-store", choices=("sqlite", "postgresql"), default="sqlite",
                        help="class-live: the temporary class store of the server started here")
    parser.add_argument("--class-store-url",
                        help="class-live: the class store's SQLAlchemy URL (needed with --url: the one that server uses)")
    parser.add_argument("--against", metavar="REF",
                        help="single, class: measure the commit REF too (e.g. 7d7d826), back to back with this checkout "
                             "in the same run, with the floor beside them (scripts/benchmark_against.py)")
    parser.add_argument("--common-pages", action="store_true",
                        help="class --against: spread the students over the pages both versions have")
    parser.add_argument("--streamlit-arg", action="append", default=[], metavar="OPTION=VALUE",
                        help="pass --OPTION VALUE to the servers started here, e.g. runner.postScriptGC=true "
                             "(to compare against .streamlit/config.toml; repeatable)")
    if str(ROOT / "scripts") not in sys.path:  # run as a module (the tests): the scenario modules import this one
        sys.path.insert(0, str(ROOT / "scripts"))
    sys.modules.setdefault("benchmark_load", sys.modules[__name__])
    from benchmark_profile import add_arguments, run_profile

    add_arguments(parser)
    args = parser.parse_args(argv)
    for option in args.streamlit_arg:
        name, _, value = option.partition("=")
        STREAMLIT_ARGS.extend([f"--{name.removeprefix('--')}", value])
    if args.url:
        require_loopback(args.url)
    if (not 1 <= args.students <= 300 or not (args.duration is None or 0 < args.duration <= 900)
            or not 1 <= args.clicks <= 200 or not 0 <= args.watch_share <= 1 or not 1 <= args.words <= 5000
            or not 1 <= args.opens <= 20 or not 1 <= args.rounds <= 4):
        parser.error("bounded load: 1-300 students, duration up to 900 s, 1-200 clicks, a watch share of 0-1, "
                     "1-5000 words, 1-20 opens, 1-4 rounds")
    runners = {"single": run_single, "class": run_class, "browser": run_browser, "training": run_training,
               "long": run_long, "class-live": run_class_live, "profile": run_profile}
    scenarios = args.scenarios or ["single", "class", "browser"]  # training, long, class-live, profile: not by default
    unknown = set(scenarios) - set(runners)
    if unknown:
        parser.error(f"unknown scenario(s) {sorted(unknown)}: choose from {', '.join(runners)}")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    verdicts = {}
    for name in scenarios:
        verdicts[name] = runners[name](args)
        print()
    print("verdict: " + ", ".join(f"{n} {'ok' if v else 'OVER BUDGET'}" for n, v in verdicts.items()))
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
