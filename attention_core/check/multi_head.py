r"""Check items on multi-head attention: split d_model into num_heads heads of head_dim, attend per head, concatenate
(Vaswani et al. 2017, sec. 3.2.2; seed 001).

Named mistakes: ``head_dim_times`` (d_model × num_heads for head_dim), ``no_scale``, ``scale_d_k`` and
``scale_d_model`` (a head's score divided by nothing, by head_dim, or by √d_model). Shapes: a head's q, k (head_dim,).
"""

from __future__ import annotations

import dataclasses

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
from attention_core.multi_head.heads import head_columns
from attention_core.self_attention.functional import scaled_dot_product_attention

CONCEPT = "multi_head"
SOURCE = "Vaswani et al. 2017, sec. 3.2.2"


def head_dim(seed: int) -> Item:
    """head_dim = d_model / num_heads (mistake: d_model × num_heads)."""
    gen = generator(seed)
    d_model, num_heads = pick(gen, ((8, 2), (12, 3), (12, 4), (16, 4), (24, 6), (32, 4), (64, 8), (48, 3)))
    answer = len(head_columns(d_model, num_heads)[0])
    exercise = practice.Exercise(r"\text{head\_dim}", r"\frac{d_{model}}{\text{num\_heads}}",
                                 (f"d_{{model}} = {d_model}", rf"\text{{num\_heads}} = {num_heads}"), float(answer),
                                 (practice.Mistake("head_dim_times", float(d_model * num_heads), Message(
                                     N_("That is {value} = d_model × num_heads. The heads share d_model's columns: "
                                        "each head gets d_model ÷ num_heads of them."), value=d_model * num_heads)),))
    return Item(f"{CONCEPT}.head_dim", CONCEPT, PROCEDURAL,
                Message(N_("A model has d_model = {d} and {h} heads. How wide is each head (head_dim)?"),
                        d=d_model, h=num_heads), exercise,
                solution=worked(r"\text{head\_dim}", rf"\frac{{{d_model}}}{{{num_heads}}}", str(answer)),
                explanation=Message(N_("Q, K and V are d_model wide; their columns are cut into num_heads equal "
                                       "blocks, one per head.")), source=SOURCE,
                drawn={"d_model": d_model, "num_heads": num_heads})


def scale(seed: int) -> Item:
    """A head's scaled score q · k / √head_dim with head_dim = 4, d_model = 32 (mistakes: no scale, ÷ head_dim,
    ÷ √d_model)."""
    gen = generator(seed)
    d_model, width = 32, 4  # √d_model ≠ head_dim, so that ÷ √d_model and ÷ head_dim tell themselves apart
    while True:
        query, key = halves(gen, 1, width, nonzero=True), halves(gen, 1, width, nonzero=True)
        trace = scaled_dot_product_attention(query, key, key)
        if abs(float(trace.scores[0, 0])) >= 1:
            break
    q, k = query[0].tolist(), key[0].tolist()
    score, answer = float(trace.scores[0, 0]), float(trace.scaled_scores[0, 0])
    exercise = practice.scale_exercise("a^{(2)}_{1,3}", r"\frac{q^{(2)}_{1} \cdot k^{(2)}_{3}}{\sqrt{d_{head}}}",
                                       "s", score, width, answer, d_name="head_dim", d_latex="d_{head}",
                                       d_model=d_model, dot=(("q^{(2)}_{1}", q), ("k^{(2)}_{3}", k)))
    exercise = dataclasses.replace(exercise, inputs=exercise.inputs + (f"d_{{model}} = {d_model}",))
    return Item(f"{CONCEPT}.scale", CONCEPT, PROCEDURAL,
                Message(N_("In head 2 of {h} (d_model = {d}), query 1 and key 3 are below. Give their scaled score."),
                        h=d_model // width, d=d_model), exercise,
                solution=worked("a^{(2)}_{1,3}", rf"\frac{{{sum_of_products(zip(q, k))}}}{{\sqrt{{{width}}}}}",
                                rf"\frac{{{number(score)}}}{{2}}", number(answer)),
                explanation=Message(N_("Each head scales by the square root of its own width, head_dim = {w}, not "
                                       "of d_model."), w=width), source=SOURCE,
                drawn={"query": q, "key": k, "head_dim": width, "d_model": d_model})


def concat(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.concat", CONCEPT, seed,
        Message(N_("num_heads heads each output head_dim columns per token. How wide is their concatenation, "
                   "before W_O?")),
        Message(N_("num_heads × head_dim = d_model")),
        ((Message(N_("head_dim: the heads are averaged")), WRONG),
         (Message(N_("d_model × num_heads")), "head_dim_times")),
        Message(N_("The heads' outputs are put side by side: num_heads blocks of head_dim columns, d_model in "
                   "all; W_O then mixes them.")),
        SOURCE)


def params(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.params", CONCEPT, seed,
        Message(N_("d_model stays 64. Going from 1 head to 8 heads, how many numbers does W_Q hold?")),
        Message(N_("The same: 64 × 64, cut into 8 blocks of 8 columns")),
        ((Message(N_("8 times as many: one W_Q per head")), "head_dim_times"),
         (Message(N_("8 times fewer")), WRONG)),
        Message(N_("Each head uses head_dim = 64 / 8 = 8 of W_Q's 64 columns; together they are the same 64 × 64 "
                   "matrix.")),
        SOURCE)


TEMPLATES = {"head_dim": head_dim, "scale": scale, "concat": concat, "params": params}
