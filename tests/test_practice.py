"""Practice mode's core (attention_core.practice) and every step page's exercises: the answer is the number the
page shows, each known mistake gives the value it names (checked against torch's own softmax, transposes and
dropout), every hint is triggered by its mistake and by no correct answer, and the tolerance's edges."""

from __future__ import annotations

import math

import pytest
import torch

from attention_core import check, practice
from attention_core.errors import InputError
from attention_core.inputs.presets import PRESETS
from attention_core.lessons.alibi.page import alibi_step_through
from attention_core.lessons.backward.page import backward_step_through
from attention_core.lessons.backward_multi_head.page import backward_multi_head_step_through
from attention_core.lessons.causal.page import causal_step_through
from attention_core.lessons.cross_attention.page import build_cross_attention_walkthrough
from attention_core.lessons.dropout.page import DROPOUT_PAGE, dropout_step_through
from attention_core.lessons.encoder_block.page import ENCODER_BLOCK, encoder_step_through
from attention_core.lessons.flash_attention.page import flash_attention_step_through
from attention_core.lessons.generation.page import GENERATION_PAGE, generation_step_through
from attention_core.lessons.gqa.page import gqa_step_through
from attention_core.lessons.linear_attention.page import linear_attention_step_through
from attention_core.lessons.mla.page import mla_step_through
from attention_core.lessons.multi_head.page import multi_head_step_through
from attention_core.lessons.rope.page import rope_step_through
from attention_core.lessons.self_attention.page import self_attention_step_through
from attention_core.lessons.sinks.page import sinks_step_through
from attention_core.lessons.sliding_window.page import sliding_window_step_through
from attention_core.lessons.trained_model.page import trained_head_step_through
from attention_core.masking.walkthrough import build_causal_walkthrough
from attention_core.minilm.model import head_step, load_model, run_model, tokenize
from attention_core.multi_head.walkthrough import build_multi_head_walkthrough
from attention_core.registry import BY_KEY
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings
from attention_core.stepthrough import StepThrough, explained_panel

# =========================================================================== reading and grading an answer


@pytest.mark.parametrize(("typed", "value"), [
    ("0.42", 0.42), (" -1.5 ", -1.5), ("−0.25", -0.25), ("0,73", 0.73), ("１.５", 1.5), ("1e-3", 0.001), ("3", 3.0),
])
def test_answers_are_read_as_numbers(typed, value):
    assert practice.parse_answer(typed) == pytest.approx(value)


@pytest.mark.parametrize(("typed", "words"), [
    ("", "Type a number"), ("   ", "Type a number"), ("abc", "not a number"), ("__import__('os')", "not a number"),
    ("1,000.5", "not a number"), ("nan", "not a finite"), ("inf", "not a finite"), ("-Infinity", "not a finite"),
    ("1e300", "far too large"), ("9" * 41, "characters long"),
])
def test_bad_answers_get_a_message(typed, words):
    with pytest.raises(InputError) as caught:
        practice.parse_answer(typed)
    assert words in str(caught.value)
    assert caught.value.field == "practice_answer"


def test_tolerance_accepts_rounding_to_two_decimals_and_three_digits():
    exercise = practice.value_exercise("x", "y", (), 0.7349)
    assert practice.grade(exercise, 0.73).correct  # 2 decimals
    assert practice.grade(exercise, 0.735).correct  # 3 significant digits
    assert not practice.grade(exercise, 0.7249).correct
    big = practice.value_exercise("x", "y", (), 123.456)
    assert practice.grade(big, 123.0).correct  # 3 significant digits of a large number: within 0.5 %
    assert not practice.grade(big, 122.0).correct


@pytest.mark.parametrize("answer", [0.0, 0.3, -2.5, 41.7])
def test_tolerance_edges(answer):
    exercise = practice.value_exercise("x", "y", (), answer)
    tol = practice.tolerance(answer) - 1e-9
    for sign in (1, -1):
        assert practice.grade(exercise, answer + sign * tol * 0.999).correct
        assert not practice.grade(exercise, answer + sign * tol * 1.01).correct
    assert tol == pytest.approx(max(0.005, 0.005 * abs(answer)))


