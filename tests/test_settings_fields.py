"""Each page's limits, declared in its own folder beside its settings (``lessons/<key>/page.py``), and
settings.FIELDS (the declared table of every settings field, checked by validate_settings' one loop)."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path
from typing import Any, Optional

import pytest

from attention_core import fields, registry, settings
from attention_core.inputs.text import cut_text
from attention_core.lessons.additive import page as additive
from attention_core.lessons.image_attention import page as image
from attention_core.lessons.positional_encoding import page as positional
from attention_core.lessons.temperature import page as temperature
from attention_core.lessons.why_sqrt_dk import page as scaling
from attention_core.minilm.model import TRAINED_MODEL_MAX_PADDING, TRAINED_MODEL_MAX_TOKENS
from attention_core.settings import Settings, validate_settings
from attention_core.shared_settings import MAX_DIM


@pytest.mark.parametrize(("keys", "choices"), [
    (scaling.SQRT_DISTRIBUTIONS, scaling.DISTRIBUTIONS),
    (positional.PE_ENCODINGS, positional.ENCODINGS),
    (positional.PE_SHUFFLES, positional.SHUFFLES),
    (image.IMAGE_PATTERNS, image.PATTERNS),
    (image.IMAGE_FEATURES, image.FEATURES),
], ids=["distributions", "encodings", "shuffles", "image patterns", "image features"])
def test_choice_keys_agree_with_the_feature_modules_dicts(keys, choices):
    # Same keys, same order (the pages offer the dict's keys in order; settings validate against the keys).
    assert keys == tuple(choices)


def test_upload_is_not_a_built_in_image():
    assert image.IMAGE_UPLOAD not in image.PATTERNS


def test_feature_modules_keep_their_names_for_the_limits():
    assert (scaling.MIN_SQRT_SAMPLES, scaling.MAX_SQRT_SAMPLES, scaling.MIN_SQRT_KEYS, scaling.MAX_SQRT_KEYS) == (100, 5000, 2, 32)
    assert (positional.MIN_PE_POSITIONS, positional.MAX_PE_POSITIONS, positional.MIN_PE_WIDTH, positional.MAX_PE_WIDTH) == (
        2, 128, 2, 128)
    assert (additive.MIN_ADDITIVE_HIDDEN, additive.MAX_ADDITIVE_HIDDEN) == (1, 16)
    assert image.MAX_IMAGE_SIDE == 16
    assert (TRAINED_MODEL_MAX_TOKENS, TRAINED_MODEL_MAX_PADDING) == (512, 8)
    assert (temperature.MIN_TEMPERATURE, temperature.MAX_TEMPERATURE) == (0.01, 100.0)
    assert temperature.nearest_temperature(0.4) == 0.5


# =========================================================================== settings.FIELDS, the declared table

SETTINGS_FIELDS = list(Settings.paths())
DEFAULT = Settings()

#: Whole-number fields' (low, high, label), written out (as the clamp lines before the table had them): pins these
#: limits, so a changed limit is a deliberate change of this test too. A field not pinned here (a new page's) is
#: tried with its own row's limits and label (:func:`_cases`), so adding a page needs no line here.
INT_RANGES: dict[str, tuple[int, int, str]] = {
    "d_model": (1, 16, "d_model"),
    "d_k": (1, 16, "d_k"),
    "seed": (0, 2**31 - 1, "The seed"),
    "no_weights.query_index": (0, 11, "The query token"),
    "backward.copy_query": (1, 12, "The token that copies (i)"),
    "backward.copy_key": (1, 12, "The token copied (j)"),
    "backward.target_seed": (0, 2**31 - 1, "The target's seed"),
    "backward.steps": (1, 50, "Steps to take"),
    "entry_row": (0, 11, "The entry's row"),
    "entry_col": (0, 15, "The entry's column"),
    "context_length": (1, 12, "The context length"),
    "padding": (0, 12, "The number of padding tokens"),
    "dropout.seed": (0, 2**31 - 1, "The dropout seed"),
    "d_out": (1, 16, "d_out"),
    "num_heads": (1, 16, "The number of heads"),
    "head": (0, 15, "The head"),
    "trained_model.padding": (0, 8, "The number of [PAD] tokens"),
    "trained_model.entry_row": (0, 511, "The entry's row"),
    "trained_model.entry_col": (0, 511, "The entry's column"),
    "experiment_seed": (0, 2**31 - 1, "The seed"),
    "why_sqrt_dk.samples": (100, 5000, "The number of samples"),
    "why_sqrt_dk.keys": (2, 32, "The number of keys n"),
    "temperature.row": (0, 11, "The query row"),
    "positional_encoding.positions": (2, 128, "The number of positions"),
    "positional_encoding.width": (2, 128, "d_model of the pattern"),
    "additive.hidden": (1, 16, "The hidden size h"),
    "additive.row": (0, 11, "The query token"),
    "additive.col": (0, 11, "The key token"),
    "image_attention.row": (0, 15, "The pixel's row"),
    "image_attention.col": (0, 15, "The pixel's column"),
    "image_attention.d_k": (1, 16, "d_k"),
    "encoder_block.num_heads": (1, 16, "The number of heads"),
    "encoder_block.dim_feedforward": (1, 64, "dim_feedforward"),
    "encoder_block.num_layers": (1, 4, "The number of blocks"),
    "encoder_block.block": (0, 3, "The block"),
    "generation.step": (0, 8, "The generation step"),
    "gqa.num_heads": (1, 8, "The number of query heads"),
    "gqa.num_kv_heads": (1, 8, "The number of key/value heads"),
    "gqa.head_dim": (1, 4, "head_dim"),
    "rope.head_dim": (1, 16, "head_dim"),
    "alibi.num_heads": (1, 8, "The number of heads"),
    "sliding_window.window": (1, 12, "The window"),
    "flash_attention.block_q": (1, 12, "block_q"),
    "flash_attention.block_k": (1, 12, "block_k"),
    "flash_attention.tile": (0, 143, "The tile"),
    "linear_attention.step": (0, 11, "The step t"),
    "mla.num_heads": (1, 8, "The number of heads"),
    "mla.head_dim": (1, 4, "d_h"),
    "mla.rope_dim": (2, 4, "d_R"),
    "mla.kv_latent": (1, 16, "d_c"),
    "mla.q_latent": (1, 16, "d_c'"),
    "mla.head": (0, 7, "The head shown"),
    "sinks.window": (1, 1024, "The window w"),
    "sinks.sinks": (0, 16, "The number of sink tokens s"),
    "sliding_window.layers": (1, 4, "The number of layers"),
    "rope.shift": (0, 1000, "The shift s"),
    "generation.layer": (0, 1, "The block"),
    "training.seed": (0, 2**31 - 1, "The run's seed"),
    "training.steps": (1, 5000, "The number of steps"),
    "training.snapshot": (0, 5000, "The snapshot's step"),
    "training.row": (0, 31, "The weight's row"),
    "training.col": (0, 31, "The weight's column"),
    "modern_lm.generated": (0, 12, "The number of generated tokens"),
    "modern_lm.entry_row": (0, 511, "The entry's row"),
    "modern_lm.entry_col": (0, 575, "The entry's column"),
}

#: The model's layer and head: (count, the word in the message).
ONE_BASED = {"trained_model.layer": (6, "layer"), "trained_model.head": (12, "head"), "training.layer": (2, "layer"),
             "modern_lm.layer": (30, "layer"), "modern_lm.head": (9, "head"), "sinks.layer": (30, "layer"),
             "sinks.head": (9, "head")}

#: (value given, value after validation, the message or None), written out per real-valued field.
FLOAT_CASES: dict[str, list[tuple[Any, float, Optional[str]]]] = {
    "backward.learning_rate": [
        (0, 0.001, "η must be between 0.001 and 10; got 0, using 0.001."),
        (-1, 0.001, "η must be between 0.001 and 10; got -1, using 0.001."),
        (1e9, 10.0, "η must be between 0.001 and 10; got 1e+09, using 10."),
        ("fast", 0.01, "η must be a number; got “fast”, using 0.01."),
        (float("nan"), 0.01, "η must be a number; got “nan”, using 0.01."),
        (float("inf"), 0.01, "η must be a number; got “inf”, using 0.01."),
        (None, 0.01, "η must be a number; got “None”, using 0.01."),
        (0.5, 0.5, None),
        (" 2 ", 2.0, None),
    ],
    "training.learning_rate": [
        (0, 1e-05, "η must be between 1e-05 and 1; got 0, using 1e-05."),
        (-0.5, 1e-05, "η must be between 1e-05 and 1; got -0.5, using 1e-05."),
        (5, 1.0, "η must be between 1e-05 and 1; got 5, using 1."),
        ("fast", 0.003, "η must be a number; got “fast”, using 0.003."),
        (float("nan"), 0.003, "η must be a number; got “nan”, using 0.003."),
        (float("inf"), 0.003, "η must be a number; got “inf”, using 0.003."),
        (0.01, 0.01, None),
    ],
    "temperature.tau": [
        (1e9, 100.0, "τ must be between 0.01 and 100; got 1e+09, using 100."),
        (0, 0.01, "τ must be between 0.01 and 100; got 0, using 0.01."),
        (-3, 0.01, "τ must be between 0.01 and 100; got -3, using 0.01."),
        (0.4, 0.5, "τ = 0.4 is not one of the slider's values; using the nearest, 0.5."),
        ("warm", 1.0, "τ must be a number; got “warm”, using 1."),
        (None, 1.0, "τ must be a number; got “None”, using 1."),
        (float("nan"), 1.0, "τ must be a number; got “nan”, using 1."),
        (float("inf"), 1.0, "τ must be a number; got “inf”, using 1."),
        (True, 1.0, "τ must be a number; got “True”, using 1."),
        (2.0, 2.0, None),
        (" 1.5 ", 1.5, None),
        (100, 100.0, None),
    ],
    "generation.temperature": [
        (11, 10.0, "τ must be between 0 and 10; got 11, using 10."),
        (-1, 0.0, "τ must be between 0 and 10; got -1, using 0."),
        ("hot", 0.0, "τ must be a number; got “hot”, using 0."),
        (float("nan"), 0.0, "τ must be a number; got “nan”, using 0."),
        (0, 0.0, None),
        (0.37, 0.37, None),  # no grid: any τ in range
        (10, 10.0, None),
    ],
    "rope.base": [
        (1, 2.0, "The base must be between 2 and 1e+07; got 1, using 2."),
        (1e9, 1e7, "The base must be between 2 and 1e+07; got 1e+09, using 1e+07."),
        (float("inf"), 1e7, "The base must be between 2 and 1e+07; got inf, using 1e+07."),
        ("big", 10000.0, "The base must be a number; got “big”, using 10000."),
        (float("nan"), 10000.0, "The base must be a number; got “nan”, using 10000."),
        (500000, 500000.0, None),
        (10000, 10000.0, None),
    ],
    "linear_attention.beta": [
        (1.5, 1.0, "β must be between 0 and 1 (the share of the prediction error written into the state); got 1.5, "
                   "using 1."),
        (-0.2, 0.0, "β must be between 0 and 1 (the share of the prediction error written into the state); got -0.2, "
                    "using 0."),
        ("half", 0.5, "β must be a number between 0 and 1; got “half”, using 0.5."),
        (float("nan"), 0.5, "β must be a number between 0 and 1; got “nan”, using 0.5."),
        (0, 0.0, None),
        (1, 1.0, None),
        (0.25, 0.25, None),
    ],
    "linear_attention.alpha": [
        (0, 0.01, "The decay α must be above 0: α = 0 would erase the state at every step (and g = log α = −∞); got 0, "
                  "using 0.01."),
        (-1, 0.01, "The decay α must be above 0: α = 0 would erase the state at every step (and g = log α = −∞); got "
                   "-1, using 0.01."),
        (1.5, 1.0, "The decay α must be at most 1: above 1 the state would grow at every step; got 1.5, using 1."),
        ("slow", 0.9, "The decay α must be a number above 0 and at most 1; got “slow”, using 0.9."),
        (1, 1.0, None),
        (0.5, 0.5, None),
    ],
    "sinks.sink_logit": [
        (25, 20.0, "The sink logit b must be between -20 and 20 (beyond, e^b takes all of the weight or none of it); "
                   "got 25, using 20."),
        (float("-inf"), -20.0, "The sink logit b must be between -20 and 20 (beyond, e^b takes all of the weight or "
                               "none of it); got -inf, using -20."),
        ("big", 1.0, "The sink logit b must be a number; got “big”, using 1."),
        (float("nan"), 1.0, "The sink logit b must be a number; got “nan”, using 1."),
        (-20, -20.0, None),
        (0, 0.0, None),
        (2.5, 2.5, None),
    ],
    "dropout.dropout_p": [
        (1.5, 0.99, "dropout_p must be in [0, 1) (p = 1 would drop every weight); got 1.5, using 0.99."),
        (1, 0.99, "dropout_p must be in [0, 1) (p = 1 would drop every weight); got 1, using 0.99."),
        (float("inf"), 0.99, "dropout_p must be in [0, 1) (p = 1 would drop every weight); got inf, using 0.99."),
        (0.995, 0.99, "dropout_p must be in [0, 1); got 0.995, using 0.99."),
        (-0.2, 0.0, "dropout_p must be in [0, 1); got -0.2, using 0."),
        ("abc", 0.5, "dropout_p must be a number in [0, 1); got “abc”, using 0.5."),
        (None, 0.5, "dropout_p must be a number in [0, 1); got “None”, using 0.5."),
        (float("nan"), 0.5, "dropout_p must be a number in [0, 1); got “nan”, using 0.5."),
        (0.3, 0.3, None),
        ("0.25", 0.25, None),
        (0, 0.0, None),
        (0.99, 0.99, None),
    ],
}

#: The message for "nope" in each choice field other than the steps (those are generic, below).
CHOICE_MESSAGES = {
    "preset": "Unknown example “nope”; showing “I Like Machine Learning And Deep Learning (a 23-word dictionary)”.",
    "why_sqrt_dk.distribution": "Unknown distribution “nope”; using “normal”.",
    "positional_encoding.kind": "Unknown positional encoding “nope”; using “sinusoidal”.",
    "positional_encoding.shuffle": "Unknown shuffle “nope”; using “reverse”.",
    "image_attention.source": "Unknown image “nope”; using “smiley”.",
    "image_attention.features": "Unknown kind of pixel token “nope”; using “rgb”.",
    "language": "Unknown language “nope”; using English.",
    "palette": "Unknown colours “nope”; using red–blue.",
    "backward.target": "Unknown target “nope”; using “copy”.",
    "training.task": "Unknown task “nope”; using “Induction: [A][B] … [A] → [B]”.",
    "training.which": "Unknown weight “nope”; using “w_query”.",
}
#: field path -> its stages, for every step page (from the registry)
STAGE_FIELDS: dict[str, dict[str, str]] = {page.stage_field: dict(page.stages) for page in registry.PAGES if page.stages}


#: A case's message when only its presence is checked (a field whose messages are not written out here).
ANY_MESSAGE = "<any message>"


def _cases(path: str, row: settings.Field) -> list[tuple[Any, Any, Optional[str]]]:
    """(value given, value after validation, message or None) for ``row`` (of field ``path``): out of range,
    malformed, in range."""
    fallback = DEFAULT.get(path)
    if isinstance(row, settings.IntRange) and row.one_based:  # an index the page counts from 1: so do its messages
        low, high, label = row.low, row.high, row.label
        between = f"{label} must be between {low + 1} and {high + 1}; got {{got}}, so the page shows the nearest one it has."
        whole = f"{label} must be a whole number; got “{{got}}”, using {fallback + 1}."
        return [
            (high + 1, high, between.format(got=high + 2)),
            (low - 1, low, between.format(got=low)),
            ("abc", fallback, whole.format(got="abc")),
            (None, fallback, whole.format(got="None")),
            (low, low, None),
            (high, high, None),
        ]
    if isinstance(row, settings.IntRange):
        low, high, label = INT_RANGES.get(path, (row.low, row.high, row.label))
        between = f"{label} must be between {low} and {high}; got {{got}}, using {{using}}."
        whole = f"{label} must be a whole number; got “{{got}}”, using {fallback}."
        return [
            (high + 1, high, between.format(got=high + 1, using=high)),
            (low - 1, low, between.format(got=low - 1, using=low)),
            (10**30, high, between.format(got=10**30, using=high)),
            ("abc", fallback, whole.format(got="abc")),
            (None, fallback, whole.format(got="None")),
            (2.5, fallback, whole.format(got="2.5")),
            (float("nan"), fallback, whole.format(got="nan")),
            (True, fallback, whole.format(got="True")),
            (low, low, None),
            (high, high, None),
            (f" {high} ", high, None),
            (float(low), low, None),
        ]
    if isinstance(row, settings.OneBasedIndex):
        count, word = ONE_BASED[path]
        text = f"The model has {word}s 1 to {count}; got {word} {{got}}, using {word} 1."
        return [
            (count, 0, text.format(got=count + 1)),
            (-1, 0, text.format(got=0)),
            ("two", 0, text.format(got="“two”")),
            (None, 0, text.format(got="“None”")),
            (count - 1, count - 1, None),
            (0, 0, None),
        ]
    if isinstance(row, settings.FloatRange):
        if path in FLOAT_CASES:
            return FLOAT_CASES[path]
        # Not written out here (a new page's field): its own row's limits; the messages are its own templates'.
        return [(row.high + 1, row.high, ANY_MESSAGE), (row.low - 1, row.low, ANY_MESSAGE),
                ("abc", fallback, ANY_MESSAGE), (float("nan"), fallback, ANY_MESSAGE), (None, fallback, ANY_MESSAGE),
                (fallback, fallback, None)]
    if isinstance(row, settings.Switch):
        if row.label is None:  # presenter mode: repaired silently
            return [("maybe", fallback, None), (2, True, None), (0, False, None), (True, True, None)]
        using = "on" if fallback else "off"
        return [
            ("maybe", fallback, f"{row.label} must be on or off; got “maybe”, using {using}."),
            (None, fallback, f"{row.label} must be on or off; got “None”, using {using}."),
            (2, fallback, f"{row.label} must be on or off; got “2”, using {using}."),
            (1, True, None), (0, False, None), (1.0, True, None), (True, True, None), (False, False, None),
        ]
    if isinstance(row, settings.Text):
        # words of the default example's dictionary: another word would move the sentence to "Your own sentence"
        cases = [(None, fallback, row.template), (5, fallback, row.template),
                 ("  I Like Deep Learning!  ", "  I Like Deep Learning!  ", None), ("", "", None)]
        if row.max_tokens or row.max_chars:  # a long text is cut at a word boundary, with a message
            long = "Deep Learning " * 1000
            cut = cut_text(long, max_tokens=row.max_tokens, max_chars=row.max_chars)
            assert cut.text.endswith(("Deep", "Learning")) and len(cut.text) <= row.max_chars
            cases.append((long, cut.text, ANY_MESSAGE))
        return cases
    if isinstance(row, settings.Choice):
        if path in STAGE_FIELDS:
            page = STAGE_FIELDS[path]
            message = f"Unknown step “{{got}}”; showing “{page[fallback]}”."
        elif path in CHOICE_MESSAGES:
            message = CHOICE_MESSAGES[path].replace("“nope”", "“{got}”")
        else:  # a new page's choice, not written out here: its row's message, whatever its words
            return [("nope", fallback, ANY_MESSAGE), (None, fallback, ANY_MESSAGE),
                    *((key, key, None) for key in row.keys)]
        return [
            ("nope", fallback, message.format(got="nope")),
            (None, fallback, message.format(got="None")),
            (3, fallback, message.format(got="3")),
            (["a", "list"], fallback, message.format(got="['a', 'list']")),
            *((key, key, None) for key in row.keys),
        ]
    if isinstance(row, fields.Token):  # a random id, or "" (none yet); a forged one is dropped with a message
        return [("", "", None), ("Ab_9-x", "Ab_9-x", None), ("<script>", "", row.template), ("a b", "", row.template),
                ("x" * (row.max_chars + 1), "", row.template), (None, "", row.template), (5, "", row.template)]
    if isinstance(row, settings.FieldNames):
        unknown = "The link fixes settings this app does not have or cannot fix: {names}. They are left free."
        return [
            ("", "", None), ("seed,d_k", "d_k,seed", None), (" d_k , d_k,", "d_k", None),
            ("d_k,language,locked,nope", "d_k", unknown.format(names="language, locked, nope")),
            (None, fallback, "The list of fixed settings must be text; none is fixed."),
            (["d_k"], fallback, "The list of fixed settings must be text; none is fixed."),
        ]
    raise AssertionError(f"no test cases for a {type(row).__name__} row ({path})")


CASES = [
    pytest.param(path, raw, expected, message, id=f"{path}={raw!r}")
    for path, row in settings.ROWS
    for raw, expected, message in _cases(path, row)
]


def test_every_settings_field_has_exactly_one_row():
    paths = [path for path, _row in settings.ROWS]
    assert sorted(paths) == sorted(SETTINGS_FIELDS)  # none missing, none twice, none unknown


def test_the_preset_is_checked_first():
    # Every later field's fallback is the checked preset's own default.
    assert settings.FIELDS[0].name == "preset"


def test_the_pinned_limits_are_the_rows_and_name_no_field_that_is_gone():
    by_kind: dict[type, set[str]] = {}
    for path, row in settings.ROWS:
        by_kind.setdefault(type(row), set()).add(path)
    assert set(INT_RANGES) <= by_kind[settings.IntRange]
    assert set(ONE_BASED) == by_kind[settings.OneBasedIndex]
    assert set(FLOAT_CASES) <= by_kind[settings.FloatRange]
    assert set(CHOICE_MESSAGES) | set(STAGE_FIELDS) <= by_kind[settings.Choice]
    for path, row in settings.ROWS:
        if path in INT_RANGES:
            assert (row.low, row.high, row.label) == INT_RANGES[path]


def test_the_stage_rows_are_the_pages_stages():
    rows = dict(settings.ROWS)
    for field, page in STAGE_FIELDS.items():
        assert rows[field].keys == tuple(page)
        assert DEFAULT.get(field) in page


@pytest.mark.parametrize(("name", "raw", "expected", "message"), CASES)
def test_each_field_repairs_a_bad_value_and_accepts_a_good_one(name, raw, expected, message):
    # A preset is tried with its own defaults (the fixed-embedding presets fix d_model).
    base = Settings.for_preset(raw) if name == "preset" and message is None else DEFAULT
    fixed, messages = validate_settings(base.set(**{name: raw}))
    value = fixed.get(name)
    assert value == expected and type(value) is type(expected)
    if message == ANY_MESSAGE:
        assert len(messages) == 1 and str(messages[0]).strip()
    else:
        assert messages == ([message] if message else [])
    # Nothing else changes, and the repaired settings are valid as they are.
    assert fixed == base.set(**{name: expected})
    assert validate_settings(fixed) == (fixed, [])


def test_messages_keep_their_template_for_translation():
    _, messages = validate_settings(DEFAULT.set(d_k=99, **{"temperature.tau": 0.4, "positional_encoding.kind": "rotary"}))
    assert [m.template for m in messages] == [  # the shared fields first, then each page's, in the registry's order
        "{label} must be between {low} and {high}; got {value}, using {clamped}.",
        "τ = {tau:g} is not one of the slider's values; using the nearest, {snapped:g}.",
        "Unknown positional encoding “{raw}”; using “{value}”.",
    ]
    assert messages[0].params == {"label": "d_k", "low": 1, "high": 16, "value": "99", "clamped": 16}
    huge = validate_settings(dataclasses.replace(DEFAULT, seed=10**300))[1][0]
    assert huge.params["value"] == "1" + "0" * 38 + "…"  # a 301-digit number is quoted short
    assert messages[1].params == {"tau": 0.4, "snapped": 0.5}


def test_values_that_used_to_raise_are_repaired():
    fixed, messages = validate_settings(DEFAULT.set(**{"trained_model.layer": " 9 "}))
    assert fixed.trained_model.layer == 0 and messages == ["The model has layers 1 to 6; got layer 10, using layer 1."]
    fixed, messages = validate_settings(dataclasses.replace(DEFAULT, preset=["seed000"], language={"en": 1}))
    assert (fixed.preset, fixed.language) == (DEFAULT.preset, "en") and len(messages) == 2


def test_settings_learns_the_pages_from_the_registry_only():
    # The one settings object composes the pages' own settings through the registry; it imports no concept module
    # itself, learns its shared limits and fields from the leaf ``shared_settings``.
    tree = ast.parse(Path(settings.__file__).read_text())
    project: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:  # from . import x / from .x import y
            project |= {node.module} if node.module else {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "attention_core":  # from attention_core import x
            project |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attention_core."):
            project.add(node.module.removeprefix("attention_core."))
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("attention_core") for alias in node.names)
    assert project == {"errors", "fields", "inputs.edits", "inputs.presets", "inputs.text", "reads",
                       "registry", "shared_settings"}


@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
@pytest.mark.parametrize("sign", [1, -1])
def test_an_int_beyond_floats_range_is_repaired_with_a_message_not_an_overflow(name, sign):
    # float(10**400) raises OverflowError: such a number is as huge as +-inf, and gets the same treatment.
    fixed, messages = validate_settings(DEFAULT.set(**{name: sign * 10**400}))
    assert len(messages) == 1
    value = fixed.get(name)
    assert isinstance(value, float) and math.isfinite(value)
    assert validate_settings(fixed) == (fixed, [])


@pytest.mark.parametrize(("name", "raw", "expected", "message"), CASES)
def test_a_change_to_validated_settings_is_checked_as_a_check_of_every_field_would(name, raw, expected, message):
    """``replace`` on settings that came out of ``validate_settings`` checks only the changed rows (a click changes one
    of ~130 fields); it must give what checking every field gives, repairs and messages included."""
    base = Settings.for_preset(raw) if name == "preset" and message is None else DEFAULT
    assert validate_settings(base)[0] == base  # base is valid, and the incremental path applies to what comes back
    valid = validate_settings(base)[0]
    assert valid.replace(**{name: raw}) == validate_settings(valid.set(**{name: raw}))


def test_an_incremental_check_leaves_the_fields_that_did_not_change():
    """What makes the incremental check cheaper: a row that is not among the changed paths is not checked (the caller
    vouches that it was valid), and a change of the preset checks every field."""
    broken = DEFAULT.set(d_k=10**9, seed=3)
    assert validate_settings(broken, ["seed"])[0].d_k == 10**9
    assert validate_settings(broken, ["seed", "d_k"])[0].d_k == MAX_DIM
    assert validate_settings(broken, ["preset"])[0].d_k == MAX_DIM
