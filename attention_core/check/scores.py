r"""Check items on the scores s_ij = q_i · k_j (Vaswani et al. 2017, eq. 1; seed 002, seed 000).

Named mistakes: ``swapped`` (q_j · k_i for s_ij). Shapes: Q, K (T, d) float32, T = 2 or 4 tokens, d = 3.
"""

from __future__ import annotations

import torch

from attention_core import practice
from attention_core.check.items import (
    PROCEDURAL,
    WRONG,
    Item,
    conceptual,
    generator,
    halves,
    integers,
    sum_of_products,
    worked,
)
from attention_core.errors import N_, Message
from attention_core.latex import number
from attention_core.self_attention.functional import scaled_dot_product_attention

CONCEPT = "scores"
SOURCE = "Vaswani et al. 2017, eq. 1"


def _scores(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Q Kᵀ as the pages compute it (the trace's unscaled scores)."""
    return scaled_dot_product_attention(query, key, key, scale=1.0).scores


def dot(seed: int) -> Item:
    """s_{1,2} = q_1 · k_2 from two queries and two keys of width 3 (mistake: q_2 · k_1)."""
    gen = generator(seed)
    while True:
        query, key = halves(gen, 2, 3, nonzero=True), halves(gen, 2, 3, nonzero=True)
        scores = _scores(query, key)
        if abs(float(scores[0, 1] - scores[1, 0])) > 0.6:  # the swapped entry tells itself apart
            break
    q1, q2, k1, k2 = (v.tolist() for v in (query[0], query[1], key[0], key[1]))
    answer = float(scores[0, 1])
    exercise = practice.dot_exercise("s_{1,2}", r"q_{1} \cdot k_{2}", ("q_{1}", q1), ("k_{2}", k2), answer,
                                     swapped=(q2, k1), extra=(practice.vector("q_{2}", q2),
                                                              practice.vector("k_{1}", k1)))
    return Item(f"{CONCEPT}.dot", CONCEPT, PROCEDURAL,
                Message(N_("Compute the score of query 1 against key 2.")), exercise,
                solution=worked("s_{1,2}", r"q_{1} \cdot k_{2}", sum_of_products(zip(q1, k2)), number(answer)),
                explanation=Message(N_("Entry (i, j) of Q Kᵀ takes row i of Q (the query) and row j of K (the key): "
                                       "multiply them entry by entry and add.")), source=SOURCE, drawn={"query": query.tolist(), "key": key.tolist(), "row": 0, "col": 1})


def largest(seed: int) -> Item:
    """Which of 4 keys has the largest score against query 1 (a 1-based key number; the largest is unique)."""
    gen = generator(seed)
    while True:
        query, key = integers(gen, 1, 3), integers(gen, 4, 3)
        scores = _scores(query, key)[0]
        top = scores.topk(2).values
        if float(top[0] - top[1]) >= 1:
            break
    answer = int(scores.argmax()) + 1
    inputs = (practice.vector("q_{1}", query[0].tolist()),) + tuple(
        practice.vector(f"k_{{{j + 1}}}", key[j].tolist()) for j in range(4))
    exercise = practice.Exercise(r"\text{key}", r"\arg\max_j \; q_{1} \cdot k_{j}", inputs, float(answer))
    return Item(f"{CONCEPT}.largest", CONCEPT, PROCEDURAL,
                Message(N_("Which key (1 to 4) has the largest score against query 1? Type its number.")), exercise,
                solution=worked(r"q_{1} \cdot k_{j}", r"\begin{bmatrix} " + " & ".join(number(float(s))
                                                                                    for s in scores) + r" \end{bmatrix}",
                                rf"\text{{key}}\ {answer}"),
                explanation=Message(N_("Compute q_1 · k_j for every key and take the largest; that key will get the "
                                       "most of query 1's weight after the softmax.")), source=SOURCE, drawn={"query": query.tolist(), "key": key.tolist()})


def shape(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.shape", CONCEPT, seed,
        Message(N_("Q has T rows (one per token) and d_k columns; so has K. What is the shape of the scores Q Kᵀ?")),
        Message(N_("T × T: one score per (query, key) pair")),
        ((Message(N_("d_k × d_k: one score per pair of columns")), WRONG),
         (Message(N_("T × d_k: the same shape as Q")), WRONG)),
        Message(N_("Row i of Q times column j of Kᵀ (row j of K) gives s_ij: every query meets every key, T × T.")),
        SOURCE)


def meaning(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.meaning", CONCEPT, seed,
        Message(N_("A large positive score s_ij means …")),
        Message(N_("query i and key j point the same way: key j gets much of query i's weight")),
        ((Message(N_("token j comes right after token i in the sentence")), WRONG),
         (Message(N_("the value v_j is large")), WRONG)),
        Message(N_("A score is a dot product: large when q_i and k_j point the same way. It knows nothing of order "
                   "(that needs positions) and does not look at the values.")),
        SOURCE)


TEMPLATES = {"dot": dot, "largest": largest, "shape": shape, "meaning": meaning}
