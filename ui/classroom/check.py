"""The check before and after a lesson, as a student takes it (the page *Check your understanding*) and as the
teacher sees the class's gain (a section of *Your class*).

The items come from ``attention_core.check`` (drawn for the seat and the phase); this module shows them in a form
(one run when the student hands in, none while typing), grades them with ``attention_core.check.grade_item``, shows
each item's verdict, named mistake, worked solution and why, and hands the outcomes to the class store
(``class_live.record_check``: never the number typed). A student alone sees their own before / after per concept.
"""

from __future__ import annotations

import time
import urllib.parse
from typing import Optional

import pandas as pd
import streamlit as st

from attention_core import check, practice, registry
from attention_core.errors import N_, InputError
from attention_core.lessons.check.page import ALL
from ui import charts, state, widgets
from ui.classroom import class_live
from ui.classroom.store.store import CHECK_AFTER, CHECK_BEFORE, Event, StoreError, new_seat
from ui.i18n import _

_ITEMS = "check_items"  # (seat, phase, concept) -> the items drawn (one check of 24 items: ~25 ms to draw)
_PROBLEMS = "check_problems"  # answer key -> the message under it, from the last hand-in
_RESULTS = "check_results"  # (seat, phase, concept) -> [(item, outcome, answer shown)] of the last hand-in


def concepts_of(concept: str) -> Optional[list[str]]:
    """The concepts a ``settings.check.concept`` value asks (None: the six of attention, ``check.CORE``)."""
    return None if concept == ALL else [concept]


def concept_titles() -> dict[str, str]:
    """The concept setting's values -> their titles in the interface language ("all" first)."""
    return {ALL: _("The six concepts of attention (24 items)"), **{key: _(title) for key, title in check.CONCEPTS.items()}}


def concept_title(key: str) -> str:
    return _(check.CONCEPTS[key]) if key in check.CONCEPTS else widgets.md_escape(key)


def phase_title(phase: str) -> str:
    return _("before the lesson") if phase == check.BEFORE else _("after the lesson")


def seat() -> str:
    """The seat the numbers are drawn for: the class seat, else the learner's own (kept in the link: a reload gives the
    same items back)."""
    member = class_live.member()
    if member is not None and not member.teacher:
        return member.seat
    own = state.settings().check.seat
    if not own:
        own = new_seat()
        state.update(**{"check.seat": own})
    return own


def items(seat_id: str, phase: str, concept: str) -> tuple[check.Item, ...]:
    memo = st.session_state.setdefault(_ITEMS, {})
    key = (seat_id, phase, concept)
    if key not in memo:
        memo[key] = check.make_check(seat_id, phase, concepts_of(concept))
    return memo[key]


def _answer_key(phase: str, concept: str, item: check.Item) -> str:
    return f"check_answer_{phase}_{concept}_{item.template}"


def take() -> None:
    """The check of ``settings.check`` for this seat: the choice of phase and concepts, the form, the results."""
    settings = state.settings()
    member = class_live.member()
    in_class = member is not None and not member.teacher
    left, right = st.columns(2)
    # the labels in this run's language, looked up (a plain lookup: AppTest formats values outside the run)
    phases = {phase: phase_title(phase) for phase in check.PHASES}
    with left:
        state.bind(st.segmented_control, _("Which check"), "check.phase", options=list(check.PHASES),
                   format_func=phases.get, selection_mode="single", required=True)
    with right:
        state.bind(st.selectbox, _("Concepts"), "check.concept", options=list(concept_titles()),
                   format_func=concept_titles().get)
    phase, concept = settings.check.phase, settings.check.concept
    seat_id = seat()
    drawn = items(seat_id, phase, concept)
    if in_class:
        st.caption(_("Class {code}: your teacher sees how many in the class got each concept right, before and after; "
                     "never your answers or your name.", code=member.code))
    else:
        st.caption(_("Take it before a lesson, then after it: the numbers are new each time, the kinds of question the "
                     "same. Your own before and after appear below. Nothing is recorded."))
    results = st.session_state.setdefault(_RESULTS, {})
    done = results.get((seat_id, phase, concept))
    if done is None:
        _form(drawn, phase, concept, seat_id, in_class)
    else:
        _review(done, phase, concept, seat_id)
    _own_gain(seat_id, concept)


