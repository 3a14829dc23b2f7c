"""Practice mode on every step page (AppTest), in both languages; a whole self-attention walk-through done as
exercises with each mistake named; bad answers; the teacher's link that fixes settings."""

from __future__ import annotations

import pytest
from conftest import APP, element, element_send, element_step, errors, has_element
from streamlit.testing.v1 import AppTest

from attention_core import practice, registry
from attention_core.lessons.self_attention.page import self_attention_step_through
from attention_core.self_attention.walkthrough import build_walkthrough

NO_EXERCISE = ("No exercise at this step", "这一步没有练习")
CORRECT = ("Correct:", "正确：")


def _open(path: str, language: str = "en", **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(path).run()
    return at


def _has(texts, words) -> bool:
    return any(any(w in t.value for w in words) for t in texts)


def _practise_in_the_element(at: AppTest, path: str, language: str) -> int:
    """Practice mode in the step-through element: every stage (moved to as a link moves the element), the entry
    shown answered wrong (after the prediction a softmax asks first), then its solution shown, each as the element
    sends it; the verdicts the element is sent back. How many entries were asked."""
    page = registry.BY_KEY[path.removeprefix("app_pages/").removesuffix(".py")]
    solved = 0
    for key in page.stages:
        element_step(at, **{page.stage_field: key})
        data = element(at)
        context = (path, language, key)
        assert not at.exception, (context, at.exception)
        assert not at.error, (context, errors(at))
        position = data["position"]
        assert position["stage"] == key, context
        stage = data["stages"][key]
        exercise = stage["exercises"][f"{position['row']},{position['col']},{position['head']}"] \
            if stage["has_entry"] else None
        if exercise is None:  # the element says there is nothing to compute here
            assert any(w in data["practice"]["labels"]["nothing_html"] for w in NO_EXERCISE), context
            continue
        assert exercise["question"].endswith("= \\;?") and exercise["inputs"], context
        if exercise["predict"]:  # a softmax: which key gets the most weight, first
            element_send(at, "predict", {**position, "choice": 0})
            said = element(at)["practice"]["status"][exercise["predict"]["id"]]
            assert said["predicted"] == 0 and any(w in said["verdict"] for w in (
                "Right:", "对了", "Not this time", "这次不对")), (context, said)
        element_send(at, "answer", {**position, "text": "999"})
        said = element(at)["practice"]["status"][exercise["id"]]
        assert said.get("hints") and not said.get("revealed"), (context, said)  # not quite, or a named mistake
        element_send(at, "reveal", position)
        assert element(at)["practice"]["status"][exercise["id"]]["revealed"], context
        assert f"{position['row']},{position['col']},{position['head']}" in element(at)["stages"][key]["entries"]
        solved += 1
    return solved


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("path", [f"app_pages/{page.file}" for page in registry.PAGES if page.stages])
def test_practice_mode_on_every_stage_of_every_step_page(path, language):
    at = _open(path, language)
    at.toggle(key="setting_practice").set_value(True).run()
    assert has_element(at), path
    solved = _practise_in_the_element(at, path, language)
    at.toggle(key="worksheet_show").set_value(True).run()
    downloads = {d.proto.label for d in at.get("download_button")}
    assert ({"Worksheet (PDF)", "Answer key (PDF)", "Every step as Markdown"} <= downloads
            or {"练习单（PDF）", "答案（PDF）", "所有步骤导出为 Markdown"} <= downloads), downloads
    store = at.session_state["practice_store"] if solved else None
    if solved:
        assert len(store["tried"]) == solved and not store["correct"]
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"{path}: shown without a translation: {sorted(missing)}"


def _answer(at: AppTest, stage: str, row: int, col: int, text: str) -> dict:
    """The element's Check with ``text`` typed, on the entry (row, col) of ``stage``: what it is sent back about it."""
    element_send(at, "answer", {"stage": stage, "row": row, "col": col, "head": 0, "text": text})
    data = element(at)
    exercise = data["stages"][stage]["exercises"][f"{row},{col},0"]
    return data["practice"]["status"].get(exercise["id"], {})


def test_a_whole_self_attention_walk_through_as_exercises_with_every_mistake_named():
    at = _open("app_pages/self_attention.py", practice="1")
    settings = at.session_state["settings"]
    walk = build_walkthrough(settings)
    named = set()
    for stage in registry.BY_KEY["self_attention"].stages:
        col = 3 if stage in ("scores", "scaled_scores", "weights") else 0  # entries where every mistake differs
        element_step(at, **{"self_attention.stage": stage, "entry_row": 1, "entry_col": col})
        exercise = self_attention_step_through(walk, stage).stage.exercise(1, col, 0)
        sent = element(at)["stages"][stage]
        if exercise is None:
            assert not sent["has_entry"] or sent["exercises"][f"1,{col},0"] is None, stage
            continue
        assert sent["exercises"][f"1,{col},0"]["question"] == exercise.question
        if exercise.predict:
            element_send(at, "predict", {"stage": stage, "row": 1, "col": col, "head": 0, "choice": 3})
        for mistake in exercise.mistakes:
            said = _answer(at, stage, 1, col, f"{mistake.value:.4f}")
            assert practice.MISTAKES[mistake.key] in " ".join(said["hints"]), (stage, mistake.key, said)
            assert not said.get("revealed"), stage  # a wrong answer does not reveal
            named.add(mistake.key)
        said = _answer(at, stage, 1, col, f"{exercise.answer:.2f}")
        assert said["revealed"] and said["correct"].startswith(CORRECT), (stage, said)
    assert named == {"swapped", "no_scale", "scale_d_k", "scale_d_model", "softmax_column", "sum_before_exp",
                     "max_not_sum"}
    store = at.session_state["practice_store"]
    assert len(store["correct"]) == 7 and store["first_try"] == {k for k in store["correct"] if k[1] in (
        "query", "key", "value")}  # the stages without a known mistake were right at the first try
    assert element(at)["practice"]["score_html"] == "Score this session: 7 of 7 entries right, 3 at the first try."


@pytest.mark.parametrize(("typed", "words"), [
    ("", "Type a number"), ("two", "not a number"), ("nan", "not a finite"), ("1e99", "far too large"),
    ("**bold** [x](http://a)", "not a number"), ("1" * 5000, "5000 characters long"),
])
def test_bad_answers_get_a_message_and_reveal_nothing(typed, words):
    at = _open("app_pages/self_attention.py", practice="1", stage="scores")
    said = _answer(at, "scores", 0, 0, typed)
    assert words in said["error"] and not said.get("revealed"), said
    assert not at.exception
    if "**" in typed:
        assert "**bold**" in said["error"] and "<strong>" not in said["error"]  # shown as typed, not as Markdown


def test_a_forged_practice_message_changes_nothing():
    """What the element sends is checked on the server: an unknown stage, a row outside the matrix, a choice that
    is no key, a text that is no text, practice mode off: no verdict, no exception."""
    at = _open("app_pages/self_attention.py", practice="1", stage="weights")
    for event, value in (("answer", {"stage": "nope", "row": 0, "col": 0, "text": "1"}),
                         ("answer", {"stage": "weights", "row": 0, "col": 0, "text": 5}),
                         ("predict", {"stage": "weights", "row": 0, "col": 0, "choice": 99}),
                         ("predict", {"stage": "weights", "row": 0, "col": 0, "choice": True}),
                         ("reveal", {"stage": "inputs", "row": 0, "col": 0}),
                         ("reveal", "weights")):
        element_send(at, event, value)
        assert not at.exception, (event, value)
        assert element(at)["practice"]["status"] == {}, (event, value)
    at.toggle(key="setting_practice").set_value(False).run()
    element_send(at, "reveal", {"stage": "weights", "row": 0, "col": 0, "head": 0})
    assert "practice_store" not in at.session_state or not at.session_state["practice_store"]["revealed"]


def test_pick_an_entry_for_me_moves_the_asked_entry():
    at = _open("app_pages/self_attention.py", practice="1", stage="scaled_scores")
    seen = set()
    for _ in range(4):
        element_send(at, "pick", element(at)["position"])
        data = element(at)
        position = data["position"]
        seen.add((position["row"], position["col"]))
        settings = at.session_state["settings"]
        assert (settings.entry_row, settings.entry_col) == (position["row"], position["col"])
        exercise = data["stages"]["scaled_scores"]["exercises"][f"{position['row']},{position['col']},0"]
        assert exercise["id"] not in data["practice"]["status"]  # asked, not revealed
    assert len(seen) > 1


def test_a_teachers_link_fixes_the_chosen_settings_and_leaves_the_rest_free():
    at = _open("app_pages/self_attention.py", locked="d_k,stage", practice="1")
    boxes = {n.label: n for n in at.number_input}
    assert boxes["d_k (width of q, k, v)"].disabled and not boxes["Seed"].disabled
    assert element(at)["locked"] == {"stage": True, "row": False, "col": False, "head": False}  # Next, Previous off
    fixed = at.session_state["settings"].get("self_attention.stage")
    element_send(at, "answer", {"stage": "value", "row": 0, "col": 0, "head": 0, "text": "1"})  # another stage
    assert at.session_state["settings"].get("self_attention.stage") == fixed != "value"  # fixed: not moved
    assert _has(at.info, ("Your teacher's link fixes these settings on this page: d_k (width of q, k, v), Step.",))
    boxes["Seed"].set_value(5).run()  # the rest stays free
    assert at.session_state["settings"].seed == 5
    assert at.query_params["locked"] == "d_k,self_attention.stage"  # the link keeps the lock (by today's names)
    # the teacher's panel: free d_k again
    at.multiselect[0].set_value(["self_attention.stage"]).run()
    assert at.session_state["settings"].locked == "self_attention.stage"
    assert not {n.label: n for n in at.number_input}["d_k (width of q, k, v)"].disabled
    assert element(at)["locked"]["stage"]


def test_a_link_that_fixes_unknown_settings_says_so():
    at = _open("app_pages/self_attention.py", locked="d_k,nonsense,language")
    assert at.session_state["settings"].locked == "d_k"
    assert "nonsense, language" in " ".join(w.value for w in at.warning)
