"""The check's item templates on many seeds: each answer equals PyTorch's on the numbers drawn, each named mistake
fires on its own value only, two students get different numbers, the same seat gets the same items back."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attention_core import check, practice
from attention_core.check import items
from attention_core.errors import InputError

SEEDS = range(40)
#: float32 against float64 PyTorch: the answers are float32 like the pages' numbers.
ATOL = 1e-6


def _expected(item: check.Item) -> float:
    """The item's answer recomputed from its drawn numbers with PyTorch's own functions (float64)."""
    d = {k: torch.tensor(v, dtype=torch.float64) if isinstance(v, list) else v for k, v in item.drawn.items()}
    name = item.template
    if name in ("scores.dot",):
        return float((d["query"] @ d["key"].T)[d["row"], d["col"]])
    if name == "scores.largest":
        return float((d["query"] @ d["key"].T)[0].argmax()) + 1
    if name == "scaling.scale":
        q, k = d["query"][None], d["key"][None]
        # SDPA with V = I returns the weights; the scaled score is read back from them against key 1 (log-ratio)
        weights = F.scaled_dot_product_attention(q, k, torch.eye(2, dtype=torch.float64)[None])[0]
        scores = q[0] @ k[0].T
        assert torch.allclose(weights, torch.softmax(scores / 2, dim=-1))
        return float(scores[d["row"], d["col"]] / math.sqrt(4))
    if name == "scaling.weight":
        return float(torch.softmax(d["scores"][0] / math.sqrt(d["d_k"]), dim=-1)[0])
    if name == "softmax.weight":
        return float(torch.softmax(d["scores"], dim=-1)[d["row"], d["col"]])
    if name == "softmax.largest":
        return float(torch.softmax(d["scores"][0], dim=-1).argmax()) + 1
    if name == "causal_mask.weight":
        s = d["scores"]
        mask = torch.ones(len(s), len(s), dtype=torch.bool).tril()
        eye = torch.eye(len(s), dtype=torch.float64)
        weights = F.scaled_dot_product_attention(s[None], eye[None], eye[None], attn_mask=mask, scale=1.0)[0]
        return float(weights[d["row"], d["col"]])
    if name == "causal_mask.count":
        mask = torch.ones(d["tokens"], d["tokens"], dtype=torch.bool).tril()
        return float(mask[d["row"]].sum())
    if name == "weighted_sum.entry":
        return float((d["weights"] @ d["value"])[d["col"]])
    if name == "weighted_sum.dropout":
        return float((d["weights"] * d["kept"] / (1 - d["p"])).sum())
    if name == "multi_head.head_dim":
        mha = torch.nn.MultiheadAttention(d["d_model"], d["num_heads"])
        return float(mha.head_dim)
    if name == "multi_head.scale":
        return float(d["query"] @ d["key"] / math.sqrt(d["head_dim"]))
    if name in ("backward.d_value", "backward.d_scores"):
        # autograd through O = softmax(S) V with the drawn P as softmax(log P): dV and dS as torch computes them
        scores = d["weights"].log().requires_grad_()
        value = (d["value"] if "value" in d else torch.zeros(2, d["d_output"].shape[1], dtype=torch.float64))
        value = value.clone().requires_grad_()
        (torch.softmax(scores, dim=-1) @ value).backward(d["d_output"])
        grad = value.grad if name == "backward.d_value" else scores.grad
        return float(grad[d["row"], d["col"]])
    if name == "modern.sink":
        # the sink as one more key with a zero value: softmax over [scores, b], the last weight dropped
        logits = torch.cat([d["scores"], torch.tensor([d["sink"]], dtype=torch.float64)])
        return float(torch.softmax(logits, dim=-1)[d["col"]])
    if name == "modern.gate":
        return float(torch.nn.functional.sigmoid(torch.tensor(d["logit"], dtype=torch.float64)) * d["y"])
    raise AssertionError(f"no PyTorch reference for {name}")


def test_eight_concepts_of_four_templates_two_of_each_kind_the_lesson_six_by_default():
    assert list(check.CONCEPTS) == ["scores", "scaling", "softmax", "causal_mask", "weighted_sum", "multi_head",
                                    "backward", "modern"]
    assert check.CORE == tuple(check.CONCEPTS)[:6]
    assert {i.concept for i in check.make_check("seat", check.AFTER)} == set(check.CORE)
    for concept in check.CONCEPTS:
        items_ = check.make_check("seat", check.BEFORE, [concept])
        assert [i.kind for i in items_].count(check.PROCEDURAL) == 2, concept
        assert [i.kind for i in items_].count(check.CONCEPTUAL) == 2, concept
        assert {i.concept for i in items_} == {concept}


@pytest.mark.parametrize("template", [k for k, t in check.TEMPLATES.items() if t(0).kind == check.PROCEDURAL])
def test_each_procedural_answer_equals_pytorch_and_each_named_mistake_fires_on_its_own_value_only(template):
    named = set()
    for seed in SEEDS:
        item = check.TEMPLATES[template](seed)
        exercise = item.exercise
        assert exercise.answer == pytest.approx(_expected(item), abs=ATOL), (template, seed, item.drawn)
        assert check.grade_item(item, repr(exercise.answer)).outcome == check.CORRECT
        assert check.grade_item(item, f"{exercise.answer:.2f}").correct or abs(exercise.answer) < 0.01
        for mistake in exercise.mistakes:
            named.add(mistake.key)
            assert mistake.key in practice.MISTAKES
            outcome = check.grade_item(item, repr(mistake.value))
            assert not outcome.correct and outcome.outcome == mistake.key, (template, seed, mistake)
            assert outcome.hint == mistake.hint
        assert check.grade_item(item, repr(exercise.answer + 1000)).outcome == check.WRONG
    assert template in ("scores.largest", "softmax.largest") or named, template


def test_the_named_mistakes_values_are_what_they_name():
    dot = check.TEMPLATES["scores.dot"](3)
    q, k = torch.tensor(dot.drawn["query"]), torch.tensor(dot.drawn["key"])
    assert {m.key: m.value for m in dot.exercise.mistakes}["swapped"] == pytest.approx(float(q[1] @ k[0]))
    scale = check.TEMPLATES["scaling.scale"](5)
    s = float(torch.tensor(scale.drawn["query"])[0] @ torch.tensor(scale.drawn["key"])[1])
    assert {m.key: m.value for m in scale.exercise.mistakes} == pytest.approx({"no_scale": s, "scale_d_k": s / 4})
    causal = check.TEMPLATES["causal_mask.weight"](7)
    row = torch.tensor(causal.drawn["scores"])[causal.drawn["row"]]
    unmasked = float(torch.softmax(row, -1)[causal.drawn["col"]])
    assert {m.key: m.value for m in causal.exercise.mistakes}["no_renormalise"] == pytest.approx(unmasked, abs=ATOL)
    count = check.TEMPLATES["causal_mask.count"](2)
    assert count.exercise.mistakes[0].value == count.drawn["tokens"] - count.drawn["row"]
    dropout = check.TEMPLATES["weighted_sum.dropout"](4)
    kept = sum(w * m for w, m in zip(dropout.drawn["weights"], dropout.drawn["kept"]))
    assert dropout.exercise.mistakes[0].value == pytest.approx(kept) and dropout.exercise.answer == pytest.approx(2 * kept)
    heads = check.TEMPLATES["multi_head.head_dim"](1)
    assert heads.exercise.mistakes[0].value == heads.drawn["d_model"] * heads.drawn["num_heads"]
    d_value = check.TEMPLATES["backward.d_value"](6)
    p, d_o = torch.tensor(d_value.drawn["weights"]), torch.tensor(d_value.drawn["d_output"])
    assert d_value.exercise.mistakes[0].value == pytest.approx(float((p @ d_o)[d_value.drawn["row"], d_value.drawn["col"]]))
    assert all(len(check.TEMPLATES["modern.sink"](seed).exercise.mistakes) == 3 for seed in SEEDS)
    sink = check.TEMPLATES["modern.sink"](2)
    scores = torch.tensor(sink.drawn["scores"])
    assert {m.key: m.value for m in sink.exercise.mistakes}.get("sink_forgotten") == pytest.approx(
        float(torch.softmax(scores, -1)[sink.drawn["col"]]))
    gate = check.TEMPLATES["modern.gate"](2)
    assert {m.key: m.value for m in gate.exercise.mistakes} == pytest.approx(
        {"gate_not_applied": gate.drawn["y"], "gate_no_sigmoid": gate.drawn["y"] * gate.drawn["logit"],
         "gate_added": gate.drawn["y"] + float(torch.sigmoid(torch.tensor(gate.drawn["logit"])))})
    d_scores = check.TEMPLATES["backward.d_scores"](8)
    p, (i, j) = torch.tensor(d_scores.drawn["weights"]), (d_scores.drawn["row"], d_scores.drawn["col"])
    dp = torch.tensor(d_scores.drawn["d_output"]) @ torch.tensor(d_scores.drawn["value"]).T
    assert d_scores.exercise.mistakes[0].value == pytest.approx(float(p[i, j] * (1 - p[i, j]) * dp[i, j]))


@pytest.mark.parametrize("template", [k for k, t in check.TEMPLATES.items() if t(0).kind == check.CONCEPTUAL])
def test_each_conceptual_item_has_one_right_choice_and_its_wrong_choices_name_their_misconception(template):
    orders = set()
    for seed in SEEDS:
        item = check.TEMPLATES[template](seed)
        assert item.choice_mistakes[item.right] == "" and len(set(item.choices)) == len(item.choices) == 3
        assert check.grade_item(item, item.right).outcome == check.CORRECT
        for index, mistake in enumerate(item.choice_mistakes):
            if index != item.right:
                outcome = check.grade_item(item, index)
                assert not outcome.correct and outcome.outcome == mistake
                assert mistake == check.WRONG or mistake in practice.MISTAKES
        orders.add(item.choices)
    assert len(orders) > 1  # neighbours see the choices in other orders


def test_two_students_get_different_numbers_and_a_seat_gets_its_items_back():
    first, again = check.make_check("seat-one", check.BEFORE), check.make_check("seat-one", check.BEFORE)
    other, after = check.make_check("seat-two", check.BEFORE), check.make_check("seat-one", check.AFTER)
    procedural = [i for i, item in enumerate(first) if item.kind == check.PROCEDURAL]
    assert [first[i].drawn for i in procedural] == [again[i].drawn for i in procedural]
    assert [first[i].exercise.question for i in procedural] == [again[i].exercise.question for i in procedural]
    assert sum(first[i].drawn != other[i].drawn for i in procedural) >= len(procedural) - 2
    assert sum(first[i].drawn != after[i].drawn for i in procedural) >= len(procedural) - 2
    assert [i.template for i in first] == [i.template for i in after]  # the same kinds after, new numbers


def test_seeds_depend_on_seat_phase_and_template_only():
    assert items.item_seed("a", "before", "softmax.weight") == items.item_seed("a", "before", "softmax.weight")
    assert len({items.item_seed(s, p, t) for s in "ab" for p in check.PHASES for t in ("x", "y")}) == 8
    with pytest.raises(ValueError):
        items.item_seed("a", "during", "x")
    with pytest.raises(ValueError):
        check.make_check("a", check.BEFORE, ["attention"])


@pytest.mark.parametrize("typed", ["", "abc", "nan", "1e400", "9" * 60, "2+2", "__import__('os')"])
def test_a_bad_answer_is_a_message_not_a_grade(typed):
    item = check.TEMPLATES["softmax.weight"](0)
    with pytest.raises(InputError):
        check.grade_item(item, typed)


@pytest.mark.parametrize("choice", [-1, 3, "1", None, True, 1.0])
def test_a_choice_that_is_not_one_of_the_items_is_a_message(choice):
    with pytest.raises(InputError, match="Choose one"):
        check.grade_item(check.TEMPLATES["softmax.shift"](0), choice)


def test_normalised_gain():
    assert check.normalised_gain(0.5, 0.75) == pytest.approx(0.5)
    assert check.normalised_gain(0.2, 0.2) == 0.0
    assert check.normalised_gain(0.6, 0.4) == pytest.approx(-0.5)
    assert check.normalised_gain(1.0, 1.0) is None
    with pytest.raises(ValueError):
        check.normalised_gain(1.2, 0.5)


def test_every_item_has_a_worked_solution_or_an_explanation_and_a_source():
    for item in check.make_check("seat", check.AFTER):
        assert item.explanation and item.source
        assert item.kind == check.CONCEPTUAL or item.solution.startswith(r"\begin{aligned}")