def _form(drawn: tuple[check.Item, ...], phase: str, concept: str, seat_id: str, in_class: bool) -> None:
    problems = st.session_state.get(_PROBLEMS, {})
    with st.form(key=f"check_form_{phase}_{concept}", enter_to_submit=False, border=False):
        for n, item in enumerate(drawn):
            _question(n, item)
            key = _answer_key(phase, concept, item)
            if item.kind == check.PROCEDURAL:
                st.text_input(_("Your answer"), key=key, placeholder=_("a number, e.g. 0.42"), max_chars=40)
            else:
                st.radio(_("Your answer"), options=range(len(item.choices)), index=None, key=key,
                         format_func=[_(choice) for choice in item.choices].__getitem__)
            if key in problems:
                st.error(widgets.message_markdown(problems[key]), icon=":material/edit:")
        # graded in the button's callback, before the run: the run that follows draws the verdicts (one run, not two)
        st.form_submit_button(_("Hand in"), type="primary", icon=":material/done_all:", on_click=_hand_in,
                              args=(drawn, phase, concept, seat_id, in_class))


def _question(n: int, item: check.Item) -> None:
    st.markdown(f"**{n + 1}.** " + widgets.message_markdown(item.prompt))
    if item.exercise is not None:
        st.latex(r"\begin{gathered} " + r" \\ ".join((item.exercise.question,) + item.exercise.inputs)
                 + r" \end{gathered}")


def _hand_in(drawn, phase: str, concept: str, seat_id: str, in_class: bool) -> None:
    """*Hand in*'s callback: grade every answer of the form; a missing or unreadable one puts its message under its
    item (every answer typed stays in the form); else the verdicts are kept for the run to draw, and in a class the
    outcomes are recorded."""
    problems, graded = {}, []
    for item in drawn:
        key = _answer_key(phase, concept, item)
        given = st.session_state.get(key)
        if given is None or given == "":
            problems[key] = _("Answer this one first (a guess is fine: the check counts what you know now).")
            continue
        try:
            outcome = check.grade_item(item, given)
        except InputError as error:
            problems[key] = error.message
            continue
        graded.append((item, outcome, str(given) if item.kind == check.PROCEDURAL else _(item.choices[given])))
    st.session_state[_PROBLEMS] = problems
    if problems:
        return
    st.session_state.setdefault(_RESULTS, {})[(seat_id, phase, concept)] = graded
    if in_class:
        record_check(phase, [outcome for _item, outcome, _given in graded])


def _review(done, phase: str, concept: str, seat_id: str) -> None:
    right = sum(outcome.correct for _item, outcome, _given in done)
    # green with its tick only when every answer is right: "0 of 4" in a green box read as a success
    box = st.success if right == len(done) else st.info
    box(_("You got {right} of {n} right in the check {phase}.", right=right, n=len(done), phase=phase_title(phase)),
        icon=":material/task_alt:" if right == len(done) else ":material/school:")
    for n, (item, outcome, given) in enumerate(done):
        verdict = _("right") if outcome.correct else _("wrong")
        # a Material icon, not an emoji: a classroom's browsers may have no emoji font
        with st.expander(f"{n + 1}. {concept_title(item.concept)}: {verdict}", expanded=not outcome.correct,
                         icon=":material/check_circle:" if outcome.correct else ":material/cancel:"):
            _question(n, item)
            st.markdown(_("Your answer: {given}", given=widgets.md_escape(given)))
            if not outcome.correct:
                if item.exercise is not None:
                    st.markdown(_("The answer: {answer}", answer=widgets.md_escape(f"{item.exercise.answer:.4g}")))
                else:
                    st.markdown(_("The answer: {answer}", answer=widgets.message_markdown(item.choices[item.right])))
                if outcome.outcome in practice.MISTAKES:
                    st.warning("**" + _(practice.MISTAKES[outcome.outcome]) + "**"
                               + (": " + widgets.message_markdown(outcome.hint) if outcome.hint else ""),
                               icon=":material/lightbulb:")
            if item.solution:
                st.latex(item.solution)
            if item.explanation:
                st.caption(widgets.message_markdown(item.explanation) + " " + _("Source: {source}", source=item.source))
    st.button(_("Take it again (not recorded again)"), key=f"check_again_{phase}_{concept}", on_click=_again,
              args=(seat_id, phase, concept), icon=":material/replay:")


