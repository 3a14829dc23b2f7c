"""walkthrough_multi_head and formulas_masking: the masking & heads pages' numbers, against torch and the seeds.

The printed numbers are rasbt/LLMs-from-scratch ch03's (quoted by seed 004,
004_56c592a3d25bc184.txt) on the six "Your journey starts with one step" inputs.
"""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from torch import nn

from attention_core import registry
from attention_core.errors import InputError
from attention_core.inputs.presets import PRESETS
from attention_core.inputs.text import MAX_TOKENS
from attention_core.lessons.cross_attention.page import build_cross_attention_walkthrough
from attention_core.lessons.dropout.page import DROPOUT_PAGE
from attention_core.lessons.multi_head.page import multi_head_step_through
from attention_core.masking import formulas as fm
from attention_core.masking.user_mask import MASK_EDITS
from attention_core.masking.walkthrough import MAX_DROPOUT, build_causal_walkthrough, causal_panels, explain_causal
from attention_core.multi_head import formulas as formulas_multi_head
from attention_core.multi_head.modules import MultiHeadAttention
from attention_core.multi_head.walkthrough import (
    build_multi_head_walkthrough,
    explain_multi_head,
    multi_head_panels,
)
from attention_core.self_attention.modules import CausalAttention, SelfAttentionV2
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import PRESET_FIELDS, Settings, validate_settings
from attention_core.stepthrough import clamp_entry
from attention_core.weights import module_weights

