"""The input stage every walk-through starts from: sentence → tokens → X (with the user's edits), and the
seeded W_q, W_k, W_v beside it.

One function a step (:func:`check_tokens`, :func:`base_matrices`, :func:`apply_edits`) and :func:`build_inputs`
for the whole stage. No build calls another page's build: a page needing X takes :attr:`Inputs.x` from here, not
the self-attention page's walk-through (its trace and its checks against PyTorch are that page's own).

Shape legend: T tokens, D = d_model, V vocabulary rows. Everything float32.
Sources: seed 000 (000_9be6d646ed7e85e8.txt) for the vocabulary, the embedding table and W_q, W_k, W_v drawn
after ``torch.manual_seed``; seed 004 (004_56c592a3d25bc184.txt) for its fixed 3-d embeddings; seed 001
(001_9275b51964da46b3.txt) for ``nn.Linear``'s U(−1/√D, 1/√D).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Mapping, Optional, Protocol

import torch

from attention_core.errors import N_, InputError
from attention_core.inputs.edits import EDITABLE, MAX_ABS_VALUE, Edits
from attention_core.inputs.presets import PRESETS, Preset
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import Vocabulary, seed000_tables, tokenize

#: The matrices of the input stage, in the order they are drawn.
INPUT_MATRICES = ("x", "w_query", "w_key", "w_value")


@dataclass(frozen=True)
class Inputs:
    """The input stage for one settings + edits.

    Attributes:
        preset: the settings' worked example.
        tokens: the tokens as words of the vocabulary, length T.
        token_ids: their ids, length T.
        vocabulary: word -> id.
        base: the seeded, unedited matrices by name: "x" (T, D), "w_query", "w_key", "w_value" (D, d_k).
        matrices: the same names with the user's edits applied (the seeded tensor itself where nothing is edited).
    """

    preset: Preset
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    vocabulary: Vocabulary
    base: Mapping[str, torch.Tensor]
    matrices: Mapping[str, torch.Tensor]

    @property
    def x(self) -> torch.Tensor:
        """X with the user's edits, (T, D) float32."""
        return self.matrices["x"]

    @property
    def projections(self) -> dict[str, torch.Tensor]:
        """W_q, W_k, W_v with the user's edits, (D, d_k) float32 each, by name ("w_query", "w_key", "w_value"): the
        self-attention page's weights, which every single-head page that continues its numbers projects X with (the
        causal, dropout, ALiBi, sliding-window, FlashAttention, linear-attention and sinks pages), so the same
        settings give the same Q, K, V and scores on each of them."""
        return {name: self.matrices[name] for name in INPUT_MATRICES[1:]}


class InputSettings(Protocol):
    """What the input stage reads of the settings: five of the shared fields
    (:class:`attention_core.shared_settings.SharedSettings`, which any settings object a page is given has). A
    protocol, so that the input stage, below the shared settings' presets, names no settings class."""

    preset: str
    sentence: str
    d_model: int
    d_k: int
    seed: int


def check_tokens(settings: InputSettings) -> tuple[tuple[str, ...], tuple[int, ...], Vocabulary]:
    """Tokenise the sentence and check it against the preset's vocabulary and the page's cap.

    Returns:
        (words, ids, vocabulary).

    Raises:
        InputError: empty sentence, a single token, more than MAX_TOKENS tokens,
            or words outside a fixed vocabulary (all named).
    """
    preset = PRESETS[settings.preset]
    raw = tokenize(settings.sentence)
    if not raw:
        raise InputError(N_("The sentence is empty: type a few words, separated by spaces."), field="sentence")
    if len(raw) == 1:
        raise InputError(
            N_("The sentence has one token (“{token}”). Attention relates tokens to each other: "
               "type at least two words."),
            field="sentence", token=raw[0],
        )
    if len(raw) > MAX_TOKENS:
        raise InputError(
            N_("The sentence has {n} tokens; this page shows at most {cap} "
               "(a {cap} × {cap} grid of numbers is the most that stays readable). "
               "Shorten the sentence."),
            field="sentence", n=len(raw), cap=MAX_TOKENS,
        )
    vocabulary = preset.fixed_vocabulary or Vocabulary.from_tokens(raw)
    words, ids = vocabulary.encode(raw)
    return words, ids, vocabulary


