r"""When and where a run's pattern formed: what the page says beside the loss curve and the heads' maps.

*When.* The pattern's share on the probe (one sequence, a few scored rows) is a noisy measure of a head: in the
induction task's default run (seed 0) it passes 0.5 between steps 25 and 50 and is 0.99 at step 200, while the loss
there is still 0.96. :func:`formation` measures every snapshot's model on :data:`HELD_OUT` sequences the run never
trained on (drawn with seed + 4) — its loss, its accuracy, the pattern's share of its weight — and finds where each
passed its level (:class:`Passing`): the loss halfway from its first to its last value, the share and the accuracy
0.5. In that run the share passes 0.5 between steps 150 and 175, the same 25 steps in which the loss gets halfway
down (3.65 to 0.003 nats). Measured at the snapshots, so each is known to within a snapshot interval (25 updates up
to 1000 steps).

*Where.* The probe's pattern marks only the rows the task scores (the induction task: the repeated segment's second
copy, but its last token). A head that learned a rule applies it to other rows too: :func:`probe_rows` lists the
probe's other rows whose token came before, further back than just before (the induction head looks just after the
earlier copy there as well, though nothing scores it; in the default run 0.97 and 0.99 of those rows' weight). A
token right after its double would have to look at itself: training never asks for that, and the head does not.

Shape legend: B sequences, T positions, L layers; weights (T, T) one head on one sequence, rows = queries.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import torch
from torch import nn

from attention_core.training.model import Trainer, deterministic

#: How many sequences the run never trained on measure each snapshot (their seed: the run's seed + 4; the probe's is
#: + 3, the batches' + 1).
HELD_OUT = 256
#: The level the pattern's share and the accuracy pass: more than half of the weight on the pattern, more than half
#: of the scored positions predicted right.
SHARE_LEVEL = 0.5


@dataclass(frozen=True)
class Passing:
    """Where a measure taken at the snapshots first passed a level.

    Attributes:
        before: the step of the last snapshot before it passed; None when it was already past at the first.
        after: the step of the first snapshot at which it had passed.
    """

    before: Optional[int]
    after: int


def first_passing(steps: Sequence[int], values: Sequence[float], level: float, falling: bool = False
                  ) -> Optional[Passing]:
    """Where ``values`` (one per snapshot step) first reached ``level``: at or above it, or at or below it when
    ``falling``; None if it never did. A value that is not finite never counts as passed."""
    for i, (step, value) in enumerate(zip(steps, values)):
        if math.isfinite(value) and (value <= level if falling else value >= level):
            return Passing(steps[i - 1] if i else None, step)
    return None


@dataclass(frozen=True)
class HeldOut:
    """Every snapshot's model on :data:`HELD_OUT` sequences the run never trained on.

    Attributes:
        steps: the snapshots' steps. losses: cross-entropy (nats) on the scored positions. accuracies: the share
            of scored positions predicted right. shares: the pattern's share of the pattern layer's weight, over all
            the rows the pattern describes (:meth:`~attention_core.training.tasks.Task.score`, every sequence's rows
            pooled).
    """

    steps: list[int]
    losses: list[float]
    accuracies: list[float]
    shares: list[float]


def held_out(trainer: Trainer, sequences: int = HELD_OUT) -> HeldOut:
    """Each snapshot's weights (its checkpoint) measured on ``sequences`` sequences drawn with the run's seed + 4.
    The run is not touched (a copy of its model loads each checkpoint)."""
    task = trainer.task
    batch = task.batch(torch.Generator().manual_seed(trainer.seed + 4), sequences)
    model = copy.deepcopy(trainer.model)
    rows = batch.expected.sum(-1) > 0  # (B, T): the rows the pattern describes
    steps, losses, accuracies, shares = [], [], [], []
    with torch.no_grad(), deterministic():
        for snapshot in trainer.snapshots:
            model.load_state_dict(snapshot.checkpoint.model)
            logits, weights = model(batch.tokens)  # (B, T, V), (B, L, h, T, T)
            picked, wanted = logits[batch.scored], batch.targets[batch.scored]
            head = weights[:, task.pattern_layer, 0]  # (B, T, T)
            steps.append(snapshot.step)
            losses.append(float(nn.functional.cross_entropy(picked, wanted)))
            accuracies.append(float((picked.argmax(-1) == wanted).float().mean()))
            shares.append(float((head * batch.expected).sum(-1)[rows].mean()))
    return HeldOut(steps, losses, accuracies, shares)


@dataclass(frozen=True)
class Formation:
    """When the pattern formed against the loss, in one run (see the module's docstring).

    Attributes:
        held_out: the snapshots' measures on held-out sequences.
        loss_first, loss_last: the held-out loss at the first and the last snapshot. loss_level: halfway between.
        loss: where the held-out loss first fell to ``loss_level`` (None: it did not fall that far).
        share, accuracy: where the held-out share and accuracy first reached :data:`SHARE_LEVEL` (None: never).
        probe_share: where the share on the probe (the one sequence the maps show) first reached it.
        every: the snapshots' interval (updates).
    """

    held_out: HeldOut
    loss_first: float
    loss_last: float
    loss_level: float
    loss: Optional[Passing]
    share: Optional[Passing]
    accuracy: Optional[Passing]
    probe_share: Optional[Passing]
    every: int

    @property
    def gap(self) -> Optional[int]:
        """Steps from the loss's halfway passing to the share's (negative: the share passed first; 0: between the
        same two snapshots); None unless both passed during the run (not already at the start)."""
        if self.loss is None or self.share is None or self.loss.before is None or self.share.before is None:
            return None
        return self.share.after - self.loss.after


def formation(trainer: Trainer, sequences: int = HELD_OUT) -> Formation:
    """The run's :class:`Formation`: its snapshots measured on ``sequences`` held-out sequences."""
    measured = held_out(trainer, sequences)
    first, last = measured.losses[0], measured.losses[-1]
    level = (first + last) / 2
    falls = math.isfinite(first) and math.isfinite(last) and last < first
    steps = measured.steps
    probe = [s.score for s in trainer.snapshots]
    return Formation(
        held_out=measured, loss_first=first, loss_last=last, loss_level=level,
        loss=first_passing(steps, measured.losses, level, falling=True) if falls else None,
        share=first_passing(steps, measured.shares, SHARE_LEVEL),
        accuracy=first_passing(steps, measured.accuracies, SHARE_LEVEL),
        probe_share=first_passing(steps, probe, SHARE_LEVEL), every=trainer.snapshot_every)


@dataclass(frozen=True)
class ProbeRows:
    """The probe's rows by what the task asks of them (0-based positions).

    Attributes:
        framed: (row, column) of every cell of the task's pattern: the scored rows and where each should look.
        repeats: the induction task's rows that are not framed but whose token came before, not just before:
            (row, the position just after the token's latest earlier copy), where an induction head looks. Empty
            for the other tasks.
        positions: T, the probe's length.
    """

    framed: list[tuple[int, int]]
    repeats: list[tuple[int, int]]
    positions: int

    @property
    def rows(self) -> list[int]:
        """The framed (scored) rows."""
        return sorted({row for row, _col in self.framed})

    @property
    def others(self) -> list[int]:
        """The rows neither framed nor repeats: nothing is scored there, and no rule says where they look."""
        taken = set(self.rows) | {row for row, _col in self.repeats}
        return [row for row in range(self.positions) if row not in taken]


def probe_rows(trainer: Trainer) -> ProbeRows:
    """The probe's :class:`ProbeRows` (its tokens and the task's pattern; no weights needed)."""
    expected = trainer.probe.expected[0]
    framed = [(int(r), int(c)) for r, c in torch.nonzero(expected > 0)]
    positions = expected.shape[0]
    if trainer.task.key != "induction":
        return ProbeRows(framed, [], positions)
    tokens = trainer.probe.tokens[0].tolist()
    scored = {row for row, _col in framed}
    repeats = []
    for row, token in enumerate(tokens):
        earlier = [p for p in range(row - 1) if tokens[p] == token]  # not the token just before: a double
        if earlier and row not in scored and tokens[row - 1] != token:
            repeats.append((row, earlier[-1] + 1))
    return ProbeRows(framed, repeats, positions)


def mean_weight(weights: torch.Tensor, cells: Sequence[tuple[int, int]]) -> float:
    """The average over ``cells`` ((row, column) pairs, one per row) of ``weights``' entry there: the share of
    those rows' weight on those cells. NaN without cells."""
    if not cells:
        return math.nan
    rows, cols = zip(*cells)
    return float(weights[list(rows), list(cols)].mean())


def previous_token_share(weights: torch.Tensor) -> float:
    """A head's weight (T, T) on the token just before, averaged over the rows from the second on."""
    return float(torch.diagonal(weights, -1).mean())
