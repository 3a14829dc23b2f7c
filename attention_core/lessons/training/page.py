r"""The page "Watch attention learn": its settings, its declaration, and what it reads from a training run.

A learner picks a task whose right pattern is known (:data:`~attention_core.training.tasks.TASKS`), a seed, a
learning rate η and a number of steps; the server trains the task's attention-only model
(:mod:`attention_core.training.model`, shared per server by :mod:`attention_core.training.runs`). The page shows
the loss and accuracy curves, every head's weights on one probe sequence at each snapshot, one Adam update of one
weight explained with its numbers (:mod:`attention_core.training.update`), and opens a learned head on the
self-attention pages (:func:`head_on_self_attention`).

Shape legend: T positions of the probe, D = d_model of the task's model, L layers, h = num_heads (1 here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from attention_core.errors import N_, InputError
from attention_core.fields import Choice, FloatRange, IntRange, OneBasedIndex, label
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import token_labels
from attention_core.page import Page
from attention_core.shared_settings import MAX_DIM, MAX_SEED
from attention_core.training.model import (
    MAX_TRAINING_LEARNING_RATE,
    MAX_TRAINING_STEPS,
    MIN_TRAINING_LEARNING_RATE,
    Snapshot,
    Trainer,
)
from attention_core.training.runs import RunKey
from attention_core.training.tasks import TASKS
from attention_core.training.update import ExplainedUpdate, explain_update

#: The weights whose update can be explained: settings key -> its name on the page.
WEIGHTS = {"w_query": "W_q", "w_key": "W_k", "w_value": "W_v"}
#: The most layers a task's model has (the induction task's two).
MAX_TRAINING_LAYERS = max(task.num_layers for task in TASKS.values())
#: The widest task model (the explained entry's row and column are below it).
MAX_TRAINING_WIDTH = max(task.d_model for task in TASKS.values())
#: The preset whose sentence and matrices a learned head is opened in (its vocabulary is built from the sentence).
OPEN_PRESET = "custom"


@dataclass(frozen=True)
class TrainingSettings:
    """The page's own settings (``settings.training``).

    Attributes:
        task: a key of ``TASKS``. seed: the run's seed (0..MAX_SEED). learning_rate: Adam's η, in
            [MIN_TRAINING_LEARNING_RATE, MAX_TRAINING_LEARNING_RATE]. steps: updates, 1..MAX_TRAINING_STEPS.
        snapshot: the step whose snapshot is shown (the page moves it to the run's nearest snapshot at or before
            it; the default, MAX_TRAINING_STEPS, is the last).
        layer: the layer (0-based) whose weight update is explained and whose head is opened.
        which: the explained weight's matrix, a key of :data:`WEIGHTS`. row, col: its entry (0-based, below D).
    """

    task: str = "induction"
    seed: int = 0
    learning_rate: float = TASKS["induction"].learning_rate
    steps: int = TASKS["induction"].steps
    snapshot: int = MAX_TRAINING_STEPS
    layer: int = 1
    which: str = "w_query"
    row: int = 0
    col: int = 0


def task_defaults(task: str) -> dict[str, object]:
    """The settings that go with choosing ``task``: its η and steps, its pattern's layer, the last snapshot."""
    chosen = TASKS[task]
    return {"training.learning_rate": chosen.learning_rate, "training.steps": chosen.steps,
            "training.layer": chosen.pattern_layer, "training.snapshot": MAX_TRAINING_STEPS}


TRAINING = Page(
    key="training", title=N_("Watch attention learn"), icon=":material/trending_down:", section="learning",
    summary=N_("Watch attention learn: train a tiny Transformer and see its heads form"),
    settings=TrainingSettings,
    fields=(
        Choice("task", tuple(TASKS), N_("Unknown task “{raw}”; using “{title}”."),
               titles={key: task.title for key, task in TASKS.items()}),
        IntRange("seed", 0, MAX_SEED, label(N_("The run's seed"))),
        FloatRange("learning_rate", MIN_TRAINING_LEARNING_RATE, MAX_TRAINING_LEARNING_RATE, "eta",
                   malformed=N_("η must be a number; got “{raw}”, using {value:g}."),
                   out_of_range=N_("η must be between {low:g} and {high:g}; got {eta:g}, using {clamped:g}.")),
        IntRange("steps", 1, MAX_TRAINING_STEPS, label(N_("The number of steps"))),
        IntRange("snapshot", 0, MAX_TRAINING_STEPS, label(N_("The snapshot's step"))),
        OneBasedIndex("layer", MAX_TRAINING_LAYERS,
                      N_("The model has layers 1 to {count}; got layer {shown}, using layer 1.")),
        Choice("which", tuple(WEIGHTS), N_("Unknown weight “{raw}”; using “{value}”.")),
        IntRange("row", 0, MAX_TRAINING_WIDTH - 1, label(N_("The weight's row"))),
        IntRange("col", 0, MAX_TRAINING_WIDTH - 1, label(N_("The weight's column"))),
    ),
)


