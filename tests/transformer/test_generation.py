"""The decoder block, the trained toy reverser, generation token by token and the KV cache, against PyTorch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import APP, element_step, errors, shown_checks, shown_warnings
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest
from test_stepthrough import step_through_every_stage
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from attention_core.errors import InputError, Message
from attention_core.lessons.generation.page import (
    GENERATION_PAGE,
    cost_rows,
    explain_generation,
    generation_step_through,
    real_cache_rows,
)
from attention_core.settings import Settings
from attention_core.transformer.decoder import (
    KVCache,
    decoder_block,
    decoder_weights,
    torch_decoder_layer,
)
from attention_core.transformer.generation import (
    embed,
    generate,
    kv_cache_bytes,
    multiply_adds,
    reference_logits,
    toy_weights,
)
from attention_core.transformer.toy_model import END, LETTERS, NUM_HEADS, START, TOY_MAX_INPUT, VOCAB, parse_source

ROOT = Path(__file__).resolve().parents[2]
words = st.text(alphabet=LETTERS, min_size=1, max_size=TOY_MAX_INPUT)


def letters(ids) -> str:
    return "".join(VOCAB[i] for i in ids)


# ---------------------------------------------------------------- the decoder block against torch

def random_decoder_layer(seed: int, d_model: int = 8, heads: int = 2, ff: int = 16) -> nn.TransformerDecoderLayer:
    torch.manual_seed(seed)
    layer = nn.TransformerDecoderLayer(d_model, heads, ff, dropout=0.0, batch_first=True).eval()
    with torch.no_grad():  # LayerNorms away from 1 and 0, so a swapped γ or β shows
        for norm in (layer.norm1, layer.norm2, layer.norm3):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    return layer


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), t=st.integers(1, 6), s=st.integers(1, 6))
def test_decoder_block_equals_torch_transformer_decoder_layer(seed, t, s):
    layer = random_decoder_layer(seed)
    y, memory = torch.randn(t, 8), torch.randn(s, 8)
    ours = decoder_block(y, memory, decoder_weights(layer), num_heads=2)
    causal = nn.Transformer.generate_square_subsequent_mask(t)
    with torch.no_grad():
        reference = layer(y[None], memory[None], tgt_mask=causal)[0]
    torch.testing.assert_close(ours.output, reference, rtol=1e-5, atol=1e-5)
    # and the layer rebuilt from our weights is the same module
    with torch.no_grad():
        rebuilt = torch_decoder_layer(decoder_weights(layer), 2)(y[None], memory[None], tgt_mask=causal)[0]
    torch.testing.assert_close(rebuilt, reference, rtol=1e-6, atol=1e-6)
    # the self-attention weights are causal: row i puts nothing on keys after i
    weights = ours.self_attention.weights
    assert float(weights.triu(1).abs().max()) == 0.0
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, t))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), t=st.integers(2, 7))
def test_kv_cache_one_row_at_a_time_equals_recomputing_everything(seed, t):
    layer = random_decoder_layer(seed)
    weights = decoder_weights(layer)
    y, memory = torch.randn(t, 8), torch.randn(3, 8)
    full = decoder_block(y, memory, weights, num_heads=2)
    cache = None
    for i in range(t):
        step = decoder_block(y[i:i + 1], memory, weights, num_heads=2, cache=cache)
        cache = step.cache
        assert cache.length == i + 1
        torch.testing.assert_close(step.output[0], full.output[i], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(cache.key, full.self_attention.key, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(cache.value, full.self_attention.value, rtol=1e-6, atol=1e-6)


def test_a_cache_without_values_or_of_the_wrong_width_is_refused():
    from attention_core.multi_head.heads import multi_head_attention

    x, w = torch.randn(1, 4), torch.randn(4, 4)
    with pytest.raises(InputError, match="both its keys and its values"):
        multi_head_attention(x, x, w, w, w, w, num_heads=2, past_key=torch.randn(2, 4))
    with pytest.raises(InputError, match="KV cache has shapes"):
        multi_head_attention(x, x, w, w, w, w, num_heads=2, past_key=torch.randn(2, 3), past_value=torch.randn(2, 3))


# ---------------------------------------------------------------- the trained model

def test_the_trained_model_reverses_held_out_words():
    """The README's accuracy, re-measured on words of every length (the training script's held-out words are
    5-8 letters long; these are drawn afresh)."""
    g = torch.Generator().manual_seed(2026)
    for n in range(1, TOY_MAX_INPUT + 1):
        for _ in range(5):
            source = tuple((torch.randint(len(LETTERS), (n,), generator=g) + VOCAB.index(LETTERS[0])).tolist())
            run = generate(source)
            assert run.output == tuple(reversed(source)) + (END,), (letters(source), letters(run.output))
            assert run.finished


@settings(max_examples=15, deadline=None)
@given(word=words)
def test_every_step_equals_the_torch_model_and_the_cached_run_equals_the_uncached(word):
    run = generate(parse_source(word))
    for step in run.steps:
        torch.testing.assert_close(step.logits, reference_logits(run.source, step.inputs), rtol=1e-5, atol=1e-4)
        assert step.cache_diff < 1e-4
        assert step.inputs == (START,) + run.output[:step.number - 1]


def test_cross_attention_of_the_second_block_follows_the_anti_diagonal():
    """Reversal's alignment: the first output letter comes from the last input letter, the last from the first."""
    source = parse_source("abcdefgh")
    last = generate(source).steps[-1].blocks[-1].cross_attention.weights.mean(0)  # (T, S), heads averaged
    assert int(last[0].argmax()) == len(source) - 1  # row START (chooses y₁ = the last letter)
    assert int(last[len(source) - 1].argmax()) == 0  # chooses y₈ = the first letter
    assert float(last[0, -1]) > 0.5


