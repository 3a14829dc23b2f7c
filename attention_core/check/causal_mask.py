r"""Check items on the causal mask: query i may attend to keys j ≤ i only (seed 004; Vaswani et al. 2017, sec. 3.2.3).

Named mistakes: ``no_renormalise`` (the softmax over every key, blocked ones too), ``mask_transposed`` (the past
blocked instead of the future). Shapes: a row of T = 4 scores.
"""

from __future__ import annotations

import dataclasses

import torch

from attention_core import practice
from attention_core.check.items import (
    PROCEDURAL,
    WRONG,
    Item,
    conceptual,
    generator,
    integers,
    pick,
    worked,
)
from attention_core.check.softmax import softmax_rows
from attention_core.errors import N_, Message
from attention_core.latex import number
from attention_core.masks import causal_mask

CONCEPT = "causal_mask"
SOURCE = "Vaswani et al. 2017, sec. 3.2.3"
TOKENS = 4


def weight(seed: int) -> Item:
    """α_{i,j} (j ≤ i) of a causal row of 4 scores (mistake: the softmax over all 4 keys)."""
    gen = generator(seed)
    scores = integers(gen, TOKENS, TOKENS)
    row = int(pick(gen, (1, 2)))  # 0-based: queries 2 or 3, so that some keys are blocked and some are not
    col = int(torch.randint(row + 1, (1,), generator=gen))
    mask = causal_mask(TOKENS)
    trace = softmax_rows(scores, mask)
    answer = float(trace.weights[row, col])
    exercise = practice.softmax_exercise(rf"\alpha_{{{row + 1},{col + 1}}}",
                                         rf"\frac{{e^{{a_{{{row + 1},{col + 1}}}}}}}{{\sum_{{l \le {row + 1}}} "
                                         rf"e^{{a_{{{row + 1},l}}}}}}", f"a_{{{row + 1}}}",
                                         trace.masked_scores.tolist(), row, col, answer, unmasked=scores.tolist(),
                                         by_column=False, predict=False)
    exercise = dataclasses.replace(exercise, inputs=(practice.vector(f"a_{{{row + 1}}}", scores[row].tolist()),))
    seen = scores[row, :row + 1].tolist()
    exps = " + ".join(f"e^{{{number(a)}}}" for a in seen)
    return Item(f"{CONCEPT}.weight", CONCEPT, PROCEDURAL,
                Message(N_("Query {i}'s scaled scores against keys 1 to 4 are below, before the causal mask. Give its "
                           "weight on key {j} after the mask and the softmax."), i=row + 1, j=col + 1), exercise,
                solution=worked(rf"\alpha_{{{row + 1},{col + 1}}}",
                                rf"\frac{{e^{{{number(seen[col])}}}}}{{{exps}}}", number(answer)),
                explanation=Message(N_("The mask blocks the keys after query {i} (their scores become −∞, e^(−∞) = 0): "
                                       "the softmax runs over keys 1 to {i} only, and they share all of the weight."),
                                    i=row + 1), source=SOURCE,
                drawn={"scores": scores.tolist(), "row": row, "col": col})


def count(seed: int) -> Item:
    """How many keys query i may attend to in a causal sentence of T tokens (mistake: T − i + 1, the past blocked)."""
    gen = generator(seed)
    tokens = int(pick(gen, (5, 6, 7, 8)))
    while True:
        row = int(torch.randint(tokens, (1,), generator=gen))
        if 2 * (row + 1) != tokens + 1:  # i ≠ T − i + 1
            break
    answer = int(causal_mask(tokens)[row].sum())
    wrong = int(causal_mask(tokens).T[row].sum())  # the transposed mask: keys i … T
    exercise = practice.Exercise("n_{" + str(row + 1) + "}", r"\#\,\text{keys}",
                                 (f"T = {tokens}", f"i = {row + 1}"), float(answer), (practice.Mistake(
                                     "mask_transposed", float(wrong), Message(
                                         N_("That is {value}: the keys from i to T. The causal mask blocks the "
                                            "future, the keys after i; query i sees keys 1 to i."),
                                         value=wrong)),))
    return Item(f"{CONCEPT}.count", CONCEPT, PROCEDURAL,
                Message(N_("A sentence has {t} tokens and the causal mask. How many keys may query {i} attend to "
                           "(itself included)?"), t=tokens, i=row + 1), exercise,
                solution=worked(f"n_{{{row + 1}}}", rf"|\{{1, \dots, {row + 1}\}}|", str(answer)),
                explanation=Message(N_("Query i sees the keys 1 to i: the ones at or before it.")), source=SOURCE,
                drawn={"tokens": tokens, "row": row})


def which(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.which", CONCEPT, seed,
        Message(N_("Which entries (i, j) of the weights does the causal mask block (query i, key j)?")),
        Message(N_("j > i: the keys after the query")),
        ((Message(N_("j < i: the keys before the query")), "mask_transposed"),
         (Message(N_("j = i: each token's own key")), WRONG)),
        Message(N_("A token must not see the future: query i may look at keys 1 to i, so everything above the "
                   "diagonal (j > i) is blocked.")),
        SOURCE)


def first(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.first", CONCEPT, seed,
        Message(N_("With the causal mask, what are query 1's weights?")),
        Message(N_("1 on key 1 and 0 on every other key")),
        ((Message(N_("Equal on every key")), WRONG),
         (Message(N_("0 on every key: it has nothing to look at")), "nothing_is_zero")),
        Message(N_("Query 1 may see key 1 only; the softmax of one score is 1, so all of its weight is on key 1.")),
        SOURCE)


TEMPLATES = {"weight": weight, "count": count, "which": which, "first": first}
