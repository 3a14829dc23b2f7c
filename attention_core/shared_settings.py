"""The settings every page shares: a leaf module, below every page.

:class:`SharedSettings` holds the fields the pages share (the sentence, d_k, the seed, the causal switch, the
classroom's). A page module types the settings its builder is given as ``SharedSettings``: the object is the composed
:class:`attention_core.settings.Settings` (this class plus one group per page, ``settings.alibi.num_heads``), which
is made at run time from the registry's pages (``dataclasses.make_dataclass``), so that no type checker sees more of
it than this base class anyway, and importing it would tie every page to the registry above it (a circle of imports:
settings -> registry -> page -> settings). What each field accepts, and the validation, are in
:mod:`attention_core.settings`.

Imports only leaves (``errors``, the presets, the text cut).
"""

from __future__ import annotations

from dataclasses import dataclass

from attention_core.errors import N_
from attention_core.inputs.presets import DEFAULT_PRESET, PRESETS
from attention_core.inputs.text import MAX_TOKENS

#: The widths a user can choose: d_model, d_k, d_out (and the image page's d_k).
MIN_DIM, MAX_DIM = 1, 16

#: Seeds are whole numbers in [0, MAX_SEED].
MAX_SEED = 2**31 - 1

MAX_HEAD_DIM = 4

__all__ = ["SharedSettings", "PRESET_FIELDS", "LANGUAGES", "PALETTES"]


#: The settings a preset sets when it is chosen (see ``Settings.for_preset``).
PRESET_FIELDS = ("preset", "sentence", "d_model", "d_k", "seed", "encoder_sentence", "d_out", "num_heads")

#: Interface languages: code -> name shown in the picker.
LANGUAGES = {"en": "English", "zh": "简体中文"}
#: The heatmaps' colours: key -> its name (translated by the UI). "cvd" is safe for colour-vision deficiency.
PALETTES = {"classic": N_("Red–blue"), "cvd": N_("Colour-blind safe")}

@dataclass(frozen=True)
class SharedSettings:
    """The settings shared by the pages: the base of :class:`attention_core.settings.Settings` (each page's own group
    is added to it there).

    A plain frozen record: constructing one checks nothing. :func:`attention_core.settings.validate_settings`
    (also behind ``Settings.for_preset`` and ``Settings.replace``) repairs every field to what its row of
    ``attention_core.settings.FIELDS`` allows; the ranges below are those rows'.

    Attributes:
        preset: a key of ``PRESETS``.
        sentence: the text as typed (never altered by validation).
        d_model: D, the embedding width, MIN_DIM..MAX_DIM (fixed by presets with fixed embeddings).
        d_k: the width of queries, keys and values (d_v = d_k here), MIN_DIM..MAX_DIM.
        seed: the seed of the random embeddings and weights, 0..MAX_SEED.
        entry_row, entry_col: the entry explained on the walk-through (0-based).
        context_length: the most tokens the modules accept (the size of their
            causal-mask buffer), 1..MAX_TOKENS; longer sentences get a message.
        causal_mask: whether the causal mask (query i sees keys j <= i) is on.
        padding: how many trailing tokens of the sentence are padding, 0..MAX_TOKENS (their
            keys are blocked by the key-padding mask).
        d_out: the width of Q, K, V on the multi-head pages (num_heads · head_dim), MIN_DIM..MAX_DIM.
        num_heads: h, the number of heads, 1..MAX_DIM; must divide d_out (checked on the page,
            where the message can say which head counts fit).
        head: the head whose entry is explained (0-based).
        encoder_sentence: the cross-attention page's encoder sentence (keys and
            values); ``sentence`` is the decoder's (queries). Never altered.
        experiment_seed: the seed of every random draw on the experiment pages (samples,
            the learned encoding, the random shuffle, the additive scorer's and the image's W).

    The classroom:

    Attributes:
        language: the interface language, a key of :data:`LANGUAGES`.
        presenter: presenter mode (larger type, no sidebar, big Previous / Next).
        practice: practice mode on the step pages: the explained entry is asked before it is shown.
        palette: the heatmaps' colours, a key of :data:`PALETTES` ("cvd": blue–orange for signed numbers,
            viridis for numbers >= 0).
        tables: show every chart's numbers as a table under it too (screen readers, copying).
        locked: the settings a teacher's link fixes, comma-separated field names ("d_k,seed"); their widgets
            are disabled. A classroom convenience, not access control.
    """

    preset: str = DEFAULT_PRESET
    sentence: str = PRESETS[DEFAULT_PRESET].sentence
    d_model: int = PRESETS[DEFAULT_PRESET].d_model
    d_k: int = PRESETS[DEFAULT_PRESET].d_k
    seed: int = PRESETS[DEFAULT_PRESET].seed
    entry_row: int = 0
    entry_col: int = 0
    context_length: int = MAX_TOKENS
    causal_mask: bool = True
    padding: int = 0
    d_out: int = PRESETS[DEFAULT_PRESET].d_out
    num_heads: int = PRESETS[DEFAULT_PRESET].num_heads
    head: int = 0
    encoder_sentence: str = PRESETS[DEFAULT_PRESET].encoder_sentence
    experiment_seed: int = 0
    # classroom: the interface language and presenter mode (issue 5)
    language: str = "en"
    presenter: bool = False
    practice: bool = False
    palette: str = "classic"
    tables: bool = False
    locked: str = ""
