"""A lecture hall on one machine: N replicas of the app behind HAProxy with sticky sessions.

    python deploy/lecture-hall/lecture_hall.py --replicas 2 --port 8080
    (then open http://127.0.0.1:8080; Ctrl-C stops the proxy and every replica)

One Streamlit process runs Python code for one session at a time (one GIL); a class of 30
fits in one, a hall of 100+ does not. This starts ``--replicas`` copies of
``streamlit run app.py`` on loopback ports ``--first-port``, ``--first-port`` + 1, ...,
renders ``haproxy.cfg`` (this folder) with one ``server`` line per replica, and runs Debian's
``haproxy`` in front on ``--bind``:``--port``. Every replica gets the same random
``server.cookieSecret`` (so a browser moved to another replica keeps a valid XSRF cookie for
uploads). Pid files and logs go to ``--run-dir``: ``replica-1.pid``, ..., ``haproxy.pid``,
and ``*.log``; scripts/benchmark_load.py reads the replicas' pid files to sample their memory.

Exits when it is told to stop (SIGINT, SIGTERM) and stops everything it started, or with an
error message when haproxy or a replica fails to start.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
START_S = 120.0


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read().decode().strip() == "ok"
    except OSError:
        return False


def render_config(bind: str, servers: list[tuple[str, str]]) -> str:
    """haproxy.cfg with the frontend's address and one ``server`` line per (name, host:port)."""
    lines = "\n".join(f"    server {name} {address} cookie {name}" for name, address in servers)
    return (HERE / "haproxy.cfg").read_text().replace("__BIND__", bind).replace("__SERVERS__", lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2, help="Streamlit processes (about one per core)")
    parser.add_argument("--bind", default="127.0.0.1", help="the proxy's address (0.0.0.0 to serve a network)")
    parser.add_argument("--port", type=int, default=8080, help="the proxy's port: the link students open")
    parser.add_argument("--first-port", type=int, default=8601, help="the first replica's port")
    parser.add_argument("--run-dir", type=Path, default=Path("/tmp/attention-lecture-hall"))
    parser.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    args = parser.parse_args(argv)
    if not 1 <= args.replicas <= 32:
        parser.error("--replicas: 1 to 32")
    if not Path(args.haproxy).exists():
        print(f"haproxy not found at {args.haproxy}: apt-get install -y haproxy", file=sys.stderr)
        return 2
    args.run_dir.mkdir(parents=True, exist_ok=True)
    cookie_secret = secrets.token_hex(32)
    processes: list[subprocess.Popen] = []
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        servers = []
        for i in range(1, args.replicas + 1):
            port = args.first_port + i - 1
            log = open(args.run_dir / f"replica-{i}.log", "w")
            replica = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                 "--server.address", "127.0.0.1", "--server.port", str(port)],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "STREAMLIT_SERVER_COOKIE_SECRET": cookie_secret})  # not on the command line
            processes.append(replica)
            (args.run_dir / f"replica-{i}.pid").write_text(f"{replica.pid}\n")
            servers.append((f"r{i}", f"127.0.0.1:{port}"))
        deadline = time.monotonic() + START_S
        for (name, address), replica in zip(servers, processes):
            while not _healthy(f"http://{address}/_stcore/health"):
                if replica.poll() is not None or time.monotonic() > deadline or stopping:
                    print(f"replica {name} did not start; see {args.run_dir}/replica-*.log", file=sys.stderr)
                    return 1
                time.sleep(0.2)  # polling the health endpoint
        config = args.run_dir / "haproxy.cfg"
        config.write_text(render_config(f"{args.bind}:{args.port}", servers))
        check = subprocess.run([args.haproxy, "-c", "-f", str(config)], capture_output=True, text=True)
        if check.returncode:
            print(f"haproxy refused {config}:\n{check.stdout}{check.stderr}", file=sys.stderr)
            return 1
        proxy = subprocess.Popen([args.haproxy, "-db", "-f", str(config)], stdin=subprocess.DEVNULL,
                                 stdout=open(args.run_dir / "haproxy.log", "w"), stderr=subprocess.STDOUT)
        processes.append(proxy)
        (args.run_dir / "haproxy.pid").write_text(f"{proxy.pid}\n")
        url = f"http://{'127.0.0.1' if args.bind in ('0.0.0.0', '::') else args.bind}:{args.port}"
        while not _healthy(f"{url}/_stcore/health"):
            if proxy.poll() is not None or time.monotonic() > deadline or stopping:
                print(f"haproxy did not start; see {args.run_dir}/haproxy.log", file=sys.stderr)
                return 1
            time.sleep(0.2)
        print(f"lecture hall ready: {url} -> {', '.join(a for _, a in servers)} (Ctrl-C stops it)", flush=True)
        (args.run_dir / "ready").write_text(url + "\n")
        while not stopping:  # until Ctrl-C / SIGTERM (a replica that dies stays down; HAProxy routes around it)
            try:
                proxy.wait(timeout=1.0)
                print("haproxy exited; stopping", file=sys.stderr)
                return 1
            except subprocess.TimeoutExpired:
                pass
        return 0
    finally:
        (args.run_dir / "ready").unlink(missing_ok=True)
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
