"""What the backward pages' formulas and export recipes read of a walk-through, as protocols.

The walk-throughs themselves (:class:`~attention_core.backward.walkthrough.BackwardWalkthrough`,
:class:`~attention_core.lessons.backward_multi_head.page.BackwardMultiHeadWalkthrough`) are declared with
their builders, which import the formulas and the recipes (their pages name them); their methods draw on the
builders' panels. Typed here by what is read, the formulas and recipes import nothing above them: no circle. Each
walk-through has every member of its protocol (checked in ``tests/backward``).

Shape legend: n tokens (T is the target), D = d_model, d_k = d_v, h heads; float32 (float64 where the gradients
are checked)."""

from __future__ import annotations

from typing import Protocol

from attention_core.backward.formulas import HeadView
from attention_core.backward.gradients import BackwardTrace, FiniteDifference, StepResult


class BackwardWalk(Protocol):
    """What is read of *The backward pass* page's walk-through: its tokens, forward and backward pass, gradient
    step, the row whose softmax Jacobian is drawn, an explained entry, a head's view and a finite difference."""

    tokens: tuple[str, ...]
    trace: BackwardTrace
    step: StepResult

    @property
    def jacobian_at(self) -> int: ...

    def explained(self, stage: str, row: int, col: int, head: int = 0) -> float: ...

    def head_view(self, head: int = 0) -> HeadView: ...

    def finite_difference(self, which: str, row: int, col: int) -> FiniteDifference: ...