def base_matrices(settings: InputSettings, token_ids: tuple[int, ...], vocabulary: Vocabulary) -> dict[str, torch.Tensor]:
    """The seeded, unedited X (T, D) and W_q, W_k, W_v (D, d_k), float32.

    Follows the preset's recipe (see ``presets.WeightInit``); every random draw
    comes from a local ``torch.Generator`` seeded with ``settings.seed``.
    """
    preset = PRESETS[settings.preset]
    d_model, d_k, seed = settings.d_model, settings.d_k, settings.seed
    ids = torch.tensor(token_ids)
    if preset.table is not None:
        table = torch.tensor(list(preset.table.values()), dtype=torch.float32)  # (V, D)
    else:
        table, w_q, w_k, w_v = seed000_tables(seed, vocabulary.num_rows, d_model, d_k)
    x = table[ids]  # (T, D)

    if preset.weight_init == "randn" and preset.table is None:
        weights = (w_q, w_k, w_v)
    elif preset.weight_init == "rand":
        g = torch.Generator().manual_seed(seed)
        weights = tuple(torch.rand(d_model, d_k, generator=g) for _ in range(3))
    elif preset.weight_init == "linear":
        # nn.Linear(D, d_k) draws its (d_k, D) weight from U(-1/√D, 1/√D); W = weight.T.
        g = torch.Generator().manual_seed(seed)
        bound = 1.0 / math.sqrt(d_model)
        weights = tuple(torch.empty(d_k, d_model).uniform_(-bound, bound, generator=g).T for _ in range(3))
    else:  # identity
        weights = tuple(torch.eye(d_model, d_k) for _ in range(3))
    return {"x": x, "w_query": weights[0], "w_key": weights[1], "w_value": weights[2]}


def apply_edits(name: str, base: torch.Tensor, cells: Mapping[tuple[int, int], Optional[float]]) -> torch.Tensor:
    """``base`` with the user's cell edits; edits outside its shape are kept but not applied.

    Raises:
        InputError: for an emptied, non-numeric, non-finite or too large cell,
            naming the matrix and the cell (1-based). The edits the app keeps never have one (each cell is
            checked where it comes in, ``attention_core.inputs.edits.read_cell``); a caller's own edits may.
    """
    if not cells:
        return base
    out = base.clone()
    rows, cols = base.shape
    label = EDITABLE.get(name, name)
    for (i, j), value in sorted(cells.items()):
        if not (0 <= i < rows and 0 <= j < cols):
            continue
        if value is None or (isinstance(value, numbers.Real) and math.isnan(value)):
            raise InputError(N_("The cell {matrix} row {row}, column {col} is empty: type a number."), field=name,
                             matrix=label, row=i + 1, col=j + 1)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InputError(N_("The cell {matrix} row {row}, column {col} holds “{value}”, which is not a number."),
                             field=name, matrix=label, row=i + 1, col=j + 1, value=value)
        if not math.isfinite(value) or abs(value) > MAX_ABS_VALUE:
            raise InputError(
                N_("The cell {matrix} row {row}, column {col} is {value:g}; values must lie between −{limit:g} and "
                   "{limit:g}."),
                field=name, matrix=label, row=i + 1, col=j + 1, value=value, limit=MAX_ABS_VALUE,
            )
        out[i, j] = float(value)
    return out


def build_inputs(settings: InputSettings, edits: Optional[Edits] = None,
                 edited: tuple[str, ...] = INPUT_MATRICES) -> Inputs:
    """The whole input stage: tokens, the seeded matrices, and the user's edits applied to the ``edited`` ones.

    Args:
        settings: validated settings; reads sentence, preset, d_model, d_k and seed.
        edits: the user's cell edits by matrix name; names outside ``edited`` (and "target") are ignored.
        edited: the matrices whose edits apply. A page whose own weights are drawn elsewhere passes ``("x",)``:
            its W comes from :func:`attention_core.weights.module_weights`, so an edit of the self-attention
            page's W_q (even a bad one) is not this page's business.

    Returns:
        The :class:`Inputs`.

    Raises:
        InputError: for a bad sentence (see :func:`check_tokens`) or a bad edited cell (see :func:`apply_edits`).
    """
    edits = edits or {}
    words, ids, vocabulary = check_tokens(settings)
    base = base_matrices(settings, ids, vocabulary)
    matrices = {name: apply_edits(name, base[name], edits.get(name, {}) if name in edited else {}) for name in base}
    return Inputs(preset=PRESETS[settings.preset], tokens=words, token_ids=ids, vocabulary=vocabulary, base=base,
                  matrices=matrices)