def test_sampling_is_seeded_and_temperature_changes_the_probabilities():
    source = parse_source("abcd")
    hot = generate(source, temperature=5.0, seed=3)
    assert generate(source, temperature=5.0, seed=3).output == hot.output
    greedy = generate(source)
    step = greedy.steps[0]
    torch.testing.assert_close(step.probabilities, torch.softmax(step.logits, -1))
    torch.testing.assert_close(hot.steps[0].probabilities, torch.softmax(hot.steps[0].logits / 5.0, -1))
    assert float(hot.steps[0].probabilities.max()) < float(step.probabilities.max())


@pytest.mark.parametrize("tau", [-0.1, float("nan"), 10.5, 1e-38, 0.009])
def test_a_temperature_out_of_range_is_refused(tau):
    with pytest.raises(InputError, match="temperature"):
        generate(parse_source("ab"), temperature=tau)


def test_the_coldest_sampling_temperature_keeps_the_probabilities_finite():
    cold = generate(parse_source("abcd"), temperature=0.01, seed=1)
    assert all(bool(torch.isfinite(step.probabilities).all()) for step in cold.steps)
    assert cold.output == generate(parse_source("abcd")).output  # at τ = 0.01 the draw is the greedy choice


@pytest.mark.parametrize("tau, kept", [(1e-38, 0.01), (1e-300, 0.01), (0.004, 0.01), (0.0, 0.0), (0.01, 0.01)])
def test_a_temperature_too_close_to_zero_is_moved_to_the_smallest_that_samples(tau, kept):
    fixed, messages = Settings().replace(**{"generation.temperature": tau})
    assert fixed.generation.temperature == kept
    assert bool(messages) == (tau != kept) and all("too close to 0" in str(m) for m in messages)


@pytest.mark.parametrize("typed", [True, False])
def test_temperature_1e_38_typed_or_linked_gets_a_message_not_a_traceback(typed):
    if typed:
        at = open_page()
        at.number_input(key="setting_generation.temperature").set_value(1e-38).run()
    else:
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["toy_temperature"] = "1e-38"
        at.switch_page("app_pages/generation.py").run()
    assert not at.exception, at.exception
    assert at.session_state["settings"].generation.temperature == 0.01
    assert at.number_input(key="setting_generation.temperature").value == 0.01
    assert any("too close to 0" in w for w in shown_warnings(at)), shown_warnings(at)


@pytest.mark.parametrize("text, says", [
    ("", "Type 1 to 8 letters"),
    ("   ", "Type 1 to 8 letters"),
    ("abz*", "never seen \\*, z"),
    ("abcdefgha", "this input has 9"),
])
def test_bad_words_get_a_message(text, says):
    with pytest.raises(InputError) as error:
        parse_source(text)
    assert error.value.field == "generation.source"
    assert says.replace("\\", "") in str(error.value.message)


def test_spaces_commas_and_capitals_are_read():
    assert parse_source(" A, b c ") == parse_source("abc")


# ---------------------------------------------------------------- counting the KV cache's work and memory

@pytest.mark.parametrize("word", ["a", "beach", "abcdefgh"])
def test_multiply_adds_equal_torch_flop_counter(word):
    """Our formula against torch.utils.flop_counter (2 FLOPs per multiply-add) on the very calls the page makes."""
    source, w = parse_source(word), toy_weights()
    run = generate(source)
    memory = run.memory
    for step in run.steps:
        t, y = step.number, embed(w, step.inputs)
        with FlopCounterMode(display=False) as uncached:
            rows = y
            for b in w.decoder:
                rows = decoder_block(rows, memory, b, NUM_HEADS).output
            _ = rows[-1] @ w.w_vocab + w.b_vocab
        assert uncached.get_total_flops() == 2 * multiply_adds(t, len(source), cached=False)
        caches = [KVCache(c.self_attention.key[:-1], c.self_attention.value[:-1]) for c in step.cached]
        cross = [KVCache(memory @ b.cross_attention.w_key + b.cross_attention.b_key,
                         memory @ b.cross_attention.w_value + b.cross_attention.b_value) for b in w.decoder]
        with FlopCounterMode(display=False) as cached:
            row = y[-1:]
            for b, cache, memory_kv in zip(w.decoder, caches, cross):
                row = decoder_block(row, memory, b, NUM_HEADS, cache=cache if t > 1 else None,
                                    memory_cache=memory_kv).output
            _ = row[-1] @ w.w_vocab + w.b_vocab
        assert cached.get_total_flops() == 2 * multiply_adds(t, len(source), cached=True)


