"""What the page says about a run's pattern (attention_core/training/formation.py): which of the probe's cells are
framed and which other rows an induction head reads, measured against the runs themselves."""

from __future__ import annotations

import pytest
import torch

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


def test_a_passing_is_the_first_snapshot_at_the_level_and_the_one_before():
    steps = [0, 25, 50, 75]
    assert formation.first_passing(steps, [0.1, 0.4, 0.6, 0.9], 0.5) == formation.Passing(25, 50)
    assert formation.first_passing(steps, [0.7, 0.4, 0.6, 0.9], 0.5) == formation.Passing(None, 0)  # already there
    assert formation.first_passing(steps, [0.1, 0.2, 0.3, 0.4], 0.5) is None  # never
    nan = float("nan")  # never counts as passed
    assert formation.first_passing(steps, [3.0, nan, 1.0, 0.5], 2.0, falling=True) == formation.Passing(25, 50)


def test_the_held_out_measures_are_each_snapshots_model_on_sequences_it_never_trained_on(induction):
    """The loss, accuracy and share at a snapshot are what the run's own model, restored there, gives on the held-out
    sequences (seed + 4: neither the batches' seed + 1 nor the probe's seed + 3)."""
    measured = formation.held_out(induction)
    assert measured.steps == [s.step for s in induction.snapshots]
    batch = TASKS["induction"].batch(torch.Generator().manual_seed(4), formation.HELD_OUT)
    for index in (0, 8, -1):
        at = induction.at(induction.snapshots[index])
        with torch.no_grad():
            loss, accuracy, weights = at.loss_of(batch)
        assert measured.losses[index] == pytest.approx(float(loss), rel=1e-5)
        assert measured.accuracies[index] == pytest.approx(float(accuracy))
        assert measured.shares[index] == pytest.approx(TASKS["induction"].score(
            weights[:, 1, 0].reshape(-1, 16), batch.expected.reshape(-1, 16)), rel=1e-5)


def test_in_the_default_run_the_head_forms_as_the_loss_falls_and_the_probe_runs_ahead(induction):
    """What the page says about its default run, measured on it: on 256 held-out sequences the pattern's share passes
    0.5 within a snapshot interval of the loss getting halfway down; the one probe sequence passed 0.5 far earlier
    (it was 0.99 at step 200 with the loss still about 1: why the maps' share alone blurred the story)."""
    formed = formation.formation(induction)
    held = formed.held_out
    for passing, values, level, falling in ((formed.loss, held.losses, formed.loss_level, True),
                                            (formed.share, held.shares, formation.SHARE_LEVEL, False),
                                            (formed.accuracy, held.accuracies, formation.SHARE_LEVEL, False)):
        assert passing is not None and passing.before is not None
        before, after = values[held.steps.index(passing.before)], values[held.steps.index(passing.after)]
        assert (before > level >= after) if falling else (before < level <= after), (passing, before, after)
    assert formed.gap is not None and abs(formed.gap) <= formed.every
    assert 125 <= formed.share.after <= 225 and 125 <= formed.loss.after <= 225
    assert formed.probe_share.after <= formed.share.after - 100
    at_200 = held.steps.index(200)
    assert induction.snapshots[at_200].score > 0.95 and induction.snapshots[at_200].loss > 0.8
    assert held.shares[at_200] < 0.8
