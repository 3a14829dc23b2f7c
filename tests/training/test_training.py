"""Training a tiny attention-only Transformer on tasks whose pattern is known: each task's trained head shows its
pattern, the runs are deterministic, a diverging run stops with a flag, and one explained Adam update equals
torch.autograd's gradient and the optimizer's own step."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from attention_core.errors import InputError
from attention_core.training.model import DIVERGED_FACTOR, MAX_TRAINING_LEARNING_RATE, MAX_TRAINING_STEPS, start
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
    trainer = start(TASKS["previous"], seed=0, learning_rate=MAX_TRAINING_LEARNING_RATE, steps=200)
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


@pytest.mark.parametrize("steps", [0, -5, MAX_TRAINING_STEPS + 1, 2.5, "ten"])
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


def test_the_gradient_is_the_sum_of_x_times_the_projections_gradient():
    """dW[r, c] = Σ_{b,t} X[b, t, r] · dP[b, t, c] (the backward page's dW = Xᵀ dQ, over a batch)."""
    trainer = start(TASKS["induction"], seed=0, learning_rate=0.003, steps=50)
    trainer.advance(20)
    for which, layer in (("w_query", 1), ("w_key", 0), ("w_value", 1)):
        update = explain_update(trainer, which, layer=layer, row=5, col=7)
        assert update.contributions.shape == (trainer.batch_size, trainer.task.context)
        assert float(update.contributions.double().sum()) == pytest.approx(update.gradient, rel=1e-4, abs=1e-7)


def test_a_run_restored_at_a_snapshot_makes_the_same_updates():
    trainer = start(TASKS["previous"], seed=2, learning_rate=0.03, steps=80, snapshot_every=25)
    trainer.advance(80)
    assert [s.step for s in trainer.snapshots] == [0, 25, 50, 75, 80]
    middle = trainer.snapshots[2]
    again = trainer.at(middle)
    assert again.step == 50 and again.losses == trainer.losses[:50]
    again.advance(30)
    assert again.losses == trainer.losses  # bit for bit
    for name, value in again.model.state_dict().items():
        torch.testing.assert_close(value, trainer.model.state_dict()[name], rtol=0, atol=0)
    assert trainer.snapshots[2].checkpoint.model["w_query.0"].data_ptr() != again.model.w_query[0].data_ptr()
    # the snapshot's checkpoint was not changed by the restored run's updates
    restored_twice = trainer.at(middle)
    restored_twice.advance(5)
    assert restored_twice.losses[50:55] == trainer.losses[50:55]


def test_an_explained_update_at_a_snapshot_is_the_runs_own_next_update():
    trainer = start(TASKS["first"], seed=0, learning_rate=0.03, steps=60, snapshot_every=25)
    trainer.advance(60)
    at = trainer.at(trainer.snapshots[1])  # step 25
    update = explain_update(at, "w_key", layer=0, row=3, col=4)
    assert update.step == 26 and update.loss == trainer.losses[25]
    after = trainer.at(trainer.snapshots[2])  # step 50: replay from 25 to see the weight after step 26
    replay = trainer.at(trainer.snapshots[1])
    replay.advance(1)
    assert update.weight_after == pytest.approx(float(replay.model.w_key[0].detach()[3, 4]), abs=1e-7)
    assert after.step == 50


@pytest.mark.parametrize("steps, every", [(100, 25), (600, 25), (1000, 25), (1001, 50), (5000, 125)])
def test_long_runs_keep_at_most_about_forty_snapshots(steps, every):
    from attention_core.training.model import snapshot_interval
    assert snapshot_interval(steps) == every and steps // every <= 40


def test_layer_inputs_are_the_embeddings_then_the_residual_stream():
    trainer = start(TASKS["induction"], seed=0, learning_rate=0.003, steps=10)
    tokens = trainer.probe.tokens
    x0, x1 = trainer.layer_inputs(tokens)
    model = trainer.model
    torch.testing.assert_close(x0, model.embed(tokens) + model.position(torch.arange(tokens.shape[1])))
    q, k, v = x0 @ model.w_query[0], x0 @ model.w_key[0], x0 @ model.w_value[0]
    heads = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(x1, x0 + heads @ model.w_out[0])