def test_the_cache_grows_linearly_and_recomputing_quadratically():
    costs = [(multiply_adds(t, 4, False), multiply_adds(t, 4, True)) for t in range(1, 10)]
    cached_steps = {b - a for a, b in zip([c for _, c in costs], [c for _, c in costs][1:])}
    assert len(cached_steps) == 1  # with the cache: the same extra work per step
    uncached = [u for u, _ in costs]
    second = {uncached[k + 2] - 2 * uncached[k + 1] + uncached[k] for k in range(len(uncached) - 2)}
    assert len(second) == 1 and second.pop() > 0  # without: a constant second difference, O(t²)


def test_kv_cache_bytes_of_the_toy_model_and_real_models():
    assert kv_cache_bytes(2, 2, 8, 1, 4) == 256  # 2 blocks × (K and V) × 2 heads × 8 dims × 4 bytes
    rows = {row.model: row.bytes_per_token for row in real_cache_rows()}
    assert rows["Llama 2 7B (multi-head attention)"] == 32 * 2 * 32 * 128 * 2 == 512 * 1024
    assert rows["Llama 3 8B (grouped-query attention, 8 KV heads)"] == 128 * 1024


# ---------------------------------------------------------------- the walkthrough

def test_every_stage_and_entry_has_its_numbers():
    walk = GENERATION_PAGE.walkthrough(Settings().set(**{"generation.source": "cafe", "generation.step": 3}))
    assert walk.output_tokens == ("e", "f", "a", "c", "END") == walk.expected
    assert all(c.matches for c in walk.checks), walk.checks
    for stage in GENERATION_PAGE.stages:
        steps = generation_step_through(walk, stage)
        target = steps.stage.target
        assert target is not None
        for head in range(max(steps.num_heads, 1)):
            rows, cols = target.matrix.shape
            for row in range(rows):
                for col in range(cols):
                    text = explain_generation(walk, stage, row, col, head)
                    assert text.count("{") == text.count("}")
        assert steps.stage.formula(Message)
    with pytest.raises(IndexError):
        explain_generation(walk, "logits", 1, 0)
    with pytest.raises(KeyError):
        generation_step_through(walk, "nope")


def test_an_explained_entry_shows_the_value_it_explains():
    walk = GENERATION_PAGE.walkthrough(Settings().set(**{"generation.source": "beach", "generation.step": 2}))
    probs = walk.current.probabilities
    chosen = walk.current.chosen
    text = explain_generation(walk, "probabilities", 0, chosen)
    assert text.split("} = ")[-1].startswith(f"{float(probs[chosen]):.4g}"[:5])
    weight = float(walk.current.blocks[1].cross_attention.heads[0].weights[2, 2])
    assert f"{weight:.4g}"[:5] in explain_generation(walk, "cross_attention", 2, 2, 0)


def test_the_step_shown_moves_back_when_the_word_gets_shorter():
    walk = GENERATION_PAGE.walkthrough(Settings().set(**{"generation.source": "ab", "generation.step": 8}))
    assert walk.step == 2 and walk.current.chosen == END


def test_cost_rows_follow_the_steps():
    walk = GENERATION_PAGE.walkthrough(Settings().set(**{"generation.source": "abc"}))
    rows = cost_rows(walk)
    assert [r[0] for r in rows] == [1, 2, 3, 4]
    assert all(cached < uncached for _, uncached, cached, _ in rows)
    assert [r[3] for r in rows] == [256, 512, 768, 1024]


# ---------------------------------------------------------------- the training script

def test_training_is_deterministic(tmp_path):
    """Two short runs of the training script write the same weights (the committed ones took 2000 steps). On one
    thread: the suite runs on a worker per core, and two threads beside another worker took twice as long."""
    outputs = []
    for k in range(2):
        out = tmp_path / f"w{k}.safetensors"
        result = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_toy_reverser.py"), "--steps", "8",
                                 "--threads", "1", "--out", str(out)], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert "held-out words" in result.stdout
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


# ---------------------------------------------------------------- the page

