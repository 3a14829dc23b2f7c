"""formulas: every stage's entry recomputed by a plain loop equals the matrix code, and the LaTeX shows it."""

from __future__ import annotations

import math
import re

import pytest
import torch
from conftest import shows_number

from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.self_attention.formulas import (
    Entry,
    entry_latex,
    entry_of,
    self_attention_formula,
    stage_matrix,
)
from attention_core.self_attention.functional import self_attention
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings

CASES = [
    Settings.for_preset("seed000"),
    Settings.for_preset("hello"),
    Settings.for_preset("journey_v1"),
    Settings.for_preset("journey_v2"),
    Settings.for_preset("custom", d_model=5, d_k=2, seed=3),
]


def _independent_stages(walk) -> dict[str, torch.Tensor]:
    """Each stage's matrix from the walk-through's base matrices, in float64, with plain torch ops."""
    x = walk.base["x"].double()
    q, k, v = (x @ walk.base[n].double() for n in ("w_query", "w_key", "w_value"))
    s = q @ k.T
    a = s / math.sqrt(q.shape[1])
    w = torch.exp(a - a.max(dim=1, keepdim=True).values)
    w = w / w.sum(dim=1, keepdim=True)
    return {"inputs": x, "query": q, "key": k, "value": v, "scores": s, "scaled_scores": a, "weights": w, "output": w @ v}


