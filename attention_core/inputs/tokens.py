"""Tokens, vocabularies and embedding tables.

Shape legend: V vocabulary rows, T tokens in the sentence, D = d_model.

Sources:
    seed 000 (000_9be6d646ed7e85e8.txt): the 23-word dictionary with ids 1..23,
        whitespace tokenisation, ``torch.manual_seed(12)`` then
        ``nn.Embedding(23, 4)`` and ``torch.randn(4, 3)`` for W_q, W_k, W_v.
    seed 004 (004_56c592a3d25bc184.txt): fixed 3-d embeddings per word.

Seed 000 sizes its table 23 for ids 1..23, so its last word ("Innovation",
id 23) would index out of range. We keep the seed's 23 rows exactly (so its
numbers come out) and add one more row for id 23, drawn after the weights
from the same generator (see :func:`seed000_tables`).

All random draws here use a local ``torch.Generator``: the global torch RNG
is shared by every user of a server, so it is never touched. Tests check that
the results equal the seed's own ``torch.manual_seed`` code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import torch

from attention_core.errors import N_, InputError, quote_list
from attention_core.inputs.text import tokenize  # noqa: F401  (the input stage reads it from here)

#: Seed 000's dictionary: word -> id, ids 1..23 (id 0 is unused).
SEED000_DICTIONARY: Mapping[str, int] = {
    "I": 1, "Like": 2, "AI": 3, "And": 4, "Machine": 5, "Learning": 6,
    "Data": 7, "Model": 8, "Code": 9, "Algorithms": 10, "Python": 11,
    "Research": 12, "Robots": 13, "Deep": 14, "Networks": 15, "Compute": 16,
    "Vision": 17, "Tools": 18, "Projects": 19, "Neural": 20, "Knowledge": 21,
    "Automation": 22, "Innovation": 23,
}


@dataclass(frozen=True)
class Vocabulary:
    """A word -> id mapping, matched case-insensitively.

    Attributes:
        ids: canonical word -> id.
        num_rows: rows the embedding table needs (max id + 1).
    """

    ids: Mapping[str, int]

    @property
    def num_rows(self) -> int:
        return max(self.ids.values()) + 1 if self.ids else 0

    @classmethod
    def from_tokens(cls, tokens: Sequence[str]) -> "Vocabulary":
        """A vocabulary of the distinct tokens (case-insensitive), ids 0.. in order of first use."""
        ids: dict[str, int] = {}
        seen: set[str] = set()
        for tok in tokens:
            if tok.casefold() not in seen:
                seen.add(tok.casefold())
                ids[tok] = len(ids)
        return cls(ids)

    def unknown(self, tokens: Sequence[str]) -> list[str]:
        """The tokens that are not in the vocabulary (case-insensitively), each once, in order."""
        folded = {w.casefold() for w in self.ids}
        return list(dict.fromkeys(t for t in tokens if t.casefold() not in folded))

    def encode(self, tokens: Sequence[str]) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """Map tokens to (the tokens as typed, their ids): "the" and "The" are one word, with one id, each shown as
        it was typed.

        Raises:
            InputError: naming the tokens that are not in the vocabulary (at most five, quoted; validated settings
                never have any: a sentence outside a fixed vocabulary runs as "Your own sentence",
                ``attention_core.settings``).
        """
        unknown = self.unknown(tokens)
        if unknown:
            raise InputError(
                N_("Not in this example's vocabulary: {words}. "
                   "Use words from the vocabulary list, or pick the “Your own sentence” preset."),
                field="sentence", words=quote_list(unknown, marks=True),
            )
        folded = {w.casefold(): i for w, i in self.ids.items()}
        return tuple(tokens), tuple(folded[t.casefold()] for t in tokens)


SEED000_VOCABULARY = Vocabulary(SEED000_DICTIONARY)


def seed000_tables(
    seed: int, num_rows: int, d_model: int, d_k: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The embedding table and W_q, W_k, W_v drawn the way seed 000 draws them.

    Seed 000 runs ``torch.manual_seed(seed)``, ``nn.Embedding(num_rows - 1, d_model)``
    (``nn.Embedding`` initialises from N(0, 1)), then ``torch.randn(d_model, d_k)``
    three times. We draw the same numbers from a local generator, then one more
    row for the last id, which the seed's table is one row short of.

    Args:
        seed: the manual seed (seed 000 uses 12).
        num_rows: V, rows the table must have (max id + 1; 24 for seed 000's ids 1..23).
        d_model: D, the embedding width (seed 000: 4).
        d_k: the projected width for queries, keys and values (seed 000: 3).

    Returns:
        ``(table (V, D), w_query (D, d_k), w_key (D, d_k), w_value (D, d_k))``, float32.
    """
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(num_rows - 1, d_model, generator=g)
    w_query = torch.randn(d_model, d_k, generator=g)
    w_key = torch.randn(d_model, d_k, generator=g)
    w_value = torch.randn(d_model, d_k, generator=g)
    last = torch.randn(1, d_model, generator=g)
    return torch.cat([table, last]), w_query, w_key, w_value


def token_labels(tokens: tuple[str, ...]) -> list[str]:
    """Row/column labels for tokens: "1 I", "2 Like", ... (numbered, so repeated words stay distinct)."""
    return [f"{i + 1} {t}" for i, t in enumerate(tokens)]


def dim_labels(prefix: str, n: int) -> list[str]:
    """Column labels for vector components: "d1", "d2", ... (``prefix`` + a 1-based index)."""
    return [f"{prefix}{j + 1}" for j in range(n)]
