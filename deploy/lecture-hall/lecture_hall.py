"""A lecture hall on one machine: N replicas of the app behind HAProxy with sticky sessions, one class store.

    python deploy/lecture-hall/lecture_hall.py --replicas 2 --port 8080 --postgres /srv/attention-hall-db
    (then open http://127.0.0.1:8080; Ctrl-C stops the proxy, every replica and the database server)

One Streamlit process runs Python code for one session at a time (one GIL); a class of 30
fits in one, a hall of 100+ does not. This starts ``--replicas`` copies of
``streamlit run app.py`` on loopback ports ``--first-port``, ``--first-port`` + 1, ...,
renders ``haproxy.cfg`` (this folder) with one ``server`` line per replica, and runs Debian's
``haproxy`` in front on ``--bind``:``--port``. Every replica gets the same random
``server.cookieSecret`` (so a browser moved to another replica keeps a valid XSRF cookie for
uploads). Pid files and logs go to ``--run-dir``: ``replica-1.pid``, ..., ``haproxy.pid``,
and ``*.log``; scripts/benchmark_load.py reads the replicas' pid files to sample their memory.

The class store (*A class, live*): every replica writes its students' events to the same database, so a class
started on one replica sees the students of all of them, and a student moved to another replica stays in it.
Its URL reaches each replica as ``ATTENTION_EXPLORER_CLASS_STORE`` in its environment, never on a command line
(it holds a password). Where it is:

- ``--postgres DIR``: a PostgreSQL server of Debian's package (``ui.classroom.store.cluster``), on 127.0.0.1 and a free
  port, its data in ``DIR`` (initdb on first use; the classes stay there from one run to the next); started
  before the replicas and stopped after them. As root, ``DIR`` belongs to the ``postgres`` user, which must be able
  to reach it (its parent folders need ``o+x``).
- ``--store-url URL``, or ``ATTENTION_EXPLORER_CLASS_STORE`` in this script's environment (better: no password
  in ``ps``): an existing database, e.g. ``postgresql+psycopg://user:password@db-host/attention_explorer``.
- Neither: the ``[connections.class_store] url`` of a ``secrets.toml`` the replicas would read (``.streamlit/``
  here or in the home folder) when there is one, else one SQLite file, ``RUN_DIR/classes.sqlite``, shared by the
  replicas of this machine (WAL mode lets several processes write it). A note says so: PostgreSQL is the lecture
  hall's store (SQLite serialises every replica's writes and cannot serve replicas on other machines).

The store is checked before the replicas start (an unreachable one is an error, not a hall whose classes fail).
Exits when it is told to stop (SIGINT, SIGTERM) and stops everything it started: HAProxy, the replicas (SIGTERM:
their writers write what is waiting), then the database server; or with an error message when the database,
haproxy or a replica fails to start.
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
import tomllib
import urllib.request
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
START_S = 120.0
#: The replicas' environment variable of the class store's URL (ui/classroom/class_live.py reads it).
STORE_ENV = "ATTENTION_EXPLORER_CLASS_STORE"


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


def secrets_store_url() -> Optional[str]:
    """The class store's URL in a ``secrets.toml`` Streamlit would read for the replicas (the repository's
    ``.streamlit/`` or the user's ``~/.streamlit/``), or None."""
    for path in (ROOT / ".streamlit" / "secrets.toml", Path.home() / ".streamlit" / "secrets.toml"):
        try:
            secrets_toml = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError):
            continue
        url = str(secrets_toml.get("connections", {}).get("class_store", {}).get("url", "")).strip()
        if url:
            return url
    return None


