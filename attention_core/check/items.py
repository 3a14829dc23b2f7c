r"""What a check item is, how it is graded, and the numbers it is drawn from.

A check asks a few short items per concept (:mod:`attention_core.check`). An item is one of two kinds:

* **procedural** (:data:`PROCEDURAL`): compute a number from numbers drawn for this student. It carries a
  :class:`~attention_core.practice.Exercise` (the formula, the inputs, the answer and the named mistakes' values on
  these very numbers) and is graded by :func:`attention_core.practice.grade`, exactly as practice mode grades an entry;
* **conceptual** (:data:`CONCEPTUAL`): choose one of fixed answers; a wrong choice may name the misconception it shows
  (a key of :data:`attention_core.practice.MISTAKES`).

What is recorded of an answer (:class:`Outcome`) is the app's vocabulary only: the item's concept, kind and template,
whether it was right, and the named mistake ("correct", a mistake key, or "wrong") — never the typed number.

Numbers are drawn with a ``torch.Generator`` seeded from the seat, the phase (before / after) and the template
(:func:`item_seed`): the same seat gets the same items back after a reload, two seats get different numbers, and the
check after the lesson has new numbers of the same kind. They are halves and small integers, so that a student can
work them by hand or with a phone's calculator.

Shape legend: T tokens (keys), d the width of a query / key / value vector. Numbers are Python floats computed in
float32 by the functions the pages use, as the pages show them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import sympy as sp
import torch

from attention_core import practice
from attention_core.errors import N_, InputError, Message
from attention_core.latex import aligned, expr_latex, number_expr, product

#: The two kinds of item.
PROCEDURAL, CONCEPTUAL = "procedural", "conceptual"
#: The two phases of a check.
BEFORE, AFTER = "before", "after"
PHASES = (BEFORE, AFTER)
#: What an answer's outcome is when it is right, and when it is wrong without a named mistake (as the class store).
CORRECT, WRONG = "correct", "wrong"


@dataclass(frozen=True)
class Item:
    """One question of a check.

    Attributes:
        template: the template's key, ``"<concept>.<name>"`` (e.g. ``"softmax.weight"``), the same for every student.
        concept: a key of :data:`attention_core.check.CONCEPTS`.
        kind: :data:`PROCEDURAL` or :data:`CONCEPTUAL`.
        prompt: the question in words (a :class:`Message`: translated by the page).
        exercise: procedural: what to compute (LaTeX without the result), the answer and the named mistakes.
        choices: conceptual: the answers to choose from, in the order shown (shuffled per student).
        right: conceptual: the index of the right choice.
        choice_mistakes: conceptual: per choice, the named mistake it shows ("" for the right one, "wrong" for a wrong
            one that names none).
        solution: the worked solution, LaTeX (sympy for the arithmetic), shown after the check.
        explanation: why, in words (a :class:`Message`), shown after the check.
        source: where the formula or the fact is taught (a tutorial or a paper, as the pages name them).
        drawn: procedural: the numbers drawn for this student by name (lists of floats, ints), as the inputs show
            them: what the tests recompute the answer from with PyTorch.
    """

    template: str
    concept: str
    kind: str
    prompt: Message
    exercise: Optional[practice.Exercise] = None
    choices: tuple[Message, ...] = ()
    right: int = -1
    choice_mistakes: tuple[str, ...] = ()
    solution: str = ""
    explanation: Optional[Message] = None
    source: str = ""
    drawn: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Outcome:
    """What is recorded of one answer: the app's vocabulary, never what was typed.

    Attributes:
        template, concept, kind: the item's.
        correct: whether the answer was right.
        outcome: :data:`CORRECT`, a key of :data:`attention_core.practice.MISTAKES`, or :data:`WRONG`.
        hint: the named mistake's hint with the numbers (procedural), or None.
    """

    template: str
    concept: str
    kind: str
    correct: bool
    outcome: str
    hint: Optional[Message] = field(default=None, compare=False)


def item_seed(seat: str, phase: str, template: str) -> int:
    """The seed of ``template``'s numbers for ``seat`` in ``phase``: the first 8 bytes of SHA-256 of the three
    (a 63-bit integer). The same three always give the same seed; any other seat or phase another.

    Raises:
        ValueError: an unknown phase.
    """
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    digest = hashlib.sha256(f"{seat}\x1f{phase}\x1f{template}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def generator(seed: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with ``seed`` (what every template draws with)."""
    return torch.Generator().manual_seed(seed)


