"""The backward-pass page: every stage's numbers against torch.autograd on the worked examples (causal on and off,
both targets), the FlashAttention identity, the finite difference, one step that lowers the loss, and every
practice hint on its own mistake and never on the right answer."""

from __future__ import annotations

import math

import pytest
import torch

from attention_core import practice, registry
from attention_core.backward.walkthrough import EPSILON, explained
from attention_core.errors import InputError
from attention_core.inputs.presets import PRESETS
from attention_core.lessons.backward.page import BACKWARD
from attention_core.settings import Settings
from attention_core.stepthrough import explained_value


def _settings(preset: str, causal: bool, target: str) -> Settings:
    return Settings.for_preset(preset).set(**{"causal_mask": causal, "backward.target": target})


CASES = [(preset, causal, target) for preset in PRESETS for causal in (False, True) for target in ("copy", "random")]


@pytest.mark.parametrize("preset, causal, target", CASES)
def test_every_gradient_equals_autograds_on_every_worked_example(preset, causal, target):
    walk = BACKWARD.walkthrough(_settings(preset, causal, target))
    assert len(walk.checks) == 10
    for check in walk.checks:
        assert check.matches and check.max_abs_diff <= 1e-5, (check.reference, check.max_abs_diff)
    # the page's own panels hold those numbers (dV's panel is the trace's dV, ...), every stage builds
    for stage in BACKWARD.stages:
        steps = BACKWARD.step_through(walk, stage)
        assert sum(p.explained for p in steps.stage.panels) == 1, stage
    t = walk.trace
    torch.testing.assert_close(walk.flash.d_scores, t.d_scores, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(walk.flash.row_dot, (t.d_output * t.output).sum(-1), rtol=1e-5, atol=1e-6)
    if causal:  # blocked scores get no gradient
        assert torch.all(t.d_scores[~t.mask] == 0)


def test_the_copy_target_pulls_one_row_and_a_step_moves_its_attention_toward_the_copied_token():
    walk = BACKWARD.walkthrough(Settings())  # token 2 should copy token 1's value
    t, s = walk.trace, walk.step
    assert torch.count_nonzero(t.d_output.abs().sum(-1)) == 1 and float(t.d_output[1].abs().sum()) > 0
    assert s.loss_after < s.loss_before
    assert float(s.weights_after[1, 0]) > float(s.weights_before[1, 0])
    assert int(s.weights_change[1, 0]) == 1


@pytest.mark.parametrize("stage", ["d_w_query", "d_w_key", "d_w_value"])
def test_the_finite_difference_of_the_explained_weight_moves_the_loss_by_eps_times_its_gradient(stage):
    walk = BACKWARD.walkthrough(Settings.for_preset("journey_v1"))
    for row, col in ((0, 0), (1, 1), (2, 0)):
        fd = walk.finite_difference({"d_w_query": "w_query", "d_w_key": "w_key", "d_w_value": "w_value"}[stage],
                                    row, col)
        assert fd.predicted_change == pytest.approx(EPSILON * explained(walk, stage, row, col), rel=1e-4)
        assert fd.actual_change == pytest.approx(fd.predicted_change, rel=1e-3, abs=1e-12)
        text = BACKWARD.step_through(walk, stage).stage.entry(row, col, 0, lambda s, **k: str(s).format(**k))
        assert r"\varepsilon = 0.000001" in text and "approx" in text  # ε in math: KaTeX has no ε in \text


EXERCISED = ("loss", "d_value", "d_weights", "d_scores", "d_query", "d_key", "d_w_query", "d_w_key", "d_w_value",
             "step")
HINTS = {"d_value": "p_not_transposed", "d_scores": "softmax_diagonal_only", "d_query": "gradient_no_scale",
         "d_key": "ds_not_transposed", "step": "update_sign"}


@pytest.mark.parametrize("causal", [False, True])
def test_every_hint_fires_on_its_own_mistake_and_never_on_the_right_answer(causal):
    # η = 1: the update's sign mistake (W + η dW) is then far enough from the answer to be told apart
    walk = BACKWARD.walkthrough(_settings("journey_v1", causal, "random").set(**{"backward.learning_rate": 1.0}))
    fired = set()
    for stage in EXERCISED:
        steps = BACKWARD.step_through(walk, stage)
        rows, cols = next(p for p in steps.stage.panels if p.explained).matrix.shape
        for row in range(rows):
            for col in range(cols):
                exercise = steps.stage.exercise(row, col, 0)
                assert exercise is not None, (stage, row, col)
                right = practice.grade(exercise, exercise.answer)
                assert right.correct and not right.mistakes, (stage, row, col)
                assert exercise.answer == pytest.approx(explained(walk, stage, row, col))
                for mistake in exercise.mistakes:
                    graded = practice.grade(exercise, mistake.value)
                    assert not graded.correct and mistake.key in {m.key for m in graded.mistakes}
                    fired.add((stage, mistake.key))
    for stage, key in HINTS.items():
        assert (stage, key) in fired, (stage, key)


def _first_mistake(walk, stage: str, key: str):
    steps = BACKWARD.step_through(walk, stage)
    rows, cols = next(p for p in steps.stage.panels if p.explained).matrix.shape
    for row in range(rows):
        for col in range(cols):
            found = {m.key: m.value for m in steps.stage.exercise(row, col, 0).mistakes}
            if key in found:
                return row, col, found[key]
    raise AssertionError(f"{stage}: no entry offers {key}")


def test_the_mistakes_are_the_wrong_formulas_they_name():
    walk = BACKWARD.walkthrough(Settings.for_preset("journey_v1").set(**{"backward.target": "random",
                                                                               "backward.learning_rate": 1.0}))
    t = walk.trace
    row, col, value = _first_mistake(walk, "d_scores", "softmax_diagonal_only")
    p, dp = float(t.weights[row, col]), float(t.d_weights[row, col])
    assert value == pytest.approx(p * (1 - p) * dp)
    row, col, value = _first_mistake(walk, "d_key", "ds_not_transposed")
    assert value == pytest.approx(float((t.d_scores @ t.query)[row, col] * t.scale), rel=1e-5)
    row, col, value = _first_mistake(walk, "d_value", "p_not_transposed")
    assert value == pytest.approx(float((t.weights @ t.d_output)[row, col]), rel=1e-5)
    row, col, value = _first_mistake(walk, "step", "update_sign")
    assert value == pytest.approx(float(t.w_query[row, col] + walk.step.learning_rate * t.d_w_query[row, col]))


@pytest.mark.parametrize("eta, expected", [(0.0, 0.001), (-1.0, 0.001), (11.0, 10.0), (float("nan"), 0.01),
                                           ("abc", 0.01)])
def test_a_learning_rate_out_of_range_is_repaired_with_a_message(eta, expected):
    settings, messages = Settings().replace(**{"backward.learning_rate": eta})
    assert settings.backward.learning_rate == expected and messages
    assert math.isfinite(BACKWARD.walkthrough(settings).step.loss_after)


def test_a_copy_index_beyond_the_sentence_is_clamped_to_its_last_token():
    settings = Settings().set(**{"backward.copy_query": 40, "backward.copy_key": 40})
    walk = BACKWARD.walkthrough(settings)
    last = walk.trace.value.shape[0] - 1
    torch.testing.assert_close(walk.trace.target[last], walk.trace.value[last])


def test_a_bad_sentence_gives_the_self_attention_pages_message():
    with pytest.raises(InputError):
        BACKWARD.walkthrough(Settings.for_preset("custom", sentence="   "))


@pytest.mark.parametrize("value, words", [(None, "is empty"), (float("nan"), "is empty"), ("abc", "not a number"),
                                          (float("inf"), "values must lie between"), (1e7, "values must lie between")])
def test_a_bad_cell_of_the_target_is_named_in_the_message(value, words):
    with pytest.raises(InputError) as raised:
        BACKWARD.walkthrough(Settings(), {"target": {(1, 0): value}})
    assert raised.value.field == "target" and words in str(raised.value)


def test_the_target_edits_apply_and_cells_outside_a_shorter_sentence_are_kept_not_applied():
    walk = BACKWARD.walkthrough(Settings(), {"target": {(1, 0): 0.5, (11, 2): 3.0}})
    assert float(walk.trace.target[1, 0]) == 0.5
    assert float(walk.trace.d_output[1, 0]) == pytest.approx(float(walk.trace.output[1, 0]) - 0.5)
    assert all(c.matches for c in walk.checks)


def test_a_links_emptied_target_cell_is_dropped_with_a_message_and_the_page_builds():
    from conftest import APP
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/backward.py")
    at.query_params["edit_target"] = "1,0,;0,1,0.5"  # an emptied cell, as a link carries it, and a good one
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("T row 2, column 1 was left empty, so it keeps its value from the example" in w.value
               for w in at.warning), [w.value for w in at.warning]
    assert at.session_state["edits"]["seed000"]["target"] == {(0, 1): 0.5}
    at.toggle(key="backward_show_target").set_value(True).run()
    assert not at.exception
    assert len(at.dataframe) == 1  # the editor of T, with its reset
    assert at.button(key="reset_target")


@pytest.mark.parametrize("page_file", ["app_pages/backward.py", "app_pages/backward_multi_head.py"])
def test_a_new_session_opens_on_the_targets_row_where_every_step_explains_a_number_that_is_not_zero(page_file):
    """The default target changes row 2 only, and the causal mask leaves row 1 one key: entry (1, 1) explained 0 on
    most steps, and its softmax Jacobian was all zeros. A fresh session opens on the target's row instead."""
    from conftest import element, element_step, open_app, settings

    at = open_app(page_file)
    assert (settings(at).entry_row, settings(at).entry_col) == (1, 0)
    key = "backward_multi_head" if "multi_head" in page_file else "backward"
    page = registry.BY_KEY[key]
    walk = page.walkthrough(settings(at))
    zeros = [stage for stage in page.stages if stage not in ("flash", "step")  # (D: one column; the step: W itself)
             if explained_value(page.step_through(walk, stage).stage.panels, 1, 0, settings(at).head) == 0]
    assert not zeros, f"the opening entry explains 0 on {zeros}"
    element_step(at, **{f"{key}.stage": "d_scores"})
    data = element(at)
    assert data["position"]["row"] == 1
    (jacobian,) = [p for p in data["stages"]["d_scores"]["panels"] if p.get("by_entry")]
    assert "Jacobian" in jacobian["by_entry"][0][1]["caption_html"]
    assert "row 2" in jacobian["by_entry"][0][1]["caption_html"]
    # the learner's own choice stays: row 1 chosen, another page and back
    element_step(at, entry_row=0)
    at.switch_page("app_pages/self_attention.py").run()
    at.switch_page(page_file).run()
    assert settings(at).entry_row == 0


@pytest.mark.parametrize("key", ["backward", "backward_multi_head"])
def test_T_is_the_target_alone_and_the_sums_run_over_n_tokens(key):
    """T is the target (L = ½ ‖O − T‖², T_{i,j}, the editor's "T"); the loss summed i from 1 to T beside T_{i,j}. The
    number of tokens is n in every formula of both backward pages, and no explanation writes T × T for it."""
    import re

    from attention_core.errors import Message

    page = registry.BY_KEY[key]
    walk = page.walkthrough(Settings())
    formulas = {stage: " ".join(page.step_through(walk, stage).stage.formula(Message))
                for stage in page.stages}
    loss = formulas["loss"]
    assert "{T}_{i,j}" in loss and r"1 \leq i \leq n" in loss, loss
    assert (r"\leq d_{o}" if key == "backward_multi_head" else r"\leq d_{v}") in loss, loss  # O's own width
    for stage, latex in formulas.items():
        assert not re.search(r"\\leq T\b|\^\{T\}|\{T\}[^_]", latex), (stage, latex)  # T only as T_{i,j}
    assert r"\sum_{l=1}^{n}" in formulas["d_value"] and r"\sum_{i=1}^{n}" in formulas["d_w_query"]
    for stage, text in _explanations(key).items():
        assert not re.search(r"\bT ×|× T\b|\(T,", text), (stage, text)


def _explanations(key: str) -> dict[str, str]:
    """A backward page's EXPLAIN texts, read from its file (importing a page file runs it)."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).resolve().parents[2] / "app_pages" / f"{key}.py").read_text())
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "EXPLAIN")
    return {ast.literal_eval(k): ast.literal_eval(v.args[0]) for k, v in zip(node.keys, node.values)}


@pytest.mark.parametrize("page_file", ["app_pages/backward.py", "app_pages/backward_multi_head.py"])
def test_another_pages_opening_entry_is_no_choice_the_backward_pages_open_on_the_targets_row(page_file):
    """The attention-sinks page, just above in the navigation, opens on its last row: a session that went there first
    then opened a backward page on row 7 (its entry counted as chosen), where the default target's dO, and so every
    gradient of the row, is 0. Only a pick, a click or a link is a choice: the backward page opens on the target's row,
    and sinks on its own again."""
    from conftest import open_app, settings

    at = open_app("app_pages/sinks.py")
    assert not at.exception
    last = len(registry.BY_KEY["sinks"].walkthrough(settings(at)).tokens) - 1
    assert (settings(at).entry_row, settings(at).entry_col) == (last, 0)
    at.switch_page(page_file).run()
    assert not at.exception
    assert (settings(at).entry_row, settings(at).entry_col) == (1, 0)
    key = "backward_multi_head" if "multi_head" in page_file else "backward"
    page = registry.BY_KEY[key]
    walk = page.walkthrough(settings(at))
    assert explained_value(page.step_through(walk, page.default_stage or next(iter(page.stages))).stage.panels,
                           1, 0, settings(at).head) != 0
    at.switch_page("app_pages/sinks.py").run()
    assert (settings(at).entry_row, settings(at).entry_col) == (last, 0)


def test_a_link_opens_its_own_entry_not_the_opening_one():
    from conftest import APP, settings
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"preset": "seed000"})  # a link made at the default entry (1, 1) does not write it
    at.run()
    at.switch_page("app_pages/backward.py").run()
    assert (settings(at).entry_row, settings(at).entry_col) == (0, 0)


@pytest.mark.parametrize("page_file", ["app_pages/backward.py", "app_pages/backward_multi_head.py"])
def test_keep_stepping_shows_the_loss_after_each_step_and_how_far_attention_moved(page_file):
    from conftest import charts, open_app, settings

    key = "backward_multi_head" if "multi_head" in page_file else "backward"
    build = registry.BY_KEY[key].walkthrough
    at = open_app(page_file)
    # under the step-through (which steps in the browser), folded: whatever the step
    assert [e.label for e in at.expander if e.label.startswith("Keep stepping")] == [
        "Keep stepping: more steps of gradient descent, after the last step"]
    # drawn only once opened (its charts are not sent on every setting changed while it is folded)
    assert not [w for w in at.number_input if w.key == "setting_backward.steps"]
    assert not [data for spec, data in charts(at) if "steps taken" in str(spec)]
    at.session_state[f"keep_stepping_{key}"] = True  # the learner opens it: a run
    at.run()
    at.number_input(key="setting_backward.steps").set_value(5).run()
    assert not at.exception, at.exception
    descent = build(settings(at)).descent
    assert descent.steps == 5
    (losses,) = [data for spec, data in charts(at) if "steps taken" in str(spec)]
    assert losses["y"].tolist() == pytest.approx(list(descent.losses), rel=1e-6)
    said = " ".join(m.value for m in at.markdown)
    assert f"After 5 steps of η = 0.01: the loss went from **{descent.losses[0]:.4g}** to **{descent.losses[-1]:.4g}**" in said
    assert "P after 5 steps − P before" in said
    at.number_input(key="setting_backward.steps").set_value(500).run()  # out of range: a message, clamped
    assert settings(at).backward.steps == 50
    assert "Steps to take must be between 1 and 50; got 500, using 50." in [w.value for w in at.warning]