def test_a_mistake_too_close_to_the_answer_is_not_offered():
    # d_k = 1: forgetting ÷ √d_k changes nothing, so no answer may be told it forgot it
    exercise = practice.scale_exercise("a", "s", "s", 0.8, 1, 0.8)
    assert "no_scale" not in {m.key for m in exercise.mistakes}
    assert practice.grade(exercise, 0.8) == practice.Grade(True, (), 0.0)


# =========================================================================== every step page's exercises


def _preset_settings():
    for preset in PRESETS:
        yield preset, Settings.for_preset(preset)


def _self_attention():
    for preset, settings in _preset_settings():
        walk = build_walkthrough(settings)
        for stage in BY_KEY["self_attention"].stages:
            yield f"self_attention/{preset}/{stage}", self_attention_step_through(walk, stage)


def _causal(page: str):
    for preset, settings in _preset_settings():
        walk = BY_KEY[page].walkthrough(settings.replace(padding=1)[0])
        for stage in BY_KEY[page].stages:
            yield f"{page}/{preset}/{stage}", BY_KEY[page].step_through(walk, stage)


def _multi_head(page: str):
    for preset, settings in _preset_settings():
        if page == "multi_head":
            walk = build_multi_head_walkthrough(settings.replace(padding=1)[0])
        else:
            walk = build_cross_attention_walkthrough(settings)
        for stage in BY_KEY[page].stages:
            yield f"{page}/{preset}/{stage}", BY_KEY[page].step_through(walk, stage)


@pytest.fixture(scope="module")
def trained_steps():
    pm = load_model()
    run = run_model(pm, tokenize(pm, "The cat sat on the mat.", padding=2))
    step = head_step(pm, run, 2, 8)
    labels = [str(n) for n in range(run.encoding.n)]
    return [(f"trained_head/{stage}", trained_head_step_through(step, stage, labels)) for stage in BY_KEY["trained_model"].stages]


def _modern(page: str, steps, variants):
    """The page's walk-through of every worked example with each variant (its builder through ``Page.walkthrough``),
    stepped through by ``steps``."""
    for preset, settings in _preset_settings():
        for changes in variants:
            walk = BY_KEY[page].walkthrough(settings.replace(**changes)[0])
            for stage in BY_KEY[page].stages:
                yield f"{page}/{preset}/{changes}/{stage}", steps(walk, stage)


def _encoder():
    for preset, settings in _preset_settings():
        for norm_first in (False, True):
            walk = ENCODER_BLOCK.walkthrough(settings.replace(**{"encoder_block.norm_first": norm_first, "encoder_block.block": 1})[0])
            for stage in walk.order:
                yield f"encoder/{'pre' if norm_first else 'post'}-LN/{preset}/{stage}", encoder_step_through(walk, stage)


def _generation():
    for source, step, layer, temperature in (("beach", 2, 1, 0.0), ("bad", 1, 0, 0.0), ("cab", 3, 1, 0.7)):
        settings = Settings().replace(**{"generation.source": source, "generation.step": step, "generation.layer": layer, "generation.temperature": temperature})[0]
        walk = GENERATION_PAGE.walkthrough(settings)
        for stage in BY_KEY["generation"].stages:
            yield f"generation/{source}/{step}/{stage}", generation_step_through(walk, stage)


