r"""Check items on the weighted sum of the values: o_ij = Σ_l α_il v_lj (seed 002; Vaswani et al. 2017, eq. 1), and
dropout on the weights: α d / (1 − p) (seed 004; Srivastava et al. 2014).

Named mistakes: ``max_not_sum`` (the value of the key with the most weight), ``no_dropout_rescale`` (α d without
1 / (1 − p)), ``nothing_sum_not_mean`` and ``nothing_is_zero`` (equal weights thought to sum or to cancel the values).
Shapes: a row of T = 3 or 4 weights, V (T, 2).
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
    pick,
    sum_of_products,
    worked,
)
from attention_core.errors import N_, Message
from attention_core.latex import number
from attention_core.self_attention.functional import scaled_dot_product_attention

CONCEPT = "weighted_sum"
SOURCE = "Vaswani et al. 2017, eq. 1"
#: Rows of weights that a student adds up by hand (each sums to 1; shuffled per student).
ROWS = ((0.5, 0.25, 0.25), (0.6, 0.3, 0.1), (0.2, 0.3, 0.5), (0.7, 0.2, 0.1), (0.4, 0.4, 0.2))
#: The rows of four weights for the dropout item.
ROWS_4 = ((0.4, 0.3, 0.2, 0.1), (0.25, 0.25, 0.25, 0.25), (0.5, 0.2, 0.2, 0.1), (0.1, 0.2, 0.3, 0.4))


def _row(gen: torch.Generator, rows) -> torch.Tensor:
    row = torch.tensor(pick(gen, rows), dtype=torch.float32)
    return row[torch.randperm(len(row), generator=gen)]


def _attention(weights: torch.Tensor, value: torch.Tensor, **options):
    """The pages' attention with one query whose softmax gives ``weights`` (T,): its scores are log(weights), K = I."""
    return scaled_dot_product_attention(weights.log()[None], torch.eye(len(weights)), value, scale=1.0, **options)


def entry(seed: int) -> Item:
    """o_{1,j} = Σ_l α_{1,l} v_{l,j} from a row of 3 weights and a column of V (mistake: the top key's value)."""
    gen = generator(seed)
    while True:
        weights, value = _row(gen, ROWS), halves(gen, 3, 2, nonzero=True)
        col = int(torch.randint(2, (1,), generator=gen))
        if weights.topk(2).values[0] > weights.topk(2).values[1]:  # one key has the most weight
            break
    answer = float(_attention(weights, value).output[0, col])
    alpha, column = [round(float(w), 6) for w in weights], value[:, col].tolist()
    exercise = practice.weighted_sum_exercise(rf"o_{{1,{col + 1}}}", rf"\sum_l \alpha_{{1,l}} v_{{l,{col + 1}}}",
                                              ("\\alpha_{1}", alpha), (f"v_{{:,{col + 1}}}", column), answer)
    return Item(f"{CONCEPT}.entry", CONCEPT, PROCEDURAL,
                Message(N_("Query 1's weights over three keys are α_1; column {j} of the values V is below. Give entry "
                           "{j} of query 1's output (its context vector)."), j=col + 1), exercise,
                solution=worked(rf"o_{{1,{col + 1}}}", sum_of_products(zip(alpha, column)), number(answer)),
                explanation=Message(N_("The output mixes every key's value, each multiplied by its weight: "
                                       "α_11 v_1j + α_12 v_2j + α_13 v_3j.")), source=SOURCE,
                drawn={"weights": alpha, "value": value.tolist(), "col": col})


def dropout(seed: int) -> Item:
    """The sum of a row of 4 weights after dropout with p = 0.5 (the mask drawn by the pages' attention; mistake:
    the kept weights not rescaled by 1 / (1 − p))."""
    gen = generator(seed)
    p = 0.5
    while True:
        weights = _row(gen, ROWS_4)
        trace = _attention(weights, torch.eye(4), dropout_p=p, generator=gen)
        kept = trace.dropout_mask[0]
        if 0 < int(kept.sum()) < 4:  # some kept, some dropped
            break
    answer = float(trace.dropped_weights[0].sum())
    wrong = float((weights * kept).sum())
    alpha, mask = [round(float(w), 6) for w in weights], [int(k) for k in kept.tolist()]
    exercise = practice.Exercise(r"\sum_l \tilde\alpha_{1,l}", r"\sum_l \frac{\alpha_{1,l}\, d_{1,l}}{1 - p}",
                                 (practice.vector(r"\alpha_{1}", alpha), practice.vector("d_{1}", mask),
                                  f"p = {number(p)}"), answer, (practice.Mistake(
                                     "no_dropout_rescale", wrong, Message(
                                         N_("That is {value}, the kept weights' sum without 1 / (1 − p) = {scale}: "
                                            "in training, dropout also scales up what it keeps."),
                                         value=f"{wrong:.4g}", scale=f"{1 / (1 - p):.4g}")),))
    kept_terms = sum_of_products((a, m) for a, m in zip(alpha, mask))
    return Item(f"{CONCEPT}.dropout", CONCEPT, PROCEDURAL,
                Message(N_("Dropout with p = 0.5 keeps the weights where d_1 is 1 and drops the others (training). "
                           "What do query 1's weights add up to after dropout?")), exercise,
                solution=worked(r"\sum_l \tilde\alpha_{1,l}", rf"\frac{{{kept_terms}}}{{1 - {number(p)}}}",
                                rf"\frac{{{number(wrong)}}}{{{number(1 - p)}}}", number(answer)),
                explanation=Message(N_("Dropout zeroes the dropped weights and divides the kept ones by 1 − p, so a "
                                       "row sums to 1 on average, not on every draw.")),
                source="Srivastava et al. 2014", drawn={"weights": alpha, "kept": mask, "p": p})


def equal(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.equal", CONCEPT, seed,
        Message(N_("A query gives every one of its T keys the same weight. What is its output?")),
        Message(N_("The mean of the T value vectors")),
        ((Message(N_("The sum of the T value vectors")), "nothing_sum_not_mean"),
         (Message(N_("The zero vector: no key stands out")), "nothing_is_zero")),
        Message(N_("Each weight is 1/T, and Σ (1/T) v_l is the mean of the values.")),
        SOURCE)


def shape(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.shape", CONCEPT, seed,
        Message(N_("The weights are T × T and the values V are T × d_v. What is the shape of the output?")),
        Message(N_("T × d_v: one context vector per query")),
        ((Message(N_("T × T: the same as the weights")), WRONG), (Message(N_("d_v × d_v")), WRONG)),
        Message(N_("Row i of the output is query i's mix of the value vectors, each d_v wide.")),
        SOURCE)


TEMPLATES = {"entry": entry, "dropout": dropout, "equal": equal, "shape": shape}
