r"""Check items on the attention of 2024–25: an attention sink's weight, e^{s_ij} / (Σ_l e^{s_il} + e^b) (gpt-oss,
OpenAI 2025), a head's output gated by σ(g) (Qiu et al. 2025), grouped-query attention's KV cache (Ainslie et al.
2023) and RoPE's relative positions (Su et al. 2021).

The numbers go through the modern pages' own functions (``sink_softmax``, ``torch.sigmoid`` as ``gated_attention``
uses it) and exercises (``sink_weight_exercise``, ``gated_output_exercise``), so an item is graded with the pages'
named mistakes: the sink forgotten, b added instead of e^b, the sink's own share; the gate forgotten, added, or its
logit used. Shapes: one query's row of 2 or 3 scores; one entry y and one gate logit g.
"""

from __future__ import annotations

import torch

from attention_core.check.items import (
    PROCEDURAL,
    WRONG,
    Item,
    conceptual,
    generator,
    halves,
    integers,
    pick,
    worked,
)
from attention_core.errors import N_, Message
from attention_core.latex import number
from attention_core.modern.gated import gated_output_exercise
from attention_core.modern.sinks import sink_softmax, sink_weight_exercise

CONCEPT = "modern"


def sink(seed: int) -> Item:
    """w_{n,c} = e^{s_nc} / (Σ_l e^{s_nl} + e^b) for the last of n = 2 or 3 queries, which sees every key."""
    gen = generator(seed)
    while True:
        n = int(pick(gen, (2, 3)))
        row, b = integers(gen, n, low=-1, high=2), float(pick(gen, (-1.0, 0.0, 1.0, 2.0)))
        col = int(torch.randint(n, (1,), generator=gen))
        answer = float(sink_softmax(row[None], b).weights[0, col])
        exercise = sink_weight_exercise(row.tolist(), b, n, col + 1, answer)
        if len(exercise.mistakes) == 3:  # a small weight can lie within the tolerance of a mistake's: draw again
            break
    exps = " + ".join(f"e^{{{number(s)}}}" for s in row.tolist())
    return Item(f"{CONCEPT}.sink", CONCEPT, PROCEDURAL,
                Message(N_("Query {i} sees keys 1 to {i}; its scores are below, and the head has a sink logit b "
                           "(gpt-oss). Give its weight on key {j}."), i=n, j=col + 1), exercise,
                solution=worked(f"w_{{{n},{col + 1}}}", rf"\frac{{e^{{{number(float(row[col]))}}}}}{{{exps} + e^{{{number(b)}}}}}",
                                number(answer)),
                explanation=Message(N_("The sink is one more logit in the softmax's sum, with no value: the weights of "
                                       "the real keys add up to less than 1, and the rest goes nowhere.")),
                source="OpenAI 2025, gpt-oss model card", drawn={"scores": row.tolist(), "sink": b, "col": col})


def gate(seed: int) -> Item:
    """y' = y · σ(g): one entry of a head's output through its sigmoid gate."""
    gen = generator(seed)
    while True:
        y, logit = float(halves(gen, 1, nonzero=True)[0]), float(integers(gen, 1, low=-2, high=2)[0])
        gated = float(torch.tensor(y) * torch.sigmoid(torch.tensor(logit)))
        exercise = gated_output_exercise(y, logit, float(torch.sigmoid(torch.tensor(logit))), "g_{1}", 1, 1, gated)
        if len(exercise.mistakes) == 3:  # g = 1 makes y · g = y: two mistakes on one value
            break
    return Item(f"{CONCEPT}.gate", CONCEPT, PROCEDURAL,
                Message(N_("A head's output y_1,1 and its gate logit g_1 are below (gated attention, Qwen3-Next). Give "
                           "the gated output y'_1,1.")), exercise,
                solution=worked("y'_{1,1}", rf"{number(y)} \cdot \frac{{1}}{{1 + e^{{{number(-logit)}}}}}",
                                number(gated)),
                explanation=Message(N_("The gate multiplies the head's output by σ(g), between 0 and 1: a head can "
                                       "say nothing (σ near 0) or pass its output on.")),
                source="Qiu et al. 2025", drawn={"y": y, "logit": logit})


def kv_cache(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.kv_cache", CONCEPT, seed,
        Message(N_("A model has 8 query heads that share 2 key/value heads (grouped-query attention). Against "
                   "multi-head attention with 8 key/value heads, its KV cache is …")),
        Message(N_("a quarter as large")),
        ((Message(N_("as large: every query head still needs its keys")), WRONG),
         (Message(N_("twice as large")), WRONG)),
        Message(N_("The cache keeps keys and values per key/value head: 2 instead of 8, a quarter. Each group of 4 "
                   "query heads reads the same keys and values.")),
        "Ainslie et al. 2023")


def rope(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.rope", CONCEPT, seed,
        Message(N_("RoPE rotates a query at position m by m angles and a key at position n by n angles. Their score "
                   "q · k then depends on the positions through …")),
        Message(N_("the offset m − n only")),
        ((Message(N_("the sum m + n")), WRONG),
         (Message(N_("nothing: a rotation keeps no position")), "rope_not_rotated")),
        Message(N_("Rotating q by m and k by n turns their dot product by m − n: the same offset gives the same "
                   "score wherever it is in the text.")),
        "Su et al. 2021")


TEMPLATES = {"sink": sink, "gate": gate, "kv_cache": kv_cache, "rope": rope}
