"""Builds shared by every session of the server, keyed by what they read.

:func:`built` runs a pure builder of ``attention_core`` (its result depends on its arguments only) or hands back
the result of an earlier run: thirty students who opened the same link, or who step back to numbers they had, get it
without recomputing. A :class:`~attention_core.settings.Settings` argument counts only by the fields the build read
(recorded while it ran, :mod:`attention_core.reads`), so that the palette, the language, the stage or another page's
settings rebuild nothing; so does a page's own group passed beside it (``build(settings, settings.alibi, edits)``,
:meth:`attention_core.page.Page.build_args`): its reads are recorded as that group's paths (``"alibi.num_heads"``),
so its stage, which no builder reads, is not part of the key. Results are read, never changed, by the pages.
Streamlit is not imported here.
"""

from __future__ import annotations

import collections
import functools
import pickle
import threading
from typing import Any, Callable, TypeVar

import numpy as np
import torch

from attention_core import reads
from attention_core.settings import GROUPS, Settings
from attention_core.stepthrough import as_of

T = TypeVar("T")

#: How many built walk-throughs (and other results of :func:`build_or_stop`) the server keeps, shared by every
#: session. Each is a few small tensors (3–12 kB of tensors for a step page's walk-through at its defaults, 220 kB for
#: the generation page's); a class on one link shares one. 256, not 64: a class spread over 25 pages, each student
#: trying a few values of each setting, made more distinct builds than 64, and the least recently used were built
#: again and again.
SHARED_BUILDS = 256

#: Builds run (cache misses) per builder's name since the process started: the tests count a click's builds.
BUILDS_RUN: collections.Counter = collections.Counter()

_BUILDS: collections.OrderedDict = collections.OrderedDict()  # (build, other args, read paths, values) -> result
#: build -> the sets of read paths its runs recorded (one per branch its code took: a few per builder, so this stays
#: small however many arguments the server sees; the results themselves are the bounded LRU above)
_READ_PATHS: dict[Callable, set[tuple[str, ...]]] = {}
_LOCK = threading.Lock()
_MISSING = object()  # a build may return None


def built(build: Callable[..., T], args: tuple, kwargs: dict) -> T:
    """``build(*args, **kwargs)``, or the shared result of an earlier call with the same read values.

    Arguments are keyed by value (plain values, bytes, the edits' dict), tensors and arrays by identity (the very
    same object: one that an earlier shared build made). One :class:`Settings` argument is keyed by the fields the
    build read; a page's group beside it (positional, equal to that settings object's own group of that key, as
    :meth:`~attention_core.page.Page.build_args` passes it) counts as part of it: keyed by the fields of it the build
    read (``"alibi.num_heads"``), and handed to the build as the settings' own. Other arguments (a group that is not
    the settings' own, or without a Settings argument) are not shared: built each time. Raises what ``build``
    raises (nothing is kept then).
    """
    positions = [i for i, a in enumerate(args) if isinstance(a, Settings)]
    try:
        if len(positions) != 1:
            return _shared_build(build, _value_key((args, kwargs)))
        where = positions[0]
        settings = args[where]
        groups = _group_slots(settings, args)
        plain = tuple(None if i == where or i in dict(groups) else a for i, a in enumerate(args))
        rest = (_value_key((plain, kwargs)), groups)
    except TypeError:  # not plain values: built each time
        BUILDS_RUN[build.__name__] += 1
        return build(*args, **kwargs)
    with _LOCK:
        known = list(_READ_PATHS.get(build, ()))
    for paths in known:
        key = (build, rest, paths, tuple(settings.get(p) for p in paths))
        with _LOCK:
            result = _BUILDS.get(key, _MISSING)
            if result is not _MISSING:
                _BUILDS.move_to_end(key)
        if result is not _MISSING:
            return as_of(result, settings)
    BUILDS_RUN[build.__name__] += 1
    fresh_args, fresh_kwargs = _from_key(rest[0])  # fresh copies: the build may not change what the key holds
    fresh_args = list(fresh_args)
    fresh_args[where] = settings
    for i, key in rest[1]:
        fresh_args[i] = getattr(settings, key)  # the settings' own group (equal to the argument given)
    with reads.recording() as read:
        result = build(*fresh_args, **fresh_kwargs)
    paths = Settings.paths() if reads.EVERYTHING in read else tuple(sorted(read))
    key = (build, rest, paths, tuple(settings.get(p) for p in paths))
    with _LOCK:
        _READ_PATHS.setdefault(build, set()).add(paths)
        _BUILDS[key] = result
        while len(_BUILDS) > SHARED_BUILDS:
            _BUILDS.popitem(last=False)
    return result


