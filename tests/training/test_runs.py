"""The server's shared training runs: identical requests train once, others queue first come first served and say
their place, a finished run holds the same numbers as a run made directly, a failing run says why and the worker
goes on, and the queue forgets its oldest finished run when full. Waits on each run's ``finished`` event (no
sleeps)."""

from __future__ import annotations

import pytest

from attention_core.training.model import start
from attention_core.training.runs import RunKey, RunQueue
from attention_core.training.tasks import TASKS

TIMEOUT = 60  # seconds: a bound on a wait, not a synchronisation (the events are)


def _key(seed: int = 0, steps: int = 40, rate: float = 0.03) -> RunKey:
    return RunKey("previous", seed, rate, steps)


def test_identical_requests_share_one_run_with_the_numbers_of_a_direct_run():
    queue = RunQueue()
    first = queue.submit(_key())
    assert all(queue.submit(_key()) is first for _ in range(29))  # a class of thirty: one run
    assert first.finished.wait(TIMEOUT) and first.state == "done" and first.progress == 1.0
    direct = start(TASKS["previous"], 0, 0.03, 40)
    direct.advance(40)
    assert first.trainer.losses == direct.losses


def test_other_runs_queue_and_say_their_place():
    queue = RunQueue(slice_steps=5)
    runs = [queue.submit(_key(seed=s, steps=60)) for s in range(4)]
    assert queue.position(runs[3]) in (2, 3)  # the first may already have left the queue's front
    assert queue.position(runs[3]) > queue.position(runs[1])
    for run in runs:
        assert run.finished.wait(TIMEOUT) and run.state == "done"
    assert [queue.position(r) for r in runs] == [0, 0, 0, 0]
    assert len({tuple(r.trainer.losses) for r in runs}) == 4  # four seeds, four curves


def test_a_run_that_cannot_start_fails_with_its_reason_and_the_worker_goes_on():
    queue = RunQueue()
    bad = queue.submit(RunKey("previous", 0, 0.03, 0))  # 0 steps: refused by start()
    good = queue.submit(_key(steps=10))
    assert bad.finished.wait(TIMEOUT) and bad.state == "failed" and "steps" in bad.error
    assert good.finished.wait(TIMEOUT) and good.state == "done"


def test_a_diverging_run_stops_and_says_so():
    queue = RunQueue()
    run = queue.submit(_key(rate=1.0, steps=200))
    assert run.finished.wait(TIMEOUT) and run.state == "diverged" and run.steps_done < 200


def test_the_queue_forgets_its_oldest_finished_run_when_full():
    queue = RunQueue(max_runs=2)
    a = queue.submit(_key(seed=1, steps=5))
    assert a.finished.wait(TIMEOUT)
    b = queue.submit(_key(seed=2, steps=5))
    assert b.finished.wait(TIMEOUT)
    c = queue.submit(_key(seed=3, steps=5))
    assert queue.get(_key(seed=1, steps=5)) is None and queue.get(_key(seed=2, steps=5)) is b
    assert c.finished.wait(TIMEOUT)


def test_an_unknown_task_is_refused():
    with pytest.raises(KeyError):
        RunQueue().submit(RunKey("sorting", 0, 0.03, 10))
