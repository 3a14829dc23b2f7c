"""The step-through element: a step page's whole walk-through in one Streamlit Components v2 element that steps in
the browser (issue 61), on every step page. The model pages' heads (up to 512 tokens: n × 384 inputs, 512 × 512
weights) are sent a block of each matrix at a time, 12 × 12 around the explained entry (:func:`blocks`), as the
server's renderer showed them; an entry outside the block (the pickers, the arrow keys) brings the block around it
in one round trip (a "need", no page redraw).

The element is given, once per change of the settings, every stage of the page's walk-through as
``attention_core`` builds it (the step-through protocol, ``attention_core.stepthrough``): each stage's formula (LaTeX
from sympy), its matrices with their numbers, colours and token labels, what the step does, the explained entries
(LaTeX from sympy, with the numbers in) and the page's checks. Next, Previous, the step picker, a cell, the pickers
and the arrow keys repaint in the browser (``frontend/stepper/stepper.js``): no script run, nothing sent.

What still needs the server: a stage's explained entries. The one shown is sent with the page; the others of the
stage shown and of its two neighbours when the learner pauses after the paint (``PREFETCH_MS`` in the script: a
changed setting is one script run), so that Next and Previous find theirs there (one round trip, no page redraw:
every entry of every stage is 0.65-1.3 s of sympy at the defaults, one stage's ~0.05-0.4 s); a stage of more than
:data:`ENTRIES_AT_ONCE` (12 tokens: up to 192, seconds of sympy) a row at a time, the row of the cell shown
(``scripts/benchmark_load.py stepper`` measures both). In a class, the first request asks for every stage's: the class
shares one walk-through (its entries built once for all), and a student then asks once per page, not at every other
step (``scripts/load/class_steps.py``). Practice mode: an answer, a prediction, *Show the solution* and
*Pick an entry for me* (graded by ``attention_core.practice``, ``ui.classroom.practice``; the element hides the numbers of an
entry not answered yet). In a class, the step reached, when the server has not heard of it, at most every
:data:`ui.stepper_data.REPORT_MS` (through the class's reporter, :data:`_REPORTER`). The element is drawn in a part of the page's
body (``ui.page_body.part``): what it sends reruns that part, not the page's settings around it. The position
(stage, row, column, head) is the element's: it writes it into the page's link
itself, keeps it when a setting changes, and takes the server's only when the server moved it on purpose (a link,
the teacher, a reset: :func:`ui.state.position_token`).

Formulas are typeset by KaTeX in the browser, pinned (the version of Streamlit's own ``st.latex``) and served by the
app (``static/katex``, ``scripts/vendor_frontend.py``); matrices are HTML tables coloured as the heatmaps are (Vega's
schemes, :data:`SCHEMES`), which a screen reader reads as tables. A panel that follows the explained entry (the
backward pages' softmax Jacobian: ``Panel.by_entry``) is sent for every entry; a chart that follows it (RoPE's rotated
pair: :class:`EntryChart`) comes with each entry sent, as the Vega-Lite spec the server's ``st.vega_lite_chart`` would
draw, drawn in the page by Vega and Vega-Lite (pinned, served by the app: ``static/vega``, ``static/vega-lite``),
loaded only where such a chart is shown."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import streamlit as st

from attention_core.masking.user_mask import MASK_EDITS
from attention_core.page import Page
from attention_core.stepthrough import StepThrough, as_of, clamp_entry, explained_panel
from ui import page_body, state, stepthrough
from ui.classroom import class_live, practice
from ui.i18n import _
from ui.stepper_data import MAX_ROWS, EntryCharts, payload, same_numbers

FRONTEND = Path(__file__).resolve().parent.parent / "frontend" / "stepper"




_COMPONENT = st.components.v2.component(
    "attention_explorer.stepper",
    html="",
    css=(FRONTEND / "stepper.css").read_text(),
    js=(FRONTEND / "stepper.js").read_text(),
    isolate_styles=False,  # in the page's DOM: KaTeX's style sheet (loaded once into the page's head) applies
)


#: In a class: the element's report of the step reached goes through this small element of its own, drawn in a fragment
#: of its own, so that a report reruns that fragment alone (the step-through element, in the page's body, would rerun
#: the body: its settings, its walk-through, the element's data). The step-through element hands it the position with
#: a DOM event ("ae-reached"); it sends it as its trigger "reached".
_REPORTER = st.components.v2.component(
    "attention_explorer.reporter",
    html="",
    js=(FRONTEND / "reporter.js").read_text(),
    isolate_styles=False,
)


_LOADED = "stepper_loaded"  # {page key: {stage: the rows whose entries this session's element asked for}}


_WALK = "stepper_walk"  # {page key: the walk-through those entries are of}


def live(page: Page, walk: Any, explain: Mapping[str, str], *, layout: str = "stacked",
         after_checks: Optional[Callable[[Any], None]] = None, entry_chart: Optional[EntryCharts] = None,
         windowed: bool = False, with_checks: bool = True) -> None:
    """A step page's step-through as the element (see the module's docstring): the page's declaration, its
    walk-through and what each stage does (stage key -> English text marked with ``N_``); ``layout``: "beside" (a
    stage's one matrix right of its formula, where the screen is wide enough) or "stacked".

    Practice mode (its switch above the element) asks each entry before it shows it: the element hides the stage's
    numbers and shows the question; the answer, *Show the solution*, a prediction and *Pick an entry for me* go to
    the server (graded by ``attention_core.practice``, recorded for the class) and come back with the page's next
    run. Under the element, the page's worksheet and exports (``ui.classroom.worksheet``).

    ``after_checks(steps)``: what the page draws after a step's checks; under the element, which steps in the browser,
    it is called once with ``None`` and draws whatever the step is (the backward pages' "Keep stepping", folded).
    ``entry_chart``: a chart that follows the explained entry (:data:`EntryCharts`), drawn under the entry's formula.
    ``windowed``: large matrices sent a block at a time (the model pages: :func:`payload`); ``with_checks``: False
    where the page shows its checks elsewhere.
    """
    if page.opening_entry is not None:
        state.open_at_entry(dict(page.opening_entry(walk)))
    first = page.step_through(walk, state.settings().get(page.stage_field))
    fields = tuple(f for f in (page.stage_field, first.row_field, first.col_field, first.head_field, practice.FIELD) if f)
    # a part of the page's body (a fragment of its own): what the element sends (its requests for entries, an answer)
    # reruns the part alone, not the page's settings around it; an edit (a mask cell) reruns the whole app
    page_body.part("stepper", functools.partial(_draw, page, walk, explain, layout, entry_chart, windowed, with_checks),
                   fields=fields)
    if after_checks is not None:
        after_checks(None)
    stepthrough.downloads(page, walk, page.stages)


def _draw(page: Page, walk: Any, explain: Mapping[str, str], layout: str, entry_chart: Optional[EntryCharts],
          windowed: bool = False, with_checks: bool = True) -> None:
    """The practice switch, the element and (in a class) its reporter: :func:`live`'s part."""
    practising = practice.switch()
    loaded = st.session_state.setdefault(_LOADED, {}).setdefault(page.key, {})
    if not same_numbers(st.session_state.get(_WALK, {}).get(page.key), walk):  # new numbers: entries asked again
        loaded.clear()
        st.session_state.setdefault(_WALK, {})[page.key] = walk
    data = payload(page, walk, explain, loaded, entry_chart, practising, windowed=windowed, with_checks=with_checks)
    data["layout"] = layout
    # the element's position is the page's setting as a bound widget's is: a teacher's link can fix it
    names = {"stage": _("Step"), "row": _("Row"), "col": _("Column"), "head": _("Head")}
    state.bound_fields().update({field: names[part] for part, field in data["fields"].items() if field})
    _COMPONENT(key=f"stepper_{page.key}", data=data, on_need_change=functools.partial(_need, page),
               on_flip_change=functools.partial(_flip, page),
               on_reset_mask_change=functools.partial(_reset_mask, page),
               on_answer_change=functools.partial(_answer, page), on_reveal_change=functools.partial(_reveal, page),
               on_predict_change=functools.partial(_predict, page), on_pick_change=functools.partial(_pick, page))
    if data["report"]:
        _reporter(page)


@st.fragment
def _reporter(page: Page) -> None:
    """In a class: the element that sends the step reached (see :data:`_REPORTER`), in a fragment of its own."""
    _REPORTER(key=f"reporter_{page.key}", data=None, on_reached_change=functools.partial(_reached, page))


def _need(page: Page) -> None:
    """The element showed a stage (a row of a large stage) whose entries it was not sent: send them, and those of the
    neighbours it asks for (so that Next and Previous find theirs there), with the page's next run. The element's
    position comes with the request, so the link the server writes on that run is the element's."""
    position = _position(page, "need")
    if position is not None:
        steps = page.step_through(st.session_state[_WALK][page.key], position[page.stage_field])
        row = position.get(steps.row_field, 0)
        sent = st.session_state[f"stepper_{page.key}"]["need"].get("stages")
        # the stage shown and those it asks for: its neighbours, in a class every stage (known stages only: a forged
        # list adds nothing else)
        stages = {position[page.stage_field]} | ({key for key in sent[:len(page.stages)] if key in page.stages}
                                                 if isinstance(sent, list) else set())
        if 0 <= row < MAX_ROWS:  # a forged row adds nothing
            rows = st.session_state.setdefault(_LOADED, {}).setdefault(page.key, {})
            for key in stages:
                rows.setdefault(key, set()).add(row)
        state.update(**position, own_position=True)
        class_live.at_step(page.key, position[page.stage_field])  # in a class: the step reached comes with it


def _reached(page: Page) -> None:
    """In a class: the step the element reached (stage, row, column), into the settings and the class view."""
    position = _position(page, "reached", f"reporter_{page.key}")
    if position is not None:
        state.update(**position, own_position=True)
        class_live.at_step(page.key, position[page.stage_field])


def _flip(page: Page) -> None:
    """A click on a cell of a mask stage (the causal page's): that cell flipped between allowed and blocked (an edit
    of the mask, ``ui.masking``), and explained."""
    position = _position(page, "flip")
    if position is None:
        return
    steps = page.step_through(st.session_state[_WALK][page.key], position[page.stage_field])
    mask = steps.stage.mask
    row, col = position.get(steps.row_field), position.get(steps.col_field)
    if mask is None or row is None or col is None or not (0 <= row < mask.attn_mask.shape[0]
                                                         and 0 <= col < mask.attn_mask.shape[1]):
        return  # not a mask, or a forged cell
    state.flip_cell(MASK_EDITS, row, col, bool(mask.attn_mask[row, col]))
    state.update(**position, own_position=True)


def _reset_mask(page: Page) -> None:
    """The mask stage's "Reset the mask": the cells the learner flipped forgotten."""
    if _position(page, "reset_mask") is not None:
        state.reset_matrix(MASK_EDITS)


def _asked(page: Page, name: str) -> Optional[tuple[StepThrough, int, int, int, Any, dict]]:
    """Practice mode: the entry the element's trigger ``name`` was sent from, as (steps, row, col, head, its
    exercise, what was sent), the settings moved there; None when it is no entry with an exercise (a forged
    message, or the switch turned off meanwhile)."""
    position = _position(page, name)
    if position is None or not state.settings().get(practice.FIELD):
        return None
    state.update(**position, own_position=True)
    settings = state.settings()
    steps = page.step_through(as_of(st.session_state[_WALK][page.key], settings), position[page.stage_field])
    if steps.stage.target is None:
        return None
    row, col, head = clamp_entry(steps.stage, settings.get(steps.row_field), settings.get(steps.col_field),
                                 settings.get(steps.head_field) if steps.head_field else 0, steps.num_heads or 1)
    exercise = practice.exercise_for(steps, row, col, head)
    if exercise is None:
        return None
    return steps, row, col, head, exercise, st.session_state[f"stepper_{page.key}"][name]


def _answer(page: Page) -> None:
    """Practice mode: the answer typed for the entry shown, graded (``ui.classroom.practice.check_answer``)."""
    asked = _asked(page, "answer")
    if asked is not None:
        steps, row, col, head, exercise, sent = asked
        typed = sent.get("text")
        if isinstance(typed, str):  # the box takes 40 characters; a longer text (a forged one) gets the message
            practice.check_answer(practice.entry_key(steps, row, col, head, exercise), exercise, typed)


def _reveal(page: Page) -> None:
    """Practice mode: *Show the solution* of the entry shown."""
    asked = _asked(page, "reveal")
    if asked is not None:
        steps, row, col, head, exercise, _sent = asked
        practice.reveal(practice.entry_key(steps, row, col, head, exercise))


def _predict(page: Page) -> None:
    """Practice mode, before a softmax row is shown: the key the student predicts gets the most weight."""
    asked = _asked(page, "predict")
    if asked is not None:
        steps, row, _col, head, exercise, sent = asked
        choice = sent.get("choice")
        cols = explained_panel(steps.stage.panels, head).matrix.shape[1]
        if exercise.predict and isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < cols:
            practice.predict(practice.predict_key(steps, row, head)[0], choice)


def _pick(page: Page) -> None:
    """Practice mode: *Pick an entry for me* (the server moves the element to it: a new position token)."""
    position = _position(page, "pick")
    if position is None or not state.settings().get(practice.FIELD):
        return
    state.update(**position, own_position=True)
    steps = page.step_through(st.session_state[_WALK][page.key], position[page.stage_field])
    if steps.stage.exercise is not None and steps.stage.target is not None:
        settings = state.settings()
        practice.pick(steps, settings.get(steps.head_field) if steps.head_field else 0)


def _position(page: Page, name: str, key: str = "") -> Optional[dict[str, Any]]:
    """The position the element sent with its trigger ``name``, as settings changes (the page's stage field and its
    step-through's row, column and head fields), or None when it is no position of this page (whatever a forged
    message may hold: only a known stage and whole numbers are taken). ``key``: the element's (the step-through's
    unless said)."""
    result = st.session_state.get(key or f"stepper_{page.key}")
    sent = result.get(name) if result is not None else None
    if not isinstance(sent, dict) or sent.get("stage") not in page.stages:
        return None
    walk = st.session_state.get(_WALK, {}).get(page.key)
    if walk is None:  # no element of this page was drawn in this session
        return None
    steps = page.step_through(walk, sent["stage"])
    changes: dict[str, Any] = {page.stage_field: sent["stage"]}
    for field, part in ((steps.row_field, "row"), (steps.col_field, "col"), (steps.head_field, "head")):
        if field and isinstance(sent.get(part), int) and not isinstance(sent.get(part), bool):
            changes[field] = sent[part]
    return changes
