r"""Tasks whose right attention pattern is known, for a tiny attention-only Transformer to learn.

Each task draws batches of token sequences and the next-token targets the model must predict, from a seeded
``torch.Generator`` (the same seed, the same batches). Only some positions are scored (``scored``): those whose
answer the pattern makes computable. Each task says which pattern should appear and scores it on the model's
attention weights.

Shape legend: B sequences in a batch, T positions (``context``), V the vocabulary; tokens are int64 in 0..V − 1;
weights (B, T, T) are one head's attention weights, rows = query positions, columns = key positions (causal).

Sources: the previous-token and induction patterns as Olsson et al. 2022, "In-context learning and induction
heads" (sec. 2: an induction head attends from a repeated token to the token after its earlier occurrence, helped
by a previous-token head in an earlier layer); Elhage et al. 2021, "A Mathematical Framework for Transformer
Circuits" (attention-only models).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.errors import N_


@dataclass(frozen=True)
class Batch:
    """One batch of a task.

    Attributes:
        tokens: (B, T) int64, the input sequences.
        targets: (B, T) int64, the token each position should predict (the next token of the task's rule).
        scored: (B, T) bool, the positions whose prediction counts in the loss and the accuracy.
        expected: (B, T, T) float, 1 where the task's pattern puts the weight (rows it says nothing about are 0).
    """

    tokens: torch.Tensor
    targets: torch.Tensor
    scored: torch.Tensor
    expected: torch.Tensor


@dataclass(frozen=True)
class Task:
    """A task: its name, the sentence saying which pattern should appear, its shape, and the model it needs.

    Attributes:
        key: its name in settings and links. title, pattern: what it is and which pattern should appear (marked for
            translation). vocab: V. context: T. num_layers, num_heads: the model that can solve it (attention only).
        pattern_layer: the layer (0-based) whose head should show the pattern.
        d_model: D, the model's width (16 where a head must fit the step pages, whose d_model is at most 16).
        learning_rate, steps: the defaults under which the pattern forms (seed 0, Adam; tested).
    """

    key: str
    title: str
    pattern: str
    vocab: int
    context: int
    num_layers: int
    num_heads: int
    pattern_layer: int
    d_model: int = 16
    learning_rate: float = 0.03
    steps: int = 150

    def token_label(self, token: int) -> str:
        """A token's name on the page: A, B, C, ... (the reverse task's separator: SEP)."""
        if self.key == "reverse" and token == self.vocab - 1:
            return "SEP"
        return chr(ord("A") + token)

    def batch(self, generator: torch.Generator, size: int) -> Batch:
        """``size`` sequences drawn with ``generator`` (advances it)."""
        return _DRAW[self.key](self, generator, size)

    @staticmethod
    def score(weights: torch.Tensor, expected: torch.Tensor) -> float:
        """The share of the weight on the pattern's cells, averaged over the rows the pattern describes (1.0 =
        exactly the pattern). ``weights``, ``expected``: (T, T), one head on one sequence."""
        rows = expected.sum(-1) > 0
        return float((weights * expected).sum(-1)[rows].mean())


def _scored_from(start: int, task: Task, size: int) -> torch.Tensor:
    return (torch.arange(task.context) >= start).expand(size, -1)


def _previous(task: Task, gen: torch.Generator, size: int) -> Batch:
    tokens = torch.randint(task.vocab, (size, task.context), generator=gen)
    targets = torch.roll(tokens, 1, dims=1)  # position i predicts token i − 1
    expected = torch.diag(torch.ones(task.context - 1), -1).expand(size, -1, -1)
    return Batch(tokens, targets, _scored_from(1, task, size), expected)


def _first(task: Task, gen: torch.Generator, size: int) -> Batch:
    tokens = torch.randint(task.vocab, (size, task.context), generator=gen)
    targets = tokens[:, :1].expand(-1, task.context).clone()  # every position predicts token 0
    expected = torch.zeros(task.context, task.context)
    expected[1:, 0] = 1.0
    return Batch(tokens, targets, _scored_from(1, task, size), expected.expand(size, -1, -1))


#: The induction task's repeated segment: its length n (drawn per sequence from these), twice in a row after k
#: filler tokens (k random): neither where the repeat starts nor how far back its copy lies gives the answer away.
SEGMENT_LENGTHS = (3, 4, 5, 6)


def _induction(task: Task, gen: torch.Generator, size: int) -> Batch:
    t = task.context
    order = torch.argsort(torch.rand(size, task.vocab, generator=gen), dim=1)
    longest = max(SEGMENT_LENGTHS)
    segment, filler = order[:, :longest], order[:, longest:]  # the segment's tokens appear nowhere else
    picks = torch.randint(filler.shape[1], (size, t), generator=gen)
    tokens = torch.gather(filler, 1, picks)  # filler everywhere, then [segment][segment] at a random place
    lengths = torch.tensor(SEGMENT_LENGTHS)[torch.randint(len(SEGMENT_LENGTHS), (size,), generator=gen)]
    starts = (torch.rand(size, generator=gen) * (t - 2 * lengths + 1)).long()
    scored = torch.zeros(size, t, dtype=torch.bool)
    expected = torch.zeros(size, t, t)
    for b in range(size):  # B loop over the batch (not over T × T)
        k, n = int(starts[b]), int(lengths[b])
        tokens[b, k:k + n] = segment[b, :n]
        tokens[b, k + n:k + 2 * n] = segment[b, :n]
        second = torch.arange(k + n, k + 2 * n - 1)  # the repeat, but its last token (its next is filler)
        scored[b, second] = True
        expected[b, second, second - n + 1] = 1.0  # the token after the earlier copy
    targets = torch.roll(tokens, -1, dims=1)  # the next token
    return Batch(tokens, targets, scored, expected)


def _reverse(task: Task, gen: torch.Generator, size: int) -> Batch:
    n = (task.context - 1) // 2  # [x_1 … x_n] SEP [x_n … x_1]: T = 2n + 1, SEP the last token of the vocabulary
    first = torch.randint(task.vocab - 1, (size, n), generator=gen)
    sep = torch.full((size, 1), task.vocab - 1)
    tokens = torch.cat([first, sep, torch.flip(first, dims=[1])], dim=1)
    targets = torch.roll(tokens, -1, dims=1)  # the next token
    positions = torch.arange(task.context)
    scored = ((positions >= n) & (positions < 2 * n)).expand(size, -1)  # from SEP on, the next one is x_{...}
    expected = torch.zeros(task.context, task.context)
    for p in range(n, 2 * n):  # position p predicts x at index 2n − 1 − p: it should look there
        expected[p, 2 * n - 1 - p] = 1.0
    return Batch(tokens, targets, scored, expected.expand(size, -1, -1))


_DRAW = {"previous": _previous, "first": _first, "reverse": _reverse, "induction": _induction}

#: The tasks, by key (the induction task needs d_model = 32 to form its heads for most seeds in 600 steps: at 16,
#: seeds 1 and 3 stay on the plateau for ~1000 steps).
TASKS: dict[str, Task] = {
    "previous": Task("previous", N_("Copy the previous token"),
                     N_("One layer, one head: each token should look at the token just before it (the sub-diagonal)."),
                     vocab=8, context=8, num_layers=1, num_heads=1, pattern_layer=0, learning_rate=0.03, steps=150),
    "first": Task("first", N_("Repeat the first token"),
                  N_("One layer, one head: every token should look at the first token (the first column)."),
                  vocab=8, context=8, num_layers=1, num_heads=1, pattern_layer=0, learning_rate=0.03, steps=100),
    "reverse": Task("reverse", N_("Reverse a sequence"),
                    N_("One layer, one head: after the separator, each token should look at its mirror image in the "
                       "first half (the anti-diagonal, from the separator on)."),
                    vocab=9, context=11, num_layers=1, num_heads=1, pattern_layer=0, learning_rate=0.01, steps=150),
    "induction": Task("induction", N_("Induction: [A][B] … [A] → [B]"),
                      N_("Two layers: a previous-token head in layer 1, then in layer 2 an induction head that looks "
                         "from a repeated token to the token after its earlier copy (Olsson et al. 2022)."),
                      vocab=16, context=16, num_layers=2, num_heads=1, pattern_layer=1, d_model=32,
                      learning_rate=0.003, steps=600),
}
