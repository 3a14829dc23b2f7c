"""tokens (tokenize, Vocabulary, seed000_tables) and presets, against seed 000's and seed 004's own code."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attention_core.errors import InputError
from attention_core.inputs.presets import DEFAULT_PRESET, PRESETS
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import (
    SEED000_DICTIONARY,
    SEED000_VOCABULARY,
    Vocabulary,
    seed000_tables,
    tokenize,
)
from attention_core.shared_settings import MAX_DIM, MIN_DIM

SEED000_SENTENCE = "I Like Machine Learning And Deep Learning"


def _seed000_code():
    """Seed 000's own code (global RNG), returning (embedding weight (23, 4), W_q, W_k, W_v, next draw)."""
    with torch.random.fork_rng():
        torch.manual_seed(12)
        model = nn.Embedding(23, 4)
        w_q, w_k, w_v = torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3)
        after = torch.randn(1, 4)
    return model, w_q, w_k, w_v, after


# --------------------------------------------------------------------------- tokenize


@pytest.mark.parametrize(
    "sentence, tokens",
    [
        ("Hello shiny sun!", ("Hello", "shiny", "sun")),
        (SEED000_SENTENCE, ("I", "Like", "Machine", "Learning", "And", "Deep", "Learning")),
        ("  spaced\tout \n words ", ("spaced", "out", "words")),
        ("“Hello,” she said.", ("Hello", "she", "said")),
        ("a , b -- c", ("a", "b", "c")),
        ("don't stop", ("don't", "stop")),
        ("你好，世界。 再见！", ("你好，世界", "再见")),
        ("", ()),
        ("?! ... ,", ()),
    ],
)
def test_tokenize(sentence, tokens):
    assert tokenize(sentence) == tokens


# --------------------------------------------------------------------------- seed 000 vocabulary


def test_seed000_dictionary_is_the_seed_one():
    assert len(SEED000_DICTIONARY) == 23
    assert sorted(SEED000_DICTIONARY.values()) == list(range(1, 24))
    assert SEED000_DICTIONARY["I"] == 1 and SEED000_DICTIONARY["Innovation"] == 23
    assert SEED000_VOCABULARY.num_rows == 24


def test_seed000_sentence_ids_as_printed():
    """Seed 000 prints: sentence as a tensor: tensor([ 1, 2, 5, 6, 4, 14, 6])."""
    words, ids = SEED000_VOCABULARY.encode(tokenize(SEED000_SENTENCE))
    assert ids == (1, 2, 5, 6, 4, 14, 6)
    assert words == ("I", "Like", "Machine", "Learning", "And", "Deep", "Learning")


def test_lookup_is_case_insensitive_and_keeps_the_tokens_as_typed():
    words, ids = SEED000_VOCABULARY.encode(tokenize("i LIKE machine learning, ai!"))
    assert words == ("i", "LIKE", "machine", "learning", "ai")
    assert ids == (1, 2, 5, 6, 3)


def test_unknown_words_raise_naming_each_once():
    with pytest.raises(InputError) as err:
        SEED000_VOCABULARY.encode(tokenize("I like cats and dogs and cats"))
    msg = err.value.message
    assert err.value.field == "sentence"
    assert "“cats”" in msg and "“dogs”" in msg
    assert msg.count("cats") == 1
    assert "“like”" not in msg and "“and”" not in msg


def test_vocabulary_from_tokens():
    voc = Vocabulary.from_tokens(("the", "cat", "The", "mat", "cat"))
    assert dict(voc.ids) == {"the": 0, "cat": 1, "mat": 2}
    assert voc.num_rows == 3
    assert voc.encode(("THE", "mat", "cat")) == (("THE", "mat", "cat"), (0, 2, 1))
    # a repeated word keeps its own spelling: "the" is not shown as the first one's "The" (one id for both)
    assert Vocabulary.from_tokens(("The", "cat", "the")).encode(("The", "cat", "the")) == (("The", "cat", "the"),
                                                                                              (0, 1, 0))
    assert Vocabulary({}).num_rows == 0


# --------------------------------------------------------------------------- seed 000 tables


def test_seed000_tables_equal_seed_code():
    table, w_q, w_k, w_v = seed000_tables(12, 24, 4, 3)
    model, sq, sk, sv, after = _seed000_code()
    assert table.shape == (24, 4) and table.dtype == torch.float32
    assert torch.equal(table[:23], model.weight.detach())
    assert torch.equal(w_q, sq) and torch.equal(w_k, sk) and torch.equal(w_v, sv)
    # The extra row for id 23 ("Innovation") is the next draw after the weights.
    assert torch.equal(table[23:], after)


