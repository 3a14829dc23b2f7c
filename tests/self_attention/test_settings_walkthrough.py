"""settings.validate_settings and walkthrough.build_walkthrough: presets' numbers, bad input, edits."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from torch import nn

from attention_core.errors import InputError
from attention_core.inputs.presets import DEFAULT_PRESET, PRESETS
from attention_core.inputs.stage import base_matrices, check_tokens
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import SEED000_DICTIONARY, seed000_tables
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.self_attention.functional import attention_without_weights
from attention_core.self_attention.modules import SelfAttentionV1, SelfAttentionV2
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings, validate_settings
from attention_core.shared_settings import MAX_DIM, MAX_SEED, MIN_DIM

JOURNEY = torch.tensor(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
    ]
)
V1_PRINTED = torch.tensor(
    [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
)
V2_PRINTED = torch.tensor(
    [
        [-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],
        [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693],
    ]
)
HELLO = {"Hello": (0.34, 0.22, 0.54), "shiny": (0.53, 0.34, 0.98), "sun": (0.29, 0.54, 0.93)}
SEED004_SHINY_PRINTED = (0.3992, 0.3858, 0.8610)


# =========================================================================== settings


def test_default_settings_are_valid_and_unchanged():
    s = Settings()
    fixed, messages = validate_settings(s)
    assert messages == []
    assert fixed == s
    assert s.preset == DEFAULT_PRESET


@pytest.mark.parametrize("key", list(PRESETS))
def test_for_preset_takes_the_preset_defaults_without_messages(key):
    p = PRESETS[key]
    s = Settings.for_preset(key)
    assert (s.preset, s.sentence, s.d_model, s.d_k, s.seed) == (p.key, p.sentence, p.d_model, p.d_k, p.seed)
    assert validate_settings(s) == (s, [])


@pytest.mark.parametrize("raw, expected", [(0, MIN_DIM), (-5, MIN_DIM), (17, MAX_DIM), (10**9, MAX_DIM)])
def test_out_of_range_d_k_is_clamped_with_a_message(raw, expected):
    fixed, messages = validate_settings(dataclasses.replace(Settings(), d_k=raw))
    assert fixed.d_k == expected
    assert len(messages) == 1
    assert "d_k" in messages[0] and str(raw) in messages[0] and f"between {MIN_DIM} and {MAX_DIM}" in messages[0]


@pytest.mark.parametrize("raw", ["abc", "3.5", "", "1e3", 2.5, float("nan"), float("inf"), True, None, [3]])
def test_non_integer_d_k_falls_back_to_default_with_a_message(raw):
    fixed, messages = validate_settings(dataclasses.replace(Settings(), d_k=raw))
    assert fixed.d_k == Settings().d_k
    assert len(messages) == 1 and "whole number" in messages[0] and "d_k" in messages[0]


@pytest.mark.parametrize("raw, expected", [(" 7 ", 7), ("5", 5), (4.0, 4), (16, 16), (1, 1)])
def test_integer_like_values_are_accepted_silently(raw, expected):
    fixed, messages = validate_settings(dataclasses.replace(Settings(), d_k=raw))
    assert fixed.d_k == expected and isinstance(fixed.d_k, int)
    assert messages == []


def test_other_integer_fields_are_clamped():
    s = Settings().set(seed=-1, entry_row=-3, entry_col=10**6, d_model=0, **{"no_weights.query_index": 99})
    fixed, messages = validate_settings(s)
    assert fixed.seed == 0
    assert fixed.no_weights.query_index == MAX_TOKENS - 1
    assert fixed.entry_row == 0
    assert fixed.entry_col == max(MAX_TOKENS, MAX_DIM) - 1
    assert fixed.d_model == MIN_DIM
    assert len(messages) == 5
    fixed, messages = validate_settings(dataclasses.replace(Settings(), seed=MAX_SEED + 1))
    assert fixed.seed == MAX_SEED and len(messages) == 1


def test_unknown_preset_is_repaired_with_a_message():
    fixed, messages = validate_settings(dataclasses.replace(Settings(), preset="nope"))
    assert fixed.preset == DEFAULT_PRESET
    assert len(messages) == 1 and "nope" in messages[0]
    assert Settings.for_preset("nope").preset == DEFAULT_PRESET


def test_unknown_stage_is_repaired_with_a_message():
    fixed, messages = validate_settings(Settings().set(**{"self_attention.stage": "softmax"}))
    assert fixed.self_attention.stage == "scores" and fixed.self_attention.stage in SELF_ATTENTION_PAGE.stages
    assert len(messages) == 1 and "softmax" in messages[0]


@pytest.mark.parametrize("key", ["hello", "journey_v1", "journey_v2"])
def test_fixed_embedding_preset_forces_its_d_model(key):
    s = dataclasses.replace(Settings.for_preset(key), d_model=5)
    fixed, messages = validate_settings(s)
    assert fixed.d_model == 3
    assert len(messages) == 1 and "3-d" in messages[0]
    assert Settings.for_preset(key, d_model=8).d_model == 3


def test_free_presets_keep_their_d_model():
    for key in ("custom", "seed000"):
        fixed, messages = validate_settings(dataclasses.replace(Settings.for_preset(key), d_model=5))
        assert fixed.d_model == 5 and messages == []


def test_replace_returns_validated_copy_and_messages():
    s = Settings.for_preset("custom")
    new, messages = s.replace(d_k=99, sentence="a b c")
    assert new.d_k == MAX_DIM and new.sentence == "a b c" and len(messages) == 1
    assert s.d_k == PRESETS["custom"].d_k  # frozen original untouched


@hsettings(max_examples=50, deadline=None)
@given(
    sentence=st.text(max_size=60),
    preset=st.sampled_from([*PRESETS, "bogus"]),
    d_model=st.one_of(st.integers(-50, 50), st.text(max_size=4)),
    d_k=st.one_of(st.integers(-50, 50), st.floats(allow_nan=True)),
    stage=st.sampled_from([*SELF_ATTENTION_PAGE.stages, "nope"]),
)
def test_sentence_is_never_altered(sentence, preset, d_model, d_k, stage):
    s = Settings(preset=preset, sentence=sentence, d_model=d_model, d_k=d_k).set(**{"self_attention.stage": stage})
    fixed, _ = validate_settings(s)
    assert fixed.sentence == sentence
    assert fixed.preset in PRESETS and fixed.self_attention.stage in SELF_ATTENTION_PAGE.stages
    assert MIN_DIM <= fixed.d_model <= MAX_DIM and MIN_DIM <= fixed.d_k <= MAX_DIM
    # Validation is idempotent: the repaired settings pass unchanged.
    assert validate_settings(fixed) == (fixed, [])


# =========================================================================== walk-through: presets


@pytest.mark.parametrize("key", list(PRESETS))
def test_every_preset_builds_and_matches_torch(key):
    s = Settings.for_preset(key)
    walk = build_walkthrough(s)
    assert walk.torch_matches is True
    assert walk.torch_max_abs_diff < 1e-5
    T = len(walk.tokens)
    assert len(walk.token_ids) == T
    assert walk.base["x"].shape == (T, s.d_model)
    for name in ("w_query", "w_key", "w_value"):
        assert walk.base[name].shape == (s.d_model, s.d_k)
    assert all(m.dtype == torch.float32 for m in walk.base.values())
    assert walk.trace.output.shape == (T, s.d_k)
    assert torch.isfinite(walk.trace.output).all()
    torch.testing.assert_close(walk.weightless.output, attention_without_weights(walk.base["x"]).output)
    assert walk.preset is PRESETS[key] and walk.settings == s


def test_journey_v1_prints_the_seed_numbers():
    walk = build_walkthrough(Settings.for_preset("journey_v1"))
    assert walk.tokens == ("Your", "journey", "starts", "with", "one", "step")
    assert torch.equal(walk.base["x"], JOURNEY)
    torch.testing.assert_close(walk.trace.output, V1_PRINTED, atol=1e-4, rtol=0)


def test_journey_v2_prints_the_seed_numbers():
    walk = build_walkthrough(Settings.for_preset("journey_v2"))
    assert torch.equal(walk.base["x"], JOURNEY)
    torch.testing.assert_close(walk.trace.output, V2_PRINTED, atol=1e-4, rtol=0)


def _shiny_context_by_hand() -> list[float]:
    """Seed 004's steps for "shiny", in float64 without rounding."""
    shiny = HELLO["shiny"]
    scores = [sum(a * b for a, b in zip(shiny, HELLO[w])) for w in HELLO]
    exps = [math.exp(s) for s in scores]
    weights = [e / sum(exps) for e in exps]
    return [sum(weights[j] * HELLO[w][c] for j, w in enumerate(HELLO)) for c in range(3)]