def run_key(settings) -> RunKey:
    """The run the settings ask for (validated settings: every field in range)."""
    own = settings.training
    return RunKey(own.task, own.seed, own.learning_rate, own.steps)


def snapshot_at(trainer: Trainer, step: int) -> int:
    """The index of the trainer's last snapshot at or before ``step`` (its first if none is)."""
    steps = [s.step for s in trainer.snapshots]
    return max((i for i, s in enumerate(steps) if s <= step), default=0)


def next_snapshot(trainer: Trainer, step: int) -> Optional[int]:
    """The step of the snapshot after the one shown at ``step`` (:func:`snapshot_at`), or None at the last: where
    the page's player goes next, and where it stops."""
    index = snapshot_at(trainer, step) + 1
    return trainer.snapshots[index].step if index < len(trainer.snapshots) else None


def probe_token_labels(trainer: Trainer) -> list[str]:
    """The probe's tokens by name with their positions ("1 C", "2 F", ...): :func:`token_labels` of the task's
    names for the first probe sequence's token ids."""
    return token_labels(tuple(trainer.task.token_label(int(t)) for t in trainer.probe.tokens[0]))


@dataclass(frozen=True)
class OpenedHead:
    """A learned head as the self-attention pages' inputs.

    Attributes:
        changes: settings by path (the preset, the sentence of the probe's tokens, d_model, d_k = D, the causal
            switch on). edits: "x", "w_query", "w_key", "w_value" -> every cell, {(row, col): value}.
        positions: how many of the probe's positions are opened (at most MAX_TOKENS).
        weights: (positions, positions) the head's weights there, as the model computed them at the snapshot.
    """

    changes: dict[str, object]
    edits: dict[str, dict[tuple[int, int], float]]
    positions: int
    weights: torch.Tensor


def openable_positions(trainer: Trainer) -> int:
    """How many of the probe's positions a learned head of ``trainer``'s model opens on the self-attention pages (at
    most MAX_TOKENS), without computing anything.

    Raises:
        InputError: the model is wider than the pages' d_model (MAX_DIM) or has more than one head, field
            "training.layer".
    """
    d_model = trainer.model.num_heads * trainer.model.head_dim
    if d_model > MAX_DIM or trainer.model.num_heads != 1:
        raise InputError(N_("This task's model is {width} wide; the self-attention pages take d_model up to {high}. "
                            "Open a head of a one-layer task instead (16 wide)."),
                         field="training.layer", width=d_model, high=MAX_DIM)
    return min(trainer.task.context, MAX_TOKENS)


def fit_to_run(own: TrainingSettings, trainer: Trainer) -> dict[str, object]:
    """The changes (by settings path; empty when none) that put the page's settings ``own`` on what ``trainer``'s run
    has: the snapshot on its nearest at or before it, the layer and the explained entry inside its model."""
    snapshot = trainer.snapshots[snapshot_at(trainer, own.snapshot)].step
    last_layer, last_entry = trainer.task.num_layers - 1, trainer.model.head_dim - 1
    fitted = {"training.snapshot": snapshot, "training.layer": min(own.layer, last_layer),
              "training.row": min(own.row, last_entry), "training.col": min(own.col, last_entry)}
    return {} if fitted == {"training.snapshot": own.snapshot, "training.layer": own.layer,
                            "training.row": own.row, "training.col": own.col} else fitted


