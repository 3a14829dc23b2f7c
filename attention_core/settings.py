"""The one settings object every page shares, and its validation.

Every value a user can choose lives in :class:`Settings`; the matrices the
user edits live beside it as :data:`Edits` (cell overrides on the seeded
matrices). :func:`validate_settings` is the one place settings are checked;
the checks that need the tokens (sentence) are in ``walkthrough.py``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from . import additive, image, positional, scaling, stages, temperature
from .errors import N_, Message
from .presets import DEFAULT_PRESET, PRESETS, Preset
from .pretrained import MAX_PADDING as MODEL_MAX_PADDING
from .pretrained import MAX_TOKENS as MODEL_MAX_TOKENS

#: Limits the pages enforce. MAX_TOKENS is the page's cap on sentence length
#: (a T x T heatmap with numbers stays readable on a projector up to about 12).
MAX_TOKENS = 12
MIN_DIM, MAX_DIM = 1, 16
MAX_SEED = 2**31 - 1
#: Largest |value| accepted in an edited matrix. At 1e6 the scores reach ~1e12
#: and the softmax is one-hot, but every number stays finite in float32.
MAX_ABS_VALUE = 1e6

#: Dropout probabilities accepted: [0, MAX_DROPOUT]. p = 1 would drop every weight
#: (and divide by 1 - p = 0), so the nearest allowed value below 1 is used instead.
MAX_DROPOUT = 0.99

#: The trained model's page (all-MiniLM-L6-v2): its layers, heads and width, and the default
#: sentence. Its text is cut at MODEL_MAX_TOKENS WordPieces, then up to MODEL_MAX_PADDING [PAD]s.
MODEL_LAYERS, MODEL_HEADS, MODEL_WIDTH = 6, 12, 384
MODEL_SENTENCE = "The cat sat on the mat because it was tired."

#: The settings a preset sets when it is chosen (see ``Settings.for_preset``).
PRESET_FIELDS = ("preset", "sentence", "d_model", "d_k", "seed", "encoder_sentence", "d_out", "num_heads")

#: Interface languages: code -> name shown in the picker.
LANGUAGES = {"en": "English", "zh": "简体中文"}

#: The matrices a user can edit, by name -> label.
EDITABLE = {"x": "X", "w_query": "W_q", "w_key": "W_k", "w_value": "W_v"}

#: User edits: matrix name -> {(row, col): value}; None or NaN = an emptied cell.
#: Kept per preset (see ``ui.state``) so switching presets loses nothing.
Edits = Mapping[str, Mapping[tuple[int, int], Optional[float]]]


@dataclass(frozen=True)
class Settings:
    """Everything a user has chosen, shared by all pages.

    Attributes:
        preset: a key of ``PRESETS``.
        sentence: the text as typed (never altered by validation).
        d_model: D, the embedding width (fixed by presets with fixed embeddings).
        d_k: the width of queries, keys and values (d_v = d_k here).
        seed: the seed of the random embeddings and weights.
        query_index: the token whose context vector the weightless page explains (0-based).
        stage: the self-attention walk-through's current stage (a key of ``STAGES``).
        entry_row, entry_col: the entry explained on the walk-through (0-based).

    The masking & heads pages (causal, dropout, multi-head, cross-attention) add:

    Attributes:
        context_length: the most tokens the modules accept (the size of their
            causal-mask buffer); longer sentences get a message.
        causal: whether the causal mask (query i sees keys j <= i) is on.
        padding: how many trailing tokens of the sentence are padding (their
            keys are blocked by the key-padding mask).
        dropout_p: the probability of zeroing an attention weight, in [0, MAX_DROPOUT].
        training: True = training mode (dropout active), False = eval mode.
        dropout_seed: the seed of the local generator that draws the dropout mask.
        d_out: the width of Q, K, V on the multi-head pages (num_heads · head_dim).
        num_heads: h, the number of heads; must divide d_out (checked on the page,
            where the message can say which head counts fit).
        head: the head whose entry is explained (0-based).
        encoder_sentence: the cross-attention page's encoder sentence (keys and
            values); ``sentence`` is the decoder's (queries). Never altered.
        causal_stage, dropout_stage, mha_stage, cross_stage: each page's current
            step (keys of ``formulas_masking``'s stage dicts).

    The trained model's page ("Inside a trained model") adds, all 0-based:

    Attributes:
        model_sentence: the text the model reads (any Unicode; never altered here,
            checked and cut by ``pretrained.tokenize``).
        model_padding: how many [PAD] tokens to append, 0..MODEL_MAX_PADDING (shows the mask).
        model_layer, model_head: the head that is opened, < MODEL_LAYERS and < MODEL_HEADS.
        model_stage: its step-through's current step (a key of ``HEAD_STAGES``).
        model_entry_row, model_entry_col: the explained entry (the page clamps them to
            the stage's matrix, which is up to 136 × 384).

    The experiment pages (why √d_k, temperature, positional encoding, additive scoring,
    self-attention over an image) add:

    Attributes:
        experiment_seed: the seed of every random draw on the experiment pages (samples,
            the learned encoding, the random shuffle, the additive scorer's and the image's W).
        sqrt_samples: S, the (q, k) pairs sampled per d_k (``scaling.MIN_SAMPLES``..``MAX_SAMPLES``).
        sqrt_keys: n, the keys each sampled query meets in the softmax experiment.
        sqrt_distribution: the components' distribution (a key of ``scaling.DISTRIBUTIONS``).
        temperature: τ in softmax(Q Kᵀ / (τ √d_k)), one of ``temperature.TEMPERATURE_GRID``
            (other values are moved to the nearest, with a message).
        temperature_row: the query row whose numbers are written out (0-based).
        pe_kind: the positional encoding added (a key of ``positional.ENCODINGS``).
        pe_shuffle: how the tokens are shuffled (a key of ``positional.SHUFFLES``).
        pe_positions, pe_width: the size of the encoding's pattern heatmap.
        additive_hidden: h, the additive scorer's hidden size.
        additive_row, additive_col: the (query, key) score explained (0-based; the page
            clamps them to the sentence).
        image_source: a key of ``image.PATTERNS``, or "upload" for the uploaded image
            (kept by the page as a small array; the page falls back when there is none).
        image_row, image_col: the query pixel (0-based; the page clamps them to the image).
        image_features: the pixels' token features (a key of ``image.FEATURES``).
        image_d_k: the width of the projected queries and keys.
        language: the interface language, a key of :data:`LANGUAGES`.
        presenter: presenter mode (larger type, no sidebar, big Previous / Next).
    """

    preset: str = DEFAULT_PRESET
    sentence: str = PRESETS[DEFAULT_PRESET].sentence
    d_model: int = PRESETS[DEFAULT_PRESET].d_model
    d_k: int = PRESETS[DEFAULT_PRESET].d_k
    seed: int = PRESETS[DEFAULT_PRESET].seed
    query_index: int = 1
    stage: str = "scores"
    entry_row: int = 0
    entry_col: int = 0
    context_length: int = MAX_TOKENS
    causal: bool = True
    padding: int = 0
    dropout_p: float = 0.5
    training: bool = True
    dropout_seed: int = 123
    d_out: int = PRESETS[DEFAULT_PRESET].d_out
    num_heads: int = PRESETS[DEFAULT_PRESET].num_heads
    head: int = 0
    encoder_sentence: str = PRESETS[DEFAULT_PRESET].encoder_sentence
    causal_stage: str = "masked_scores"
    dropout_stage: str = "dropout_mask"
    mha_stage: str = "split"
    cross_stage: str = "weights"
    model_sentence: str = MODEL_SENTENCE
    model_padding: int = 0
    model_layer: int = 0
    model_head: int = 0
    model_stage: str = "weights"
    model_entry_row: int = 8
    model_entry_col: int = 2
    experiment_seed: int = 0
    sqrt_samples: int = 2000
    sqrt_keys: int = 16
    sqrt_distribution: str = "normal"
    temperature: float = 1.0
    temperature_row: int = 0
    pe_kind: str = "sinusoidal"
    pe_shuffle: str = "reverse"
    pe_positions: int = 48
    pe_width: int = 64
    additive_hidden: int = 4
    additive_row: int = 0
    additive_col: int = 1
    image_source: str = "smiley"
    image_row: int = 4
    image_col: int = 4
    image_features: str = "rgb"
    image_d_k: int = 3
    # classroom: the interface language and presenter mode (issue 5)
    language: str = "en"
    presenter: bool = False

    @classmethod
    def for_preset(cls, key: str, **overrides: Any) -> "Settings":
        """The defaults of preset ``key`` (then validated)."""
        p = PRESETS.get(key, PRESETS[DEFAULT_PRESET])
        base = cls(**_preset_values(p))
        return validate_settings(dataclasses.replace(base, **overrides))[0]

    def replace(self, **changes: Any) -> tuple["Settings", list[str]]:
        """A validated copy with ``changes``; returns (settings, messages)."""
        return validate_settings(dataclasses.replace(self, **changes))


def _preset_values(preset: Preset) -> dict[str, Any]:
    """The values of :data:`PRESET_FIELDS` that ``preset`` sets."""
    return {field: preset.key if field == "preset" else getattr(preset, field) for field in PRESET_FIELDS}


def _as_float(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    try:  # numpy numbers
        return float(value)
    except (TypeError, ValueError):
        return None


def _as_int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _label(text: str) -> Message:
    """A translatable label inside another message (the UI translates both)."""
    return Message(text)


def validate_settings(settings: Settings) -> tuple[Settings, list[str]]:
    """Check and repair every field; the one place settings are validated.

    Out-of-range or malformed values are replaced by the nearest allowed value
    (or the default) and reported; ``sentence`` is never altered here.

    Returns:
        (valid settings, messages for the user; empty when nothing was changed).
    """
    messages: list[str] = []
    fixed: dict[str, Any] = {}

    preset_key = settings.preset
    if preset_key not in PRESETS:
        messages.append(Message(N_("Unknown example “{key}”; showing “{title}”."), key=preset_key,
                                title=Message(PRESETS[DEFAULT_PRESET].title)))
        preset_key = DEFAULT_PRESET
    fixed["preset"] = preset_key
    preset = PRESETS[preset_key]
    # Fallbacks for malformed values: the preset's own defaults.
    default = Settings(**_preset_values(preset))

    if not isinstance(settings.sentence, str):
        messages.append(Message(N_("The sentence must be text; restored the example's sentence.")))
        fixed["sentence"] = preset.sentence
    if not isinstance(settings.encoder_sentence, str):
        messages.append(Message(N_("The encoder sentence must be text; restored the example's encoder sentence.")))
        fixed["encoder_sentence"] = preset.encoder_sentence

    def clamp(name: str, low: int, high: int, label: str) -> None:
        raw = getattr(settings, name)
        value = _as_int(raw)
        if value is None:
            messages.append(Message(N_("{label} must be a whole number; got “{raw}”, using {value}."), label=label,
                                    raw=raw, value=getattr(default, name)))
            fixed[name] = getattr(default, name)
        elif not low <= value <= high:
            clamped = min(max(value, low), high)
            messages.append(Message(N_("{label} must be between {low} and {high}; got {value}, using {clamped}."),
                                    label=label, low=low, high=high, value=value, clamped=clamped))
            fixed[name] = clamped
        else:
            fixed[name] = value

    clamp("d_model", MIN_DIM, MAX_DIM, "d_model")
    clamp("d_k", MIN_DIM, MAX_DIM, "d_k")
    clamp("seed", 0, MAX_SEED, _label(N_("The seed")))
    clamp("query_index", 0, MAX_TOKENS - 1, _label(N_("The query token")))
    clamp("entry_row", 0, MAX_TOKENS - 1, _label(N_("The entry's row")))
    clamp("entry_col", 0, max(MAX_TOKENS, MAX_DIM) - 1, _label(N_("The entry's column")))
    clamp("context_length", 1, MAX_TOKENS, _label(N_("The context length")))
    clamp("padding", 0, MAX_TOKENS, _label(N_("The number of padding tokens")))
    clamp("dropout_seed", 0, MAX_SEED, _label(N_("The dropout seed")))
    clamp("d_out", MIN_DIM, MAX_DIM, "d_out")
    clamp("num_heads", 1, MAX_DIM, _label(N_("The number of heads")))
    clamp("head", 0, MAX_DIM - 1, _label(N_("The head")))

    if not isinstance(settings.model_sentence, str):
        messages.append(Message(N_("The model's text must be text; restored the example sentence.")))
        fixed["model_sentence"] = MODEL_SENTENCE
    clamp("model_padding", 0, MODEL_MAX_PADDING, _label(N_("The number of [PAD] tokens")))
    for name, count, template in (
        ("model_layer", MODEL_LAYERS, N_("The model has layers 1 to {count}; got layer {shown}, using layer 1.")),
        ("model_head", MODEL_HEADS, N_("The model has heads 1 to {count}; got head {shown}, using head 1.")),
    ):
        value = _as_int(getattr(settings, name))
        if value is None or not 0 <= value < count:
            shown = getattr(settings, name) + 1 if value is not None else f"“{getattr(settings, name)}”"
            messages.append(Message(template, count=count, shown=shown))
            fixed[name] = 0
        else:
            fixed[name] = value
    clamp("model_entry_row", 0, MODEL_MAX_TOKENS + MODEL_MAX_PADDING - 1, _label(N_("The entry's row")))
    clamp("model_entry_col", 0, max(MODEL_MAX_TOKENS + MODEL_MAX_PADDING, MODEL_WIDTH) - 1, _label(N_("The entry's column")))

    _validate_experiments(settings, default, clamp, messages, fixed)

    for name, label in (("causal", _label(N_("The causal switch"))), ("training", _label(N_("The training switch")))):
        raw = getattr(settings, name)
        if isinstance(raw, bool):
            continue
        if isinstance(raw, (int, float)) and raw in (0, 1):
            fixed[name] = bool(raw)
        else:
            template = (N_("{label} must be on or off; got “{raw}”, using on.") if getattr(default, name)
                        else N_("{label} must be on or off; got “{raw}”, using off."))
            messages.append(Message(template, label=label, raw=raw))
            fixed[name] = getattr(default, name)

    p = _as_float(settings.dropout_p)
    if p is None or math.isnan(p):
        messages.append(Message(N_("dropout_p must be a number in [0, 1); got “{raw}”, using {value}."),
                                raw=settings.dropout_p, value=default.dropout_p))
        fixed["dropout_p"] = default.dropout_p
    elif not 0.0 <= p <= MAX_DROPOUT:
        clamped = min(max(p, 0.0), MAX_DROPOUT)
        template = (N_("dropout_p must be in [0, 1) (p = 1 would drop every weight); got {p:g}, using {clamped:g}.")
                    if p >= 1 else N_("dropout_p must be in [0, 1); got {p:g}, using {clamped:g}."))
        messages.append(Message(template, p=p, clamped=clamped))
        fixed["dropout_p"] = clamped
    else:
        fixed["dropout_p"] = p

    if preset.fixed_embeddings:
        width = len(next(iter(preset.table.values())))
        if fixed["d_model"] != width:
            messages.append(Message(
                N_("This example's embeddings are the article's fixed {width}-d vectors, so d_model is {width}. "
                   "Pick “Your own sentence” to choose d_model."),
                width=width,
            ))
            fixed["d_model"] = width

    if settings.language not in LANGUAGES:
        messages.append(Message(N_("Unknown language “{language}”; using English."), language=settings.language))
        fixed["language"] = "en"
    if not isinstance(settings.presenter, bool):
        fixed["presenter"] = bool(settings.presenter) if isinstance(settings.presenter, int) else False

    for name, page_stages in stages.PAGES.values():
        if getattr(settings, name) not in page_stages:
            messages.append(Message(N_("Unknown step “{step}”; showing “{title}”."), step=getattr(settings, name),
                                    title=Message(page_stages[getattr(default, name)])))
            fixed[name] = getattr(default, name)

    return dataclasses.replace(settings, **fixed), messages


#: The experiment pages' choice fields: name -> (allowed keys, what the field is called).
_EXPERIMENT_CHOICES = {
    "sqrt_distribution": (tuple(scaling.DISTRIBUTIONS), N_("Unknown distribution “{raw}”; using “{value}”.")),
    "pe_kind": (tuple(positional.ENCODINGS), N_("Unknown positional encoding “{raw}”; using “{value}”.")),
    "pe_shuffle": (tuple(positional.SHUFFLES), N_("Unknown shuffle “{raw}”; using “{value}”.")),
    "image_source": (tuple(image.PATTERNS) + ("upload",), N_("Unknown image “{raw}”; using “{value}”.")),
    "image_features": (tuple(image.FEATURES), N_("Unknown kind of pixel token “{raw}”; using “{value}”.")),
}


def _validate_experiments(settings: Settings, default: Settings, clamp, messages: list[str],
                          fixed: dict[str, Any]) -> None:
    """The experiment pages' fields (part of :func:`validate_settings`)."""
    clamp("experiment_seed", 0, MAX_SEED, _label(N_("The seed")))
    clamp("sqrt_samples", scaling.MIN_SAMPLES, scaling.MAX_SAMPLES, _label(N_("The number of samples")))
    clamp("sqrt_keys", scaling.MIN_KEYS, scaling.MAX_KEYS, _label(N_("The number of keys n")))
    clamp("temperature_row", 0, MAX_TOKENS - 1, _label(N_("The query row")))
    clamp("pe_positions", positional.MIN_POSITIONS, positional.MAX_POSITIONS, _label(N_("The number of positions")))
    clamp("pe_width", positional.MIN_WIDTH, positional.MAX_WIDTH, _label(N_("d_model of the pattern")))
    clamp("additive_hidden", additive.MIN_HIDDEN, additive.MAX_HIDDEN, _label(N_("The hidden size h")))
    clamp("additive_row", 0, MAX_TOKENS - 1, _label(N_("The query token")))
    clamp("additive_col", 0, MAX_TOKENS - 1, _label(N_("The key token")))
    clamp("image_row", 0, image.MAX_SIDE - 1, _label(N_("The pixel's row")))
    clamp("image_col", 0, image.MAX_SIDE - 1, _label(N_("The pixel's column")))
    clamp("image_d_k", MIN_DIM, MAX_DIM, "d_k")

    for name, (allowed, template) in _EXPERIMENT_CHOICES.items():
        raw = getattr(settings, name)
        if raw not in allowed:
            messages.append(Message(template, raw=raw, value=getattr(default, name)))
            fixed[name] = getattr(default, name)

    tau = _as_float(settings.temperature)
    if tau is None or not math.isfinite(tau):
        messages.append(Message(N_("τ must be a number; got “{raw}”, using {value:g}."), raw=settings.temperature,
                                value=default.temperature))
        fixed["temperature"] = default.temperature
        return
    low, high = temperature.MIN_TEMPERATURE, temperature.MAX_TEMPERATURE
    if not low <= tau <= high:
        clamped = min(max(tau, low), high)
        messages.append(Message(N_("τ must be between {low:g} and {high:g}; got {tau:g}, using {clamped:g}."),
                                low=low, high=high, tau=tau, clamped=clamped))
        tau = clamped
    snapped = temperature.nearest_temperature(tau)
    if not math.isclose(snapped, tau, rel_tol=1e-9):
        messages.append(Message(N_("τ = {tau:g} is not one of the slider's values; using the nearest, {snapped:g}."),
                                tau=tau, snapped=snapped))
    fixed["temperature"] = snapped
