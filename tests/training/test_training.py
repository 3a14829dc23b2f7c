"""Training a tiny attention-only Transformer on tasks whose pattern is known: each task's trained head shows its
pattern, the runs are deterministic, a diverging run stops with a flag, and one explained Adam update equals
torch.autograd's gradient and the optimizer's own step."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from attention_core.errors import InputError
from attention_core.training.model import DIVERGED_FACTOR, MAX_LEARNING_RATE, MAX_STEPS, start
from attention_core.training.tasks import TASKS
from attention_core.training.update import explain_update

#: Settings under which each task's pattern forms (seed 0), and the score it must reach.
RUNS = {"previous": (0.03, 150, 0.9), "first": (0.03, 100, 0.9), "reverse": (0.01, 150, 0.9),
        "induction": (0.003, 600, 0.9)}


@pytest.fixture(scope="module")
def trained():
    runs = {}
    for key, (rate, steps, _score) in RUNS.items():
        trainer = start(TASKS[key], seed=0, learning_rate=rate, steps=steps)
        while not trainer.done:
            trainer.advance(50)
        runs[key] = trainer
    return runs


@pytest.mark.parametrize("key", list(RUNS))
def test_each_tasks_trained_head_shows_its_pattern(trained, key):
    trainer, wanted = trained[key], RUNS[key][2]
    final = trainer.snapshots[-1]
    assert final.step == trainer.steps and not trainer.diverged
    assert final.score >= wanted, (key, final.score)
    assert trainer.snapshots[0].score < final.score  # it formed during training: it was not there at the start
    assert trainer.losses[-1] < trainer.losses[0]


def test_the_previous_token_head_puts_its_weight_on_the_sub_diagonal(trained):
    weights = trained["previous"].snapshots[-1].weights[0, 0]  # (T, T)
    sub = torch.diagonal(weights, -1)
    assert float(sub.min()) >= 0.9, sub


def test_the_induction_head_looks_at_the_token_after_the_earlier_copy(trained):
    trainer = trained["induction"]
    weights, expected = trainer.snapshots[-1].weights[1, 0], trainer.probe.expected[0]  # layer 2's head
    rows = torch.nonzero(expected.sum(-1)).flatten()
    assert len(rows) >= 2
    for p in rows:  # a repeated token looks at the token after its earlier copy
        assert int(weights[p].argmax()) == int(expected[p].argmax()), (int(p), weights[p])
    assert trainer.accuracies[-1] > 0.9


def _previous_token_share(trainer, snapshot) -> float:
    """Layer 1's head: its weight on the token just before, averaged over the rows."""
    return trainer.task.score(snapshot.weights[0, 0], torch.diag(torch.ones(trainer.task.context - 1), -1))


def test_layer_1_becomes_a_previous_token_head(trained):
    trainer = trained["induction"]
    assert _previous_token_share(trainer, trainer.snapshots[0]) < 0.2
    assert _previous_token_share(trainer, trainer.snapshots[-1]) >= 0.6


def test_the_induction_loss_drops_while_the_previous_token_head_forms(trained):
    trainer = trained["induction"]
    snapshots, every = trainer.snapshots, trainer.snapshot_every
    formed = next(i for i, s in enumerate(snapshots) if _previous_token_share(trainer, s) >= 0.5)
    earlier = snapshots[formed - 100 // every]  # 100 steps before: no previous-token head yet, a high loss
    assert _previous_token_share(trainer, earlier) < 0.25 and earlier.loss > 1.0
    assert snapshots[formed].loss < 0.25 * earlier.loss  # the loss fell to under a quarter in those 100 steps


def test_the_same_settings_give_the_same_run():
    a, b = (start(TASKS["previous"], seed=3, learning_rate=0.03, steps=60) for _ in range(2))
    a.advance(60)
    b.advance(25)
    b.advance(35)  # in other slices
    assert a.losses == b.losses
    torch.testing.assert_close(a.snapshots[-1].weights, b.snapshots[-1].weights, rtol=0, atol=0)
    c = start(TASKS["previous"], seed=4, learning_rate=0.03, steps=60)
    c.advance(60)
    assert c.losses != a.losses


def test_a_diverging_run_stops_with_a_flag_and_keeps_its_curve():
    trainer = start(TASKS["previous"], seed=0, learning_rate=MAX_LEARNING_RATE, steps=200)
    trainer.advance(200)
    assert trainer.diverged and trainer.done and trainer.step < 200
    assert all(math.isfinite(x) and x <= DIVERGED_FACTOR * trainer.losses[0] for x in trainer.losses)
    trainer.advance(10)  # nothing more happens
    assert len(trainer.losses) == trainer.step


@pytest.mark.parametrize("rate", [0, -0.1, 1.5, float("nan"), float("inf"), "abc", True])
def test_a_bad_learning_rate_is_refused_with_its_field(rate):
    with pytest.raises(InputError) as raised:
        start(TASKS["previous"], seed=0, learning_rate=rate, steps=10)
    assert raised.value.field == "training.learning_rate"


@pytest.mark.parametrize("steps", [0, -5, MAX_STEPS + 1, 2.5, "ten"])
def test_a_bad_number_of_steps_is_refused_with_its_field(steps):
    with pytest.raises(InputError) as raised:
        start(TASKS["previous"], seed=0, learning_rate=0.01, steps=steps)
    assert raised.value.field == "training.steps"


@pytest.mark.parametrize("which", ["w_query", "w_key", "w_value"])
def test_one_explained_update_is_the_gradient_and_adams_own_step(which):
    trainer = start(TASKS["previous"], seed=1, learning_rate=0.03, steps=100)
    trainer.advance(10)  # Adam's moments are no longer zero
    update = explain_update(trainer, which, layer=0, row=2, col=1)
    assert update.step == 11 and update.m_before != 0.0 and update.v_before > 0.0
    param = getattr(trainer.model, which)[0]
    # the gradient, against a central finite difference of the same batch's loss (float64 copy of the model)
    model = copy.deepcopy(trainer.model).double()
    batch = _same_batch(trainer, update)
    eps = 1e-6

    def loss_at(delta: float) -> float:
        weight = getattr(model, which)[0]
        with torch.no_grad():
            weight[2, 1] += delta
        logits, _ = model(batch.tokens)
        with torch.no_grad():
            weight[2, 1] -= delta
        return float(torch.nn.functional.cross_entropy(logits[batch.scored], batch.targets[batch.scored]).detach())
    assert update.gradient == pytest.approx((loss_at(eps) - loss_at(-eps)) / (2 * eps), rel=1e-4, abs=1e-7)
    # Adam's rule written out is the optimizer's own step
    assert update.weight_before == float(param.detach()[2, 1])
    trainer.advance(1)
    assert update.weight_after == pytest.approx(float(param.detach()[2, 1]), abs=1e-7)
    assert trainer.losses[-1] == pytest.approx(update.loss, rel=1e-6)


def _same_batch(trainer, update):
    generator = torch.Generator()
    generator.set_state(trainer.generator.get_state())
    batch = trainer.task.batch(generator, trainer.batch_size)
    assert torch.equal(batch.tokens, update.tokens)
    return batch
