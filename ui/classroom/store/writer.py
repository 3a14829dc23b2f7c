"""Events reach the store in batches, from one thread per process: a click only appends to a bounded queue.

:class:`Writer` holds the queue (at most ``bound`` events waiting, those of a failed batch included), the latest
presence of each seat, and per class the events it had to drop (queue full) or cut off (the sender's rate limit,
:class:`RateLimit`). Its thread writes everything at least every ``interval_s`` seconds in one transaction; when the
database is unreachable or full it keeps the batch, records since when (:attr:`WriterStatus.unreachable_since`) and
tries again, backing off to ``max_backoff_s``. Past the bound, new events are dropped and counted; the counts reach the
store with the next batch that gets through, so the teacher sees them.

A process killed without warning loses what its writer had not yet written: at most ``interval_s`` of events plus
the batch in flight (the README's lecture-hall section gives the measured bound).
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from ui.classroom.store.store import Event, Presence, Store, StoreError

#: Events waiting per process at most (about 2 MB); past it, new events are dropped and counted.
QUEUE_BOUND = 20_000
#: The writer writes at least this often (seconds).
INTERVAL_S = 0.5
#: The most events written in one transaction.
BATCH = 5_000
#: Retry delay after a failure grows to this (seconds).
MAX_BACKOFF_S = 5.0
#: Old classes are purged at most this often (seconds).
PURGE_EVERY_S = 3600.0


@dataclass(frozen=True)
class WriterStatus:
    """What the teacher's page says about this process's writer.

    Attributes:
        unreachable_since: when the store first failed since its last success (epoch seconds), or None.
        reason: the driver's one-line reason for that failure ("" when reachable).
        waiting: events in the queue now.
        dropped: events this process dropped because the queue was full, since it started.
        written: events this process wrote, since it started.
    """

    unreachable_since: Optional[float]
    reason: str
    waiting: int
    dropped: int
    written: int


class RateLimit:
    """A token bucket: ``burst`` events at once, then ``per_s`` a second (one per session, held by the session).

    Example: ``RateLimit(burst=20, per_s=2)`` lets a student click through 20 steps quickly and answer every half
    second for as long as they like; a script sending 100 answers a second keeps 2 of them.
    """

    def __init__(self, burst: float = 20.0, per_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst, self.per_s, self._clock = burst, per_s, clock
        self._tokens, self._at = burst, clock()

    def allow(self) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.per_s)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


class Writer:
    """The process's one writer to ``store`` (see the module's docstring); start it with :meth:`start`."""

    def __init__(self, store: Store, *, bound: int = QUEUE_BOUND, interval_s: float = INTERVAL_S,
                 batch: int = BATCH, retention_s: Optional[float] = None, clock: Callable[[], float] = time.time) -> None:
        self.store, self.bound, self.interval_s, self.batch = store, bound, interval_s, batch
        self.retention_s, self._clock = retention_s, clock
        self._lock = threading.Lock()
        self._queue: collections.deque[Event] = collections.deque()
        self._presence: dict[tuple[str, str], Presence] = {}
        self._uncounted: dict[str, list[int]] = {}  # code -> [dropped, rate-limited], not yet in the store
        self._dropped = self._written = 0
        self._passes = 0  # write passes that succeeded
        self._unreachable_since: Optional[float] = None
        self._reason = ""
        self._wake = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._busy = False
        self._stop = False
        self._thread: Optional[threading.Thread] = None
        self._purged_at = 0.0

    # ------------------------------------------------------------------ called by script runs (cheap, never blocks)

    def put(self, event: Event) -> bool:
        """Queue an event; False when the queue is full (the event is dropped and counted)."""
        with self._lock:
            if len(self._queue) >= self.bound:
                self._dropped += 1
                self._uncounted.setdefault(event.class_code, [0, 0])[0] += 1
                return False
            self._queue.append(event)
            return True

    def seen(self, presence: Presence) -> None:
        """Where a seat is now (only the latest per seat is kept)."""
        with self._lock:
            self._presence[(presence.class_code, presence.seat)] = presence

    def rate_limited(self, class_code: str) -> None:
        """Count an event that a session's :class:`RateLimit` cut off."""
        with self._lock:
            self._uncounted.setdefault(class_code, [0, 0])[1] += 1

    def status(self) -> WriterStatus:
        with self._lock:
            return WriterStatus(self._unreachable_since, self._reason, len(self._queue), self._dropped, self._written)

    # ------------------------------------------------------------------ the thread

    def start(self) -> "Writer":
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="class-store-writer", daemon=True)
            self._thread.start()
        return self

    def stop(self, flush: bool = True) -> None:
        """Write what is waiting (if ``flush`` and the store answers), then end the thread."""
        if flush:
            self.write_now()
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wake the thread and wait until everything queued before this call was written; False on timeout (for
        tests and a clean shutdown)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            target = self._written + len(self._queue)
            # counts and presence noted since the last pass are written by a pass that starts after this call: the
            # one under way (if any) does not count
            passes_needed = self._passes + 1 + int(self._busy) if (self._uncounted or self._presence) else 0
        self._wake.set()
        with self._idle:
            while self._written < target or self._busy or self._queue or self._passes < passes_needed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._wake.set()
                self._idle.wait(timeout=min(left, 0.1))
        return True

    def _run(self) -> None:
        backoff = self.interval_s
        while not self._stop:
            self._wake.wait(timeout=backoff)
            self._wake.clear()
            ok = self.write_now()
            backoff = self.interval_s if ok else min(MAX_BACKOFF_S, max(backoff * 2, self.interval_s))
            if ok and self.retention_s and self._clock() - self._purged_at > PURGE_EVERY_S:
                self._purged_at = self._clock()
                try:
                    self.store.purge(self.retention_s, now=self._clock())
                except StoreError:
                    pass

    def write_now(self) -> bool:
        """One pass: write up to ``batch`` queued events, the presence and the counts; True on success (or nothing
        to write). On failure everything stays queued for the next pass."""
        with self._lock:
            if self._busy:
                return True
            batch = [self._queue.popleft() for _ in range(min(self.batch, len(self._queue)))]
            presence, self._presence = self._presence, {}
            uncounted, self._uncounted = self._uncounted, {}
            self._busy = True
        try:
            if batch or presence or uncounted:
                self.store.write(batch, presence.values(), {code: (d, r) for code, (d, r) in uncounted.items()})
        except StoreError as error:
            with self._idle:
                self._queue.extendleft(reversed(batch))  # back at the front, in order
                while len(self._queue) > self.bound:  # the bound holds the failed batch too: drop the newest
                    dropped = self._queue.pop()
                    self._dropped += 1
                    uncounted.setdefault(dropped.class_code, [0, 0])[0] += 1
                for key, value in presence.items():
                    self._presence.setdefault(key, value)
                for code, (d, r) in uncounted.items():
                    counts = self._uncounted.setdefault(code, [0, 0])
                    counts[0] += d
                    counts[1] += r
                if self._unreachable_since is None:
                    self._unreachable_since = self._clock()
                self._reason = str(error)
                self._busy = False
                self._idle.notify_all()
            return False
        with self._idle:
            self._written += len(batch)
            self._passes += 1
            self._unreachable_since, self._reason = None, ""
            self._busy = False
            self._idle.notify_all()
            more = bool(self._queue)
        if more:
            self._wake.set()
        return True
