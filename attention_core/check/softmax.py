r"""Check items on the softmax: α_ij = e^{a_ij} / Σ_l e^{a_il} along row i (seed 002, seed 004).

Named mistakes: ``softmax_column`` (normalised down the column), ``sum_before_exp`` (e^(a_ij − Σ a)),
``shift_changes_weights`` (adding a constant to a row thought to change its weights). Shapes: the scores (2, 3).
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
    worked,
)
from attention_core.errors import N_, Message
from attention_core.latex import number
from attention_core.self_attention.functional import scaled_dot_product_attention

CONCEPT = "softmax"
SOURCE = "Vaswani et al. 2017, eq. 1"


def softmax_rows(scores: torch.Tensor, mask: torch.Tensor | None = None):
    """The pages' attention with the scores given: Q = the scores, K = V = I, no scaling, so Q Kᵀ = the scores and
    the trace's weights are their softmax along each row (with ``mask``: True = may attend)."""
    eye = torch.eye(scores.shape[-1])
    return scaled_dot_product_attention(scores, eye, eye, attn_mask=mask, scale=1.0)


def weight(seed: int) -> Item:
    """α_{1,j} from a 2 × 3 score matrix of small integers (mistakes: over the column, summed before exp)."""
    gen = generator(seed)
    scores = integers(gen, 2, 3)
    col = int(torch.randint(3, (1,), generator=gen))
    answer = float(softmax_rows(scores).weights[0, col])
    exercise = practice.softmax_exercise(rf"\alpha_{{1,{col + 1}}}",
                                         rf"\frac{{e^{{a_{{1,{col + 1}}}}}}}{{\sum_l e^{{a_{{1,l}}}}}}",
                                         "a_{1}", scores.tolist(), 0, col, answer, predict=False)
    exercise = dataclasses.replace(exercise, inputs=(practice.vector("a_{1}", scores[0].tolist()),
                                                     practice.vector("a_{2}", scores[1].tolist())))
    row = scores[0].tolist()
    exps = " + ".join(f"e^{{{number(a)}}}" for a in row)
    return Item(f"{CONCEPT}.weight", CONCEPT, PROCEDURAL,
                Message(N_("The rows a_1 and a_2 are two queries' scaled scores against three keys. Give query 1's "
                           "weight on key {j}."), j=col + 1), exercise,
                solution=worked(rf"\alpha_{{1,{col + 1}}}", rf"\frac{{e^{{{number(row[col])}}}}}{{{exps}}}",
                                number(answer)),
                explanation=Message(N_("The softmax runs along query 1's row: e to the chosen score, over the sum of e "
                                       "to each score of the row.")), source=SOURCE,
                drawn={"scores": scores.tolist(), "row": 0, "col": col})


def largest(seed: int) -> Item:
    """Which key gets the most weight from a row of 4 scores (the largest is unique)."""
    gen = generator(seed)
    while True:
        scores = integers(gen, 1, 4, low=-3, high=3)
        top = scores[0].topk(2).values
        if float(top[0] - top[1]) >= 1:
            break
    weights = softmax_rows(scores).weights[0]
    answer = int(weights.argmax()) + 1
    exercise = practice.Exercise(r"\text{key}", r"\arg\max_j \; \alpha_{1,j}",
                                 (practice.vector("a_{1}", scores[0].tolist()),), float(answer))
    return Item(f"{CONCEPT}.largest", CONCEPT, PROCEDURAL,
                Message(N_("Query 1's scaled scores against keys 1 to 4 are a_1 below. Which key gets the most weight? "
                           "Type its number.")), exercise,
                solution=worked(r"\alpha_{1}", r"\begin{bmatrix} " + " & ".join(number(float(w)) for w in weights)
                                + r" \end{bmatrix}", rf"\text{{key}}\ {answer}"),
                explanation=Message(N_("The softmax keeps the order of the scores: the largest score gets the most "
                                       "weight. No need to compute it.")), source=SOURCE,
                drawn={"scores": scores.tolist()})


def row_sum(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.row_sum", CONCEPT, seed,
        Message(N_("After the softmax, what do the weights of one query's row add up to?")),
        Message(N_("1, whatever the scores")),
        ((Message(N_("the number of keys T")), WRONG), (Message(N_("the sum of the scores")), WRONG)),
        Message(N_("Each weight is e^(a_ij) divided by the row's sum of exponentials, so the row's weights add up "
                   "to 1: a share of attention per key.")),
        SOURCE)


def shift(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.shift", CONCEPT, seed,
        Message(N_("Add 5 to every score of one query's row. What happens to that row's weights?")),
        Message(N_("Nothing: they stay the same")),
        ((Message(N_("They all grow")), "shift_changes_weights"),
         (Message(N_("They get sharper: the largest gets more")), "shift_changes_weights")),
        Message(N_("e^(a + 5) = e^5 · e^a: the factor e^5 is in every term of the fraction and cancels. Only "
                   "differences between scores matter.")),
        SOURCE)


TEMPLATES = {"weight": weight, "largest": largest, "row_sum": row_sum, "shift": shift}
