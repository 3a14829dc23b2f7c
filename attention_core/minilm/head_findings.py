"""Guided findings on the trained model's attention, measured on the learner's sentence: which heads look at the
previous or the next token, at themselves, at their own word's other pieces, at [CLS] or [SEP]; and each head's focus.

Shape legend: L layers, H heads, n tokens; attentions (L, H, n, n) float32, each row summing to 1 over the real
tokens. Source: Clark et al. 2019, "What Does BERT Look At?" (the [CLS]/[SEP] and previous-token heads).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.errors import N_
from attention_core.minilm.model import Encoding


def block_means(weights: torch.Tensor, side: int) -> torch.Tensor:
    """(..., n, n) weights as (..., side, side) block means when n > side (else the same tensor): a head's picture.

    Pixel (a, b) is the mean of rows ⌊a·n/side⌋ … ⌈(a+1)·n/side⌉ − 1 and the same columns (torch's
    ``adaptive_avg_pool2d``; neighbouring blocks overlap by a row when side does not divide n). Each row of weights
    sums to 1, so a pixel is the average weight of a block of queries on a block of keys. Every head in one call.
    """
    if weights.shape[-1] <= side and weights.shape[-2] <= side:
        return weights
    lead = weights.shape[:-2]
    pooled = torch.nn.functional.adaptive_avg_pool2d(weights.reshape(-1, 1, *weights.shape[-2:]), side)
    return pooled.reshape(*lead, side, side)


#: What the findings measure: key -> (short title, what a high score means), in English marked for translation.
FINDINGS: dict[str, tuple[str, str]] = {
    "previous": (N_("Previous token"), N_("each token's weight on the token just before it")),
    "next": (N_("Next token"), N_("each token's weight on the token just after it")),
    "self": (N_("Itself"), N_("each token's weight on itself (the diagonal)")),
    "same_word": (N_("Its own word"), N_("the weight a WordPiece of a split word puts on the word's other pieces")),
    "cls": (N_("[CLS]"), N_("each token's weight on [CLS], the first token")),
    "sep": (N_("[SEP]"), N_("each token's weight on [SEP], the last real token")),
}


@dataclass(frozen=True)
class Finding:
    """How strongly every head does one thing on this sentence.

    Attributes:
        key: a key of :data:`FINDINGS`; title, meaning: its texts.
        scores: (L, H) nested tuples: the average, over the query rows that have such a
            key, of the weight on it. Real tokens only (m of them); [PAD] rows are skipped.
        top: the three best heads as (layer, head, score), 0-based, best first.
        baseline: what a head that spreads its weight evenly over the m real tokens would score.
        rows: how many query rows the average is over (0: not measurable on this sentence,
            e.g. no word was split into pieces; then ``top`` is empty).
    """

    key: str
    title: str
    meaning: str
    scores: tuple[tuple[float, ...], ...]
    top: tuple[tuple[int, int, float], ...]
    baseline: float
    rows: int


def guided_findings(attentions: torch.Tensor, encoding: Encoding, top_k: int = 3) -> tuple[Finding, ...]:
    """Measure, for every layer and head, the attention patterns of :data:`FINDINGS`.

    Args:
        attentions: (L, H, n, n), the model's attention probabilities on ``encoding``.
        encoding: its tokens (the m real tokens come first: [CLS] ... [SEP]).
        top_k: how many best heads to report per finding.

    Returns:
        One :class:`Finding` per key of :data:`FINDINGS`, in that order.
    """
    m = encoding.num_real
    a = attentions[:, :, :m, :m]  # (L, H, m, m): real queries and keys only (a view; the picked weights become
    # float64 before they are averaged: not all of them, 150 MB at 512 tokens)
    idx = torch.arange(m)
    # rows (query positions) and the key each row is scored on
    pairs: dict[str, tuple[torch.Tensor, torch.Tensor]] = {
        "previous": (idx[1:], idx[:-1]),
        "next": (idx[:-1], idx[1:]),
        "self": (idx, idx),
        "cls": (idx, torch.zeros(m, dtype=torch.long)),
        "sep": (idx, torch.full((m,), m - 1, dtype=torch.long)),
    }
    per_key: dict[str, tuple[torch.Tensor, int, float]] = {}
    for key, (rows, cols) in pairs.items():
        per_key[key] = (a[:, :, rows, cols].double().mean(-1), len(rows), 1.0 / m)  # (L, H)

    # Other pieces of the same word: only rows whose word was split into two or more pieces.
    words = torch.tensor([-1 if w is None else w for w in encoding.word_ids[:m]])
    same = (words.unsqueeze(0) == words.unsqueeze(1)) & (words >= 0).unsqueeze(0) & ~torch.eye(m, dtype=torch.bool)
    split_rows = same.any(dim=1)  # (m,)
    if split_rows.any():
        rows, cols = same.nonzero(as_tuple=True)  # the (query, other piece) pairs: a few per split word
        picked = a[:, :, rows, cols].double()  # (L, H, pairs)
        share = torch.zeros(*a.shape[:2], m, dtype=torch.double).index_add_(2, rows, picked)[:, :, split_rows]
        # (L, H, split rows): each row's weight on its word's other pieces
        baseline = float(same[split_rows].sum(-1).double().mean()) / m
        per_key["same_word"] = (share.mean(-1), int(split_rows.sum()), baseline)
    else:
        per_key["same_word"] = (torch.zeros(a.shape[:2], dtype=torch.double), 0, 0.0)

    findings = []
    for key, (title, meaning) in FINDINGS.items():
        scores, rows, baseline = per_key[key]
        flat = scores.flatten()
        order = torch.argsort(flat, descending=True)[:top_k] if rows else torch.tensor([], dtype=torch.long)
        heads = scores.shape[1]
        top = tuple((int(i) // heads, int(i) % heads, float(flat[i])) for i in order)
        findings.append(Finding(key=key, title=title, meaning=meaning,
                                scores=tuple(tuple(float(v) for v in row) for row in scores),
                                top=top, baseline=baseline, rows=rows))
    return tuple(findings)


def head_focus(attentions: torch.Tensor, encoding: Encoding) -> torch.Tensor:
    """How focused each head is: for each layer and head, the mean over the real query tokens of their largest
    attention weight (the grid of heads as numbers, for its table).

    1 means every token puts all its weight on one key; 1/m (m real tokens) means weight spread evenly. Padding
    query rows are left out (their weights are never used), so a padded text gives the same numbers.

    Args:
        attentions: (L, H, n, n) float, the model's attention probabilities (L layers, H heads, n tokens with
            padding; rows are queries, columns keys).
        encoding: the tokens (its first ``num_real`` are real).

    Returns:
        (L, H) float tensor, each in [1/m, 1].

    Raises:
        ValueError: ``attentions`` is not (L, H, n, n) with n = the encoding's length.
    """
    if attentions.dim() != 4 or attentions.shape[-1] != attentions.shape[-2] or attentions.shape[-1] != encoding.n:
        raise ValueError(f"attentions must be (L, H, n, n) with n = {encoding.n}, got {tuple(attentions.shape)}")
    real = attentions[:, :, :encoding.num_real, :]  # (L, H, m, n): the real queries
    return real.max(dim=-1).values.mean(dim=-1)  # largest weight of each query row, averaged over the rows
