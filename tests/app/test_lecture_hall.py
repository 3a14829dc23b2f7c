"""The lecture hall (deploy/lecture-hall/): two replicas behind HAProxy with sticky sessions.

Checked over Streamlit's real protocol (scripts/load/client.py's Student): the proxy's cookie
spreads students over the replicas and keeps each on its own; when a replica is killed, its
students' websockets close, they reconnect through the proxy to the other replica and get a fresh
session there, and the students of the other replica see nothing (same session, no exception).
Needs Debian's haproxy (`bash scripts/test.sh` installs it): skipped without it, failed under CI.
"""

from __future__ import annotations

import asyncio
import glob
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from websockets.exceptions import InvalidHandshake

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))  # the load benchmark's package (scripts/load/)
from load.client import SessionClosed, Student  # noqa: E402
from load.server import _free_port  # noqa: E402

HAPROXY = "/usr/sbin/haproxy"
KEYS = ("setting_self_attention.stage", "setting_d_k")


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(path: str, package: str) -> None:
    """Skip without Debian's ``package`` (its file ``path``) locally, fail under CI (``bash scripts/test.sh``
    installs it)."""
    if not glob.glob(path):
        message = f"{path} is missing: apt-get install -y {package} (bash scripts/test.sh does)"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)


def start_hall(run_dir: Path, *options: str) -> tuple[subprocess.Popen, str, str]:
    """lecture_hall.py with 2 replicas on free loopback ports and ``options``: (its process, the proxy's URL, what it
    printed until it was ready). Fails the test when it does not start."""
    port, first = _free_port(), _free_port()
    second = _free_port()
    if second != first + 1:  # the script numbers replica ports from --first-port
        first = second - 1
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "deploy" / "lecture-hall" / "lecture_hall.py"), "--replicas", "2",
         "--port", str(port), "--first-port", str(first), "--run-dir", str(run_dir), *options],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    printed = ""
    for line in process.stdout:  # its notes, then one line when the proxy answers /_stcore/health (or it exits)
        printed += line
        if "lecture hall ready" in line:
            return process, f"http://127.0.0.1:{port}", printed
    process.kill()
    pytest.fail(f"lecture_hall.py did not start: {printed[-3000:]}")


def stop_hall(process: subprocess.Popen, run_dir: Path) -> None:
    """SIGTERM, as Ctrl-C: the script ends and everything it started is gone."""
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    for pid_file in run_dir.glob("*.pid"):
        pid = int(pid_file.read_text())
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


async def reconnect(student, page: str = "self-attention") -> int:
    """As the browser does when its websocket closes: through the proxy again (no cookie: a fresh session on a live
    replica) and the page again, with the link the student holds. Tried again, as Streamlit's frontend does, until
    the proxy routes it (right after a replica dies HAProxy has answered 502 once in ~16 runs, before its health
    checks, 1 s apart, marked the replica down), within 30 s; returns the number of tries."""
    deadline = time.monotonic() + 30
    tries = 0
    while True:
        tries += 1
        await student.close()
        student.cookie = ""
        try:
            await student.connect(reconnect=True)
            await student.open_page(page)
            return tries
        except (OSError, SessionClosed, InvalidHandshake) as error:  # OSError: urllib's HTTPError 502 too
            if time.monotonic() > deadline:
                raise AssertionError(f"{student.name} could not reconnect in {tries} tries: {error}") from error
            await asyncio.sleep(0.2)  # the browser's back-off between tries


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    require(HAPROXY, "haproxy")
    run_dir = tmp_path_factory.mktemp("lecture-hall")
    process, url, printed = start_hall(run_dir)
    # Neither --postgres nor --store-url: one SQLite file in the run folder for both replicas, and a note says so.
    assert f"class store: sqlite:///{run_dir / 'classes.sqlite'}" in printed and "PostgreSQL is the" in printed
    yield url, run_dir
    stop_hall(process, run_dir)


def test_the_rendered_config_passes_haproxys_own_check(hall):
    _, run_dir = hall
    check = subprocess.run([HAPROXY, "-c", "-f", str(run_dir / "haproxy.cfg")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    text = (run_dir / "haproxy.cfg").read_text()
    assert "cookie ATTENTION_REPLICA insert" in text and text.count("\n    server r") == 2


def test_sticky_sessions_and_a_replica_killed_mid_lecture(hall):
    url, run_dir = hall

    async def lecture():
        students = []
        for i in range(8):  # one after another, each keeping its websocket: leastconn alternates
            student = Student(url, f"s{i}")
            await student.connect()
            students.append(student)
        await asyncio.gather(*(s.open_page("self-attention") for s in students))
        start = {s.name: (s.cookie, s.session_id) for s in students}
        await asyncio.gather(*(s.interact(KEYS) for s in students))
        assert {s.name: (s.cookie, s.session_id) for s in students} == start  # sticky: same replica, same session
        replicas = sorted({cookie for cookie, _ in start.values()})
        assert replicas == ["ATTENTION_REPLICA=r1", "ATTENTION_REPLICA=r2"], start

        victims = [s for s in students if s.cookie.endswith("=r1")]
        others = [s for s in students if s.cookie.endswith("=r2")]
        pid = int((run_dir / "replica-1.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)  # waiting for the kernel to end the process, polled

        moved = 0
        for student in victims:
            with pytest.raises(SessionClosed):
                await student.interact(KEYS)  # the websocket to the dead replica is closed
            await reconnect(student)  # as the browser does: through the proxy again
            await student.interact(KEYS)
            assert student.cookie == "ATTENTION_REPLICA=r2"
            assert student.session_id != start[student.name][1]  # a fresh session on the live replica
            moved += 1
        for student in others:
            await student.interact(KEYS)
            assert (student.cookie, student.session_id) == start[student.name]  # saw nothing
        for student in students:
            await student.close()
        return moved, [e for s in students for e in s.exceptions]

    moved, exceptions = asyncio.run(lecture())
    assert moved >= 1
    assert exceptions == []
