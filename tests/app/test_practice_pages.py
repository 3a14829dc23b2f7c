"""Practice mode on every step page (AppTest), in both languages; a whole self-attention walk-through done as
exercises with each mistake named; bad answers; the teacher's link that fixes settings."""

from __future__ import annotations

import pytest
from conftest import APP, errors
from streamlit.testing.v1 import AppTest

from attention_core import practice, registry
from attention_core.self_attention.walkthrough import build_walkthrough, self_attention_steps

HIDDEN = ("hidden until you answer", "先隐藏起来")
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


def _picker(at: AppTest, label: str):
    return next(s for s in at.selectbox if s.label == label)


def _answer_box(at: AppTest):
    boxes = [t for t in at.text_input if (t.key or "").startswith("practice_answer_")]
    return boxes[0] if boxes else None


def _check(at: AppTest, answer: str) -> None:
    _answer_box(at).input(answer)
    submit = [b for b in at.button if b.label in ("Check", "检查")]
    assert submit, [b.label for b in at.button]
    submit[0].click().run()


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("path", [f"app_pages/{page.file}" for page in registry.PAGES if page.stages])
def test_practice_mode_on_every_stage_of_every_step_page(path, language):
    at = _open(path, language)
    toggle = at.toggle(key="setting_practice")
    toggle.set_value(True).run()
    page = registry.BY_KEY[path.removeprefix("app_pages/").removesuffix(".py")]
    field, titles = page.stage_field, page.stages
    at.selectbox(key=f"setting_{field}").set_value(next(iter(titles))).run()
    solved = 0
    while True:
        stage = at.session_state["settings"].get(field)
        context = (path, language, stage)
        assert not at.exception, (context, at.exception)
        assert not at.error, (context, errors(at))
        if _has(at.info, HIDDEN):
            if at.pills:  # a softmax: predict the row's largest weight first
                at.pills[0].set_value(0).run()
                assert _has(at.success, ("Right:", "对了")) or _has(at.warning, ("Not this time", "这次不对")), context
            assert _answer_box(at), context
            _check(at, "999")
            assert at.warning, context  # not quite, or a named mistake
            reveal = [b for b in at.button if b.key == "practice_reveal"]
            reveal[0].click().run()
            assert not _has(at.info, HIDDEN) and not _answer_box(at), context
            assert at.latex, context  # the worked solution
            solved += 1
        else:
            assert _has(at.info, NO_EXERCISE), context
        if at.button(key="step_next").disabled:
            break
        at.button(key="step_next").click().run()
    at.toggle(key="worksheet_show").set_value(True).run()
    downloads = {d.proto.label for d in at.get("download_button")}
    assert ({"Worksheet (PDF)", "Answer key (PDF)", "Every step as Markdown"} <= downloads
            or {"练习单（PDF）", "答案（PDF）", "所有步骤导出为 Markdown"} <= downloads), downloads
    store = at.session_state["practice_store"] if solved else None
    if solved:
        assert len(store["tried"]) == solved and not store["correct"]
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"{path}: shown without a translation: {sorted(missing)}"


def test_a_whole_self_attention_walk_through_as_exercises_with_every_mistake_named():
    at = _open("app_pages/self_attention.py", practice="1")
    settings = at.session_state["settings"]
    walk = build_walkthrough(settings)
    named = set()
    for stage in registry.BY_KEY["self_attention"].stages:
        at.selectbox(key="setting_self_attention.stage").set_value(stage).run()
        col = 3 if stage in ("scores", "scaled_scores", "weights") else 0  # entries where every mistake differs
        _picker(at, "Row").set_value(1).run()
        _picker(at, "Column").set_value(col).run()
        exercise = self_attention_steps(walk, stage).stage.exercise(1, col, 0)
        if exercise is None:
            assert _has(at.info, NO_EXERCISE), stage
            continue
        if exercise.predict:
            at.pills[0].set_value(3).run()
        for mistake in exercise.mistakes:
            _check(at, f"{mistake.value:.4f}")
            hints = " ".join(w.value for w in at.warning)
            assert practice.MISTAKES[mistake.key] in hints, (stage, mistake.key, hints)
            assert _has(at.info, HIDDEN), stage  # a wrong answer does not reveal
            named.add(mistake.key)
        _check(at, f"{exercise.answer:.2f}")
        assert _has(at.success, CORRECT), (stage, [s.value for s in at.success])
        assert not _has(at.info, HIDDEN)
    assert named == {"swapped", "no_scale", "scale_d_k", "scale_d_model", "softmax_column", "sum_before_exp",
                     "max_not_sum"}
    store = at.session_state["practice_store"]
    assert len(store["correct"]) == 7 and store["first_try"] == {k for k in store["correct"] if k[1] in (
        "query", "key", "value")}  # the stages without a known mistake were right at the first try
    assert "Score this session: 7 of 7 entries right, 3 at the first try." in [c.value for c in at.caption]


@pytest.mark.parametrize(("typed", "words"), [
    ("", "Type a number"), ("two", "not a number"), ("nan", "not a finite"), ("1e99", "far too large"),
    ("**bold** [x](http://a)", "not a number"),
])
def test_bad_answers_get_a_message_and_stay_in_the_box(typed, words):
    at = _open("app_pages/self_attention.py", practice="1", stage="scores")
    _check(at, typed)
    assert words in errors(at), errors(at)
    assert _answer_box(at).value == typed  # what the student typed is kept
    assert _has(at.info, HIDDEN)
    if "**" in typed:
        assert "\\*\\*bold\\*\\*" in at.error[0].value  # shown as typed, not as Markdown


def test_pick_an_entry_for_me_moves_the_asked_entry():
    at = _open("app_pages/self_attention.py", practice="1", stage="scaled_scores")
    seen = set()
    for _ in range(4):
        at.button(key="practice_pick").click().run()
        settings = at.session_state["settings"]
        seen.add((settings.entry_row, settings.entry_col))
        assert _has(at.info, HIDDEN)
    assert len(seen) > 1


def test_a_teachers_link_fixes_the_chosen_settings_and_leaves_the_rest_free():
    at = _open("app_pages/self_attention.py", locked="d_k,stage", practice="1")
    boxes = {n.label: n for n in at.number_input}
    assert boxes["d_k (width of q, k, v)"].disabled and not boxes["Seed"].disabled
    assert at.button(key="step_next").disabled and at.button(key="step_prev").disabled
    assert _has(at.info, ("Your teacher's link fixes these settings on this page: d_k (width of q, k, v), Step.",))
    boxes["Seed"].set_value(5).run()  # the rest stays free
    assert at.session_state["settings"].seed == 5
    assert at.query_params["locked"] == "d_k,self_attention.stage"  # the link keeps the lock (by today's names)
    assert at.selectbox(key="setting_self_attention.stage").disabled
    # the teacher's panel: free d_k again
    at.multiselect[0].set_value(["self_attention.stage"]).run()
    assert at.session_state["settings"].locked == "self_attention.stage"
    assert not {n.label: n for n in at.number_input}["d_k (width of q, k, v)"].disabled


def test_a_link_that_fixes_unknown_settings_says_so():
    at = _open("app_pages/self_attention.py", locked="d_k,nonsense,language")
    assert at.session_state["settings"].locked == "d_k"
    assert "nonsense, language" in " ".join(w.value for w in at.warning)