CASES = {
    "self_attention": _self_attention,
    "causal": lambda: _causal("causal"),
    "dropout": lambda: _causal("dropout"),
    "multi_head": lambda: _multi_head("multi_head"),
    "cross_attention": lambda: _multi_head("cross_attention"),
    "encoder": _encoder,
    "generation": _generation,
    "gqa": lambda: _modern("gqa", gqa_step_through, [{}, {"gqa.num_kv_heads": 1}, {"causal_mask": False}]),
    "rope": lambda: _modern("rope", rope_step_through, [{}, {"rope.head_dim": 6}]),
    "alibi": lambda: _modern("alibi", alibi_step_through, [{}, {"alibi.num_heads": 3}]),
    "sliding_window": lambda: _modern("sliding_window", sliding_window_step_through,
                                      [{}, {"causal_mask": False}]),
    "flash_attention": lambda: _modern("flash_attention", flash_attention_step_through,
                             [{"flash_attention.tile": n} for n in range(4)]),
    "linear_attention": lambda: _modern("linear_attention", linear_attention_step_through,
                                        [{}, {"linear_attention.step": 5, "linear_attention.beta": 0.8,
                                              "linear_attention.alpha": 0.5}]),
    "mla": lambda: _modern("mla", mla_step_through, [{}, {"mla.head": 1, "mla.rope_dim": 4}]),
    "sparse_attention": lambda: _modern("sparse_attention", BY_KEY["sparse_attention"].step_through,
                                        [{}, {"sparse_attention.top_k": 2, "sparse_attention.index_heads": 3,
                                              "sparse_attention.head": 1}]),
    "sinks": lambda: _modern("sinks", sinks_step_through,
                             [{}, {"sinks.sink_logit": -3.0, "d_k": 5}]),
    "gated_attention": lambda: _modern("gated_attention", BY_KEY["gated_attention"].step_through,
                                       [{}, {"gated_attention.gate_shift": 1.5, "gated_attention.headwise": True}]),
    "backward": lambda: _modern("backward", backward_step_through,
                                [{"backward.target": "random", "backward.learning_rate": 1.0},
                                 {"causal_mask": False, "backward.learning_rate": 2.0}]),
    "backward_multi_head": lambda: _modern("backward_multi_head", backward_multi_head_step_through,
                                           [{"backward.target": "random", "backward.learning_rate": 1.0},
                                            {"causal_mask": False, "d_out": 6, "num_heads": 3}]),
}
#: A step page of the registry without a case above (a new page) is stepped through on every worked example with its
#: own builder and steps, as its declaration gives them: adding a page edits nothing here.
_COVERED = {"encoder": "encoder_block"}
CASES.update({page.key: (lambda page=page: _modern(page.key, page.step_through, [{}]))
              for page in BY_KEY.values() if page.build is not None
              and page.key not in CASES and page.key not in _COVERED.values()})


def _entries(steps: StepThrough):
    """Every entry of every head of the stage's explained panel: (row, col, head, the value shown)."""
    heads = range(steps.num_heads) if steps.stage.per_head else (0,)
    for head in heads:
        panel = explained_panel(steps.stage.panels, head)
        if panel is None:
            continue
        rows, cols = panel.matrix.shape
        for row in range(rows):
            for col in range(cols):
                yield row, col, head, float(panel.matrix[row, col])


def _check_stage(name: str, steps: StepThrough, seen: dict[str, int]) -> int:
    """Every entry: the answer is the shown value; each mistake is named by its own value, never by the answer, and its
    value names no other mistake whose value is told apart from it."""
    asked = 0
    for row, col, head, shown in _entries(steps):
        exercise = steps.stage.exercise(row, col, head) if steps.stage.exercise else None
        if exercise is None:
            continue
        asked += 1
        where = (name, row, col, head)
        assert exercise.answer == pytest.approx(shown, abs=1e-6), where
        assert "?" in exercise.question and exercise.inputs, where
        correct = practice.grade(exercise, exercise.answer)
        assert correct.correct and not correct.mistakes, where
        rounded = practice.grade(exercise, round(exercise.answer, 2))
        assert rounded.correct and not rounded.mistakes, where
        for mistake in exercise.mistakes:
            verdict = practice.grade(exercise, mistake.value)
            assert not verdict.correct and mistake in verdict.mistakes, (where, mistake.key)
            others = [m for m in exercise.mistakes
                      if m.key != mistake.key and abs(m.value - mistake.value) > practice.tolerance(mistake.value)]
            assert not any(m in verdict.mistakes for m in others), (where, mistake.key)
            assert mistake.key in practice.MISTAKES and str(mistake.hint)
            seen[mistake.key] = seen.get(mistake.key, 0) + 1
    return asked


