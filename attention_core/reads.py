"""Which settings a computation reads: recorded while it runs, so that a cached result is keyed by those alone.

:func:`install` gives the settings classes (``Settings`` and each page's group, see :mod:`attention_core.settings`)
an attribute hook that, while :func:`recording` is active in the current thread (a ``contextvars.ContextVar``),
adds the path of every field read (``"d_k"``, ``"alibi.num_heads"``). Outside a recording the hook costs one
context-variable lookup per attribute read.

Conservative by construction: anything that reads a settings object whole is recorded as reading every field
(:data:`EVERYTHING`): hashing or comparing it (the dataclass's ``__hash__`` / ``__eq__`` read each field through the
hook), ``dataclasses.replace`` / ``asdict``, and ``__dict__``, pickling or copying (which may bypass the hook, so
they are recorded as :data:`EVERYTHING` outright). A read that is not recorded would make a cache return a stale
result; a read recorded too broadly only makes it rebuild.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator, Optional

#: Recorded when an object was read whole (its ``__dict__``, a pickle, a copy): every field counts as read.
EVERYTHING = "*"

_RECORDER: contextvars.ContextVar[Optional[set]] = contextvars.ContextVar("settings_reads", default=None)

#: Attribute names through which an object's fields can be read without the hook.
_WHOLE = frozenset({"__dict__", "__getstate__", "__reduce__", "__reduce_ex__", "__getnewargs__",
                    "__getnewargs_ex__", "__copy__", "__deepcopy__"})


@contextlib.contextmanager
def recording() -> Iterator[set]:
    """``with recording() as read:`` every field path read inside (in this thread) is added to ``read``."""
    read: set = set()
    token = _RECORDER.set(read)
    try:
        yield read
    finally:
        _RECORDER.reset(token)


def install(cls: type, prefix: str, fields: frozenset[str]) -> None:
    """Record reads of ``fields`` of ``cls``'s instances as ``prefix + name`` (``prefix``: "" or "alibi.").

    Fields not in ``fields`` (a page's group inside ``Settings``) are not recorded themselves: reads inside them are,
    by their own class's hook.
    """
    base = cls.__getattribute__

    def __getattribute__(self, name: str):
        read = _RECORDER.get()
        if read is not None:
            if name in fields:
                read.add(prefix + name)
            elif name in _WHOLE:
                read.add(EVERYTHING)
        return base(self, name)

    cls.__getattribute__ = __getattribute__
