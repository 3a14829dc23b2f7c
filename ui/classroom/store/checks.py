"""The check before and after a lesson, read back from the class store: per concept, over the students who took
it in both phases, the answers right and in all, and the named mistakes before and after (``Store.check_results``).

Plain SQLAlchemy Core with bound parameters, as the rest of the store; aggregates in the database (GROUP BYs), so the
teacher's page reads a few dozen rows whatever the class's size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlalchemy import and_, case, func, select

from ui.classroom.store.schema import CHECK_AFTER, CHECK_BEFORE, CORRECT, WRONG, events


@dataclass(frozen=True)
class CheckConcept:
    """One concept of the class's check, over the students who took it both before and after.

    Attributes:
        concept: the concept's key (``attention_core.check.CONCEPTS``).
        students: students who answered it before and after; ``before_only``, ``after_only``: who answered it once.
        before_right, before_answers, after_right, after_answers: those students' answers, right and in all.
    """

    concept: str
    students: int
    before_only: int
    after_only: int
    before_right: int
    before_answers: int
    after_right: int
    after_answers: int

    @property
    def before(self) -> Optional[float]:
        """The share right before (0 to 1), None without answers."""
        return self.before_right / self.before_answers if self.before_answers else None

    @property
    def after(self) -> Optional[float]:
        """The share right after (0 to 1), None without answers."""
        return self.after_right / self.after_answers if self.after_answers else None


@dataclass(frozen=True)
class CheckResults:
    """A class's check before and after, from GROUP BYs in the database (see :meth:`Store.check_results`).

    Attributes:
        concepts: per concept answered at all, in no particular order (the page orders them).
        mistakes: (concept, named mistake, times before, times after) over the same students, every named mistake
            made in either phase ("wrong" answers that name none are left out).
    """

    concepts: list[CheckConcept]
    mistakes: list[tuple[str, str, int, int]]


def check_results(conn, code: str) -> CheckResults:
    """The class's check per concept (:class:`CheckResults`): which seats answered a concept in both phases
    (one GROUP BY seat on the ``events_by_seat`` index), then those seats' answers right and in all per phase
    and concept, and their named mistakes per phase (GROUP BYs over a join on that set). ~9,000 answers of 300
    students: scripts/benchmark_load.py class-store measures it. ``conn``: a SQLAlchemy connection (the store's)."""
    e = events.c
    phases = (CHECK_BEFORE, CHECK_AFTER)
    in_check = and_(e.class_code == code, e.kind.in_(phases))
    both = func.count(e.kind.distinct()) == 2
    per_seat = (select(e.page, e.seat, func.count(e.kind.distinct()).label("phases"), func.max(e.kind).label("last"))
                .where(in_check).group_by(e.page, e.seat).subquery())
    matched = select(e.page, e.seat).where(in_check).group_by(e.page, e.seat).having(both).subquery()
    joined = and_(e.page == matched.c.page, e.seat == matched.c.seat)
    seated = conn.execute(
        select(per_seat.c.page,
               func.sum(case((per_seat.c.phases == 2, 1), else_=0)),
               func.sum(case((and_(per_seat.c.phases == 1, per_seat.c.last == CHECK_BEFORE), 1), else_=0)),
               func.sum(case((and_(per_seat.c.phases == 1, per_seat.c.last == CHECK_AFTER), 1), else_=0)))
        .group_by(per_seat.c.page)).all()
    answered = conn.execute(
        select(e.kind, e.page, func.sum(case((e.outcome == CORRECT, 1), else_=0)), func.count())
        .select_from(events.join(matched, joined)).where(in_check).group_by(e.kind, e.page)).all()
    named = conn.execute(
        select(e.page, e.outcome, e.kind, func.count())
        .select_from(events.join(matched, joined))
        .where(and_(in_check, e.outcome.not_in((CORRECT, WRONG))))
        .group_by(e.page, e.outcome, e.kind)).all()
    counts = {(kind, page): (int(right or 0), int(n)) for kind, page, right, n in answered}
    concepts = []
    for page, students, before_only, after_only in seated:
        (b_right, b_n), (a_right, a_n) = counts.get((CHECK_BEFORE, page), (0, 0)), counts.get((CHECK_AFTER, page), (0, 0))
        concepts.append(CheckConcept(page, int(students or 0), int(before_only or 0), int(after_only or 0),
                                     b_right, b_n, a_right, a_n))
    mistakes: dict[tuple[str, str], list[int]] = {}
    for page, outcome, kind, n in named:
        mistakes.setdefault((page, outcome), [0, 0])[0 if kind == CHECK_BEFORE else 1] += int(n)
    return CheckResults(concepts, sorted(((p, o, b, a) for (p, o), (b, a) in mistakes.items()),
                                         key=lambda row: (-row[3], -row[2], row[0], row[1])))
