"""The attention mask the causal, dropout and multi-head pages share, built from the settings and the user's clicks
(:class:`MaskParts`: the causal mask, the padding, the clicked cells, and why each cell is allowed or blocked), and
the checks those pages share (the context length, rows with every key blocked).

Shape legend: T tokens. Masks are bool (T, T) with True = may attend (``F.scaled_dot_product_attention``'s
convention); the additive mask M is float32, 0 where allowed and −∞ where blocked.
Sources: seed 001 (001_9275b51964da46b3.txt) for CausalAttention's mask; seed 004 for the padding and the clicks'
effect on the weights; Vaswani et al. 2017, sec. 3.2.3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional

import torch

from attention_core.errors import N_, InputError, Message
from attention_core.inputs.text import MAX_TOKENS
from attention_core.masks import (
    additive_mask,
    causal_mask,
    combine_masks,
    key_padding_mask,
)
from attention_core.shared_settings import SharedSettings

#: The name under which the user's mask edits are stored: {(i, j): 1.0 allowed / 0.0 blocked}.
MASK_EDITS = "mask"


# ---------------------------------------------------------------- shared pieces


@dataclass(frozen=True)
class MaskParts:
    """The attention mask of the causal, dropout and multi-head pages, and where each block comes from.

    Attributes:
        causal: bool (T, T), the causal mask (all True when it is switched off).
        real_keys: bool (T,), False for the trailing padding tokens.
        edited: {(i, j): allowed} the user's clicked cells inside T × T that differ from
            what the causal and padding masks say.
        attn_mask: bool (T, T), causal ∧ padding, then the user's cells; True = may attend.
        additive: (T, T) float32, 0 where allowed and -inf where blocked (M).
        padding: how many trailing tokens are padding (at most T).
    """

    causal: torch.Tensor
    real_keys: torch.Tensor
    edited: Mapping[tuple[int, int], bool]
    attn_mask: torch.Tensor
    additive: torch.Tensor
    padding: int

    def reasons(self, row: int, col: int) -> tuple[str, ...]:
        """Why entry (row, col) is allowed or blocked, as short phrases (:class:`Message`, no user text)."""
        out = []
        key, query = col + 1, row + 1
        if (row, col) in self.edited:
            out.append(Message(N_("you set this cell")))
        elif not bool(self.causal[row, col]):
            out.append(Message(N_("key {key} is in the future of query {query}"), key=key, query=query))
        if not bool(self.real_keys[col]) and (row, col) not in self.edited:
            out.append(Message(N_("key {key} is padding"), key=key))
        if not out:
            out.append(Message(N_("key {key} is at or before query {query}"), key=key, query=query) if col <= row
                       else Message(N_("no mask blocks it")))
        return tuple(out)


_TOO_LONG = {
    "sentence": N_("The sentence has {num_tokens} tokens but the context length is {context_length}: the "
                   "module's mask buffer is only {context_length} × {context_length}. Raise the context length "
                   "(at most {max_tokens}) or shorten the sentence."),
    "decoder": N_("The decoder sentence has {num_tokens} tokens but the context length is {context_length}: the "
                  "module's mask buffer is only {context_length} × {context_length}. Raise the context length "
                  "(at most {max_tokens}) or shorten the sentence."),
    "encoder": N_("The encoder sentence has {num_tokens} tokens but the context length is {context_length}: the "
                  "module's mask buffer is only {context_length} × {context_length}. Raise the context length "
                  "(at most {max_tokens}) or shorten the sentence."),
}


def check_context_length(num_tokens: int, context_length: int, what: str) -> None:
    """``what``: "sentence", "decoder" or "encoder" (which sentence is too long)."""
    if num_tokens > context_length:
        raise InputError(_TOO_LONG[what], field="context_length", num_tokens=num_tokens,
                         context_length=context_length, max_tokens=MAX_TOKENS)


def build_mask(num_tokens: int, settings: SharedSettings, cells: Mapping[tuple[int, int], Optional[float]]) -> MaskParts:
    """The mask from the settings (causal switch, padding) and the user's clicked cells.

    Args:
        num_tokens: T.
        settings: uses ``causal`` and ``padding``.
        cells: {(i, j): 1.0 (allow) or 0.0 (block)}; cells outside T × T are kept but not applied.

    Returns:
        The :class:`MaskParts`.
    """
    t = num_tokens
    causal = causal_mask(t) if settings.causal_mask else torch.ones(t, t, dtype=torch.bool)  # (T, T)
    padding = min(settings.padding, t)
    real_keys = key_padding_mask([t - padding], t)[0, 0]  # (1, 1, T) -> (T,)
    attn_mask = combine_masks(causal, real_keys).clone()  # (T, T) & (T,) -> (T, T)
    edited = {}
    for (i, j), value in sorted(cells.items()):
        if 0 <= i < t and 0 <= j < t and value is not None and not (isinstance(value, float) and math.isnan(value)):
            if bool(value) != bool(attn_mask[i, j]):  # a cell clicked twice is back to what the masks say
                edited[(i, j)] = bool(value)
            attn_mask[i, j] = bool(value)
    return MaskParts(causal=causal, real_keys=real_keys, edited=edited, attn_mask=attn_mask,
                     additive=additive_mask(attn_mask), padding=padding)


def blocked_row_notes(blocked: torch.Tensor, tokens: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[str, ...]]:
    rows = tuple(int(i) for i in blocked.nonzero().flatten().tolist())
    notes = tuple(
        Message(N_("Row {row} (query “{token}”) has every key blocked. The softmax over no keys would be 0 / 0 "
                   "(NaN), so its weights are set to 0 and its context vector is all zeros — PyTorch's "
                   "scaled_dot_product_attention does the same. Allow at least one key in row {row} "
                   "(click a grey cell of the mask, lower the padding, or reset the mask)."),
                row=i + 1, token=tokens[i])
        for i in rows
    )
    return rows, notes