#: The named mistakes each page's exercises name (each page's test checks that they fire on their own values); every
#: mistake of practice.MISTAKES is named on some page (test_every_named_mistake_is_caught_somewhere).
CAUGHT = {
    "self_attention": {"max_not_sum", "no_scale", "scale_d_k", "scale_d_model", "softmax_column", "sum_before_exp",
                       "swapped"},
    "causal": {"max_not_sum", "no_renormalise", "no_scale", "scale_d_k", "scale_d_model", "softmax_column",
               "sum_before_exp", "swapped"},
    "dropout": {"max_not_sum", "no_dropout_rescale", "no_renormalise", "no_scale", "softmax_column", "sum_before_exp"},
    "multi_head": {"max_not_sum", "no_renormalise", "no_scale", "scale_d_k", "scale_d_model", "softmax_column",
                   "sum_before_exp", "swapped"},
    "cross_attention": {"max_not_sum", "no_scale", "scale_d_k", "scale_d_model", "softmax_column", "sum_before_exp",
                        "swapped"},
    "encoder": set(),
    "generation": {"no_renormalise", "softmax_column", "sum_before_exp"},
    "gqa": {"no_renormalise", "softmax_column", "sum_before_exp"},
    "rope": {"no_scale", "scale_d_k", "swapped"},
    "alibi": {"no_renormalise", "softmax_column", "sum_before_exp"},
    "sliding_window": {"no_renormalise", "softmax_column", "sum_before_exp"},
    "flash_attention": {"no_scale", "scale_d_k", "swapped"},
    "linear_attention": {"decay_after_prediction", "decay_forgotten", "delta_error_sign", "delta_no_beta",
                         "delta_no_error", "linear_future_keys", "linear_not_normalised", "phi_no_plus_one",
                         "phi_wrong_branch", "state_not_accumulated", "state_raw_key"},
    "mla": {"mla_rope_part_forgotten", "mla_scale_head_dim", "no_renormalise", "no_scale", "rope_not_rotated",
            "rope_sin_sign", "softmax_column", "sum_before_exp"},
    "sparse_attention": {"index_relu_forgotten", "index_relu_of_sum", "index_weight_scale_forgotten",
                         "index_weights_forgotten", "mass_of_kept_keys", "max_not_sum", "softmax_column",
                         "sparse_dropped_keys_counted", "sum_before_exp"},
    "sinks": {"max_not_sum", "nothing_is_zero", "nothing_sum_not_mean", "sink_forgotten", "sink_not_exponentiated",
              "sink_share_instead", "softmax_column", "sum_before_exp"},
    "gated_attention": {"gate_added", "gate_no_sigmoid", "gate_not_applied", "gate_shift_forgotten",
                        "gate_sigmoid_sign", "max_not_sum", "nothing_is_zero", "nothing_sum_not_mean"},
    "backward": {"ds_not_transposed", "gradient_no_scale", "p_not_transposed", "softmax_diagonal_only", "update_sign"},
    "backward_multi_head": {"ds_not_transposed", "gradient_no_scale", "p_not_transposed", "scale_d_model",
                            "softmax_diagonal_only", "update_sign", "w_out_not_transposed"},
    "differential_attention": {"difference_added", "difference_no_lambda", "difference_single_map",
                               "lambda_init_forgotten", "max_not_sum", "no_renormalise", "no_scale", "norm_forgotten",
                               "norm_scale_forgotten", "softmax_column", "sum_before_exp"},
}


