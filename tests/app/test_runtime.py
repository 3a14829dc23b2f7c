"""The server's process-wide tuning (ui/runtime.py) and the classroom config (.streamlit/config.toml)."""

from __future__ import annotations

import gc
import socket
import tomllib
import weakref
from pathlib import Path

from attention_core.experiments.image import MAX_UPLOAD_BYTES
from ui import runtime

ROOT = Path(__file__).resolve().parents[2]


def _nodelay(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_tcp_nodelay_is_set_on_a_listener_and_inherited_by_the_connections_it_accepts():
    # Bound the way Streamlit's Starlette server binds (protocol 0: asyncio then leaves Nagle on).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert listener.proto == 0 and _nodelay(listener) == 0
        with socket.create_connection(listener.getsockname()) as early_client:
            early, _ = listener.accept()
            with early:
                assert _nodelay(early) == 0
                assert runtime.set_tcp_nodelay() >= 2  # the listener and the connection already open
                assert _nodelay(listener) == 1
                assert _nodelay(early) == 1
                assert _nodelay(early_client) == 1
        with socket.create_connection(listener.getsockname()):
            later, _ = listener.accept()
            with later:
                assert _nodelay(later) == 1  # inherited from the listener


def test_set_tcp_nodelay_leaves_other_sockets_open_and_usable():
    left, right = socket.socketpair()  # AF_UNIX: skipped, and must stay open
    with left, right:
        runtime.set_tcp_nodelay()
        left.sendall(b"still open")
        assert right.recv(16) == b"still open"


def test_imports_are_frozen_once_per_process():
    first = runtime.freeze_imports()
    assert first > 100_000  # torch, sympy, pandas and altair's objects: out of the per-run collection
    assert gc.get_freeze_count() >= first * 0.9
    assert runtime.freeze_imports() == first  # cached: a second call freezes nothing new
    # What the sessions make afterwards is still collected: a cycle created now is freed.
    class Node:
        pass

    node = Node()
    node.me = node  # a reference cycle: only the collector frees it
    alive = weakref.ref(node)
    del node
    gc.collect()
    assert alive() is None


def test_classroom_config():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["browser"]["gatherUsageStats"] is False
    assert config["server"]["maxUploadSize"] * 1024 * 1024 == MAX_UPLOAD_BYTES  # the image page's limit
    assert config["runner"]["postScriptGC"] is False  # with ui/runtime.py's gc.freeze(); README explains
    assert config["server"]["fileWatcherType"] == "none"


def test_the_entry_script_tunes_the_server():
    # app.py calls tune_server() before anything else runs a page (once per process: functools.cache).
    text = (ROOT / "app.py").read_text()
    assert "runtime.tune_server()" in text
    assert text.index("runtime.tune_server()") < text.index("page.run()")
