"""What the page says about a run's pattern (attention_core/training/formation.py): which of the probe's cells are
framed and which other rows an induction head reads, measured against the runs themselves."""

from __future__ import annotations

import pytest

from attention_core.training import formation
from attention_core.training.model import start
from attention_core.training.tasks import TASKS


@pytest.fixture(scope="module")
def induction():
    """The page's default run: the induction task, seed 0, η = 0.003, 600 steps."""
    trainer = start(TASKS["induction"], seed=0, learning_rate=0.003, steps=600)
    while not trainer.done:
        trainer.advance(100)
    return trainer


def test_the_induction_probes_rows_by_what_the_task_asks_of_them():
    trainer = start(TASKS["induction"], seed=0, learning_rate=0.003, steps=1)  # the probe is drawn at the start
    tokens = [TASKS["induction"].token_label(int(t)) for t in trainer.probe.tokens[0]]
    assert " ".join(tokens) == "A D O A D O N H K L G E E C C N"  # segment A D O twice, then filler
    rows = formation.probe_rows(trainer)
    assert rows.framed == [(3, 1), (4, 2)]  # 4 A -> 2 D, 5 D -> 3 O: the second copy, but its last token
    # 6 O: the second copy's last token (then filler); 16 N: N came at 7, so just after it is 8 H.
    # Not 13 E or 15 C: right after their double, "just after the earlier copy" is the row itself.
    assert rows.repeats == [(5, 3), (15, 7)]
    assert rows.others == [0, 1, 2, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    for row, col in rows.repeats:
        assert tokens[col - 1] == tokens[row] and col < row


@pytest.mark.parametrize("task, others", [("previous", [0]), ("first", [0]), ("reverse", [0, 1, 2, 3, 4, 10])])
def test_a_one_layer_tasks_framed_rows_are_its_scored_rows(task, others):
    trainer = start(TASKS[task], seed=0, learning_rate=0.03, steps=1)
    rows = formation.probe_rows(trainer)
    assert rows.rows == [int(p) for p in trainer.probe.scored[0].nonzero()]
    assert rows.repeats == [] and rows.others == others


def test_the_induction_head_applies_its_rule_to_rows_nobody_scores(induction):
    """Why layer 2 shows more than the frames: at the end the rows that repeat a token outside the scored rows put
    nearly all their weight just after its earlier copy too; at the start they did not. Layer 1 became the
    previous-token head it is built on."""
    rows = formation.probe_rows(induction)
    first, last = induction.snapshots[0], induction.snapshots[-1]
    assert formation.mean_weight(first.weights[1, 0], rows.repeats) < 0.2
    assert formation.mean_weight(last.weights[1, 0], rows.repeats) >= 0.9
    assert formation.mean_weight(last.weights[1, 0], rows.framed) == pytest.approx(last.score)
    assert formation.previous_token_share(first.weights[0, 0]) < 0.2
    assert formation.previous_token_share(last.weights[0, 0]) >= 0.6