def test_hello_weightless_context_for_shiny():
    walk = build_walkthrough(Settings.for_preset("hello"))
    assert walk.tokens == ("Hello", "shiny", "sun")
    z = walk.weightless.output[1].tolist()
    assert z == pytest.approx(SEED004_SHINY_PRINTED, abs=1e-3)
    exact = _shiny_context_by_hand()
    assert z == pytest.approx(exact, abs=1e-6)
    # The seed rounds its weights before the sum: it is off in the fourth decimal.
    assert max(abs(a - b) for a, b in zip(exact, SEED004_SHINY_PRINTED)) > 1e-4
    # Weightless attention is unscaled: the scores are the plain dot products.
    assert walk.weightless.scale == 1.0
    assert walk.weightless.scores[1].tolist() == pytest.approx([0.7842, 1.3569, 1.2487], abs=1e-5)


def test_hello_identity_weights_give_q_k_v_equal_x():
    walk = build_walkthrough(Settings.for_preset("hello"))
    att = walk.trace.attention
    x = walk.base["x"]
    assert torch.equal(att.query, x) and torch.equal(att.key, x) and torch.equal(att.value, x)
    narrow = build_walkthrough(Settings.for_preset("hello", d_k=2))
    assert torch.equal(narrow.trace.attention.query, x[:, :2])


