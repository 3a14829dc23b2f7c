"""The server's process-wide tuning (ui/runtime.py) and the classroom config (.streamlit/config.toml)."""

from __future__ import annotations

import contextlib
import gc
import socket
import threading
import tomllib
import weakref
from pathlib import Path

import pytest
from conftest import open_app

from attention_core.lessons.image_attention.page import MAX_UPLOAD_BYTES
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


def _another_thread_can_take_the_turn() -> bool:
    """Whether a run in another thread would get the turn right now (a non-blocking try: no timing involved)."""
    result = []

    def attempt():
        got = runtime._TURN.acquire(blocking=False)
        if got:
            runtime._TURN.release()
        result.append(got)

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    return result[0]


def test_script_runs_take_turns_and_a_nested_run_passes_through():
    assert _another_thread_can_take_the_turn() and not runtime.holds_turn()
    with runtime.one_run_at_a_time():
        assert runtime.holds_turn()
        assert not _another_thread_can_take_the_turn()
        with runtime.one_run_at_a_time():  # the step-through's fragment inside a whole-page run
            assert not _another_thread_can_take_the_turn()
        assert runtime.holds_turn() and not _another_thread_can_take_the_turn()
    assert _another_thread_can_take_the_turn() and not runtime.holds_turn()


@pytest.mark.parametrize("ending", [ValueError, KeyboardInterrupt])
def test_the_turn_is_given_back_however_a_run_ends(ending):
    # st.stop() and st.rerun() end a run with an exception, as a bug would.
    with pytest.raises(ending), runtime.one_run_at_a_time():
        raise ending()
    assert _another_thread_can_take_the_turn() and not runtime.holds_turn()


def test_stepping_aside_lets_other_runs_go_and_takes_the_turn_back():
    with runtime.one_run_at_a_time(), runtime.one_run_at_a_time():
        with runtime.step_aside():
            assert not runtime.holds_turn()
            assert _another_thread_can_take_the_turn()
        assert runtime.holds_turn() and not _another_thread_can_take_the_turn()
    assert _another_thread_can_take_the_turn()  # both levels given back at the end
    with runtime.step_aside():  # outside a run: nothing to give back
        assert not runtime.holds_turn()
    assert _another_thread_can_take_the_turn()


def test_the_router_the_page_body_and_the_step_through_fragment_each_take_the_turn(monkeypatch):
    taken = []
    real = runtime.one_run_at_a_time

    @contextlib.contextmanager
    def recording():
        with real():
            taken.append(threading.current_thread().name)
            yield

    monkeypatch.setattr(runtime, "one_run_at_a_time", recording)
    at = open_app("app_pages/modern_lm.py")  # the step-through element inside a model page's open head
    runs = len(taken)
    assert runs >= 2 and all(name != threading.main_thread().name for name in taken)  # in the script thread
    at.toggle(key="setting_practice").set_value(True).run()
    # One whole-page run: app.py takes the turn, the page's body (its fragment, ui/page_body.py), the heads' part,
    # the open head's part inside it and the step-through element's part inside that take it again inside (each runs
    # alone on a click inside it).
    assert len(taken) == runs + 5
    assert not runtime.holds_turn() and _another_thread_can_take_the_turn()


def test_the_trained_model_page_steps_aside_while_the_model_loads_and_runs(monkeypatch):
    from ui.page_parts import trained_model_data

    seen = []
    real_model, real_data = trained_model_data.model, trained_model_data.sentence_data

    def model():
        seen.append(("model", runtime.holds_turn(), _another_thread_can_take_the_turn()))
        return real_model()

    def sentence_data(*args):
        seen.append(("sentence", runtime.holds_turn(), _another_thread_can_take_the_turn()))
        return real_data(*args)

    monkeypatch.setattr(trained_model_data, "model", model)
    monkeypatch.setattr(trained_model_data, "sentence_data", sentence_data)
    at = open_app("app_pages/trained_model.py")
    assert not at.exception
    assert ("model", False, True) in seen and ("sentence", False, True) in seen


def test_the_scaling_experiment_steps_aside_on_a_miss_and_is_shared_after(monkeypatch):
    """*Why divide by √d_k?*: a new sample count draws the samples (~0.1–0.5 s of torch, which lets go of Python's
    lock); the run steps aside meanwhile, so a class's other clicks are not queued behind it. The same numbers again
    (this session or another) come from the server's store: no sampling, no stepping aside."""
    from attention_core.lessons.why_sqrt_dk import page as scaling
    from ui import experiments

    seen = []
    real = scaling.run_scaling_experiment

    def run(*args):
        seen.append((args, runtime.holds_turn(), _another_thread_can_take_the_turn()))
        return real(*args)

    monkeypatch.setattr(scaling, "run_scaling_experiment", run)
    monkeypatch.setattr(experiments, "_EXPERIMENTS", type(experiments._EXPERIMENTS)())
    at = open_app("app_pages/why_sqrt_dk.py")
    assert not at.exception and len(seen) == 1 and seen[0][1:] == (False, True)
    first = experiments._EXPERIMENTS[seen[0][0]]
    again = open_app("app_pages/why_sqrt_dk.py")  # another session, the same settings
    assert not again.exception and len(seen) == 1 and experiments._EXPERIMENTS[seen[0][0]] is first