def head_on_self_attention(trainer: Trainer, snapshot: Snapshot, layer: int) -> OpenedHead:
    """The learned layer ``layer`` at ``snapshot`` as the self-attention pages' sentence and matrices: X = the
    layer's input on the probe (the embeddings for layer 1), W_q, W_k, W_v its weights (D × D, one head, so
    d_k = D). Causal attention's rows depend only on earlier positions, so the first MAX_TOKENS positions of a
    longer probe keep exactly their weights.

    Raises:
        InputError: see :func:`openable_positions`.
    """
    n = openable_positions(trainer)
    d_model = trainer.model.head_dim
    at = trainer.at(snapshot)
    x = at.layer_inputs(trainer.probe.tokens)[layer][0, :n]  # (n, D)
    matrices = {"x": x, "w_query": at.model.w_query[layer], "w_key": at.model.w_key[layer],
                "w_value": at.model.w_value[layer]}
    edits = {name: {(i, j): v for i, row in enumerate(m.detach().tolist()) for j, v in enumerate(row)}
             for name, m in matrices.items()}
    sentence = " ".join(trainer.task.token_label(int(t)) for t in trainer.probe.tokens[0, :n])
    changes = {"preset": OPEN_PRESET, "sentence": sentence, "d_model": d_model, "d_k": d_model,
               "causal_mask": True, "padding": 0, "context_length": MAX_TOKENS}
    return OpenedHead(changes, edits, n, snapshot.weights[layer, 0, :n, :n])


@dataclass(frozen=True)
class UpdateAtSnapshot:
    """The update a run made right after a snapshot, explained, and what the run's optimizer really did.

    Attributes:
        update: the :class:`~attention_core.training.update.ExplainedUpdate` (Adam's rule written out).
        actual_after: the weight after ``torch.optim.Adam.step()`` from the same state (the run's own update).
        beyond: True at a run's last snapshot: the run stopped there, so this is the update it would make next.
    """

    update: ExplainedUpdate
    actual_after: float
    beyond: bool

    @property
    def sum_difference(self) -> float:
        """|Σ contributions − autograd's gradient| (the sum in float64)."""
        return abs(float(self.update.contributions.double().sum()) - self.update.gradient)

    @property
    def sum_matches(self) -> bool:
        """The sum of the terms is autograd's gradient to float32 rounding (atol 1e-6, rtol 1e-4: 1024 terms)."""
        return self.sum_difference <= 1e-6 + 1e-4 * abs(self.update.gradient)

    @property
    def step_difference(self) -> float:
        """|Adam's rule written out − the optimizer's own step|."""
        return abs(self.actual_after - self.update.weight_after)

    @property
    def step_matches(self) -> bool:
        """Adam's rule written out is the optimizer's step to float32 rounding (atol 1e-6, rtol 1e-5)."""
        return self.step_difference <= 1e-6 + 1e-5 * abs(self.update.weight_after)

    def largest_terms(self, count: int = 6) -> list[tuple[int, int, float]]:
        """The ``count`` terms X_{b,t,r} dP_{b,t,c} of largest size, as (sequence b, position t, term), 0-based."""
        flat = self.update.contributions.flatten()
        width = self.update.contributions.shape[1]
        return [(int(i) // width, int(i) % width, float(flat[i]))
                for i in flat.abs().argsort(descending=True)[:count]]


def explain_at(trainer: Trainer, snapshot: Snapshot, which: str, layer: int, row: int, col: int) -> UpdateAtSnapshot:
    """One weight's update right after ``snapshot`` (see :func:`~attention_core.training.update.explain_update`),
    and the run's own optimizer step from the same state, made on a copy (:meth:`Trainer.at`).

    Raises:
        KeyError, IndexError: as ``explain_update`` (no such weight, layer or entry).
    """
    at = trainer.at(snapshot)
    update = explain_update(at, which, layer, row, col)
    beyond = snapshot.step >= trainer.steps
    at.steps = max(at.steps, snapshot.step + 1)  # at the end: one step beyond, to compare with the rule
    at.advance(1)
    actual = float(getattr(at.model, which)[layer].detach()[row, col])
    return UpdateAtSnapshot(update, actual, beyond)


def curve(trainer: Trainer, points: int = 300) -> tuple[list[float], list[float], list[float]]:
    """The loss and accuracy per update, as (step, loss, accuracy) lists of at most ``points`` entries: a long run
    is averaged over equal blocks of updates (each point at its block's last step)."""
    n = len(trainer.losses)
    size = max(1, -(-n // points))  # ceil(n / points)
    steps, losses, accuracies = [], [], []
    for start in range(0, n, size):
        block = slice(start, min(start + size, n))
        count = block.stop - block.start
        steps.append(float(block.stop))
        losses.append(sum(trainer.losses[block]) / count)
        accuracies.append(sum(trainer.accuracies[block]) / count)
    return steps, losses, accuracies