@pytest.mark.parametrize("page", list(CASES))
def test_every_entry_of_every_stage_grades_its_answer_and_names_its_mistakes(page):
    seen: dict[str, int] = {}
    asked = {}
    for name, steps in CASES[page]():
        asked[name.rsplit("/", 1)[-1]] = asked.get(name.rsplit("/", 1)[-1], 0) + _check_stage(name, steps, seen)
    computed = {"self_attention": {"query", "key", "value", "scores", "scaled_scores", "weights", "output"},
                "causal": {"scaled_scores", "weights", "other_route", "output"},
                "dropout": {"weights", "dropped_weights", "output"},
                "multi_head": {"projections", "scaled_scores", "weights", "head", "output"},
                "cross_attention": {"query", "key", "value", "scaled_scores", "weights", "head", "output"},
                "encoder": {"attention", "residual_1", "norm_1", "ffn_hidden", "ffn_output", "residual_2", "norm_2"},
                "generation": {"encoder_attention", "self_attention", "cross_attention", "kv_cache", "logits",
                               "probabilities"},
                "gqa": {"projections", "weights", "output"},
                "rope": {"projections", "angles", "rotate_query", "rotate_key", "scores"},
                "alibi": {"slopes", "bias", "biased_scores", "weights"},
                "sliding_window": {"weights"},
                "flash_attention": {"tile_scores", "running_max", "final"},
                "linear_attention": {"features", "parallel", "recurrent", "delta", "gated"},
                "mla": {"latents", "up", "rope", "scores", "weights", "output", "absorption"},
                "sparse_attention": {"indexer", "scores", "weights", "output", "lost"},
                "sinks": {"weights", "nothing", "sink_weights", "sink_output"},
                "gated_attention": {"projections", "attention", "gate", "gated", "output", "sink"},
                "differential_attention": {"split", "maps", "lambda", "difference", "values", "norm", "output",
                                           "cancel"},
                "backward": {"loss", "d_value", "d_weights", "d_scores", "d_query", "d_key", "d_w_query", "d_w_key",
                             "d_w_value", "step"},
                "backward_multi_head": {"loss", "d_w_out", "d_concat", "d_value", "d_weights", "d_scores", "d_query",
                                        "d_key", "d_w_query", "d_w_key", "d_w_value", "step"}}.get(page)
    if computed is None:  # a page not written out above: at least one of its stages asks
        assert any(asked.values()), page
    else:
        assert {stage for stage, n in asked.items() if n} == computed
    assert CAUGHT[page] <= set(seen), CAUGHT[page] - set(seen)


def test_the_trained_heads_exercises(trained_steps):
    seen: dict[str, int] = {}
    asked = {name: _check_stage(name, steps, seen) for name, steps in trained_steps}
    assert {name for name, n in asked.items() if n} == {f"trained_head/{s}" for s in ("scaled_scores", "weights", "output")}
    assert {"no_scale", "scale_d_k", "scale_d_model", "softmax_column", "no_renormalise", "max_not_sum"} <= set(seen)


def test_every_named_mistake_is_caught_somewhere():
    """Each page's test above checks the mistakes of :data:`CAUGHT` fire (on their own values only), and
    tests/check the check's items' (on their own values or choices only): together they name every mistake the app
    knows (stepping every page again here took ~50 s of the suite)."""
    in_check = set()
    for template in check.TEMPLATES.values():
        for seed in range(10):
            item = template(seed)
            in_check |= {m.key for m in item.exercise.mistakes} if item.exercise else set(item.choice_mistakes)
    assert set().union(*CAUGHT.values()) | (in_check - {"", check.WRONG}) == set(practice.MISTAKES)
    assert set(CAUGHT) == set(CASES)


# =========================================================================== the mistakes' values, against torch


def _mistakes(exercise: practice.Exercise) -> dict[str, float]:
    return {m.key: m.value for m in exercise.mistakes}


