"""Practice mode of the step pages (``attention_core.practice``): the explained entry is asked before it is shown.

With the practice switch on (beside the stepper), a stage whose entry has an exercise hides its heatmaps and the
worked entry until the student answers: the question (the element formula and the numbers it needs), an answer
box, *Check*, and, after a wrong answer, the hint that names the mistake when it is a known one, and *Show
the solution*. A softmax stage first asks which key gets the most weight in the row (predict before reveal).
A correct answer, or *Show the solution*, shows the stage's numbers and the worked entry. The score counts
the entries of this session.

What is kept per session: which entries were revealed, the last verdict on each, the predictions and the
score (small sets of tuples). Nothing here computes attention: the exercise and its grading come from
attention_core.
"""

from __future__ import annotations

import random
import zlib
from typing import Callable, Optional

import streamlit as st

from attention_core import practice
from attention_core.errors import InputError
from attention_core.practice import Exercise
from attention_core.stepthrough import StepThrough, explained_panel
from ui import i18n, state, widgets
from ui.classroom import class_live
from ui.i18n import _

_STORE = "practice_store"
#: The most entries remembered per session (revealed, verdicts); older ones are forgotten (the score stays).
MAX_REMEMBERED = 500
#: The setting of the practice switch (a click on it reruns only the step-through that holds it: ui.page_body.part).
FIELD = "practice"


def _store() -> dict:
    return st.session_state.setdefault(_STORE, {
        "revealed": set(), "verdicts": {}, "predicted": {}, "tried": set(), "correct": set(), "first_try": set(),
        "attempts": {}, "picks": 0,
    })


def entry_key(steps: StepThrough, row: int, col: int, head: int, exercise: Exercise) -> tuple:
    """What identifies an asked entry: the page, the stage, the entry and its answer (new numbers, new entry)."""
    return steps.page.key, steps.stage.key, row, col, head, f"{exercise.answer:.6g}"


def switch() -> bool:
    """The practice switch (beside the stepper); whether practice mode is on."""
    return bool(state.bind(st.toggle, _("Practice mode"), FIELD,
                           help=_("Each step's entry is hidden until you type its value. A wrong answer gets a hint "
                                  "when it is a common mistake.")))


def exercise_for(steps: StepThrough, row: int, col: int, head: int) -> Optional[Exercise]:
    """The explained entry's exercise, or None (the stage has none, or this entry has nothing to compute)."""
    stage = steps.stage
    if stage.exercise is None or stage.target is None:
        return None
    return stage.exercise(row, col, head)


def _remember(store: dict) -> None:
    if len(store["revealed"]) > MAX_REMEMBERED:
        store["revealed"].clear()
        store["verdicts"].clear()
        store["predicted"].clear()
        store["attempts"].clear()


def check_answer(key: tuple, exercise: Exercise, typed: str) -> None:
    """Grade the answer ``typed`` to the entry ``key`` (:func:`entry_key`): its verdict kept for the session, the score
    counted, the entry revealed when right; in a class, the verdict recorded (never the number typed)."""
    store = _store()
    _remember(store)
    try:
        given = practice.parse_answer(typed)
    except InputError as error:
        store["verdicts"][key] = ("error", error)
        return
    store["tried"].add(key)
    store["attempts"][key] = store["attempts"].get(key, 0) + 1
    verdict = practice.grade(exercise, given)
    store["verdicts"][key] = ("graded", verdict)
    class_live.answered(key, verdict, store["attempts"][key])  # in a class: the verdict (never the answer typed)
    if verdict.correct:
        if key not in store["revealed"]:
            store["correct"].add(key)
            if store["attempts"][key] == 1:
                store["first_try"].add(key)
        store["revealed"].add(key)


def reveal(key: tuple) -> None:
    """*Show the solution* of the entry ``key``: counted as tried, revealed; in a class, recorded."""
    store = _store()
    class_live.record("reveal", key[0], key[1], f"{key[2]},{key[3]},{key[4]}")
    store["tried"].add(key)
    store["revealed"].add(key)


def pick(steps: StepThrough, head: int) -> None:
    """Choose an entry for the student: among a few random ones, one with the most known mistakes to catch."""
    store = _store()
    store["picks"] += 1
    stage = steps.stage
    target = explained_panel(stage.panels, head)
    rows, cols = target.matrix.shape
    rng = random.Random(zlib.crc32(repr((steps.page.key, stage.key, store["picks"])).encode()))
    candidates = [(rng.randrange(rows), rng.randrange(cols)) for _ in range(8)]
    best, score = candidates[0], -1.0
    for row, col in candidates:
        exercise = stage.exercise(row, col, head)
        if exercise is None:
            continue
        points = len(exercise.mistakes) + (1 if abs(exercise.answer) > 0.05 else 0) + rng.random() / 2
        if points > score:
            best, score = (row, col), points
    state.update(**{steps.row_field: best[0], steps.col_field: best[1]})


