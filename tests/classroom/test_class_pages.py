"""A class, live, under AppTest: a teacher and several students' sessions on one store (real SQLite, and the real
PostgreSQL server of tests/conftest.py), the teacher's page in both languages, "Bring the class here" and Follow,
the end and the deletion of a class, and every bad input of issue 38 (forged codes and keys, floods, a store that
is down)."""

from __future__ import annotations

import json
import time

import pytest
from conftest import APP, element, element_send, shown
from streamlit.testing.v1 import AppTest

from attention_core import practice
from attention_core.lessons.self_attention.page import self_attention_step_through
from attention_core.self_attention.walkthrough import build_walkthrough
from ui import charts
from ui.classroom import class_live
from ui.classroom.store.store import Store
from ui.classroom.store.writer import RateLimit

SELF_ATTENTION = "app_pages/self_attention.py"


@pytest.fixture
def url(store_url, monkeypatch):
    monkeypatch.setenv(class_live.ENV_URL, store_url)
    return store_url


def writer(url: str):
    """The app's writer of this store (the same process: AppTest runs the app here)."""
    return class_live._open(url)[1]


def start_class(language: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.button(key="class_start").click().run()
    assert not at.exception, at.exception
    return at


REPORTER = "attention_explorer.reporter"  # ui/stepper.py: the class's reporter of the step reached


def student(code: str, *, path: str = SELF_ATTENTION, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["class"] = code
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if path:
        at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def check(at: AppTest, value: str) -> None:
    """The step-through element's Check with ``value`` typed, at the entry it shows."""
    element_send(at, "answer", {**element(at)["position"], "text": value})
    assert not at.exception, at.exception


def verdict(at: AppTest) -> str:
    """What the element was sent about the answer at the entry it shows: its hints (or its message)."""
    data = element(at)
    position = data["position"]
    exercise = data["stages"][position["stage"]]["exercises"][f"{position['row']},{position['col']},{position['head']}"]
    said = data["practice"]["status"].get(exercise["id"], {})
    return " ".join(said.get("hints", [])) + said.get("error", "") + said.get("correct", "")


def exercise(at: AppTest, stage: str, row: int = 1, col: int = 3):
    walk = build_walkthrough(at.session_state["settings"])
    return self_attention_step_through(walk, stage).stage.exercise(row, col, 0)


def texts(at: AppTest) -> str:
    return " ".join(shown(str(e.value)) for kind in ("markdown", "caption", "info", "warning", "error", "success")
                    for e in getattr(at, kind))


def teacher_page(at: AppTest) -> AppTest:
    at.switch_page("app_pages/your_class.py").run()
    assert not at.exception, at.exception
    return at


def test_a_teacher_sees_the_class_answers_and_its_named_mistakes(url):
    teacher = start_class()
    seat = teacher.session_state["class_member"]
    assert seat.teacher and teacher.query_params["teacher"] == seat.teacher_key
    students = [student(seat.code, practice="1", stage="scaled_scores", entry_row="1", entry_col="3")
                for _ in range(3)]
    seats = {s.session_state["class_member"].seat for s in students}
    assert len(seats) == 3 and all(s.query_params["class"] == seat.code for s in students)
    assert all("teacher" not in s.query_params for s in students)  # the key never reaches a student's link
    asked = exercise(students[0], "scaled_scores")
    wrong = next(m for m in asked.mistakes if m.key == "no_scale")
    check(students[0], f"{wrong.value:.4f}")  # forgot ÷ √d_k
    check(students[1], f"{wrong.value:.4f}")
    check(students[1], f"{asked.answer:.4f}")  # right at the second try
    check(students[2], f"{asked.answer:.4f}")  # right at the first
    assert writer(url).flush()
    at = teacher_page(teacher)
    page = texts(at)
    name = practice.MISTAKES["no_scale"]
    assert f"**{name}**: 2 of 4 answers at Scaled scores ÷ √d_k (Scaled dot-product self-attention)." in page, page
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Answers"] == "4" and metrics["Right at the first try"] == "33%"  # 1 of 3 first tries
    assert metrics["Students here now"] == "3"
    dash = Store(url).dashboard(seat.code)
    assert dash.practice == [("self_attention", "scaled_scores", 4, 3, 1)]
    assert dash.mistakes == [("self_attention", "scaled_scores", "no_scale", 2)]
    assert ("self_attention", 3) in dash.reached
    assert any(kind for kind in at.get("vega_lite_chart"))  # the mistakes ranked, where the class is, over time
    # the answers over time: the axis ends at the minute after now, not a quarter of an hour after the first answer
    over_time = next(json.loads(c.proto.spec) for c in at.get("vega_lite_chart") if '"time:T"' in c.proto.spec
                     or '"field": "time"' in c.proto.spec)
    start, end = over_time["encoding"]["x"]["scale"]["domain"]
    now = int(time.time() // 60)
    assert (now - 1) * 60_000 <= end <= (now + 1) * 60_000 and end - start >= charts.MIN_MINUTES * 60_000


def test_the_step_reached_is_reported_by_the_classs_reporter_and_only_in_a_class(url):
    """The step-through element steps in the browser; in a class it hands the step reached to a small element of its
    own (drawn in a fragment of its own, so that a report reruns only that): its trigger moves the seat's step for the
    teacher's page. Outside a class there is no reporter."""
    alone = AppTest.from_file(APP, default_timeout=120).run()
    alone.switch_page(SELF_ATTENTION).run()
    assert not [e for e in alone.get("bidi_component") if e.proto.component_name == REPORTER]
    code = start_class().session_state["class_member"].code
    at = student(code)
    element_send(at, "reached", {"stage": "weights", "row": 1, "col": 2, "head": 0}, name=REPORTER)
    assert not at.exception, at.exception
    assert at.session_state["settings"].get("self_attention.stage") == "weights"
    assert (at.session_state["settings"].entry_row, at.session_state["settings"].entry_col) == (1, 2)
    element_send(at, "reached", {"stage": "nope", "row": 1}, name=REPORTER)  # forged: nothing moves
    assert at.session_state["settings"].get("self_attention.stage") == "weights"
    assert writer(url).flush()
    assert ("self_attention", "weights", 1) in Store(url).dashboard(code).here


def test_the_answers_over_time_axis_ends_now_or_at_the_classs_end():
    """The axis was at least a quarter of an hour from the first answer on: a class that had just started saw 15
    minutes of the future. It ends at the minute after ``until`` (now, or the class's end), or after the last answer
    if later, and reaches back for the quarter of an hour."""
    minute = 60_000
    assert charts.over_time_domain([1000, 1002], until=1003) == (987 * minute, 1004 * minute)
    assert charts.over_time_domain([1000, 1030], until=1031) == (999 * minute, 1032 * minute)
    assert charts.over_time_domain([1000, 1030], until=1010) == (999 * minute, 1031 * minute)  # an answer came late
    assert charts.over_time_domain([1000], until=None) == (984 * minute, 1001 * minute)  # no clock: the last answer


def test_the_teachers_page_in_chinese(url):
    teacher = start_class("zh")
    code = teacher.session_state["class_member"].code
    one = student(code, practice="1", stage="scaled_scores", entry_row="1", entry_col="3")
    check(one, "999")
    assert writer(url).flush()
    at = teacher_page(teacher)
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, sorted(missing)
    assert "你的班级" in [t.value for t in at.title] and "没有对应已知错误的错误回答" in texts(at)


def test_what_a_student_sees_and_leaving_the_class(url):
    code = start_class().session_state["class_member"].code
    at = student(code)
    assert f"You are in class {code}: your teacher sees the class's answers, not your name." in texts(at)
    at.button(key="class_leave_sidebar").click().run()
    assert at.session_state["class_member"] is None and "class" not in at.query_params
    assert "You are in class" not in texts(at)


def test_a_student_keeps_the_seat_of_the_link(url):
    code = start_class().session_state["class_member"].code
    first = student(code)
    seat = first.session_state["class_member"].seat
    again = student(code, seat=seat)  # reloaded, or moved to another replica: the link holds the seat
    assert again.session_state["class_member"].seat == seat
    forged = student(code, seat="<b>x</b>")  # not a seat id: a fresh one
    assert forged.session_state["class_member"].seat != "<b>x</b>"


def test_bring_the_class_here_follow_and_back(url):
    teacher = start_class()
    code = teacher.session_state["class_member"].code
    teacher.switch_page("app_pages/causal.py").run()
    teacher.number_input(key="setting_d_k").set_value(2).run()
    at = student(code, path="app_pages/tokens.py", palette="cvd")  # the student's own colours
    at.number_input(key="setting_seed").set_value(5).run()
    own = at.session_state["settings"]
    teacher.button(key="class_bring").click().run()
    assert not teacher.exception
    at.run()
    assert "Your teacher brings the class to **Causal attention**." in texts(at)
    at.button(key="class_follow").click().run()
    assert not at.exception, at.exception
    assert at.session_state["settings"].d_k == 2 and at.session_state["settings"].seed == teacher.session_state[
        "settings"].seed
    assert at.query_params["class"] == code  # still in the class
    assert at.session_state["settings"].palette == "cvd"  # their view is theirs: only the numbers follow
    at.button(key="class_back").click().run()
    assert at.session_state["settings"] == own  # nothing of theirs was lost
    assert "brings the class" not in texts(at)


def test_stay_here_dismisses_the_banner(url):
    teacher = start_class()
    code = teacher.session_state["class_member"].code
    at = student(code)
    teacher.button(key="class_bring").click().run()
    at.run()
    at.button(key="class_stay").click().run()
    assert "brings the class" not in texts(at) and at.session_state["class_member"] is not None


def test_ending_and_deleting_a_class(url):
    teacher = teacher_page(start_class())
    code = teacher.session_state["class_member"].code
    at = student(code, practice="1", stage="scaled_scores")
    teacher.button(key="class_end").click().run()
    assert "This class ended at" in texts(teacher)
    at.run()
    assert f"Class {code} has ended. Thank you!" in texts(at)
    assert at.session_state["class_member"] is None and "class" not in at.query_params
    late = student(code, path="")  # the message is shown on the page the link opens
    assert f"Class {code} has ended: the pages work as always" in texts(late)
    assert late.session_state["class_member"] is None if "class_member" in late.session_state else True
    teacher.button(key="class_delete").click().run()
    assert Store(url).info(code) is None
    assert f"Class {code} and everything it recorded were deleted." in texts(teacher)
    gone = student(code, path="")
    assert f"No class has the code {code}" in texts(gone)


@pytest.mark.parametrize(("params", "words"), [
    ({"class": "NOTACODE!"}, "class code is not valid"),
    ({"class": "' OR 1=1 --"}, "class code is not valid"),
    ({"class": "x" * 5000}, "class code is not valid"),
    ({"class": "ABCDEFGH"}, "No class has the code ABCDEFGH"),
])
def test_forged_or_unknown_class_codes_get_a_message(url, params, words):
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and words in texts(at)
    assert at.session_state["class_member"] is None if "class_member" in at.session_state else True


def test_a_forged_teacher_key_never_opens_the_class(url):
    teacher = start_class()
    code = teacher.session_state["class_member"].code
    for key in ("A" * 32, "", "<script>", teacher.session_state["class_member"].teacher_key + "x"):
        at = AppTest.from_file(APP, default_timeout=120)
        at.query_params["class"] = code
        at.query_params["teacher"] = key
        at.run()
        assert not at.exception
        assert "does not open class" in texts(at)
        assert at.session_state["class_member"] is None if "class_member" in at.session_state else True
        assert all(p.title != "Your class" for p in at.get("navigation")) if at.get("navigation") else True
    second = AppTest.from_file(APP, default_timeout=120)  # a second teacher window with the real key: welcome
    second.query_params["class"] = code
    second.query_params["teacher"] = teacher.session_state["class_member"].teacher_key
    second.run()
    assert second.session_state["class_member"].teacher


def test_a_flood_of_answers_is_cut_off_and_counted(url):
    teacher = start_class()
    code = teacher.session_state["class_member"].code
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["class"] = code
    at.query_params["practice"] = "1"
    at.query_params["stage"] = "scaled_scores"
    at.session_state["class_rate_limit"] = RateLimit(burst=3, per_s=0.0)  # a script's flood, without the wait
    at.run()
    at.switch_page(SELF_ATTENTION).run()  # the two pages opened (the overview, this): 2 events
    for value in ("1", "2", "3", "4", "5"):
        check(at, value)
    assert not at.exception and "Not quite" in verdict(at)  # the student's own page works as always
    assert writer(url).flush()
    info = Store(url).info(code)
    # 3 of 7 events kept (the step reached is the element's own report, sent after a pause: none here)
    assert Store(url).event_count(code) == 3 and info.rate_limited == 4
    assert "4 cut off by the rate limit" in texts(teacher_page(teacher))


def test_a_store_that_cannot_be_reached_never_stops_a_student(monkeypatch, tmp_path):
    monkeypatch.setenv(class_live.ENV_URL, "postgresql+psycopg://attention:x@127.0.0.1:9/none")  # port 9: nobody
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.button(key="class_start").click().run()
    assert not at.exception and "no class was started" in texts(at)
    one = student("ABCDEFGH", practice="1", stage="scaled_scores")  # joined: the store decides later
    check(one, "1")
    assert not one.exception and one.session_state["class_member"] is not None
    teacher = AppTest.from_file(APP, default_timeout=120)
    teacher.query_params["class"] = "ABCDEFGH"
    teacher.query_params["teacher"] = "A" * 32
    teacher.run()
    assert "cannot be checked now" in texts(teacher)


def test_a_store_url_that_cannot_be_used_is_a_message(monkeypatch):
    monkeypatch.setenv(class_live.ENV_URL, "nosuchdb://x")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.button(key="class_start").click().run()
    assert not at.exception and "The class store cannot be used" in texts(at)
    one = student("ABCDEFGH", path="")
    assert "The class store cannot be used" in texts(one)


def test_the_teachers_page_says_when_postgresql_is_down(postgres_cluster, monkeypatch):
    monkeypatch.setenv(class_live.ENV_URL, postgres_cluster.url)
    teacher = teacher_page(start_class())
    postgres_cluster.stop()
    try:
        teacher.run()
        assert "The class store is unreachable since" in texts(teacher) and not teacher.exception
    finally:
        postgres_cluster.start()
    teacher.run()
    assert "unreachable" not in texts(teacher)


def test_the_csv_holds_the_aggregate_and_no_seat(url):
    from ui.classroom import class_dashboard

    teacher = start_class()
    code = teacher.session_state["class_member"].code
    one = student(code, practice="1", stage="scaled_scores", entry_row="1", entry_col="3")
    check(one, "999")
    seat = one.session_state["class_member"].seat
    assert writer(url).flush()
    text = class_dashboard.csv_text(Store(url).dashboard(code))
    lines = text.splitlines()
    assert lines[0] == "page_key,page,step_key,step,measure,count"
    assert "self_attention,Scaled dot-product self-attention,scaled_scores" in text and ",answers,1" in text
    assert seat not in text and "999" not in text