def test_seed000_x_and_qkv_equal_seed_code():
    walk = build_walkthrough(Settings.for_preset("seed000"))
    assert walk.token_ids == (1, 2, 5, 6, 4, 14, 6)
    with torch.random.fork_rng():
        torch.manual_seed(12)
        model = nn.Embedding(len(SEED000_DICTIONARY), 4)
        sentence = "I Like Machine Learning And Deep Learning"
        tensor = torch.tensor([SEED000_DICTIONARY[s] for s in sentence.split(" ")])
        embedded_tensor = model(tensor).detach()
        W_q, W_k, W_v = torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3)
    X = embedded_tensor
    assert torch.equal(walk.base["x"], X)
    assert torch.equal(walk.base["w_query"], W_q)
    assert torch.equal(walk.base["w_key"], W_k)
    assert torch.equal(walk.base["w_value"], W_v)
    att = walk.trace.attention
    torch.testing.assert_close(att.query, torch.matmul(X, W_q))
    torch.testing.assert_close(att.key, torch.matmul(X, W_k))
    torch.testing.assert_close(att.value, torch.matmul(X, W_v))
    # The rest of seed 000's code.
    scores = torch.matmul(torch.matmul(X, W_q), torch.matmul(X, W_k).transpose(-2, -1))
    weights = torch.softmax(scores / torch.sqrt(torch.tensor(3, dtype=torch.float32)), dim=-1)
    torch.testing.assert_close(att.scores, scores)
    torch.testing.assert_close(att.weights, weights)
    torch.testing.assert_close(walk.trace.output, weights @ torch.matmul(X, W_v))


def test_seed000_embeds_innovation():
    walk = build_walkthrough(Settings.for_preset("seed000", sentence="Automation and Innovation"))
    assert walk.tokens == ("Automation", "and", "Innovation")  # as typed; "and" has the dictionary's id of "And"
    assert walk.token_ids == (22, 4, 23)
    table, *_ = seed000_tables(12, 24, 4, 3)
    assert torch.equal(walk.base["x"][2], table[23])
    assert walk.torch_matches


