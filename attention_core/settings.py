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

from .formulas import STAGES
from .presets import DEFAULT_PRESET, PRESETS

#: Limits the pages enforce. MAX_TOKENS is the page's cap on sentence length
#: (a T x T heatmap with numbers stays readable on a projector up to about 12).
MAX_TOKENS = 12
MIN_DIM, MAX_DIM = 1, 16
MAX_SEED = 2**31 - 1
#: Largest |value| accepted in an edited matrix. At 1e6 the scores reach ~1e12
#: and the softmax is one-hot, but every number stays finite in float32.
MAX_ABS_VALUE = 1e6

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

    @classmethod
    def for_preset(cls, key: str, **overrides: Any) -> "Settings":
        """The defaults of preset ``key`` (then validated)."""
        p = PRESETS.get(key, PRESETS[DEFAULT_PRESET])
        base = cls(preset=p.key, sentence=p.sentence, d_model=p.d_model, d_k=p.d_k, seed=p.seed)
        return validate_settings(dataclasses.replace(base, **overrides))[0]

    def replace(self, **changes: Any) -> tuple["Settings", list[str]]:
        """A validated copy with ``changes``; returns (settings, messages)."""
        return validate_settings(dataclasses.replace(self, **changes))


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
        messages.append(f"Unknown example “{preset_key}”; showing “{PRESETS[DEFAULT_PRESET].title}”.")
        preset_key = DEFAULT_PRESET
    fixed["preset"] = preset_key
    preset = PRESETS[preset_key]
    # Fallbacks for malformed values: the preset's own defaults.
    default = Settings(preset=preset.key, sentence=preset.sentence, d_model=preset.d_model, d_k=preset.d_k,
                       seed=preset.seed)

    if not isinstance(settings.sentence, str):
        messages.append("The sentence must be text; restored the example's sentence.")
        fixed["sentence"] = preset.sentence

    def clamp(name: str, low: int, high: int, label: str) -> None:
        raw = getattr(settings, name)
        value = _as_int(raw)
        if value is None:
            messages.append(f"{label} must be a whole number; got “{raw}”, using {getattr(default, name)}.")
            fixed[name] = getattr(default, name)
        elif not low <= value <= high:
            clamped = min(max(value, low), high)
            messages.append(f"{label} must be between {low} and {high}; got {value}, using {clamped}.")
            fixed[name] = clamped
        else:
            fixed[name] = value

    clamp("d_model", MIN_DIM, MAX_DIM, "d_model")
    clamp("d_k", MIN_DIM, MAX_DIM, "d_k")
    clamp("seed", 0, MAX_SEED, "The seed")
    clamp("query_index", 0, MAX_TOKENS - 1, "The query token")
    clamp("entry_row", 0, MAX_TOKENS - 1, "The entry's row")
    clamp("entry_col", 0, max(MAX_TOKENS, MAX_DIM) - 1, "The entry's column")

    if preset.fixed_embeddings:
        width = len(next(iter(preset.table.values())))
        if fixed["d_model"] != width:
            messages.append(
                f"This example's embeddings are the article's fixed {width}-d vectors, so d_model is {width}. "
                "Pick “Your own sentence” to choose d_model."
            )
            fixed["d_model"] = width

    if settings.stage not in STAGES:
        messages.append(f"Unknown step “{settings.stage}”; showing “{STAGES[default.stage]}”.")
        fixed["stage"] = default.stage

    return dataclasses.replace(settings, **fixed), messages
