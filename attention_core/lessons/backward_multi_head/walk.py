"""What the multi-head backward page's formulas and recipe read of its walk-through (a protocol)."""

from __future__ import annotations

from typing import Protocol

from attention_core.backward.formulas import HeadView
from attention_core.backward.gradients import FiniteDifference
from attention_core.backward.multi_head_gradients import MultiHeadBackwardTrace, MultiHeadStepResult


class BackwardMultiHeadWalk(Protocol):
    """What is read of the multi-head backward page's walk-through: the same, with every head's (and W_O's) gradients;
    the Jacobian is drawn at a (head, row)."""

    tokens: tuple[str, ...]
    trace: MultiHeadBackwardTrace
    step: MultiHeadStepResult

    @property
    def jacobian_at(self) -> tuple[int, int]: ...

    def explained(self, stage: str, row: int, col: int, head: int = 0) -> float: ...

    def head_view(self, head: int = 0) -> HeadView: ...

    def finite_difference(self, which: str, row: int, col: int) -> FiniteDifference: ...
