r"""A tiny trained encoder–decoder Transformer that reverses a word: "abcd" → "dcba".

Seed 003 (``003_734755b2d0b981d3.txt`` §2) describes the decoder as generating one token at a time from a START
token until an END token, attending with masked self-attention to what it has produced and with
cross-attention to the encoder's outputs. With random weights that produces noise; this model was trained
(by ``scripts/train_toy_reverser.py``, deterministic, about 80 s on a 2-core CPU) to reverse a sequence of
1 to :data:`TOY_MAX_INPUT` letters from :data:`LETTERS`, so a learner can check its answer by eye, and its
cross-attention shows the alignment: output token t looks at input token n + 1 − t (an anti-diagonal).

The model (post-LN, no dropout, Vaswani et al. 2017 sec. 3 at a toy size)::

    X = E[source] · √D + PE          (sec. 3.4: the embedding scaled by √d_model; sec. 3.5: sinusoidal PE)
    M = Encoder_N(X)                 N = NUM_LAYERS blocks of torch.nn.TransformerEncoderLayer
    Y = E[START, y₁, …, y_t] · √D + PE
    Z = Decoder_N(Y, M)              N blocks of torch.nn.TransformerDecoderLayer (causal mask on Y)
    logits = Z[last] W_vocab + b     (V,), one per vocabulary token

The same embedding E serves source and target. :class:`ToyReverser` is the ``torch.nn`` reference (trained,
and used as the check); :mod:`attention_core.transformer.generation` recomputes it step by step with our own
code. The weights file ships in the package (``toy_reverser.safetensors``, about 100 kB) and is never
downloaded.

Shape legend: S source tokens, T target tokens, D = :data:`D_MODEL`, V = len(:data:`VOCAB`). Float32.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import torch
from torch import nn

from attention_core.errors import N_, InputError, UserText
from attention_core.positions import sinusoidal_encoding

#: The longest word the toy encoder-decoder was trained to reverse, in letters.
TOY_MAX_INPUT = 8

#: Its steps at most: the reversed word and END.
TOY_MAX_OUTPUT = TOY_MAX_INPUT + 1

#: Its decoder blocks (and encoder blocks).
TOY_LAYERS = 2

#: The letters the model reverses; each is one token.
LETTERS = "abcdefgh"
#: The vocabulary: padding, START, END, then the letters. Token id = index.
VOCAB: tuple[str, ...] = ("PAD", "START", "END", *LETTERS)
PAD, START, END = 0, 1, 2
#: d_model, heads, feed-forward width and blocks per stack (encoder and decoder each).
D_MODEL, NUM_HEADS, DIM_FEEDFORWARD, NUM_LAYERS = 16, 2, 64, TOY_LAYERS
#: The weights, written by scripts/train_toy_reverser.py.
WEIGHTS_FILE = Path(__file__).with_name("toy_reverser.safetensors")


class ToyReverser(nn.Module):
    """The toy encoder–decoder as ``torch.nn`` modules (module docstring for the formula)."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(len(VOCAB), D_MODEL)
        self.encoder = nn.ModuleList(
            nn.TransformerEncoderLayer(D_MODEL, NUM_HEADS, DIM_FEEDFORWARD, dropout=0.0, batch_first=True)
            for _ in range(NUM_LAYERS))
        self.decoder = nn.ModuleList(
            nn.TransformerDecoderLayer(D_MODEL, NUM_HEADS, DIM_FEEDFORWARD, dropout=0.0, batch_first=True)
            for _ in range(NUM_LAYERS))
        self.to_vocab = nn.Linear(D_MODEL, len(VOCAB))
        self.register_buffer("positional", sinusoidal_encoding(TOY_MAX_OUTPUT + 1, D_MODEL), persistent=False)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, L) token ids -> (B, L, D): E[token] · √D + PE[position]."""
        return self.embedding(tokens) * math.sqrt(D_MODEL) + self.positional[: tokens.shape[-1]]

    def encode(self, source: torch.Tensor) -> torch.Tensor:
        """(B, S) ids, PAD-padded -> the memory (B, S, D)."""
        padding = source == PAD
        memory = self.embed(source)
        for layer in self.encoder:
            memory = layer(memory, src_key_padding_mask=padding)
        return memory

    def decode(self, target: torch.Tensor, memory: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        """(B, T) ids starting with START, the memory and the source ids -> logits (B, T, V)."""
        y = self.embed(target)
        causal = nn.Transformer.generate_square_subsequent_mask(target.shape[-1])
        for layer in self.decoder:
            y = layer(y, memory, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=source == PAD)
        return self.to_vocab(y)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.decode(target, self.encode(source), source)


@lru_cache(maxsize=1)
def load_toy_model(path: Path = WEIGHTS_FILE) -> ToyReverser:
    """The trained model, loaded once per process and shared read-only (eval mode, no gradients).

    Raises:
        FileNotFoundError: the weights file is missing (run ``scripts/train_toy_reverser.py``).
    """
    from safetensors.torch import load_file

    model = ToyReverser()
    model.load_state_dict(load_file(str(path)))
    model.eval().requires_grad_(False)
    return model


def parse_source(text: str) -> tuple[int, ...]:
    """The token ids of the letters in ``text``; spaces and commas between them are ignored.

    Raises:
        InputError (field ``generation.source``): empty, longer than :data:`TOY_MAX_INPUT` letters, or characters outside
            :data:`LETTERS` (all of them named).
    """
    letters = [c for c in text.strip().lower() if not c.isspace() and c != ","]
    if not letters:
        raise InputError(N_("Type 1 to {max} letters from {letters} for the model to reverse, e.g. “abcd”."),
                         field="generation.source", max=TOY_MAX_INPUT, letters=", ".join(LETTERS))
    unknown = sorted(set(letters) - set(LETTERS))
    if unknown:
        raise InputError(N_("The model only knows the letters {letters}; it has never seen {unknown}. "
                            "Replace them and it will run."),
                         field="generation.source", letters=", ".join(LETTERS), unknown=UserText(", ".join(unknown)))
    if len(letters) > TOY_MAX_INPUT:
        raise InputError(N_("The model was trained on 1 to {max} letters; this input has {n}. Shorten it."),
                         field="generation.source", max=TOY_MAX_INPUT, n=len(letters))
    return tuple(VOCAB.index(c) for c in letters)