@pytest.mark.parametrize("seed, d_k", [(123, 2), (0, 3), (42, 5), (MAX_SEED, 1)])
def test_rand_weights_equal_self_attention_v1(seed, d_k):
    s = Settings.for_preset("journey_v1", seed=seed, d_k=d_k)
    walk = build_walkthrough(s)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = SelfAttentionV1(3, d_k)
    assert torch.equal(walk.base["w_query"], module.W_query.detach())
    assert torch.equal(walk.base["w_key"], module.W_key.detach())
    assert torch.equal(walk.base["w_value"], module.W_value.detach())
    with torch.no_grad():
        torch.testing.assert_close(walk.trace.output, module(JOURNEY), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("seed, d_k", [(789, 2), (0, 3), (42, 5), (MAX_SEED, 1)])
def test_linear_weights_equal_self_attention_v2(seed, d_k):
    s = Settings.for_preset("journey_v2", seed=seed, d_k=d_k)
    walk = build_walkthrough(s)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        module = SelfAttentionV2(3, d_k)
    assert torch.equal(walk.base["w_query"], module.W_query.weight.detach().T)
    assert torch.equal(walk.base["w_key"], module.W_key.weight.detach().T)
    assert torch.equal(walk.base["w_value"], module.W_value.weight.detach().T)
    with torch.no_grad():
        torch.testing.assert_close(walk.trace.output, module(JOURNEY), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("d_model, seed", [(1, 0), (4, 12), (7, 3), (16, 99)])
def test_linear_weights_for_other_d_model(d_model, seed):
    """base_matrices' nn.Linear recipe for any D (the journey presets fix D = 3, so call it directly)."""
    s = dataclasses.replace(Settings.for_preset("journey_v2"), d_model=d_model, seed=seed, d_k=2)
    words, ids, voc = check_tokens(s)
    assert words == ("Your", "journey", "starts", "with", "one", "step")
    base = base_matrices(s, ids, voc)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        layers = [nn.Linear(d_model, 2, bias=False) for _ in range(3)]
    for name, layer in zip(("w_query", "w_key", "w_value"), layers):
        assert torch.equal(base[name], layer.weight.detach().T)


@pytest.mark.parametrize("d_model, d_k, seed", [(4, 3, 0), (5, 2, 7), (16, 16, 123)])
def test_custom_preset_draws_from_seed(d_model, d_k, seed):
    s = Settings.for_preset("custom", d_model=d_model, d_k=d_k, seed=seed)
    walk = build_walkthrough(s)
    assert walk.tokens == ("the", "cat", "sat", "on", "the", "mat")
    assert walk.token_ids == (0, 1, 2, 3, 0, 4)
    table, w_q, w_k, w_v = seed000_tables(seed, 5, d_model, d_k)
    assert torch.equal(walk.base["w_key"], w_k)
    assert torch.equal(walk.base["x"], table[torch.tensor(walk.token_ids)])
    assert torch.equal(walk.base["w_query"], w_q) and torch.equal(walk.base["w_value"], w_v)
    assert torch.equal(walk.base["x"][0], walk.base["x"][4])  # "the" twice, one vector
    assert walk.torch_matches


def test_different_seeds_give_different_numbers():
    a = build_walkthrough(Settings.for_preset("custom", seed=1))
    b = build_walkthrough(Settings.for_preset("custom", seed=2))
    assert not torch.equal(a.base["x"], b.base["x"])
    c = build_walkthrough(Settings.for_preset("custom", seed=1))
    assert torch.equal(a.trace.output, c.trace.output)


def test_build_walkthrough_does_not_touch_global_rng():
    state = torch.random.get_rng_state()
    for key in PRESETS:
        build_walkthrough(Settings.for_preset(key))
    assert torch.equal(torch.random.get_rng_state(), state)


def test_saturation_note():
    assert build_walkthrough(Settings.for_preset("hello")).notes == ()
    edits = {"x": {(i, j): (30.0 if i == j else 0.0) for i in range(3) for j in range(3)}}
    walk = build_walkthrough(Settings.for_preset("hello"), edits)
    assert walk.trace.attention.weights.max(dim=-1).values.min() > 0.999
    assert len(walk.notes) == 1 and "one-hot" in walk.notes[0]


# =========================================================================== walk-through: bad input


@pytest.mark.parametrize("sentence", ["", "   ", "!!! ?", "\n\t"])
def test_empty_sentence(sentence):
    with pytest.raises(InputError) as err:
        build_walkthrough(Settings.for_preset("custom", sentence=sentence))
    assert err.value.field == "sentence" and "empty" in err.value.message


def test_single_token():
    with pytest.raises(InputError) as err:
        build_walkthrough(Settings.for_preset("custom", sentence="Hello!"))
    assert err.value.field == "sentence"
    assert "one token" in err.value.message and "Hello" in err.value.message


def test_too_many_tokens():
    words = " ".join(f"w{i}" for i in range(MAX_TOKENS + 1))
    # validated settings cut the sentence at the 12th token (with a message): the builder's own guard, for settings
    # that were not validated, still names the count
    assert Settings.for_preset("custom", sentence=words).sentence == " ".join(f"w{i}" for i in range(MAX_TOKENS))
    with pytest.raises(InputError) as err:
        build_walkthrough(Settings.for_preset("custom").set(sentence=words))
    assert err.value.field == "sentence"
    assert str(MAX_TOKENS + 1) in err.value.message and str(MAX_TOKENS) in err.value.message
    ok = " ".join(f"w{i}" for i in range(MAX_TOKENS))
    assert len(build_walkthrough(Settings.for_preset("custom", sentence=ok)).tokens) == MAX_TOKENS


def test_out_of_vocabulary_words_in_seed000():
    # validated settings run such a sentence as "Your own sentence"; the builder's own guard names the words
    assert Settings.for_preset("seed000", sentence="I Like Pizza and Pasta").preset == "custom"
    with pytest.raises(InputError) as err:
        build_walkthrough(Settings.for_preset("seed000").set(sentence="I Like Pizza and Pasta"))
    assert err.value.field == "sentence"
    assert "Pizza" in err.value.message and "Pasta" in err.value.message


def test_out_of_vocabulary_words_in_fixed_table_preset():
    with pytest.raises(InputError) as err:
        build_walkthrough(Settings.for_preset("hello").set(sentence="Hello moon"))
    assert "moon" in err.value.message
    moon = Settings.for_preset("hello", sentence="Hello moon")
    assert (moon.preset, moon.d_model) == ("custom", 3)  # your own sentence, the example's width kept
    walk = build_walkthrough(Settings.for_preset("hello", sentence="SUN hello"))
    assert walk.tokens == ("SUN", "hello")
    torch.testing.assert_close(walk.base["x"], torch.tensor([HELLO["sun"], HELLO["Hello"]]))


@pytest.mark.parametrize("value", [None, float("nan"), "abc", "1.5", 1e7, -1e7, float("inf"), -float("inf"), True])
@pytest.mark.parametrize("name, label", [("x", "X"), ("w_query", "W_q"), ("w_value", "W_v")])
def test_bad_edit_cell_names_the_cell(value, name, label):
    with pytest.raises(InputError) as err:
        build_walkthrough(Settings.for_preset("seed000"), {name: {(1, 2): value}})
    assert err.value.field == name
    assert f"{label} row 2, column 3" in err.value.message


@pytest.mark.parametrize("value", [1e6, -1e6])
@pytest.mark.parametrize("name", ["x", "w_key"])
def test_max_abs_value_stays_finite(value, name):
    walk = build_walkthrough(Settings.for_preset("seed000"), {name: {(0, 0): value}})
    att = walk.trace.attention
    assert torch.isfinite(att.scores).all()
    assert torch.isfinite(att.weights).all()
    assert torch.isfinite(walk.trace.output).all()
    sums = att.weights.sum(dim=-1)
    torch.testing.assert_close(sums, torch.ones_like(sums))
    assert walk.torch_matches


def test_edits_are_applied_to_the_trace_not_the_base():
    s = Settings.for_preset("seed000")
    plain = build_walkthrough(s)
    walk = build_walkthrough(s, {"x": {(0, 0): 2.5, (3, 1): -1}, "w_key": {(2, 2): 0.125}})
    assert walk.trace.x[0, 0] == 2.5 and walk.trace.x[3, 1] == -1.0
    assert torch.equal(walk.base["x"], plain.base["x"])
    assert walk.trace.w_key[2, 2] == 0.125
    assert torch.equal(walk.trace.w_query, plain.base["w_query"])
    x = plain.base["x"].clone()
    x[0, 0], x[3, 1] = 2.5, -1.0
    torch.testing.assert_close(walk.trace.attention.query, x @ plain.base["w_query"])
    w_k = plain.base["w_key"].clone()
    w_k[2, 2] = 0.125
    torch.testing.assert_close(walk.trace.attention.key, x @ w_k)
    torch.testing.assert_close(walk.weightless.output, attention_without_weights(x).output)
    assert not torch.allclose(walk.trace.output, plain.trace.output)
    assert walk.torch_matches


def test_edits_outside_the_matrix_are_ignored():
    s = Settings.for_preset("seed000")
    plain = build_walkthrough(s)
    edits = {
        "x": {(7, 0): 5.0, (0, 4): "abc", (-1, 0): None, (99, 99): float("inf")},
        "w_query": {(4, 0): 1e9, (0, 3): 1.0},
        "nonexistent": {(0, 0): "whatever"},
    }
    walk = build_walkthrough(s, edits)
    assert torch.equal(walk.trace.x, plain.trace.x)
    assert torch.equal(walk.trace.w_query, plain.trace.w_query)
    assert torch.equal(walk.trace.output, plain.trace.output)
