"""The servers the load benchmark measures: ``streamlit run`` on a free loopback port (started and stopped here, or
one already running on loopback), their memory (RSS, sampled while the load runs) and CPU time from /proc, and the
pid files of an already running lecture hall's replicas."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
FLOOR_APP = ROOT / "scripts" / "load_floor_app.py"
SERVER_START_S = 90.0
STREAMLIT_ARGS: list[str] = []  # --streamlit-arg: extra options for every server started here (comparisons)


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


def pids_from_files(paths: list[str]) -> Callable[[], list[int]]:
    def read() -> list[int]:
        pids = []
        for path in paths:
            with contextlib.suppress(OSError, ValueError):
                pids.append(int(Path(path).read_text().split()[0]))
        return pids
    return read


def cpu_seconds(pid: Optional[int]) -> float:
    """The CPU time (user + system, every thread) process ``pid`` has used so far, in seconds; 0 without a pid or
    when it is gone."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def class_store(folder: Path, database: str):
    """A class store for a benchmark, in ``folder`` (temporary: the caller removes it): a SQLite file, or with
    ``database`` "postgresql" a PostgreSQL cluster started on loopback (``ui.classroom.store.cluster``). Returns (its
    SQLAlchemy URL, the cluster to ``remove()`` at the end or None)."""
    if database != "postgresql":
        return f"sqlite:///{folder / 'classes.sqlite'}", None
    from ui.classroom.store.cluster import Cluster

    folder.chmod(0o755)  # as root the cluster runs as the postgres user: its parent must be traversable
    cluster = Cluster(folder / "postgresql").start()
    return cluster.url, cluster