def predict_key(steps: StepThrough, row: int, head: int) -> tuple[tuple, int]:
    """What identifies the prediction asked before a softmax row is shown (the page, the stage, the row, the head and
    the row's weights: new numbers, new prediction), and the key with the most weight there."""
    weights = explained_panel(steps.stage.panels, head).matrix[row]
    return ((steps.page.key, steps.stage.key, row, head,
             zlib.crc32(repr([round(float(w), 6) for w in weights]).encode())), int(weights.argmax()))


def predict(key: tuple, choice: int) -> None:
    """The student's prediction ``choice`` (a key's index) for the prediction ``key`` (:func:`predict_key`)."""
    store = _store()
    _remember(store)
    store["predicted"][key] = choice


def predict_question(row: int, row_label: str) -> str:
    """The prediction asked before a softmax row is shown (Markdown; ``row_label`` as typed, escaped here)."""
    return _("**Predict first:** which key gets the most weight in row {row} (**{token}**)? Click it.",
             row=row + 1, token=widgets.md_escape(row_label))


def prediction_verdict(choice: int, top: int, col_labels: list[str], row: int) -> str:
    """Whether the key predicted (``choice``) is the one with the most weight (``top``), as Markdown."""
    if choice == top:
        return _("Right: **{key}** gets the most weight in row {row}.", key=widgets.md_escape(col_labels[top]),
                 row=row + 1)
    return _("Not this time: you chose **{chosen}**, but **{key}** gets the most weight in row {row} (it has the "
             "largest score, and the softmax keeps the order).", chosen=widgets.md_escape(col_labels[choice]),
             key=widgets.md_escape(col_labels[top]), row=row + 1)


def hints(verdict: practice.Grade) -> list[str]:
    """A wrong answer's hints (Markdown): each named mistake, or how far off it is."""
    if verdict.mistakes:
        return ["**" + _(practice.MISTAKES[m.key]) + ".** " + _(m.hint) for m in verdict.mistakes]
    return [_("Not quite: your answer is {diff} away. Check each term, then try again.",
              diff=f"{abs(verdict.difference):.4g}")]


def correct_text(answer: float) -> str:
    return _("Correct: {value}. Here is the worked solution.", value=f"{answer:.4g}")


# ---------------------------------------------------------------- for the step-through element (ui/stepper.py)

def answer_id(key: tuple) -> str:
    """The name of an asked entry (:func:`entry_key`) or prediction (:func:`predict_key`) in what the element is sent:
    a hash of its key."""
    return format(zlib.crc32(repr(key).encode()), "08x")


def exercise_data(steps: StepThrough, row: int, col: int, head: int) -> Optional[dict]:
    """The explained entry's exercise as the element shows it (None: nothing to compute there): its name
    (:func:`answer_id`), the question and the numbers it needs (LaTeX), and for a softmax the prediction asked
    first (its name, its question as Markdown, the keys to choose from)."""
    exercise = exercise_for(steps, row, col, head)
    if exercise is None:
        return None
    data: dict = {"id": answer_id(entry_key(steps, row, col, head, exercise)), "question": exercise.question,
                  "inputs": list(exercise.inputs), "predict": None}
    if exercise.predict:
        target = explained_panel(steps.stage.panels, head)
        labels = [i18n.app_text(label) for label in target.col_labels]
        key, _top = predict_key(steps, row, head)
        data["predict"] = {
            "id": answer_id(key), "options": labels,
            "question": predict_question(row, i18n.app_text(target.row_labels[row])),
        }
    return data


def status(page: str, steps_of: Callable[[str], StepThrough]) -> dict[str, dict]:
    """This session's answers on ``page``, by :func:`answer_id`, as Markdown for the element: an entry's verdict
    (``error``: the message of an answer that is no number; ``correct``; ``hints``: the named mistakes, or how far
    off), whether it is revealed, and a prediction's choice and verdict. ``steps_of(stage)``: the page's stage as its
    numbers are now (a prediction made on other numbers is left out)."""
    store = _store()
    found: dict[str, dict] = {}
    for key in store["revealed"]:
        if key[0] == page:
            found.setdefault(answer_id(key), {})["revealed"] = True
    for key, (kind, verdict) in store["verdicts"].items():
        if key[0] != page:
            continue
        said = found.setdefault(answer_id(key), {})
        if kind == "error":
            said["error"] = widgets.message_markdown(verdict.message)
        elif verdict.correct:
            said["correct"] = correct_text(float(key[5]))
        else:
            said["hints"] = hints(verdict)
    for key, choice in store["predicted"].items():
        if key[0] != page:
            continue
        steps = steps_of(key[1])
        now, top = predict_key(steps, key[2], key[3])
        if now != key:  # made on other numbers
            continue
        labels = [i18n.app_text(label) for label in explained_panel(steps.stage.panels, key[3]).col_labels]
        found[answer_id(key)] = {"predicted": choice, "right": choice == top,
                                 "verdict": prediction_verdict(choice, top, labels, key[2])}
    return found


def score_text() -> str:
    """The session's score, as the line under the stepper says it."""
    store = _store()
    return _("Score this session: {correct} of {tried} entries right, {first} at the first try.",
             correct=len(store["correct"]), tried=len(store["tried"]), first=len(store["first_try"]))
