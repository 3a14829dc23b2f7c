"""The page *Check your understanding* under AppTest: a learner alone takes the check before and after (nothing
typed is lost on a bad hand-in, each named mistake is shown with its hint, the worked solutions, their own before and
after); in a class the outcomes reach the store and the teacher's page shows the gain per concept."""

from __future__ import annotations

import pytest
from conftest import APP
from streamlit.testing.v1 import AppTest

from attention_core import check, practice
from ui.classroom import class_live
from ui.classroom.store.store import Store

CHECK = "app_pages/check.py"


def _open(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(CHECK).run()
    assert not at.exception, at.exception
    return at


def _items(at: AppTest, phase: str, concept: str = "all", seat: str = "") -> tuple[check.Item, ...]:
    seat = seat or at.session_state["settings"].check.seat
    return check.make_check(seat, phase, None if concept == "all" else [concept])


def _answer(at: AppTest, items, phase: str, concept: str = "all", wrong: dict | None = None) -> None:
    """Type each item's answer (``wrong``: template -> what to type or choose instead)."""
    wrong = wrong or {}
    for item in items:
        key = f"check_answer_{phase}_{concept}_{item.template}"
        if item.kind == check.PROCEDURAL:
            at.text_input(key=key).input(str(wrong.get(item.template, repr(item.exercise.answer))))
        else:
            at.radio(key=key).set_value(wrong.get(item.template, item.right))


def _hand_in(at: AppTest) -> None:
    next(b for b in at.button if b.label == "Hand in").click().run()
    assert not at.exception, at.exception


def test_alone_a_learner_takes_the_check_before_and_after_and_sees_their_own_gain():
    at = _open(**{"check.concept": "softmax"})
    seat = at.session_state["settings"].check.seat
    assert len(seat) == 16  # drawn on the first visit (96 bits), kept in the link
    items = _items(at, "before", "softmax")
    assert len(at.main.text_input) == 2 and len(at.main.radio) == 2
    # a bad hand-in: one box empty, one not a number; what was typed stays
    typed = {items[0].template: "abc"}
    _answer(at, items[:1], "before", "softmax", typed)
    _hand_in(at)
    errors = [e.value for e in at.error]
    assert any("not a number" in e for e in errors) and sum("Answer this one first" in e for e in errors) == 3
    assert at.text_input(key=f"check_answer_before_softmax_{items[0].template}").value == "abc"
    # all right but the shift item, answered with its misconception
    shift = next(i for i in items if i.template == "softmax.shift")
    misconception = shift.choice_mistakes.index("shift_changes_weights")
    _answer(at, items, "before", "softmax", {"softmax.shift": misconception})
    _hand_in(at)
    assert any("You got 3 of 4 right" in s.value for s in at.info)
    assert any("adding the same number to a row changes its weights" in w.value for w in at.warning)
    assert len(at.latex) >= 2  # worked solutions
    # after the lesson: new numbers, all right; the learner's own before and after
    at.segmented_control(key="setting_check.phase").set_value("after").run()
    after = _items(at, "after", "softmax")
    assert [i.template for i in after] == [i.template for i in items]
    assert [i.drawn for i in after if i.drawn] != [i.drawn for i in items if i.drawn]
    _answer(at, after, "after", "softmax")
    _hand_in(at)
    assert any("You got 4 of 4 right" in s.value for s in at.success)
    table = at.dataframe[-1].value
    assert list(table.iloc[0]) == ["Softmax", "3/4", "4/4"]


def test_a_reload_with_the_link_gives_the_same_items_back_and_a_forged_seat_gets_a_message():
    at = _open()
    seat = at.session_state["settings"].check.seat
    again = _open(**{"check.seat": seat})
    assert again.session_state["settings"].check.seat == seat
    assert [m.value for m in again.markdown][:30] == [m.value for m in at.markdown][:30]
    forged = _open(**{"check.seat": "<script>", "check.phase": "during", "check.concept": "nope"})
    shown = " ".join(w.value for w in forged.warning)
    assert "seat id is not valid" in shown and "Unknown phase" in shown and "Unknown concept" in shown
    assert forged.session_state["settings"].check.seat not in ("", "<script>")


@pytest.fixture
def url(store_url, monkeypatch):
    monkeypatch.setenv(class_live.ENV_URL, store_url)
    return store_url


def test_in_a_class_the_outcomes_reach_the_store_and_the_teacher_sees_the_gain(url):
    teacher = AppTest.from_file(APP, default_timeout=120).run()
    teacher.button(key="class_start").click().run()
    code = teacher.session_state["class_member"].code
    students = []
    for wrong_before in (2, 1, 0):
        at = _open(**{"class": code, "check.concept": "causal_mask"})
        seat = at.session_state["class_member"].seat
        items = _items(at, "before", "causal_mask", seat)
        wrong = {i.template: "1000" if i.kind == check.PROCEDURAL else (i.right + 1) % 3 for i in items[:wrong_before]}
        _answer(at, items, "before", "causal_mask", wrong)
        _hand_in(at)
        students.append((at, seat))
    for at, seat in students[:2]:  # the third leaves before the end
        at.segmented_control(key="setting_check.phase").set_value("after").run()
        items = _items(at, "after", "causal_mask", seat)
        _answer(at, items, "after", "causal_mask")
        _hand_in(at)
    class_live._open(url)[1].flush()
    results = Store(url).check_results(code)
    (causal,) = results.concepts
    assert (causal.students, causal.before_only, causal.before_right, causal.before_answers) == (2, 1, 5, 8)
    assert (causal.after_right, causal.after_answers) == (8, 8)
    teacher.switch_page("app_pages/your_class.py").run()
    assert not teacher.exception
    table = next(d.value for d in teacher.dataframe if "normalised gain" in d.value.columns)
    # before 5/8 = 62.5 % (written 63 %, as the chart writes it), after 100 %: gain (1 − 0.625) / (1 − 0.625) = +1.00
    assert list(table.iloc[0]) == ["Causal mask", "+1.00", "63%", "100%", 2]


def test_a_class_started_with_the_check_sends_joining_students_to_it_and_check_now_sends_the_check_after(url):
    teacher = AppTest.from_file(APP, default_timeout=120).run()
    teacher.toggle(key="class_start_check").set_value(True).run()
    teacher.button(key="class_start").click().run()
    assert not teacher.exception, teacher.exception
    code = teacher.session_state["class_member"].code
    info = Store(url).info(code)
    assert info.follow_link == "page=check&check.phase=before&check.concept=all"

    student = AppTest.from_file(APP, default_timeout=120)
    student.query_params["class"] = code
    student.run()
    assert any("Check your understanding" in m.value for m in student.markdown), "the banner names the check"
    student.button(key="class_follow").click().run()
    assert not student.exception, student.exception
    settings = student.session_state["settings"].check
    assert (settings.phase, settings.concept) == ("before", "all")
    assert any(b.label == "Hand in" for b in student.button)

    teacher.switch_page("app_pages/your_class.py").run()
    sent = [c.value for c in teacher.caption if c.value.startswith("Sent at")]
    assert sent and "the check before the lesson. Concepts: The six concepts of attention (24 items)." in sent[0]
    assert any("send the check after" in c.value for c in teacher.caption), "ending now would leave no gain: said"
    teacher.selectbox(key="class_check_concept").set_value("softmax").run()
    teacher.button(key="class_check_after").click().run()
    assert Store(url).info(code).follow_link == "page=check&check.phase=after&check.concept=softmax"
    assert not any("send the check after" in c.value for c in teacher.caption)


def test_a_class_started_without_the_check_sends_nobody_anywhere(url):
    teacher = AppTest.from_file(APP, default_timeout=120).run()
    teacher.button(key="class_start").click().run()
    assert Store(url).info(teacher.session_state["class_member"].code).follow_link is None


@pytest.mark.parametrize("concept, mistake", [("backward", "P dO instead of Pᵀ dO"),
                                              ("modern", "Forgot the sink's e^b")])
def test_the_backward_pass_and_the_modern_concepts_are_checked_on_their_own_not_in_the_six(concept, mistake):
    at = _open(**{"check.concept": concept})
    items = _items(at, "before", concept)
    assert [i.kind for i in items] == [check.PROCEDURAL] * 2 + [check.CONCEPTUAL] * 2
    assert len(items[0].exercise.mistakes) == (1 if concept == "backward" else 3)  # every seat: each mistake named
    first = items[0]
    named = next(m for m in first.exercise.mistakes if practice.MISTAKES[m.key] == mistake)
    _answer(at, items, "before", concept, {first.template: repr(named.value)})
    _hand_in(at)
    assert any("You got 3 of 4 right" in s.value for s in at.info)
    assert any(mistake in m.value for m in [*at.markdown, *at.warning])
    assert concept not in {i.concept for i in _items(at, "before")}