def halves(gen: torch.Generator, *shape: int, low: float = -2.0, high: float = 2.0,
           nonzero: bool = False) -> torch.Tensor:
    """float32 ``shape`` of multiples of 0.5 in [low, high] (``nonzero``: 0 left out)."""
    steps = torch.arange(int(low * 2), int(high * 2) + 1, dtype=torch.float32) / 2
    if nonzero:
        steps = steps[steps != 0]
    return steps[torch.randint(len(steps), shape, generator=gen)]


def integers(gen: torch.Generator, *shape: int, low: int = -2, high: int = 2) -> torch.Tensor:
    """float32 ``shape`` of integers in [low, high]."""
    return torch.randint(low, high + 1, shape, generator=gen).to(torch.float32)


def pick(gen: torch.Generator, options) -> object:
    """One of ``options``, drawn with ``gen``."""
    return options[int(torch.randint(len(options), (1,), generator=gen))]


def conceptual(template: str, concept: str, seed: int, prompt: Message, right: Message,
               wrong: tuple[tuple[Message, str], ...], explanation: Message, source: str) -> Item:
    """A conceptual item: ``right`` among the ``wrong`` choices (each with the named mistake it shows, or
    :data:`WRONG`), in an order drawn from ``seed`` (neighbours see them in other orders)."""
    choices = [(right, "")] + list(wrong)
    order = torch.randperm(len(choices), generator=generator(seed)).tolist()
    shuffled = [choices[k] for k in order]
    return Item(template=template, concept=concept, kind=CONCEPTUAL, prompt=prompt,
                choices=tuple(text for text, _ in shuffled), right=order.index(0),
                choice_mistakes=tuple(mistake for _, mistake in shuffled), explanation=explanation, source=source)


def apart(exercise: practice.Exercise) -> bool:
    """Whether no answer can match two of the exercise's named mistakes at once (their values farther apart than
    both tolerances): a template draws again until it is, so that each named mistake fires on its own value only."""
    values = [m.value for m in exercise.mistakes]
    return all(abs(a - b) > practice.tolerance(a) + practice.tolerance(b)
               for n, a in enumerate(values) for b in values[n + 1:])


def grade_item(item: Item, answer: object) -> Outcome:
    """Grade one answer: for a procedural item the typed text (read as practice reads it, never ``eval``), for a
    conceptual one the chosen index.

    Raises:
        InputError: a procedural answer that is not a number (empty, too long, not finite, ...: the message of
            :func:`attention_core.practice.parse_answer`), or a choice that is not one of the item's.
    """
    if item.kind == PROCEDURAL:
        grade = practice.grade(item.exercise, practice.parse_answer(str(answer if answer is not None else "")))
        if grade.correct:
            return Outcome(item.template, item.concept, item.kind, True, CORRECT)
        named = grade.mistakes[0] if grade.mistakes else None
        return Outcome(item.template, item.concept, item.kind, False, named.key if named else WRONG,
                       named.hint if named else None)
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(item.choices):
        raise InputError(N_("Choose one of the answers."), field="check_answer")
    if answer == item.right:
        return Outcome(item.template, item.concept, item.kind, True, CORRECT)
    return Outcome(item.template, item.concept, item.kind, False, item.choice_mistakes[answer] or WRONG)


#: A template: the seed -> the item drawn with it.
Template = Callable[[int], Item]


def drawn_apart(template: Template) -> Template:
    """``template`` drawing again (seed + 1, seed + 2, …: still deterministic) until its named mistakes are
    :func:`apart`; a conceptual item as it is.

    Raises:
        RuntimeError: no draw of 100 was apart (a template whose mistakes always coincide).
    """
    def apart_template(seed: int) -> Item:
        for attempt in range(100):
            item = template((seed + attempt) % 2 ** 63)
            if item.exercise is None or apart(item.exercise):
                return item
        raise RuntimeError(f"{template.__module__}.{template.__name__}: no draw with its mistakes apart")

    apart_template.__name__ = apart_template.__qualname__ = template.__name__
    apart_template.__doc__ = template.__doc__
    return apart_template


# ---------------------------------------------------------------- worked solutions (sympy for the arithmetic)


def sum_of_products(pairs) -> str:
    """a₁ b₁ + a₂ b₂ + … as LaTeX, each number to 4 significant digits, in the order given (sympy, unevaluated)."""
    return expr_latex(sp.Add(*[product(number_expr(a), number_expr(b)) for a, b in pairs], evaluate=False))


def worked(lhs: str, *steps: str) -> str:
    """``lhs = step₁ = step₂ = …``, one step per line (LaTeX)."""
    return aligned(lhs, steps)