def check_store(url: str) -> str:
    """Create the class store's tables if they are missing (as a replica would); returns the URL without its
    password, for messages. Raises ``ui.classroom.store.store.StoreError`` (unreachable, refused) or ``ValueError``."""
    from ui.classroom.store.store import Store

    store = Store(url, connect_timeout_s=10.0)
    try:
        store.ensure_schema()
        return store.describe()
    finally:
        store.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2, help="Streamlit processes (about one per core)")
    parser.add_argument("--bind", default="127.0.0.1", help="the proxy's address (0.0.0.0 to serve a network)")
    parser.add_argument("--port", type=int, default=8080, help="the proxy's port: the link students open")
    parser.add_argument("--first-port", type=int, default=8601, help="the first replica's port")
    parser.add_argument("--run-dir", type=Path, default=Path("/tmp/attention-lecture-hall"))
    parser.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--postgres", type=Path, metavar="DIR",
                       help="start a PostgreSQL server on loopback with its data in DIR (initdb on first use) as the "
                            "class store, and stop it at exit")
    where.add_argument("--store-url", metavar="URL", default=None,
                       help=f"the class store's SQLAlchemy URL, an existing database (default: ${STORE_ENV}; the "
                            "environment keeps its password out of ps)")
    args = parser.parse_args(argv)
    if not 1 <= args.replicas <= 32:
        parser.error("--replicas: 1 to 32")
    if not Path(args.haproxy).exists():
        print(f"haproxy not found at {args.haproxy}: apt-get install -y haproxy", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))  # ui.classroom.store, as the replicas import it
    from ui.classroom.store.cluster import Cluster, ClusterError
    from ui.classroom.store.store import StoreError

    args.run_dir.mkdir(parents=True, exist_ok=True)
    cookie_secret = secrets.token_hex(32)
    processes: list[subprocess.Popen] = []
    cluster: Optional[Cluster] = None
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        store_url = args.store_url or os.environ.get(STORE_ENV, "").strip() or None
        if args.postgres is not None:
            folder = args.postgres.resolve()
            try:
                cluster = Cluster(folder)
                if cluster.initialised() and cluster.running():
                    cluster = None  # not ours to stop
                    print(f"a PostgreSQL server already runs on {folder} (another lecture hall, or one left by a run "
                          f"that was killed): stop it first (pg_ctl -D {folder / 'data'} stop, as its owner)",
                          file=sys.stderr)
                    return 1
                cluster.start()
            except Exception as error:  # ClusterError, OSError, psycopg's errors: the message says which
                print(f"PostgreSQL did not start in {folder}: {error}\n(as root the server runs as the 'postgres' "
                      "user, which must be able to reach that folder: its parent folders need o+x)", file=sys.stderr)
                return 1
            store_url = cluster.url
        elif store_url is None:
            store_url = secrets_store_url()
        if store_url is None:
            store_url = f"sqlite:///{args.run_dir.resolve() / 'classes.sqlite'}"
            print(f"note: the class store is one SQLite file, {args.run_dir.resolve() / 'classes.sqlite'}, shared by "
                  "the replicas of this machine. PostgreSQL is the lecture hall's store: --postgres DIR starts one "
                  "here, --store-url (or $ATTENTION_EXPLORER_CLASS_STORE) names one (README, A lecture hall).",
                  flush=True)
        try:
            shown = check_store(store_url)
        except StoreError as error:
            print(f"the class store cannot be used: {error}", file=sys.stderr)
            return 1
        except Exception as error:  # a malformed URL, a missing driver (SQLAlchemy's ArgumentError), in-memory SQLite
            print(f"the class store's URL cannot be used: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
        print(f"class store: {shown}", flush=True)
        # Secrets in the environment, not on the command line: the cookie secret and the store's URL (its password).
        env = {**os.environ, "STREAMLIT_SERVER_COOKIE_SECRET": cookie_secret, STORE_ENV: store_url}
        servers = []
        for i in range(1, args.replicas + 1):
            port = args.first_port + i - 1
            log = open(args.run_dir / f"replica-{i}.log", "w")
            replica = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                 "--server.address", "127.0.0.1", "--server.port", str(port)],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
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
                if stopping:  # Ctrl-C in a terminal reaches haproxy too
                    return 0
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
        if cluster is not None:  # after the replicas: their writers wrote what was waiting
            try:
                cluster.stop()
            except ClusterError as error:
                print(f"PostgreSQL did not stop: {error}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
