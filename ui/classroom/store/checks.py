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
    """The class's check per concept (:class:`CheckResults`), in two GROUP BYs that read the ``events_by_check``
    index only (class, kind, page, seat, outcome): which seats answered a concept in one phase or both; then, over the
    seats that answered it in both (a join on that set), the answers per phase, concept and outcome (a few dozen rows:
    right, wrong and each named mistake), summed here. ~14,400 answers of 300 students: scripts/benchmark_load.py
    class-store --check measures it. ``conn``: a SQLAlchemy connection (the store's)."""
    e = events.c
    in_check = and_(e.class_code == code, e.kind.in_((CHECK_BEFORE, CHECK_AFTER)))
    per_seat = (select(e.page, e.seat, func.count(e.kind.distinct()).label("phases"), func.max(e.kind).label("last"))
                .where(in_check).group_by(e.page, e.seat).subquery())
    seated = conn.execute(
        select(per_seat.c.page,
               func.sum(case((per_seat.c.phases == 2, 1), else_=0)),
               func.sum(case((and_(per_seat.c.phases == 1, per_seat.c.last == CHECK_BEFORE), 1), else_=0)),
               func.sum(case((and_(per_seat.c.phases == 1, per_seat.c.last == CHECK_AFTER), 1), else_=0)))
        .group_by(per_seat.c.page)).all()
    matched = (select(e.page, e.seat).where(in_check).group_by(e.page, e.seat)
               .having(func.count(e.kind.distinct()) == 2).subquery())
    answered = conn.execute(
        select(e.kind, e.page, e.outcome, func.count())
        .select_from(events.join(matched, and_(e.page == matched.c.page, e.seat == matched.c.seat)))
        .where(in_check).group_by(e.kind, e.page, e.outcome)).all()
    counts: dict[tuple[str, str], list[int]] = {}  # (kind, page) -> [right, answers]
    mistakes: dict[tuple[str, str], list[int]] = {}  # (page, named mistake) -> [before, after]
    for kind, page, outcome, n in answered:
        tally = counts.setdefault((kind, page), [0, 0])
        tally[0] += int(n) if outcome == CORRECT else 0
        tally[1] += int(n)
        if outcome not in (CORRECT, WRONG):
            mistakes.setdefault((page, outcome), [0, 0])[0 if kind == CHECK_BEFORE else 1] += int(n)
    concepts = []
    for page, students, before_only, after_only in seated:
        (b_right, b_n), (a_right, a_n) = counts.get((CHECK_BEFORE, page), (0, 0)), counts.get((CHECK_AFTER, page), (0, 0))
        concepts.append(CheckConcept(page, int(students or 0), int(before_only or 0), int(after_only or 0),
                                     b_right, b_n, a_right, a_n))
    return CheckResults(concepts, sorted(((p, o, b, a) for (p, o), (b, a) in mistakes.items()),
                                         key=lambda row: (-row[3], -row[2], row[0], row[1])))