def test_seed000_embedded_tensor_equals_seed_code():
    model, w_q, *_ = _seed000_code()
    tensor = torch.tensor([SEED000_DICTIONARY[s] for s in SEED000_SENTENCE.split(" ")])
    embedded_tensor = model(tensor).detach()
    table, ours_q, _, _ = seed000_tables(12, 24, 4, 3)
    _, ids = SEED000_VOCABULARY.encode(tokenize(SEED000_SENTENCE))
    assert torch.equal(table[torch.tensor(ids)], embedded_tensor)
    assert embedded_tensor.shape == (7, 4)
    torch.testing.assert_close(table[torch.tensor(ids)] @ ours_q, embedded_tensor @ w_q)


def test_every_dictionary_word_can_be_embedded():
    """Seed 000's slip: nn.Embedding(23, 4) for ids 1..23 cannot embed "Innovation"; ours can."""
    model, *_ = _seed000_code()
    with pytest.raises(IndexError):
        model(torch.tensor([23]))
    table, *_ = seed000_tables(12, SEED000_VOCABULARY.num_rows, 4, 3)
    words, ids = SEED000_VOCABULARY.encode(tuple(SEED000_DICTIONARY))
    assert len(ids) == 23 and words == tuple(SEED000_DICTIONARY)
    x = table[torch.tensor(ids)]
    assert x.shape == (23, 4)
    assert torch.isfinite(x).all()
    assert len({tuple(row) for row in x.tolist()}) == 23  # every word has its own vector


def test_seed000_tables_do_not_touch_global_rng():
    state = torch.random.get_rng_state()
    seed000_tables(5, 10, 6, 2)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_seed000_tables_other_sizes():
    table, w_q, w_k, w_v = seed000_tables(3, 7, 5, 2)
    assert table.shape == (7, 5) and w_q.shape == w_k.shape == w_v.shape == (5, 2)
    with torch.random.fork_rng():
        torch.manual_seed(3)
        expected = torch.randn(6, 5)
    assert torch.equal(table[:6], expected)
    other, *_ = seed000_tables(4, 7, 5, 2)
    assert not torch.equal(table, other)


# --------------------------------------------------------------------------- presets


def test_preset_keys_and_default():
    assert set(PRESETS) == {"seed000", "hello", "journey_v1", "journey_v2", "custom"}
    assert DEFAULT_PRESET in PRESETS
    for key, p in PRESETS.items():
        assert p.key == key
        assert p.title and p.source and p.note


@pytest.mark.parametrize("key", list(PRESETS))
def test_preset_defaults_are_valid(key):
    p = PRESETS[key]
    n = len(tokenize(p.sentence))
    assert 2 <= n <= MAX_TOKENS
    assert MIN_DIM <= p.d_model <= MAX_DIM and MIN_DIM <= p.d_k <= MAX_DIM
    if p.fixed_embeddings:
        assert all(len(vec) == p.d_model for vec in p.table.values())
        assert p.vocabulary is None
    assert p.weight_init in ("randn", "rand", "linear", "identity")


def test_preset_seed_numbers():
    hello = PRESETS["hello"]
    assert dict(hello.table) == {
        "Hello": (0.34, 0.22, 0.54), "shiny": (0.53, 0.34, 0.98), "sun": (0.29, 0.54, 0.93)
    }
    assert hello.weight_init == "identity"
    for key, seed, init in (("journey_v1", 123, "rand"), ("journey_v2", 789, "linear")):
        p = PRESETS[key]
        assert (p.seed, p.weight_init, p.d_model, p.d_k) == (seed, init, 3, 2)
        assert list(p.table) == ["Your", "journey", "starts", "with", "one", "step"]
        assert p.table["Your"] == (0.43, 0.15, 0.89) and p.table["step"] == (0.05, 0.80, 0.55)
    s = PRESETS["seed000"]
    assert (s.seed, s.d_model, s.d_k, s.weight_init, s.sentence) == (12, 4, 3, "randn", SEED000_SENTENCE)
    assert s.vocabulary is SEED000_VOCABULARY
    assert not s.fixed_embeddings and not PRESETS["custom"].fixed_embeddings
    assert PRESETS["hello"].fixed_embeddings