def _positions(rows: int, cols: int) -> list[tuple[int, int]]:
    return sorted({(0, 0), (rows - 1, cols - 1), (rows // 2, cols // 2), (1, 0), (0, cols - 1)})


def _latex_number(text: str) -> float:
    """Parse sympy's LaTeX of a Float: "0.5641", "-6.532", "4.026 \\cdot 10^{-5}"."""
    text = text.strip()
    match = re.fullmatch(r"(-?[0-9.]+)(?: \\cdot 10\^\{(-?\d+)\})?", text)
    assert match, f"not a number: {text!r}"
    return float(match.group(1)) * 10 ** int(match.group(2) or 0)


def test_stages_are_the_eight_steps_in_order():
    assert list(SELF_ATTENTION_PAGE.stages) == ["inputs", "query", "key", "value", "scores", "scaled_scores", "weights", "output"]
    assert all(isinstance(t, str) and t for t in SELF_ATTENTION_PAGE.stages.values())


@pytest.mark.parametrize("settings", CASES, ids=lambda s: f"{s.preset}-{s.d_model}x{s.d_k}")
def test_entry_recompute_equals_value_and_stage_matrix(settings):
    walk = build_walkthrough(settings)
    expected = _independent_stages(walk)
    checked = 0
    for stage in SELF_ATTENTION_PAGE.stages:
        matrix = stage_matrix(walk.trace, stage)
        assert matrix.shape == expected[stage].shape, stage
        for i, j in _positions(*matrix.shape):
            entry = entry_of(walk.trace, stage, i, j)
            assert (entry.stage, entry.row, entry.col) == (stage, i, j)
            assert entry.d_k == settings.d_k
            assert entry.recompute() == pytest.approx(entry.value, rel=1e-5, abs=1e-6), (stage, i, j)
            assert entry.value == pytest.approx(float(expected[stage][i, j]), rel=1e-5, abs=1e-6), (stage, i, j)
            checked += 1
    assert checked >= 8 * 3


def test_entry_vectors_are_the_right_rows_and_columns():
    walk = build_walkthrough(Settings.for_preset("seed000"))
    att = walk.trace.attention
    e = entry_of(walk.trace, "scores", 2, 5)
    assert e.left == pytest.approx(att.query[2].tolist()) and e.right == pytest.approx(att.key[5].tolist())
    e = entry_of(walk.trace, "query", 3, 1)
    assert e.left == pytest.approx(walk.base["x"][3].tolist())
    assert e.right == pytest.approx(walk.base["w_query"][:, 1].tolist())
    e = entry_of(walk.trace, "output", 4, 2)
    assert e.left == pytest.approx(att.weights[4].tolist()) and e.right == pytest.approx(att.value[:, 2].tolist())
    e = entry_of(walk.trace, "scaled_scores", 1, 1)
    assert e.left == pytest.approx((float(att.scores[1, 1]),)) and e.right == ()
    # Learning (row 3) and Learning (row 6) are the same token: equal weights to every key.
    assert entry_of(walk.trace, "weights", 3, 0).value == entry_of(walk.trace, "weights", 6, 0).value


def test_weights_entry_with_masked_and_blocked_rows():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, generator=g)
    w = torch.randn(3, 3, generator=g)
    mask = torch.tril(torch.ones(4, 4)).bool()
    mask[2] = False  # row 2 blocked entirely
    trace = self_attention(x, w, w, w, attn_mask=mask)
    for i in range(4):
        for j in range(4):
            e = entry_of(trace, "weights", i, j)
            assert e.recompute() == pytest.approx(e.value, rel=1e-5, abs=1e-7)
            if not mask[i, j]:
                assert e.value == 0.0 and e.recompute() == 0.0
    assert entry_of(trace, "weights", 0, 0).recompute() == pytest.approx(1.0)


def test_recompute_is_a_plain_loop_over_its_numbers():
    assert Entry("scores", 0, 0, (1.0, 2.0, 3.0), (4.0, -5.0, 0.5), 0.0, 3).recompute() == pytest.approx(-4.5)
    assert Entry("scaled_scores", 0, 0, (6.0,), (), 0.0, 4).recompute() == pytest.approx(3.0)
    assert Entry("inputs", 0, 0, (0.25,), (), 0.25, 1).recompute() == 0.25
    e = Entry("weights", 0, 1, (0.0, math.log(3.0), -math.inf), (), 0.0, 1)
    assert e.recompute() == pytest.approx(0.75)
    assert Entry("weights", 0, 0, (-math.inf, -math.inf), (), 0.0, 1).recompute() == 0.0
    # Large scores do not overflow (the row maximum is subtracted).
    assert Entry("weights", 0, 0, (1000.0, 1000.0), (), 0.0, 1).recompute() == pytest.approx(0.5)


def test_entry_out_of_range_and_unknown_stage():
    walk = build_walkthrough(Settings.for_preset("hello"))
    with pytest.raises(IndexError):
        entry_of(walk.trace, "scores", 3, 0)
    with pytest.raises(IndexError):
        entry_of(walk.trace, "query", 0, 3)
    with pytest.raises(IndexError):
        entry_of(walk.trace, "output", -1, 0)
    with pytest.raises(KeyError):
        entry_of(walk.trace, "softmax", 0, 0)
    with pytest.raises(KeyError):
        self_attention_formula("softmax")


@pytest.mark.parametrize("stage", list(SELF_ATTENTION_PAGE.stages))
def test_self_attention_formula_is_two_nonempty_strings(stage):
    matrix, element = self_attention_formula(stage)
    assert isinstance(matrix, str) and matrix.strip()
    assert isinstance(element, str) and element.strip()
    assert "=" in matrix and "=" in element


def test_self_attention_formula_content():
    assert self_attention_formula("query")[0] == "Q = X W_{q}"
    assert r"\sqrt{d_{k}}" in self_attention_formula("scaled_scores")[0]
    assert r"\operatorname{softmax}" in self_attention_formula("weights")[0]
    assert r"\sum_{l=1}^{d_{k}}" in self_attention_formula("scores")[1]
    assert r"\sum_{l=1}^{T}" in self_attention_formula("output")[1]


@pytest.mark.parametrize("stage", list(SELF_ATTENTION_PAGE.stages))
def test_entry_latex_shows_the_rounded_value(stage):
    walk = build_walkthrough(Settings.for_preset("seed000"))
    rows, cols = stage_matrix(walk.trace, stage).shape
    for i, j in _positions(rows, cols):
        entry = entry_of(walk.trace, stage, i, j)
        text = entry_latex(entry)
        assert isinstance(text, str) and text
        shown = _latex_number(text.rsplit(" = ", 1)[1])
        assert shown == pytest.approx(entry.value, rel=5e-4, abs=1e-12), (stage, i, j, text)
        # Indices are shown 1-based.
        assert f"_{{{i + 1},{j + 1}}}" in text or f"_{{t_{{{i + 1}}},{j + 1}}}" in text


def test_entry_latex_examples():
    walk = build_walkthrough(Settings.for_preset("hello"))
    text = entry_latex(entry_of(walk.trace, "scaled_scores", 1, 0))
    # s = shiny · Hello = 0.7842; d_k = 3.
    assert r"\frac{0.7842}{\sqrt{3}}" in text
    assert shows_number(text.rsplit(" = ", 1)[1], 0.7842 / math.sqrt(3))
    text = entry_latex(entry_of(walk.trace, "weights", 1, 2))
    # a_2j = shiny · (Hello, shiny, sun) / √3, worked by hand: 0.7842, 1.3569, 1.2487 over √3.
    a = [0.7842 / math.sqrt(3), 1.3569 / math.sqrt(3), 1.2487 / math.sqrt(3)]
    assert r"\frac{e^{0.7209}}{e^{0.4528} + e^{0.7834} + e^{0.7209}}" in text
    alpha = math.exp(a[2]) / sum(math.exp(v) for v in a)
    assert shows_number(text.rsplit(" = ", 1)[1], alpha)


# ---------------------------------------------------------------- attention without trainable weights (seed 004)


def test_weightless_softmax_latex_is_seed_004s_formula():
    from attention_core.self_attention.formulas import weightless_softmax_latex

    text = weightless_softmax_latex()
    assert text == r"{\alpha}_{q,j} = \frac{e^{{\omega}_{q,j}}}{\sum_{l} e^{{\omega}_{q,l}}}"
    assert weightless_softmax_latex() is text  # constant: cached


@pytest.mark.parametrize(("query", "tokens", "expected"), [(1, 3, 1), (5, 3, 2), (-1, 3, 0), (0, 1, 0)])
def test_weightless_query_is_kept_inside_the_sentence(query, tokens, expected):
    from attention_core.self_attention.formulas import weightless_query

    assert weightless_query(query, tokens) == expected


def test_weightless_query_needs_a_token():
    from attention_core.errors import InputError
    from attention_core.self_attention.formulas import weightless_query

    with pytest.raises(InputError):
        weightless_query(0, 0)


def test_seed004_note_only_where_the_seed_prints_its_rounded_vector():
    from attention_core.self_attention.formulas import seed004_rounding_applies, weightless_steps

    assert seed004_rounding_applies("hello", 1, edited=False)
    assert not seed004_rounding_applies("hello", 1, edited=True)
    assert not seed004_rounding_applies("hello", 0, edited=False)
    assert not seed004_rounding_applies("seed000", 1, edited=False)
    # The note's premise: seed 004 prints [0.3992, 0.3858, 0.8610] for "shiny"; the exact vector differs
    # from it in the fourth decimal.
    walk = build_walkthrough(Settings.for_preset("hello"))
    x = tuple(tuple(row) for row in walk.trace.x.tolist())
    ours = weightless_steps(x, walk.tokens, 1).context_value
    printed = (0.3992, 0.3858, 0.8610)
    assert walk.tokens[1] == "shiny"
    assert tuple(round(v, 4) for v in ours) != printed  # ours: (0.39896, 0.38542, 0.86095)
    assert all(abs(a - b) < 5e-4 for a, b in zip(ours, printed))
