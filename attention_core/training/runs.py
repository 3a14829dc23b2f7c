r"""Training runs shared by a whole server: one queue, one worker thread, identical runs trained once.

A class opens the same link: thirty sessions ask for the same run, and it is trained once (:meth:`RunQueue.submit`
returns the run that is already there). Runs with other settings wait in one first-come queue and are trained one
at a time by one daemon thread, in slices of :attr:`RunQueue.slice_steps` updates; between slices the thread sleeps
for :attr:`RunQueue.pause` seconds, so the server's script runs (which share the GIL) get their turn. Each run says
where it is: queued (its place in the queue), running (its steps so far), done, diverged or failed.

The queue keeps at most :attr:`RunQueue.max_runs` runs; when it is full, the oldest finished run is forgotten (a
later request trains it again, with the same numbers: runs are deterministic).

A floor-free module: it imports torch and :mod:`attention_core.training.model` only, and never streamlit.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

from attention_core.training.model import Trainer, start
from attention_core.training.tasks import TASKS


@dataclass(frozen=True)
class RunKey:
    """What identifies a run: the same key, the same numbers. ``task`` a key of :data:`TASKS`."""

    task: str
    seed: int
    learning_rate: float
    steps: int


@dataclass
class Run:
    """One run in the queue.

    Attributes:
        key: its :class:`RunKey`. trainer: the run itself (None until it starts). state: "queued", "running",
        "done", "diverged" or "failed". error: why it failed ("" otherwise). finished: set when it stops.
    """

    key: RunKey
    trainer: Optional[Trainer] = field(default=None, repr=False)
    state: str = "queued"
    error: str = ""
    finished: threading.Event = field(default_factory=threading.Event)

    @property
    def steps_done(self) -> int:
        """Updates made so far (0 while queued)."""
        return self.trainer.step if self.trainer is not None else 0

    @property
    def progress(self) -> float:
        """steps_done / steps, from 0 to 1 (1 once it stopped)."""
        return 1.0 if self.finished.is_set() else self.steps_done / self.key.steps


class RunQueue:
    """The server's training runs (see the module's docstring).

    Args:
        slice_steps: updates per slice before the worker gives the turn back. pause: seconds it sleeps between
            slices. max_runs: how many runs it keeps (queued, running and finished).
    """

    def __init__(self, slice_steps: int = 10, pause: float = 0.005, max_runs: int = 32):
        self.slice_steps, self.pause, self.max_runs = slice_steps, pause, max_runs
        self._runs: collections.OrderedDict[RunKey, Run] = collections.OrderedDict()
        self._queue: collections.deque[Run] = collections.deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._worker: Optional[threading.Thread] = None

    def submit(self, key: RunKey) -> Run:
        """The run of ``key``: the one already there (queued, running or finished), or a new one at the end of the
        queue. Raises KeyError for an unknown task (settings are validated before they get here)."""
        if key.task not in TASKS:
            raise KeyError(key.task)
        with self._lock:
            run = self._runs.get(key)
            if run is not None:
                self._runs.move_to_end(key)
                return run
            self._forget_finished()
            run = Run(key)
            self._runs[key] = run
            self._queue.append(run)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="training-runs", daemon=True)
                self._worker.start()
            self._wake.notify()
            return run

    def get(self, key: RunKey) -> Optional[Run]:
        """The run of ``key`` if the queue has it, else None (nothing is started)."""
        with self._lock:
            return self._runs.get(key)

    def position(self, run: Run) -> int:
        """How many runs are ahead of ``run`` (0: it is next, or running, or finished)."""
        with self._lock:
            for ahead, queued in enumerate(self._queue):
                if queued is run:
                    return ahead
            return 0

    def _forget_finished(self) -> None:
        while len(self._runs) >= self.max_runs:
            oldest = next((k for k, r in self._runs.items() if r.finished.is_set()), None)
            if oldest is None:
                return  # everything is queued or running: keep it (the queue is bounded by the class)
            del self._runs[oldest]

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue:
                    self._wake.wait()
                run = self._queue[0]
            self._train(run)
            with self._lock:
                self._queue.popleft()

    def _train(self, run: Run) -> None:
        key = run.key
        try:
            run.trainer = start(TASKS[key.task], key.seed, key.learning_rate, key.steps)
            run.state = "running"
            while not run.trainer.done:
                run.trainer.advance(self.slice_steps)
                time.sleep(self.pause)  # give the turn back to the server's script runs
            run.state = "diverged" if run.trainer.diverged else "done"
        except Exception as error:  # noqa: BLE001 - a run that cannot train says why; the worker goes on
            run.state, run.error = "failed", str(error)
        finally:
            run.finished.set()
