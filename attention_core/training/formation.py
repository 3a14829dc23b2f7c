r"""Where a run's pattern is, and why a head shows more than it: what the page says beside the heads' maps.

The probe's pattern marks only the rows the task scores (the induction task: the repeated segment's second copy, but
its last token), and in each the cell it should look at: :func:`probe_rows`, framed on the maps. A head that learned
a rule applies it to other rows too: the induction task's other rows whose token came before, further back than just
before (the induction head looks just after the earlier copy there as well, though nothing scores it; in the default
run 0.97 and 0.99 of those rows' weight). A token right after its double would have to look at itself: training
never asks for that, and the head does not.

Shape legend: T positions; weights (T, T) one head on one sequence, rows = queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from attention_core.training.model import Trainer


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
    return float(sum(float(weights[r, c]) for r, c in cells) / len(cells))


def previous_token_share(weights: torch.Tensor) -> float:
    """A head's weight (T, T) on the token just before, averaged over the rows from the second on."""
    return float(torch.diagonal(weights, -1).mean())
