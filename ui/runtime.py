"""Process-wide tuning of the server (once per process, never per session).

Streamlit runs a full garbage collection (``gc.collect(2)``) after every script run
(config ``runner.postScriptGC``). With torch, sympy, pandas and altair imported the
collector walks about 490,000 long-lived objects each time: 150-250 ms with the GIL held,
during which every other student's click waits. :func:`freeze_imports` moves everything
that exists after the heavy imports into the permanent generation (``gc.freeze()``, Python
3.7+): those objects are never collected anyway (modules, classes, functions, torch's
operator tables, sympy's singletons), and the per-run collection then only looks at what
the sessions made since, well under a millisecond. Cyclic garbage made by the sessions is
still collected after every run, so memory stays flat over a long class.

The trained model's page imports transformers and loads the model on its first visit;
:func:`freeze_again` is called right after that load (once per server, from the cached
loader) so its objects leave the collector's walk too.

:func:`set_tcp_nodelay` turns off Nagle's algorithm on the server's sockets. Streamlit's
Starlette server binds its listening socket with protocol 0, and asyncio only sets
TCP_NODELAY on sockets whose protocol is IPPROTO_TCP, so every connection keeps Nagle
on (Streamlit's Tornado server set it on each websocket). A rerun sends a small
``new_session`` message and then the page's deltas: the deltas wait until the browser
acknowledges the first message, which a client's delayed ACK holds back up to 40 ms on
Linux (longer on other systems). Measured with a one-widget app: 44 ms per click with
Nagle on, 5 ms with the browser side acknowledging at once.

Python runs one thread at a time (the GIL), and Streamlit gives every script run its own
thread: thirty students' clicks, run side by side, share the one interpreter in 5 ms slices, so
each click finishes only when the clicks around it have nearly finished too (and the event loop
that sends the results waits for its slices as well). :func:`one_run_at_a_time` lets script runs
take turns instead: the same work, but a click is answered as soon as its own run is done. The
router (app.py) and the step-through's fragment take the turn. Work that waits rather than computes
for a long time (loading the trained model once per server, running it on a new sentence) steps
aside (:func:`step_aside`) so the class is not held up by it. Measured with 30 students (the class
scenario): click to page updated, p50 / p95 67 / 425 ms side by side, 58 / 176 ms taking turns.

Measured: scripts/benchmark_load.py (docs/performance.md).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import socket
import threading
from typing import Iterator

#: torch's intra-op threads for the server once the model is loaded. On the 2-core machines this app runs
#: on, shared by every session (and whatever else runs there), one thread per forward pass was both
#: faster and far steadier than two: 64 tokens in a median 23 ms (90th percentile 31 ms) against 131 ms
#: (420 ms) with two threads under load (scripts/benchmark_load.py model). Sessions still run in parallel.
TORCH_THREADS = 1


def configure_torch() -> None:
    """Set torch's intra-op threads to :data:`TORCH_THREADS` (process-wide; the other pages' matrices are tiny)."""
    import torch  # here, not at the top: the app imports torch anyway, this module stays a light import

    torch.set_num_threads(TORCH_THREADS)



@functools.cache  # once per process: a second freeze would also pin the sessions' own objects
def freeze_imports() -> int:
    """Import the heavy libraries, collect once, then freeze what is left; returns the frozen count."""
    import altair  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import sympy  # noqa: F401
    import torch  # noqa: F401

    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def set_tcp_nodelay() -> int:
    """Set TCP_NODELAY on every TCP socket of this process; returns how many.

    A listening socket passes the option to every connection it accepts later (Linux),
    so calling this once per process covers the connections to come; the ones already
    open are set directly. Where ``/proc/self/fd`` does not exist (not Linux), does nothing
    and returns 0. Never raises for a socket it cannot inspect (it skips it).
    """
    if not os.path.isdir("/proc/self/fd"):
        return 0
    count = 0
    for entry in os.scandir("/proc/self/fd"):
        try:
            if not os.readlink(entry.path).startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(int(entry.name)))  # a second handle on the same socket
        except (OSError, ValueError):
            continue
        with sock:  # closes the duplicate only
            if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    count += 1
    return count


@functools.cache  # once per process
def tune_server() -> None:
    """Everything above, once per server process: call at the top of the entry script."""
    freeze_imports()
    set_tcp_nodelay()


def freeze_again() -> int:
    """Freeze what a one-time, server-wide load (the trained model) just created; returns the frozen count.

    Call only from code that runs once per server (``st.cache_resource``), never per session.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


_TURN = threading.RLock()  # re-entrant: the step-through's fragment takes it again inside a whole-page run
_held = threading.local()  # how many times this thread holds the turn (a script run is one thread)


@contextlib.contextmanager
def one_run_at_a_time() -> Iterator[None]:
    """Hold the server's one turn for a script run (or a fragment run): other runs wait until it ends.

    Re-entrant (a nested call in the same thread passes straight through). Released however the run ends:
    normally, ``st.stop()``, ``st.rerun()`` or an exception. Per server process, not per session.
    """
    with _TURN:
        _held.depth = getattr(_held, "depth", 0) + 1
        try:
            yield
        finally:
            _held.depth -= 1


@contextlib.contextmanager
def step_aside() -> Iterator[None]:
    """Let other runs go while this one waits on something slow that is not Python (a model load, a forward
    pass), then take the turn back. Does nothing in a thread that does not hold the turn.

    Call it around the cached call (``with runtime.step_aside(): trained_model_data.model()``), never inside a cached
    function: a thread waiting to take the turn back must not hold a cache's lock that the run holding the
    turn may wait for.
    """
    depth = getattr(_held, "depth", 0)
    for _ in range(depth):
        _TURN.release()
    _held.depth = 0
    try:
        yield
    finally:
        for _ in range(depth):
            _TURN.acquire()
        _held.depth = depth


def holds_turn() -> bool:
    """Whether the current thread holds the turn (for tests and assertions)."""
    return getattr(_held, "depth", 0) > 0
