"""Which settings a computation reads: recorded while it runs, so that a cached result is keyed by those alone.

:func:`install` gives the settings classes (``Settings`` and each page's group, see :mod:`attention_core.settings`)
an attribute hook that, while :func:`recording` is active in the current thread (a ``contextvars.ContextVar``),
adds the path of every field read (``"d_k"``, ``"alibi.num_heads"``). The hook is on the classes only while some
recording is under way; otherwise a settings read is a plain attribute read (every run reads settings hundreds of
times; with the hook always on that was ~3 % of a busy server's time).

Conservative by construction: anything that reads a settings object whole is recorded as reading every field
(:data:`EVERYTHING`): hashing or comparing it (the dataclass's ``__hash__`` / ``__eq__`` read each field through the
hook), ``dataclasses.replace`` / ``asdict``, and ``__dict__``, pickling or copying (which may bypass the hook, so
they are recorded as :data:`EVERYTHING` outright). A read that is not recorded would make a cache return a stale
result; a read recorded too broadly only makes it rebuild.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from typing import Any, Callable, Iterator, Optional

#: Recorded when an object was read whole (its ``__dict__``, a pickle, a copy): every field counts as read.
EVERYTHING = "*"

_RECORDER: contextvars.ContextVar[Optional[set]] = contextvars.ContextVar("settings_reads", default=None)

#: Attribute names through which an object's fields can be read without the hook.
_WHOLE = frozenset({"__dict__", "__getstate__", "__reduce__", "__reduce_ex__", "__getnewargs__",
                    "__getnewargs_ex__", "__copy__", "__deepcopy__"})


_HOOKS: list[tuple[type, Callable[[Any, str], Any]]] = []  # (class, its recording __getattribute__)
_LOCK = threading.Lock()
_active = 0  # recordings under way, in any thread: the hooks are on the classes only while there is one


@contextlib.contextmanager
def recording() -> Iterator[set]:
    """``with recording() as read:`` every field path read inside (in this thread) is added to ``read``.

    The hooks are put on the settings classes when the first recording of the process starts and taken off when the
    last one ends, so that a settings read outside any recording costs what a plain attribute read does (a recording
    is a build that misses the shared cache: rare). Another thread reading settings while a recording is under way
    goes through the hook, which records nothing for it (the recorder is per context).
    """
    global _active
    read: set = set()
    token = _RECORDER.set(read)
    with _LOCK:
        _active += 1
        if _active == 1:
            for cls, hook in _HOOKS:
                cls.__getattribute__ = hook
    try:
        yield read
    finally:
        _RECORDER.reset(token)
        with _LOCK:
            _active -= 1
            if _active == 0:
                for cls, _hook in _HOOKS:
                    del cls.__getattribute__  # back to the inherited, built-in lookup


def install(cls: type, prefix: str, fields: frozenset[str]) -> None:
    """Record reads of ``fields`` of ``cls``'s instances as ``prefix + name`` (``prefix``: "" or "alibi.").

    Fields not in ``fields`` (a page's group inside ``Settings``) are not recorded themselves: reads inside them are,
    by their own class's hook. ``cls`` must not define ``__getattribute__`` itself.
    """
    if "__getattribute__" in vars(cls):
        raise TypeError(f"{cls.__name__} defines __getattribute__ itself")
    base = cls.__getattribute__

    def __getattribute__(self, name: str):
        read = _RECORDER.get()
        if read is not None:
            if name in fields:
                read.add(prefix + name)
            elif name in _WHOLE:
                read.add(EVERYTHING)
        return base(self, name)

    with _LOCK:
        _HOOKS.append((cls, __getattribute__))
        if _active:
            cls.__getattribute__ = __getattribute__
