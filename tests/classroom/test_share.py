"""Shareable links: settings and edits round-trip through query parameters; garbage never crashes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from attention_core.classroom.share import MAX_QUERY_CHARS, decode, encode
from attention_core.inputs.edits import MAX_ABS_VALUE
from attention_core.inputs.presets import PRESETS
from attention_core.settings import Settings, validate_settings

numbers = st.floats(min_value=-MAX_ABS_VALUE, max_value=MAX_ABS_VALUE, allow_nan=False)
cells = st.dictionaries(st.tuples(st.integers(0, 11), st.integers(0, 15)), st.one_of(st.none(), numbers), max_size=6)


@st.composite
def any_settings(draw):
    preset = draw(st.sampled_from(list(PRESETS)))
    base = Settings.for_preset(preset)
    changes = {
        "d_k": draw(st.integers(1, 16)),
        "seed": draw(st.integers(0, 2**31 - 1)),
        "sentence": draw(st.text(max_size=60)),
        "entry_row": draw(st.integers(0, 11)),
        "self_attention.stage": draw(st.sampled_from(["inputs", "query", "scores", "weights", "output"])),
        # some of the pages' own settings, of every kind
        "alibi.num_heads": draw(st.integers(1, 8)),
        "rope.base": draw(st.floats(2.0, 1e7, allow_nan=False)),
        "generation.source": draw(st.text(max_size=12)),
        "dropout.training": draw(st.booleans()),
        "positional_encoding.kind": draw(st.sampled_from(["sinusoidal", "learned"])),
    }
    return validate_settings(base.set(**changes))[0]


@hsettings(max_examples=60, deadline=None)
@given(any_settings(), cells, cells)
def test_settings_and_edits_round_trip(settings, x_cells, mask_cells):
    params, complete = encode(settings, {"x": x_cells, "mask": mask_cells})
    assert complete
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in params.items())
    decoded, edits, messages = decode(params)
    assert decoded == settings
    # an emptied cell never travels: the link's page builds from the example's value there, with a message
    assert edits.get("x", {}) == {cell: v for cell, v in x_cells.items() if v is not None}
    assert edits.get("mask", {}) == {cell: v for cell, v in mask_cells.items() if v is not None}
    emptied = sum(v is None for v in x_cells.values()) + sum(v is None for v in mask_cells.values())
    assert all("was left empty" in m or "more could not be used" in m for m in messages)
    assert (messages == []) == (emptied == 0)


def test_a_preset_link_is_short():
    params, _ = encode(Settings.for_preset("journey_v2"), {})
    assert params == {"preset": "journey_v2"}
    assert decode(params)[0] == Settings.for_preset("journey_v2")


def test_too_many_edits_are_left_out_and_said():
    big = {(i, j): 123456.789012 for i in range(12) for j in range(16)}
    params, complete = encode(Settings(), {"x": big})
    assert not complete
    assert "edit_x" not in params
    assert sum(len(k) + len(v) for k, v in params.items()) <= MAX_QUERY_CHARS


@hsettings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=20), st.text(max_size=40), max_size=8))
def test_garbage_parameters_never_raise(params):
    settings, edits, messages = decode(params)
    assert validate_settings(settings) == (settings, [])
    assert isinstance(messages, list)


def test_tampered_values_are_ignored_with_a_message():
    settings, edits, messages = decode({
        "preset": "journey_v1", "d_k": "__import__('os')", "seed": "1e999", "zzz": "1",
        "edit_x": "0,0,nan", "edit_w_query": "0,0,5e9", "stage": "nope", "d_model": "-3",
    })
    assert settings.preset == "journey_v1" and settings.d_k == Settings.for_preset("journey_v1").d_k
    assert edits == {}
    text = " ".join(messages)
    for fragment in ("d_k", "seed", "zzz", "X", "W_q", "nope", "d_model"):
        assert fragment in text, fragment