def test_self_attention_mistakes_are_the_numbers_they_name():
    walk = build_walkthrough(Settings())  # seed 000's example: random W, so Q K^T is not symmetric
    att = walk.trace.attention
    d_k, d_model = att.query.shape[-1], walk.trace.x.shape[-1]
    assert d_model != d_k
    row, col = 1, 3
    scores = self_attention_step_through(walk, "scores").stage.exercise(row, col, 0)
    assert scores.answer == pytest.approx(float(att.query[row] @ att.key[col]), abs=1e-6)
    assert _mistakes(scores)["swapped"] == pytest.approx(float(att.scores.T[row, col]), abs=1e-5)
    scaled = self_attention_step_through(walk, "scaled_scores").stage.exercise(row, col, 0)
    wrong = _mistakes(scaled)
    assert wrong["no_scale"] == pytest.approx(float(att.scores[row, col]), abs=1e-6)
    assert wrong["scale_d_k"] == pytest.approx(float(att.scores[row, col]) / d_k, abs=1e-6)
    assert wrong["scale_d_model"] == pytest.approx(float(att.scores[row, col]) / math.sqrt(d_model), abs=1e-6)
    weights = self_attention_step_through(walk, "weights").stage.exercise(row, col, 0)
    assert weights.predict
    wrong = _mistakes(weights)
    assert wrong["softmax_column"] == pytest.approx(float(torch.softmax(att.scaled_scores, dim=0)[row, col]), abs=1e-6)
    assert wrong["no_scale"] == pytest.approx(float(torch.softmax(att.scores, dim=-1)[row, col]), abs=1e-6)
    expected = math.exp(float(att.scaled_scores[row, col]) - float(att.scaled_scores[row].sum()))
    assert wrong["sum_before_exp"] == pytest.approx(expected, rel=1e-5)
    output = self_attention_step_through(walk, "output").stage.exercise(row, 0, 0)
    top = int(att.weights[row].argmax())
    assert _mistakes(output)["max_not_sum"] == pytest.approx(float(att.value[top, 0]), abs=1e-6)


def test_masked_and_dropout_mistakes_are_the_numbers_they_name():
    settings = Settings.for_preset("journey_v1").replace(padding=0, **{"dropout.dropout_p": 0.5, "dropout.training": True})[0]
    causal = build_causal_walkthrough(settings)
    att = causal.trace.attention
    row, col = 3, 1  # query 4 may look at keys 1..4: 3 keys blocked
    weights = causal_step_through(causal, "weights").stage.exercise(row, col, 0)
    expected = float(torch.softmax(att.scaled_scores, dim=-1)[row, col])  # over every key: not renormalised
    assert _mistakes(weights)["no_renormalise"] == pytest.approx(expected, abs=1e-6)
    route = causal_step_through(causal, "other_route").stage.exercise(row, col, 0)
    assert _mistakes(route)["no_renormalise"] == pytest.approx(expected, abs=1e-6)
    dropout = DROPOUT_PAGE.walkthrough(settings)
    datt = dropout.trace.attention
    kept = [(r, c) for r in range(datt.weights.shape[0]) for c in range(r + 1) if dropout.keep[r, c]]
    r, c = max(kept, key=lambda rc: float(datt.weights[rc]))
    dropped = dropout_step_through(dropout, "dropped_weights").stage.exercise(r, c, 0)
    assert dropped.answer == pytest.approx(float(datt.weights[r, c]) / 0.5, abs=1e-6)
    assert _mistakes(dropped)["no_dropout_rescale"] == pytest.approx(float(datt.weights[r, c]), abs=1e-6)
    output = dropout_step_through(dropout, "output").stage.exercise(r, 0, 0)
    undropped = (datt.weights * dropout.keep) @ datt.value  # forgot 1 / (1 - p)
    assert _mistakes(output)["no_dropout_rescale"] == pytest.approx(float(undropped[r, 0]), abs=1e-5)


def test_multi_head_scaling_mistake_divides_by_root_d_model():
    settings = Settings.for_preset("journey_v1")
    walk = build_multi_head_walkthrough(settings)
    trace = walk.trace
    att = trace.heads[1]
    exercise = multi_head_step_through(walk, "scaled_scores").stage.exercise(0, 1, 1)
    score = float(att.query[0] @ att.key[1])
    assert exercise.answer == pytest.approx(score / math.sqrt(trace.head_dim), abs=1e-6)
    wrong = _mistakes(exercise)
    assert wrong["scale_d_model"] == pytest.approx(score / math.sqrt(trace.concat.shape[-1]), abs=1e-6)
    assert wrong["swapped"] == pytest.approx(float(att.scaled_scores[1, 0]), abs=1e-6)