def _again(seat_id: str, phase: str, concept: str) -> None:
    st.session_state.setdefault(_RESULTS, {}).pop((seat_id, phase, concept), None)


def _own_gain(seat_id: str, concept: str) -> None:
    """A learner's own before and after per concept, once both are handed in."""
    results = st.session_state.get(_RESULTS, {})
    before, after = results.get((seat_id, check.BEFORE, concept)), results.get((seat_id, check.AFTER, concept))
    if not before or not after:
        return
    st.subheader(_("Your before and after"))
    rows = []
    for key in check.CONCEPTS:
        b = [o.correct for _i, o, _g in before if o.concept == key]
        a = [o.correct for _i, o, _g in after if o.concept == key]
        if b and a:
            rows.append((concept_title(key), f"{sum(b)}/{len(b)}", f"{sum(a)}/{len(a)}"))
    st.dataframe(pd.DataFrame(rows, columns=[_("concept"), _("before"), _("after")]), hide_index=True,
                 width="stretch")


# ---------------------------------------------------------------- what a class records, what a teacher sends


_CHECKED = "class_checked"  # {(phase, template)}: the check's answers this seat handed in already


def record_check(phase: str, outcomes) -> int:
    """Hand a student's check (``attention_core.check.Outcome`` s of one hand-in in ``phase``) to the writer, as one
    action of the rate limit: the concept, template, kind and outcome of each answer (never the number typed). Each
    template counts once per phase and seat: a second hand-in is graded for the student but not recorded again.
    Returns how many answers were recorded."""
    seat = class_live.member()
    _store, writer, _why = class_live.live()
    if seat is None or seat.teacher or writer is None:
        return 0
    done = st.session_state.setdefault(_CHECKED, set())
    fresh = [o for o in outcomes if (phase, o.template) not in done]
    if not fresh:
        return 0
    if not class_live.rate_limit().allow():
        writer.rate_limited(seat.code)
        return 0
    kind = CHECK_BEFORE if phase == "before" else CHECK_AFTER
    now = time.time()
    for outcome in fresh:
        writer.put(Event(seat.code, seat.seat, kind, now, outcome.concept, outcome.template, outcome.kind,
                         outcome.outcome))
        done.add((phase, outcome.template))
    return len(fresh)


def push_check(phase: str, concept: str) -> None:
    """(A button's callback on *Your class*.) Send the class to the check of ``phase`` on ``concept``: a pushed link
    to the page *Check your understanding*, followed from each student's banner."""
    link = urllib.parse.urlencode({"page": registry.CHECK_PAGE.key, "check.phase": phase, "check.concept": concept})
    if class_live.as_teacher(lambda store, code: store.push_link(code, link),
                             N_("The class store is unreachable ({why}): the class was not sent to the check.")):
        st.toast(_("Sent: your students see a banner with Follow, to the check."), icon=":material/campaign:")


# ---------------------------------------------------------------- the teacher's view


def teacher_controls(code: str) -> None:
    """*Your class*: send the class to the check before the lesson, or now (after), on the chosen concepts."""
    st.subheader(_("Check before / after"))
    st.markdown(_("A short check of each concept on numbers drawn for each student. Send the class to it before the "
                  "lesson, and again after it: the gain appears below."))
    concept = st.selectbox(_("Concepts"), options=list(concept_titles()), key="class_check_concept",
                           format_func=concept_titles().get)
    before, after = st.columns(2)
    before.button(_("Check before the lesson"), key="class_check_before", icon=":material/quiz:",
                  on_click=push_check, args=(check.BEFORE, concept))
    after.button(_("Check now (after the lesson)"), key="class_check_after", icon=":material/quiz:", type="primary",
                 on_click=push_check, args=(check.AFTER, concept))
    sent = last_sent(code)
    if sent is not None:
        phase, concept, at = sent
        st.caption(_("Sent at {time}: the check {phase}. Concepts: {concept}. Students who join now find it in their "
                     "banner.",
                     time=time.strftime("%H:%M", time.localtime(at)), phase=phase_title(phase),
                     concept=concept_titles().get(concept, concept)))


def last_sent(code: str) -> Optional[tuple[str, str, float]]:
    """The check the class was last sent to, as (phase, concept, when), if the teacher's last push was a check."""
    try:
        info = class_live.class_info(code)
    except StoreError:
        return None
    if info is None or not info.follow_link or info.follow_at is None:
        return None
    params = dict(urllib.parse.parse_qsl(info.follow_link))
    if params.get("page") != registry.CHECK_PAGE.key:
        return None
    return params.get("check.phase", check.BEFORE), params.get("check.concept", ALL), info.follow_at