JOURNEY = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                        [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
CAUSAL_PRINTED = torch.tensor([[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
                               [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]])
MHA_PRINTED = torch.tensor([[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593],
                            [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]])
# SelfAttention_v2(3, 2) after torch.manual_seed(789), causal: ch03's attn_weights and
# torch.manual_seed(123); nn.Dropout(0.5)(attn_weights).
MASKED_V2_PRINTED = torch.tensor([
    [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000], [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000], [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
    [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000], [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]])
DROPPED_V2_PRINTED = torch.tensor([
    [2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000], [0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.7599, 0.6194, 0.6206, 0.0000, 0.0000, 0.0000], [0.0000, 0.4921, 0.4925, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.3966, 0.0000, 0.3775, 0.0000, 0.0000], [0.0000, 0.3327, 0.3331, 0.3084, 0.3331, 0.0000]])

def _last_number(latex: str) -> float:
    tail = latex.rstrip().removesuffix(r"\end{aligned}").rstrip()
    tail = re.split(r"\)\s*$", tail)[0] if tail.endswith(")") else tail
    match = re.search(r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s*$", tail)
    assert match, latex
    return float(match.group(1))


def _all_finite(*tensors: torch.Tensor) -> bool:
    return all(not torch.isnan(t).any() for t in tensors)


# ---------------------------------------------------------------- the modules' weights, without the global RNG


@pytest.mark.parametrize("d_in, d_out, seed", [(3, 2, 123), (4, 4, 12), (5, 3, 0), (2, 6, 789)])
def test_module_weights_equal_causal_attention_after_manual_seed(d_in, d_out, seed):
    w = module_weights(d_in, d_out, seed, out_proj=False)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        ca = CausalAttention(d_in, d_out, 6, 0.0)
    assert torch.equal(w["w_query"], ca.W_query.weight.detach().T)
    assert torch.equal(w["w_key"], ca.W_key.weight.detach().T)
    assert torch.equal(w["w_value"], ca.W_value.weight.detach().T)
    assert set(w) == {"w_query", "w_key", "w_value"}


@pytest.mark.parametrize("d_in, d_out, heads, seed", [(3, 2, 2, 123), (4, 4, 2, 12), (3, 6, 3, 1)])
def test_module_weights_equal_multi_head_attention_after_manual_seed(d_in, d_out, heads, seed):
    w = module_weights(d_in, d_out, seed, out_proj=True)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        mha = MultiHeadAttention(d_in, d_out, 6, 0.0, num_heads=heads)
    assert torch.equal(w["w_query"], mha.W_query.weight.detach().T)
    assert torch.equal(w["w_out"], mha.out_proj.weight.detach().T)
    assert torch.equal(w["b_out"], mha.out_proj.bias.detach())


def test_building_the_pages_never_touches_the_global_generator():
    before = torch.random.get_rng_state()
    s = Settings.for_preset("custom", **{"dropout.dropout_p": 0.3})
    DROPOUT_PAGE.walkthrough(s)
    build_multi_head_walkthrough(s)
    build_cross_attention_walkthrough(s)
    assert torch.equal(before, torch.random.get_rng_state())


# ---------------------------------------------------------------- the seed articles' printed numbers


def test_causal_page_reproduces_causal_attention_printed_output():
    walk = build_causal_walkthrough(Settings.for_preset("journey_v1"))
    assert torch.equal(walk.inputs.x, JOURNEY)
    assert torch.allclose(walk.trace.output, CAUSAL_PRINTED, atol=1e-4)
    with torch.random.fork_rng():
        torch.manual_seed(123)
        ca = CausalAttention(3, 2, 6, 0.0)
    assert torch.allclose(walk.trace.output, ca(JOURNEY[None])[0], atol=1e-6)


def test_multi_head_page_reproduces_multi_head_attention_printed_output():
    s = Settings.for_preset("journey_v1")
    assert (s.d_out, s.num_heads, s.seed) == (2, 2, 123)
    walk = build_multi_head_walkthrough(s)
    assert torch.allclose(walk.trace.output, MHA_PRINTED, atol=1e-4)


def test_journey_v2_masked_weights_and_dropout_reproduce_ch03():
    """SelfAttention_v2 draws its W like CausalAttention; with seed 789 the causal weights, then dropout seed 123."""
    s = Settings.for_preset("journey_v2", **{"dropout.dropout_p": 0.5, "dropout.training": True, "dropout.seed": 123})
    walk = build_causal_walkthrough(s)
    assert torch.allclose(walk.trace.attention.weights, MASKED_V2_PRINTED, atol=1e-4)
    with torch.random.fork_rng():
        torch.manual_seed(789)
        sa = SelfAttentionV2(3, 2)
    assert torch.equal(walk.weights["w_key"], sa.W_key.weight.detach().T)
    dropped = DROPOUT_PAGE.walkthrough(s)
    assert torch.allclose(dropped.trace.attention.dropped_weights, DROPPED_V2_PRINTED, atol=1e-4)
    assert dropped.row_sums[1] == 0  # row 2 lost both its weights
    assert all(c.matches for c in dropped.checks)


# ---------------------------------------------------------------- causal page: mask, routes, checks


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_passes_every_check(preset):
    s = Settings.for_preset(preset)
    for walk in (build_causal_walkthrough(s), DROPOUT_PAGE.walkthrough(s),
                 build_multi_head_walkthrough(s), build_cross_attention_walkthrough(s)):
        assert walk.checks and all(c.matches for c in walk.checks), walk.checks


@hsettings(max_examples=40, deadline=None)
@given(d_k=st.integers(1, 6), seed=st.integers(0, 10_000), padding=st.integers(0, 3), causal=st.booleans(),
       flips=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.booleans()), max_size=6))
def test_causal_walkthrough_matches_sdpa_and_the_other_route(d_k, seed, padding, causal, flips):
    s = Settings.for_preset("custom", d_k=d_k, seed=seed, padding=padding, **{"causal_mask": causal})
    edits = {MASK_EDITS: {(i, j): float(a) for i, j, a in flips}}
    walk = build_causal_walkthrough(s, edits)
    att = walk.trace.attention
    t = len(walk.tokens)
    expected = torch.ones(t, t, dtype=torch.bool).tril() if causal else torch.ones(t, t, dtype=torch.bool)
    expected[:, t - min(padding, t):] = False
    for i, j, a in flips:
        if i < t and j < t:
            expected[i, j] = a
    assert torch.equal(walk.mask.attn_mask, expected)
    reference = F.scaled_dot_product_attention(att.query, att.key, att.value, attn_mask=expected)
    assert torch.allclose(att.output, reference, atol=1e-6)
    assert walk.route_max_abs_diff < 1e-6
    assert _all_finite(att.weights, att.output, walk.other_route.weights)
    blocked = [i for i in range(t) if not expected[i].any()]
    assert list(walk.blocked_rows) == blocked
    assert all(float(att.weights[i].abs().sum()) == 0.0 for i in blocked)
    assert all(c.matches for c in walk.checks)


def test_a_fully_blocked_row_is_explained_not_nan():
    s = Settings.for_preset("seed000")
    walk = build_causal_walkthrough(s, {MASK_EDITS: {(0, 0): 0.0}})  # row 1 could only see itself
    assert walk.blocked_rows == (0,)
    assert len(walk.warnings) == 1 and "Row 1 (query “I”) has every key blocked" in walk.warnings[0]
    assert _all_finite(walk.trace.attention.weights, walk.trace.output)
    assert torch.equal(walk.trace.output[0], torch.zeros(s.d_k))
    assert r"\frac{0}{0}" in explain_causal(walk, "weights", 0, 0)
    assert all(c.matches for c in walk.checks)


def test_all_padding_blocks_everything_with_a_message():
    s = Settings.for_preset("hello", padding=MAX_TOKENS)
    walk = build_causal_walkthrough(s)
    assert walk.blocked_rows == (0, 1, 2)
    assert "All 3 tokens are padding" in walk.warnings[0]
    mh = build_multi_head_walkthrough(s)
    assert mh.blocked_rows == (0, 1, 2) and all(c.matches for c in mh.checks)


def test_mask_reasons_name_the_future_padding_and_the_users_cells():
    s = Settings.for_preset("journey_v1", padding=2)
    walk = build_causal_walkthrough(s, {MASK_EDITS: {(5, 0): 0.0, (99, 0): 0.0}})
    mask = walk.mask
    assert mask.edited == {(5, 0): False}  # cells outside T x T are kept but not applied
    assert mask.reasons(0, 4) == ("key 5 is in the future of query 1", "key 5 is padding")
    assert mask.reasons(5, 5) == ("key 6 is padding",)
    assert mask.reasons(5, 0) == ("you set this cell",)
    assert mask.reasons(2, 1) == ("key 2 is at or before query 3",)
    assert r"M_{1,4} = -\infty" in explain_causal(walk, "mask", 0, 3)


def test_context_length_shorter_than_the_sentence_is_an_input_error():
    s = Settings.for_preset("journey_v1", context_length=4)
    for build in (build_causal_walkthrough, build_multi_head_walkthrough, build_cross_attention_walkthrough):
        with pytest.raises(InputError, match="6 tokens but the context length is 4"):
            build(s)


# ---------------------------------------------------------------- dropout


def test_dropout_eval_mode_and_p_zero_change_nothing():
    base = build_causal_walkthrough(Settings.for_preset("seed000"))
    for s in (Settings.for_preset("seed000", **{"dropout.training": False, "dropout.dropout_p": 0.5}),
              Settings.for_preset("seed000", **{"dropout.training": True, "dropout.dropout_p": 0.0})):
        walk = DROPOUT_PAGE.walkthrough(s)
        assert walk.dropout_p == 0.0 and walk.scale == 1.0 and bool(walk.keep.all())
        assert torch.equal(walk.trace.output, base.trace.output)
        assert torch.allclose(walk.row_sums, torch.ones(len(walk.tokens)))
        assert "is_causal=True" in walk.checks[-1].reference


@pytest.mark.parametrize("p, seed", [(0.5, 123), (0.2, 7), (0.9, 0)])
def test_dropout_mask_is_nn_dropouts_and_rows_stop_summing_to_one(p, seed):
    s = Settings.for_preset("custom", **{"dropout.dropout_p": p, "dropout.seed": seed})
    walk = DROPOUT_PAGE.walkthrough(s)
    att = walk.trace.attention
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        dropped = nn.Dropout(p).train()(att.weights)
    torch.testing.assert_close(att.dropped_weights, dropped)
    assert walk.scale == pytest.approx(1 / (1 - p))
    torch.testing.assert_close(walk.row_sums, att.weights.mul(walk.keep).sum(-1) / (1 - p))
    assert not torch.allclose(walk.row_sums, torch.ones_like(walk.row_sums))
    assert [c.matches for c in walk.checks] == [True, True]
    assert "bernoulli_(1 - p" in walk.checks[1].reference


# ---------------------------------------------------------------- multi-head


def test_heads_that_do_not_divide_d_out_get_the_head_counts_that_fit():
    s = Settings.for_preset("seed000", d_out=6, num_heads=4)
    for build in (build_multi_head_walkthrough, build_cross_attention_walkthrough):
        with pytest.raises(InputError, match=r"d_out = 6 cannot be split into 4 equal heads.*1, 2, 3, 6 heads"):
            build(s)


@pytest.mark.parametrize("d_out, heads", [(4, 1), (4, 2), (4, 4), (8, 2), (6, 3)])
def test_multi_head_scale_is_head_dim_and_matches_nn_multihead_attention(d_out, heads):
    s = Settings.for_preset("custom", d_model=d_out, d_out=d_out, num_heads=heads, padding=1)
    walk = build_multi_head_walkthrough(s)
    head_dim = d_out // heads
    assert walk.scale == pytest.approx(1 / math.sqrt(head_dim))
    assert walk.wrong_scale == pytest.approx(1 / math.sqrt(d_out))
    assert walk.shapes == ((1, 6, d_out), (1, 6, heads, head_dim), (1, heads, 6, head_dim))
    references = [c.reference for c in walk.checks]
    assert any("nn.MultiheadAttention" in r for r in references) and all(c.matches for c in walk.checks)
    # the loop version: head r is attention on columns r*head_dim ... of Q, K, V
    tr = walk.trace
    for cols in walk.columns:
        q, k, v = tr.query[:, cols], tr.key[:, cols], tr.value[:, cols]
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=walk.mask.attn_mask)
        assert torch.allclose(tr.concat[:, cols], ref, atol=1e-6)


def test_nn_multihead_attention_check_needs_d_model_equal_d_out():
    walk = build_multi_head_walkthrough(Settings.for_preset("journey_v1"))  # d_model 3, d_out 2
    assert [c.reference.split("(")[0] for c in walk.checks] == ["torch.nn.functional.scaled_dot_product_attention"]
    assert any("d_model = 3 ≠ d_out = 2" in n for n in walk.notes)


# ---------------------------------------------------------------- cross-attention


def test_cross_attention_with_different_lengths_is_m_by_n():
    s = Settings.for_preset("custom")  # 6 decoder tokens, 7 encoder tokens
    walk = build_cross_attention_walkthrough(s)
    m, n = len(walk.tokens), len(walk.kv_tokens)
    assert (m, n) == (6, 7)
    assert walk.trace.weights.shape == (s.num_heads, m, n)
    assert torch.allclose(walk.trace.weights.sum(-1), torch.ones(s.num_heads, m))
    assert walk.trace.output.shape == (m, s.d_out)
    assert any(f"m = {m} decoder tokens attend to n = {n}" in note for note in walk.notes)
    assert all(c.matches for c in walk.checks) and len(walk.checks) == 3


def test_cross_attention_embeds_each_word_once():
    s = Settings.for_preset("custom", sentence="the cat sat", encoder_sentence="a cat sat on the mat")
    walk = build_cross_attention_walkthrough(s)
    # the decoder's X is that of every other page
    assert torch.equal(walk.x_query, build_walkthrough(s).trace.x)
    # a word in both sentences has one vector; new encoder words get new ones
    assert torch.equal(walk.x_kv[1], walk.x_query[1]) and torch.equal(walk.x_kv[4], walk.x_query[0])
    assert not torch.equal(walk.x_kv[0], walk.x_kv[3])
    fixed = build_cross_attention_walkthrough(Settings.for_preset("seed000", encoder_sentence="Learning Deep I"))
    assert torch.equal(fixed.x_kv[0], fixed.x_query[3]) and torch.equal(fixed.x_kv[2], fixed.x_query[0])


@pytest.mark.parametrize("encoder, message", [
    ("", "encoder sentence is empty"),
    (" ".join(["step"] * (MAX_TOKENS + 1)), f"encoder sentence has {MAX_TOKENS + 1} tokens; this page shows at most"),
    ("one small step", "Encoder sentence: Not in this example's vocabulary: “small”"),
])
def test_bad_encoder_sentences_are_input_errors(encoder, message):
    # the builder's own guards, on settings not validated (validation cuts a long sentence and runs one with new
    # words as "Your own sentence")
    with pytest.raises(InputError, match=message) as error:
        build_cross_attention_walkthrough(Settings.for_preset("journey_v1").set(encoder_sentence=encoder))
    assert error.value.field == "encoder_sentence"


def test_one_encoder_token_is_fine():
    walk = build_cross_attention_walkthrough(Settings.for_preset("journey_v1", encoder_sentence="step"))
    assert torch.equal(walk.trace.weights, torch.ones(2, 6, 1))


# ---------------------------------------------------------------- panels and explained entries


def _walks():
    s = Settings.for_preset("seed000", padding=1)
    edits = {MASK_EDITS: {(3, 1): 0.0}}
    return (
        [("causal", build_causal_walkthrough(s, edits), list(registry.BY_KEY["causal"].stages))],
        [("dropout", DROPOUT_PAGE.walkthrough(s, edits), list(registry.BY_KEY["dropout"].stages))],
        [("multi_head", build_multi_head_walkthrough(s, edits), list(registry.BY_KEY["multi_head"].stages))],
        [("cross_attention", build_cross_attention_walkthrough(s), list(registry.BY_KEY["cross_attention"].stages))],
    )


@pytest.mark.parametrize("group", range(4))
def test_every_stage_has_panels_formulas_and_explains_each_entry_with_its_number(group):
    ((page, walk, stages),) = _walks()[group]
    for stage in stages:
        formula = formulas_multi_head.page_formula if page in ("multi_head", "cross_attention") else fm.masking_formula
        lines = formula(page, stage)
        assert len(lines) >= 2 and all(lines)
        panels = (multi_head_panels if page in ("multi_head", "cross_attention") else causal_panels)(walk, stage)
        explained = [p for p in panels if p.explained]
        assert explained
        for panel in panels:
            assert panel.matrix.shape == (len(panel.row_labels), len(panel.col_labels))
        rows, cols = explained[0].matrix.shape
        for row, col in {(0, 0), (rows - 1, cols - 1), (rows // 2, cols // 2)}:
            for head in ({p.head for p in explained} - {None}) or {0}:
                matrix = next(p for p in explained if p.head in (None, head)).matrix
                if page in ("multi_head", "cross_attention"):
                    latex = explain_multi_head(walk, stage, row, col, head)
                else:
                    latex = explain_causal(walk, stage, row, col)
                value = float(matrix[row, col])
                if stage == "mask" or math.isinf(value):
                    assert ("-\\infty" in latex) == math.isinf(value) or stage == "mask"
                    continue
                if stage == "dropout_mask":
                    assert f"= {int(value)}" in latex
                    continue
                assert _last_number(latex) == pytest.approx(value, rel=2e-3, abs=2e-4), (stage, latex)


def test_scaled_scores_entry_divides_by_sqrt_head_dim():
    walk = build_multi_head_walkthrough(Settings.for_preset("seed000", d_out=8, num_heads=2))
    latex = explain_multi_head(walk, "scaled_scores", 1, 0, 1)
    assert r"\sqrt{4}" in latex and r"\sqrt{d_{head}}" in latex and "a^{(2)}_{2,1}" in latex


def test_clamp_entry_moves_inside_the_stage_and_the_heads():
    walk = build_multi_head_walkthrough(Settings.for_preset("journey_v1"))
    assert clamp_entry(multi_head_step_through(walk, "split").stage, 9, 9, 5, 2) == (5, 0, 1)
    assert clamp_entry(multi_head_step_through(walk, "weights").stage, -1, 3, 0, 2) == (0, 3, 0)


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize("raw, expected, message", [
    (1.5, MAX_DROPOUT, "dropout_p must be in [0, 1) (p = 1 would drop every weight); got 1.5"),
    (1, MAX_DROPOUT, "got 1,"),
    (-0.2, 0.0, "got -0.2, using 0"),
    ("abc", 0.5, "must be a number in [0, 1)"),
    (float("nan"), 0.5, "must be a number in [0, 1)"),
])
def test_dropout_p_outside_the_unit_interval_is_clamped_with_a_message(raw, expected, message):
    fixed, messages = validate_settings(Settings().set(**{"dropout.dropout_p": raw}))
    assert fixed.dropout.dropout_p == expected
    assert len(messages) == 1 and message in messages[0]


@pytest.mark.parametrize("field, raw, expected", [
    ("num_heads", 0, 1), ("num_heads", 40, 16), ("d_out", 0, 1), ("d_out", 99, 16), ("head", -1, 0),
    ("padding", -3, 0), ("context_length", 0, 1), ("context_length", 50, MAX_TOKENS), ("dropout.seed", -1, 0),
])
def test_new_counts_are_clamped_with_a_message(field, raw, expected):
    fixed, messages = validate_settings(Settings().set(**{field: raw}))
    assert fixed.get(field) == expected
    shown = raw + 1 if field == "head" else raw  # the head is counted from 1, as the page counts it
    assert len(messages) == 1 and f"got {shown}," in messages[0]


@pytest.mark.parametrize("field", ["causal.stage", "dropout.stage", "multi_head.stage", "cross_attention.stage"])
def test_unknown_page_steps_fall_back_with_a_message(field):
    fixed, messages = validate_settings(Settings().set(**{field: "nope"}))
    assert fixed.get(field) == Settings().get(field)
    assert "Unknown step “nope”" in messages[0]


def test_switches_accept_only_on_or_off():
    fixed, messages = validate_settings(Settings().set(**{"dropout.training": "maybe"}, **{"causal_mask": 0}))
    assert fixed.dropout.training is True and fixed.causal_mask is False
    assert len(messages) == 1 and "training switch" in messages[0]


@pytest.mark.parametrize("key", list(PRESETS))
def test_presets_set_the_new_fields(key):
    p, s = PRESETS[key], Settings.for_preset(key)
    assert all(getattr(s, f) == (p.key if f == "preset" else getattr(p, f)) for f in PRESET_FIELDS)
    assert s.d_out % s.num_heads == 0
    assert validate_settings(s) == (s, [])