def open_page(language: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    return at.switch_page("app_pages/generation.py").run()


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stage_of_the_generation_page(language):
    at = open_page(language)
    assert not at.exception and not at.error, errors(at)
    for step in (0, 5):  # the first step (nothing cached yet) and the last (END)
        at.selectbox(key="setting_generation.step").set_value(step).run()
        seen = step_through_every_stage(at, "generation", f"generation, {language}, step {step + 1}")
        assert seen == list(GENERATION_PAGE.stages)
        checks = ("ToyReverser(", "torch.nn.TransformerDecoderLayer(", "decoder_block(new row")
        assert [any(c in m for m in shown_checks(at)) for c in checks] == [True] * 3
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"


def test_the_page_shows_the_answer_and_keeps_a_bad_word():
    at = open_page()
    assert any("`h` `c` `a` `e` `b` `END`" in m.value for m in at.markdown)
    assert any("Correct" in s for s in shown_checks(at))
    at.text_input(key="setting_generation.source").set_value("bad*x").run()
    assert not at.exception
    assert any("never seen \\*, x" in e.value for e in at.error), errors(at)
    assert at.session_state["settings"].generation.source == "bad*x"  # what the user typed stays
    at.text_input(key="setting_generation.source").set_value("bad").run()
    assert not at.error and any("`d` `a` `b` `END`" in m.value for m in at.markdown)


def test_a_draw_that_never_ends_and_a_wrong_draw_are_explained():
    at = open_page()
    at.text_input(key="setting_generation.source").set_value("abcd").run()
    at.number_input(key="setting_generation.temperature").set_value(10.0).run()
    at.number_input(key="setting_seed").set_value(2).run()  # at τ = 10 this draw never reaches END
    assert any("limit of 9 tokens without producing END" in w.value for w in at.warning), errors(at)
    at.number_input(key="setting_generation.temperature").set_value(2.0).run()
    at.number_input(key="setting_seed").set_value(0).run()  # d c b a a a END
    assert any("Not the reversed word" in i.value and "`d` `c` `b` `a` `END`" in i.value for i in at.info)
    assert not at.exception and not at.error, errors(at)


def test_the_encoder_attention_has_no_mask_and_the_decoder_s_is_causal():
    walk = GENERATION_PAGE.walkthrough(Settings().set(**{"generation.source": "beach", "generation.step": 4, "generation.layer": 0}))
    encoder = generation_step_through(walk, "encoder_attention").stage.panels
    decoder = generation_step_through(walk, "self_attention").stage.panels
    assert all(tuple(p.matrix.shape) == (5, 5) and float(p.matrix.min()) > 0 for p in encoder)
    assert all(float(p.matrix.triu(1).abs().max()) == 0 for p in decoder)


def test_the_page_steps_and_samples():
    at = open_page()
    at.selectbox(key="setting_generation.step").set_value(4).run()
    element_step(at, **{"generation.stage": "kv_cache"})
    assert any("computed 1 row instead of 5" in s for s in shown_checks(at)), [s for s in shown_checks(at)]
    at.number_input(key="setting_generation.temperature").set_value(2.0).run()
    assert not at.exception and not at.error, errors(at)
    assert at.session_state["settings"].generation.temperature == 2.0


def test_the_second_blocks_cross_attention_is_what_the_page_says_it_is():
    """The page: block 2 looks mostly along the anti-diagonal (the letter to write next), some rows lag by one;
    on "beach" 4 of 5 rows are on the anti-diagonal and row 2 lags; over 200 random words 76 % and 22 %."""
    import random

    from attention_core.transformer.generation import cross_attention_alignment, generate
    from attention_core.transformer.toy_model import LETTERS, VOCAB

    def ids(word):
        return tuple(VOCAB.index(c) for c in word)

    beach = cross_attention_alignment(generate(ids("beach")), 1)
    assert (beach.rows, beach.on_next, beach.on_previous, beach.elsewhere) == (5, 4, 1, 0)
    rng = random.Random(0)
    words = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 8))) for _ in range(200)]
    counts = [cross_attention_alignment(generate(ids(w)), 1) for w in words]
    rows = sum(a.rows for a in counts)
    assert round(100 * sum(a.on_next for a in counts) / rows) == 76
    assert round(100 * sum(a.on_previous for a in counts) / rows) == 22
    first = [cross_attention_alignment(generate(ids(w)), 0) for w in words]  # block 1 is not the aligned one
    assert sum(a.on_next for a in first) / sum(a.rows for a in first) < 0.5


def test_the_page_says_what_the_weights_show_on_the_learners_word():
    from conftest import open_app, shown_markdown

    at = open_app("app_pages/generation.py")  # the default word, "beach", on the cross-attention stage
    shown = shown_markdown(at)
    assert "On “beach”, block 2's weights" in shown and "in 4 of 5 rows; 1 lag by one" in shown, shown[:2000]
