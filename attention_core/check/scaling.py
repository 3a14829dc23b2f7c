r"""Check items on scaling: s / √d_k (Vaswani et al. 2017, eq. 1 and footnote 4; seed 002).

Named mistakes: ``no_scale`` (s itself, or the softmax of unscaled scores), ``scale_d_k`` (s / d_k),
``scale_flattens`` (large dot products thought to flatten the softmax). Shapes: q, k (d_k,) float32.
"""

from __future__ import annotations

import dataclasses
import math

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
    pick,
    sum_of_products,
    worked,
)
from attention_core.errors import N_, Message
from attention_core.latex import number
from attention_core.self_attention.functional import scaled_dot_product_attention

CONCEPT = "scaling"
SOURCE = "Vaswani et al. 2017, eq. 1"


def scale(seed: int) -> Item:
    """s_{1,2} / √d_k from q_1 and k_2 of width d_k = 4 (mistakes: not divided, divided by d_k)."""
    gen = generator(seed)
    while True:
        query, key = halves(gen, 2, 4, nonzero=True), halves(gen, 2, 4, nonzero=True)
        trace = scaled_dot_product_attention(query, key, key)
        if abs(float(trace.scores[0, 1])) >= 1:  # s, s / 2 and s / 4 tell themselves apart
            break
    q1, k2 = query[0].tolist(), key[1].tolist()
    answer = float(trace.scaled_scores[0, 1])
    exercise = practice.scale_exercise("a_{1,2}", r"\frac{q_{1} \cdot k_{2}}{\sqrt{d_k}}", "s_{1,2}",
                                       float(trace.scores[0, 1]), 4, answer, dot=(("q_{1}", q1), ("k_{2}", k2)))
    return Item(f"{CONCEPT}.scale", CONCEPT, PROCEDURAL,
                Message(N_("Compute the scaled score of query 1 against key 2 (d_k = 4).")), exercise,
                solution=worked("a_{1,2}", r"\frac{q_{1} \cdot k_{2}}{\sqrt{4}}",
                                rf"\frac{{{sum_of_products(zip(q1, k2))}}}{{2}}",
                                rf"\frac{{{number(float(trace.scores[0, 1]))}}}{{2}}", number(answer)),
                explanation=Message(N_("Divide the dot product by the square root of the key's width: √4 = 2.")),
                source=SOURCE, drawn={"query": query.tolist(), "key": key.tolist(), "row": 0, "col": 1})


def weight(seed: int) -> Item:
    """Query 1's weight on key 1 after scaling two scores by √d_k (d_k = 4 or 16; mistake: softmax of s itself)."""
    gen = generator(seed)
    d_k = int(pick(gen, (4, 16)))
    while True:
        row = integers(gen, 1, 2, low=-4, high=4)
        if float(row[0, 0] - row[0, 1]) != 0:
            break
    # the scores as Q Kᵀ with K = I, so that the page's own function does the scaling and the softmax
    trace = scaled_dot_product_attention(row, torch.eye(2), torch.eye(2), scale=1 / math.sqrt(d_k))
    scaled = (row / math.sqrt(d_k)).tolist()
    answer = float(trace.weights[0, 0])
    exercise = practice.softmax_exercise(r"\alpha_{1,1}", r"\frac{e^{a_{1,1}}}{e^{a_{1,1}} + e^{a_{1,2}}}",
                                         "a_{1}", scaled, 0, 0, answer, unscaled=row.tolist(), d=d_k,
                                         by_column=False, predict=False)
    exercise = dataclasses.replace(exercise, inputs=(practice.vector("s_{1}", row[0].tolist()), f"d_k = {d_k}"))
    return Item(f"{CONCEPT}.weight", CONCEPT, PROCEDURAL,
                Message(N_("Query 1 has the scores s_1 below against two keys. Scale them by √d_k, then give key 1's "
                           "weight after the softmax.")), exercise,
                solution=worked(r"\alpha_{1,1}",
                                rf"\frac{{e^{{{number(scaled[0][0])}}}}}{{e^{{{number(scaled[0][0])}}} + "
                                rf"e^{{{number(scaled[0][1])}}}}}", number(answer)),
                explanation=Message(N_("First a = s / √d_k, then the softmax of a: e^(a_1) over the sum of both "
                                       "exponentials.")), source=SOURCE,
                drawn={"scores": row.tolist(), "d_k": d_k})


def variance(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.variance", CONCEPT, seed,
        Message(N_("The d_k entries of q and of k are independent, with mean 0 and variance 1. What is the variance "
                   "of q · k?")),
        Message(N_("d_k: it grows with the width")),
        ((Message(N_("1, whatever d_k")), WRONG), (Message(N_("1 / d_k")), WRONG)),
        Message(N_("q · k adds d_k products, each of variance 1, so its variance is d_k; dividing by √d_k brings it "
                   "back to 1 (Vaswani et al. 2017, footnote 4).")),
        "Vaswani et al. 2017, footnote 4")


def sharper(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.sharper", CONCEPT, seed,
        Message(N_("Without ÷ √d_k, d_k grows from 4 to 64. What happens to the softmax's weights?")),
        Message(N_("They get sharper: nearly all the weight on one key, and tiny gradients")),
        ((Message(N_("They get flatter: closer to equal weights")), "scale_flattens"),
         (Message(N_("Nothing: the softmax does not depend on d_k")), WRONG)),
        Message(N_("Wider vectors give larger dot products (their spread grows like √d_k); the softmax of large "
                   "numbers puts almost everything on the largest. Dividing by √d_k keeps them in range.")),
        SOURCE)


TEMPLATES = {"scale": scale, "weight": weight, "variance": variance, "sharper": sharper}
