r"""Where a run's pattern is: the probe's cells the task's pattern marks, framed on the heads' maps.

The probe's pattern marks only the rows the task scores (the induction task: the repeated segment's second copy, but
its last token), and in each the cell it should look at.

Shape legend: T positions; the probe's expected pattern (T, T), rows = queries.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.training.model import Trainer


@dataclass(frozen=True)
class ProbeRows:
    """The probe's rows by what the task asks of them (0-based positions).

    Attributes:
        framed: (row, column) of every cell of the task's pattern: the scored rows and where each should look.
    """

    framed: list[tuple[int, int]]

    @property
    def rows(self) -> list[int]:
        """The framed (scored) rows."""
        return sorted({row for row, _col in self.framed})


def probe_rows(trainer: Trainer) -> ProbeRows:
    """The probe's :class:`ProbeRows` (its tokens and the task's pattern; no weights needed)."""
    expected = trainer.probe.expected[0]
    return ProbeRows([(int(r), int(c)) for r, c in torch.nonzero(expected > 0)])