#: Each page group's class -> its key in :class:`Settings` (``settings.alibi`` is an instance of ``_GROUP_KEYS``'s
#: key for "alibi"): a group argument's reads are recorded under that key (``"alibi.num_heads"``).
_GROUP_KEYS: dict[type, str] = {group: key for key, group in GROUPS.items()}


def _group_slots(settings: Any, args: tuple) -> tuple[tuple[int, str], ...]:
    """((position, key), ...) of the page groups among ``args``: each must be ``settings``' own group of its key
    (the same values, its stage included), else TypeError (not shared: built each time)."""
    slots = []
    for i, arg in enumerate(args):
        key = _GROUP_KEYS.get(type(arg))
        if key is None:
            continue
        own = getattr(settings, key)
        if own is not arg and own != arg:
            raise TypeError(f"a {key} group that is not the settings' own")
        slots.append((i, key))
    return tuple(slots)


class _Same:
    """A tensor (or array) in a key: equal only to itself. The cache holds the key, so the object stays alive and its
    ``id`` is never reused while the entry is there; builds' results (where such tensors come from) are never
    changed, so the same object means the same numbers."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


def _value_key(value: Any) -> Any:
    """A hashable key equal for equal plain values (and the very same tensors); TypeError for anything else."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return ("same", _Same(value))
    if isinstance(value, Settings):
        return ("Settings", value)  # frozen dataclass of plain values: hashable, compared by value
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_value_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((_value_key(k), _value_key(v)) for k, v in value.items()), key=repr)))
    raise TypeError(f"not a plain value: {type(value).__name__}")


def _from_key(key: Any) -> Any:
    """The plain value back from :func:`_value_key` (a fresh dict or list: the builder may not change the key)."""
    kind, value = key
    if kind == "same":
        return value.value
    if kind == "dict":
        return {_from_key(k): _from_key(v) for k, v in value}
    if kind in ("tuple", "list"):
        items = [_from_key(v) for v in value]
        return tuple(items) if kind == "tuple" else items
    return value


@functools.lru_cache(maxsize=SHARED_BUILDS)
def _shared_build(build: Callable[..., T], key: Any) -> T:
    """A build without one Settings argument, keyed by every argument's value."""
    BUILDS_RUN[build.__name__] += 1
    args, kwargs = _from_key(key)
    return build(*args, **kwargs)




def spec(build: Callable[..., T]) -> Callable[..., T]:
    """``build`` (a chart's Vega-Lite spec from plain, hashable arguments) made once per server and set of arguments,
    handed out as a fresh copy every call (the caller may fill it in). Lighter than ``st.cache_data``, which hashes
    every argument with its own hasher on every call: a heatmap's spec was ~0.15 ms a call, this ~0.01 ms."""
    made = functools.lru_cache(maxsize=256)(lambda *args: pickle.dumps(build(*args), pickle.HIGHEST_PROTOCOL))

    @functools.wraps(build)
    def copied(*args: Any) -> T:
        return pickle.loads(made(*args))

    copied.cache_clear = made.cache_clear  # type: ignore[attr-defined]
    return copied