def gain_rows(results) -> pd.DataFrame:
    """Per concept (in teaching order): students who took both, the shares right before and after, Hake's gain."""
    by = {c.concept: c for c in results.concepts}
    rows = []
    for key in check.CONCEPTS:
        c = by.get(key)
        if c is None:
            continue
        gain = (check.normalised_gain(c.before, c.after) if c.before is not None and c.after is not None else None)
        rows.append({"concept_key": key, "concept": concept_title(key), "students": c.students,
                     "before": c.before, "after": c.after, "gain": gain, "before_only": c.before_only,
                     "after_only": c.after_only})
    return pd.DataFrame(rows)


def gain_view(code: str) -> None:
    """*Your class*: did the class learn it? Per concept the share right before and after (over the students who took
    both), the normalised gain, and the named mistakes that survived."""
    st.subheader(_("Did the class learn it?"))
    store, _writer, _why = class_live.live()
    try:
        results = store.check_results(code)
    except StoreError as error:
        st.caption(_("The class store is unreachable ({why}).", why=str(error)))
        return
    table = gain_rows(results)
    if table.empty or not (table["students"] > 0).any():
        st.caption(_("No student has taken the check both before and after yet. Use **Check before / after** below."))
        if not table.empty:
            st.caption(_("So far: {n} answers before, {m} after.",
                         n=sum(c.before_answers for c in results.concepts),
                         m=sum(c.after_answers for c in results.concepts)))
        return
    shown = table[table["students"] > 0]
    charts.before_after(list(shown["concept"]), list(shown["before"]), list(shown["after"]), key="class_check_chart",
                        x_title=_("share right"), y_title=_("concept"), series_title=_("check"),
                        domain=(_("before"), _("after")))
    st.dataframe(pd.DataFrame({  # the gain right after the concept: what a phone shows without scrolling
        _("concept"): shown["concept"],
        _("normalised gain"): ["–" if g is None or pd.isna(g) else f"{g:+.2f}" for g in shown["gain"]],
        _("right before"): [charts.percent(v) for v in shown["before"]],
        _("right after"): [charts.percent(v) for v in shown["after"]],
        _("students (both)"): shown["students"],
    }), hide_index=True, width="stretch")
    st.caption(_("Normalised gain = (after − before) / (1 − before) (Hake 1998): the share of what was left to learn "
                 "that was learned; 0 no change, 1 everything, below 0 worse. Only students who took both checks "
                 "count. A short formative check, not an exam."))
    survived = [(c, o, b, a) for c, o, b, a in results.mistakes if a > 0]
    if survived:
        st.markdown("**" + _("Misconceptions that survived the lesson") + "**")
        st.dataframe(pd.DataFrame({
            _("mistake"): [_(practice.MISTAKES[o]) if o in practice.MISTAKES else widgets.md_escape(o)
                           for _c, o, _b, _a in survived],
            _("concept"): [concept_title(c) for c, *_rest in survived],
            _("before"): [b for _c, _o, b, _a in survived],
            _("after"): [a for *_rest, a in survived],
        }), hide_index=True, width="stretch")


def csv_rows(results) -> list[tuple]:
    """The check's rows of the class CSV: (concept key, concept, "", "", measure, value)."""
    rows = []
    for row in gain_rows(results).to_dict("records"):
        key, title = row["concept_key"], row["concept"]
        rows += [(key, title, "", "", _("check: students who took both"), row["students"]),
                 (key, title, "", "", _("check: right before"), "" if row["before"] is None else round(row["before"], 4)),
                 (key, title, "", "", _("check: right after"), "" if row["after"] is None else round(row["after"], 4)),
                 (key, title, "", "", _("check: normalised gain"),
                  "" if row["gain"] is None or pd.isna(row["gain"]) else round(row["gain"], 4))]
    for concept, outcome, before, after in results.mistakes:
        name = _(practice.MISTAKES[outcome]) if outcome in practice.MISTAKES else outcome
        rows += [(concept, concept_title(concept), "", "", _("check: {mistake}, before", mistake=name), before),
                 (concept, concept_title(concept), "", "", _("check: {mistake}, after", mistake=name), after)]
    return rows
