"""A local PostgreSQL cluster on loopback, from Debian's binaries: for the lecture hall and for the tests.

    cluster = Cluster(Path("/tmp/hall-db")).start()   # initdb on first use, then pg_ctl start -w
    cluster.url            # postgresql+psycopg://attention:<password>@127.0.0.1:<port>/attention_explorer
    cluster.stop()

``initdb`` and the server refuse to run as root: as root, the cluster's folder is given to the ``postgres`` user
(Debian's package creates it) and the binaries run as that user. The server listens on 127.0.0.1 only, its Unix
socket in the cluster's folder; the one role ``attention`` has a random password (``secrets``, 192 bits) kept in the
folder with mode 0600, and password authentication (SCRAM-SHA-256) is required, also on loopback.

Errors: :class:`ClusterError` when the binaries are missing (``apt-get install -y postgresql``) or a command fails
(its output in the message).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Optional

DATABASE = "attention_explorer"
ROLE = "attention"


class ClusterError(Exception):
    """PostgreSQL's binaries are missing, or initdb / pg_ctl failed."""


def binaries() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding initdb and pg_ctl. Raises :class:`ClusterError`."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise ClusterError("PostgreSQL's binaries are not installed (Debian: apt-get install -y postgresql)")
    return Path(found[-1]).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Cluster:
    """A cluster in ``folder`` (created by initdb on the first :meth:`start`), served on 127.0.0.1:``port``."""

    def __init__(self, folder: Path, port: Optional[int] = None) -> None:
        self.folder = Path(folder)
        self.port = port or free_port()
        self.bin = binaries()
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user is not None:
            try:
                pwd.getpwnam(self._user)
            except KeyError as error:
                raise ClusterError("running as root needs the 'postgres' user (Debian's postgresql package)") from error

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def password(self) -> str:
        return (self.folder / "password").read_text().strip()

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the cluster's database (psycopg 3)."""
        return f"postgresql+psycopg://{ROLE}:{self.password}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *args: str) -> str:
        result = subprocess.run([str(self.bin / args[0]), *args[1:]], capture_output=True, text=True,
                                user=self._user, cwd=self.folder, stdin=subprocess.DEVNULL, timeout=120)
        if result.returncode:
            raise ClusterError(f"{args[0]} failed ({result.returncode}): {(result.stdout + result.stderr).strip()}")
        return result.stdout

    def _own(self, path: Path) -> None:
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def initialised(self) -> bool:
        return (self.data / "PG_VERSION").exists()

    def init(self) -> None:
        """initdb with a random password for the role ``attention`` (SCRAM-SHA-256, local and loopback)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        self._own(self.folder)
        password_file = self.folder / "password"
        password_file.write_text(secrets.token_urlsafe(24) + "\n")
        password_file.chmod(0o600)
        self._own(password_file)
        self._run("initdb", "-D", str(self.data), "-U", ROLE, "--auth=scram-sha-256", f"--pwfile={password_file}",
                  "-E", "UTF8", "--locale=C.UTF-8")

    def start(self) -> "Cluster":
        """initdb if needed, start the server (``pg_ctl start -w`` waits until it accepts connections) and create
        the database if it is missing."""
        if not self.initialised():
            self.init()
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.folder}"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-o", options, "-w",
                  "-t", "60", "start")
        self._create_database()
        return self

    def _create_database(self) -> None:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=ROLE, password=self.password,
                             dbname="postgres", autocommit=True, connect_timeout=10) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
                conn.execute(f"CREATE DATABASE {DATABASE}")  # a constant name: no user text

    def running(self) -> bool:
        return subprocess.run([str(self.bin / "pg_ctl"), "-D", str(self.data), "status"], capture_output=True,
                              user=self._user, cwd=self.folder).returncode == 0

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: disconnect clients; ``immediate``: like a crash)."""
        if self.initialised() and self.running():
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def remove(self) -> None:
        """Stop the server and delete the folder."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
